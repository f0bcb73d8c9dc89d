"""The key indexes of ailint's own code are kept under (`ailint.core.sourcekey`): a wheel
install by its RECORD, anything else by every source file's size and mtime."""

from __future__ import annotations

import os
from pathlib import Path

from ailint.core.sourcekey import installed_record, source_key, source_stamps


def test_a_wheel_install_is_keyed_by_its_record(tmp_path: Path) -> None:
    site = tmp_path / "site"
    pkg = site / "ailint"
    (pkg / "rules").mkdir(parents=True)
    record = site / "ailint-9.9.dist-info" / "RECORD"
    record.parent.mkdir()
    record.write_text("ailint/__init__.py,sha256=x,1\n")
    assert installed_record([str(pkg), str(pkg / "rules")], "9.9") == str(record)
    assert installed_record([str(pkg)], "9.8") is None, "another version's metadata"
    assert installed_record([str(pkg), str(tmp_path / "rules")], "9.9") is None, "rules outside the package"
    src = tmp_path / "checkout" / "linter"
    src.mkdir(parents=True)
    assert installed_record([str(src)], "9.9") is None, "a source tree (what an editable install imports)"


def test_a_source_tree_key_changes_with_every_edit(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "__pycache__").mkdir()
    for name in ("a.py", "sub/b.py", "__pycache__/c.py", "notes.txt"):
        (tmp_path / name).write_text("x = 1\n")

    def stamps() -> list[str]:
        out: list[str] = []
        source_stamps(str(tmp_path), out)
        return out

    first = stamps()
    assert [s.split(":")[0] for s in first] == [f"{tmp_path}/a.py", f"{tmp_path}/sub/b.py"]
    (tmp_path / "sub" / "b.py").write_text("x = 22\n")
    assert stamps() != first
    second = stamps()
    st = (tmp_path / "a.py").stat()
    os.utime(tmp_path / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert stamps() != second


def test_this_checkout_is_keyed_by_its_files() -> None:
    """The development install is editable: its key lists the files, so an edit to a rule's
    declaration is never read from an older index."""
    key = source_key.__wrapped__()  # type: ignore[attr-defined]
    assert "\ninstalled " not in key
    assert "/core/model.py:" in key and "/rules/gpu/" in key


def test_a_kept_index_leaves_a_few_of_older_code(tmp_path: Path) -> None:
    """`cachedir.keep` writes the index owner-only and leaves only the newest few other
    files of its prefix (the rule and family indexes of older code); other prefixes stay."""
    from ailint.core.cachedir import keep

    for n in range(10):
        f = tmp_path / f"families-{n:08x}-10.json"
        f.write_text("[]")
        os.utime(f, (1_000_000 + n, 1_000_000 + n))
    (tmp_path / "rules-00000000-10.json").write_text("[]")
    keep(str(tmp_path / "families-ffffffff-10.json"), [b"[]"], older=3)
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("families-"))
    assert left == [f"families-{n:08x}-10.json" for n in (7, 8, 9)] + ["families-ffffffff-10.json"]
    assert (tmp_path / "rules-00000000-10.json").exists()
    assert (tmp_path / "families-ffffffff-10.json").stat().st_mode & 0o077 == 0
