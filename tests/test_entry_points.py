"""The entry points of plugin rules and providers, read from each distribution's
`entry_points.txt` and kept in the cache folder: a run reads them again exactly when a
folder of `sys.path`, a distribution folder or an entry_points.txt it read has changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ailint.engine import registry


def _dist(site: Path, name: str, entry_points: str | None) -> Path:
    d = site / f"{name}-1.0.dist-info"
    d.mkdir(parents=True, exist_ok=True)
    (d / "METADATA").write_text(f"Name: {name}\nVersion: 1.0\n")
    if entry_points is not None:
        (d / "entry_points.txt").write_text(entry_points)
    return d


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("AILINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("AILINT_NO_CACHE", raising=False)
    monkeypatch.setattr(registry, "_EP_CACHE", None)
    return folder


def _read(monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[str, str]], bool]:
    """The `ailint.rules` entry points as a fresh process reads them, and whether it scanned."""
    scanned = []
    real = registry._scan_entry_points

    def scan() -> tuple[dict, list]:
        scanned.append(True)
        return real()

    monkeypatch.setattr(registry, "_scan_entry_points", scan)
    monkeypatch.setattr(registry, "_EP_CACHE", None)
    return registry.entry_points(registry.RULES_GROUP), bool(scanned)


def _touch_later(path: Path) -> None:
    """Move `path`'s mtime on, as a later write on any filesystem would."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))


def test_entry_points_are_kept_and_read_again_only_after_a_change(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _dist(site, "acme_rules", "[ailint.rules]\nacme = acme_rules\n[console_scripts]\nx = y:z\n")
    _dist(site, "plain", None)
    assert _read(monkeypatch) == ([("acme", "acme_rules")], True)
    assert _read(monkeypatch) == ([("acme", "acme_rules")], False), "kept: nothing changed"

    # a distribution installed
    _dist(site, "other_rules", "[ailint.rules]\nother = other_rules\n")
    _touch_later(site)
    got, scanned = _read(monkeypatch)
    assert scanned and sorted(got) == [("acme", "acme_rules"), ("other", "other_rules")]
    assert _read(monkeypatch)[1] is False

    # an entry_points.txt edited in place
    ep = site / "acme_rules-1.0.dist-info" / "entry_points.txt"
    ep.write_text("[ailint.rules]\nacme = acme_rules.v2\n")
    _touch_later(ep)
    got, scanned = _read(monkeypatch)
    assert scanned and ("acme", "acme_rules.v2") in got

    # an entry_points.txt added to a distribution that had none
    plain = site / "plain-1.0.dist-info"
    (plain / "entry_points.txt").write_text("[ailint.rules]\nplain = plain_rules\n")
    _touch_later(plain)
    got, scanned = _read(monkeypatch)
    assert scanned and ("plain", "plain_rules") in got


def test_a_damaged_or_foreign_kept_file_is_read_past(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _dist(site, "acme_rules", "[ailint.rules]\nacme = acme_rules\n")
    assert _read(monkeypatch) == ([("acme", "acme_rules")], True)
    where = registry._entry_points_file()
    assert where is not None
    kept = Path(where[0])
    for bad in (kept.read_bytes()[:-3], b"", b"AILE1\n" + b"\0" * 40):
        kept.write_bytes(bad)
        assert _read(monkeypatch) == ([("acme", "acme_rules")], True)


def test_no_cache_keeps_nothing(site: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AILINT_NO_CACHE", "1")
    _dist(site, "acme_rules", "[ailint.rules]\nacme = acme_rules\n")
    assert _read(monkeypatch) == ([("acme", "acme_rules")], True)
    assert _read(monkeypatch) == ([("acme", "acme_rules")], True)
    assert not (tmp_path / "cache").exists()
