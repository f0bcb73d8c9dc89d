"""Objects restored from the results cache's pack (`ailint.engine.stored`): who they are
without their data, their data read once per file when first asked for, and a rerun that
reads only what it needs reporting exactly what a fresh run reports."""

from __future__ import annotations

import dataclasses
import json
import marshal
import os
import pickle
import shutil
from pathlib import Path

import pytest
from ailint.core.model import K8sObject, SourceFile
from ailint.engine import stored
from ailint.engine.cache import file_out
from ailint.engine.load import load_text
from conftest import ROOT
from test_cli import BAD

STREAM = (
    BAD.replace("  name: p\n", '  name: p\n  annotations:\n    ailint.io/ignore: "GPU002: reviewed"\n')
    + """---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, annotations: {ailint.io/ignore: "  "}}
spec: {}
---
kind: 7
apiVersion: [x]
metadata: not-a-mapping
---
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a, annotations: {ailint.io/ignore: SEC}}}
  - {apiVersion: batch/v1, kind: Job, metadata: {name: b}}
"""
)


def _parsed(text: str = STREAM) -> tuple[list[K8sObject], tuple]:
    fr = load_text(SourceFile("/x/s.yaml", "s.yaml", text))
    return fr.objects, file_out(fr, tables=False)


def _as_marshal(objs: list) -> bytes:
    return marshal.dumps([(d, data, n, tuple(base), tpl) for d, data, n, base, tpl in objs], 0)


def test_packed_objects_round_trip_and_say_who_each_is() -> None:
    objects, entry = _parsed()
    packed = stored.packed_objects(entry[2])
    assert isinstance(packed, tuple) and isinstance(packed[0], bytes)
    assert stored.packed_objects(packed) is packed  # (already packed: as it is)
    assert _as_marshal(stored.unpacked_objects(packed)) == _as_marshal(entry[2])
    assert stored.unpacked_objects(entry[2]) is entry[2]
    # through marshal, as the pack is written and read
    again = marshal.loads(marshal.dumps(packed))
    made = stored.stored_objects(objects[0].source, again, [b""] * 8)
    assert [(o.api_version, o.kind, o.group) for o in made] == [(o.api_version, o.kind, o.group) for o in objects]
    assert [(o.doc_index, o.base, o.template) for o in made] == [(o.doc_index, o.base, o.template) for o in objects]
    assert len(made) == 4 and made[3].group == "batch"  # (the document that is no object: none)


def test_who_an_object_is_reads_strings_only() -> None:
    from ailint.core.model import identity_of

    assert identity_of({"kind": 7, "apiVersion": ["x"]}) == ("", "", "")
    assert identity_of({"kind": "Job", "apiVersion": "batch/v1"}) == ("batch/v1", "Job", "batch")
    assert identity_of({"kind": "Pod", "apiVersion": "v1"}) == ("v1", "Pod", "")


def test_the_ignore_annotation_is_known_without_the_data() -> None:
    objects, entry = _parsed()
    packed = stored.packed_objects(entry[2])
    # a non-blank string only: the Pod's and the ConfigMap's (a List's item), not the blank one
    assert stored.annotated(packed) == (0, 2)
    from ailint.engine import suppress

    assert [n for n, o in enumerate(objects) if suppress.annotation_suppressions(o)] == [0, 2]


def test_a_files_data_is_read_once_when_first_asked_for() -> None:
    objects, entry = _parsed()
    packed = marshal.loads(marshal.dumps(stored.packed_objects(entry[2])))
    loads: list[int] = []
    real = stored.FileData.load

    def counting(self: stored.FileData) -> None:
        loads.append(len(self.objects))
        real(self)

    made = stored.stored_objects(objects[0].source, packed, [b""] * 8)
    data_slot = K8sObject.__dict__["data"]
    for o in made:
        with pytest.raises(AttributeError):
            data_slot.__get__(o, K8sObject)  # not read yet
    assert [o.kind for o in made] == [o.kind for o in objects]  # (who it is: no read)
    stored.FileData.load = counting  # type: ignore[method-assign]
    try:
        assert made[3].data == objects[3].data
        assert [o.data for o in made] == [o.data for o in objects]
        assert made[0].get("spec", "containers", 0, "name") == "c"
    finally:
        stored.FileData.load = real  # type: ignore[method-assign]
    assert loads == [len(objects)]  # every object of the file at once, once


def test_a_stored_object_pickles_and_is_replaced_as_an_ordinary_one() -> None:
    objects, entry = _parsed()
    packed = stored.packed_objects(entry[2])
    made = stored.stored_objects(objects[0].source, packed, [b""] * 8)
    back = pickle.loads(pickle.dumps(made[1]))
    assert back.data == objects[1].data and back.kind == "Deployment" and back.api_version == "apps/v1"
    other = stored.stored_objects(objects[0].source, packed, [b""] * 8)[0]
    copy = dataclasses.replace(other, memo=None, carried=None)
    assert copy.data == objects[0].data and copy.kind == "Pod" and copy.group == ""
    copy.data = {"kind": "X"}  # (the setter writes the slot)
    assert copy.data == {"kind": "X"}


def test_damaged_packed_data_is_an_error_of_its_own() -> None:
    objects, entry = _parsed()
    _, rows = stored.packed_objects(entry[2])
    with pytest.raises(ValueError):
        stored.unpacked_objects((marshal.dumps([{}]), rows))
    made = stored.stored_objects(objects[0].source, (marshal.dumps([{}]), rows), [b""] * 8)
    with pytest.raises(ValueError):
        _ = made[0].data


def _tree(root: Path) -> list[Path]:
    """Two repositories: one with a file, the other with thirteen plain fixture files
    (enough for the first run to keep a pack), a file whose annotation suppresses a finding
    and one whose annotation suppresses nothing."""
    (root / "one" / ".git").mkdir(parents=True)
    (root / "other" / ".git").mkdir(parents=True)
    files = sorted(p for p in (ROOT / "fixtures" / "demo").glob("*.yaml"))
    files += sorted((ROOT / "fixtures").rglob("*.yaml"))[:40]
    out: list[Path] = []
    for n, p in enumerate(files):
        if len(out) == 14:
            break
        text = p.read_text(encoding="utf-8")
        if "{{" in text:
            continue
        q = root / ("one" if not out else "other") / f"f{n:02d}-{p.name}"
        q.write_text(text, encoding="utf-8")
        out.append(q)
    (root / "other" / "annotated.yaml").write_text(STREAM, encoding="utf-8")
    unused = STREAM.replace('"GPU002: reviewed"', '"SEC001: reviewed"')
    (root / "other" / "unused.yaml").write_text(unused, encoding="utf-8")
    return out


def test_an_edit_rerun_reads_few_files_data_and_reports_as_a_fresh_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ailint.engine.config import Settings
    from ailint.engine.run import lint
    from ailint.report import json as rep

    tree = tmp_path / "tree"
    tree.mkdir()
    files = _tree(tree)
    cache = tmp_path / "c"
    monkeypatch.setenv("AILINT_CACHE_DIR", str(cache))

    def report(cached: bool) -> dict:
        return json.loads(rep.render(lint([str(tree)], Settings(root=str(ROOT)), jobs=1, cache=cached)))

    fresh = report(False)
    assert report(True) == fresh
    files[1].write_text(files[1].read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    assert report(True) == report(False)  # (a run that read most files from their entries keeps the pack)
    loads: list[int] = []
    real = stored.FileData.load

    def counting(self: stored.FileData) -> None:
        if self.blob is not None:
            loads.append(len(self.objects))
        real(self)

    monkeypatch.setattr(stored.FileData, "load", counting)
    made: list[int] = []
    real_made = stored.stored_objects

    def making(*args: object) -> list[K8sObject]:
        out = real_made(*args)  # type: ignore[arg-type]
        made.append(len(out))
        return out

    monkeypatch.setattr(stored, "stored_objects", making)
    files[0].write_text(files[0].read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    os.utime(files[0], ns=(0, 0))  # (an old stat: not taken for a settled one)
    again = report(True)
    fresh_again = report(False)
    assert again == fresh_again
    assert sum(made) > 10, "the rerun made its objects from the pack"
    # the edited repository's objects are read (its calls run again), the other's are not
    assert sum(loads) < sum(made) / 2, "objects whose data no one asked for are not read"
    codes = [(f["file"].rsplit("/", 1)[-1], f["code"]) for f in again["findings"]]
    assert ("unused.yaml", "AIL001") in codes  # the annotation that suppressed nothing
    assert ("annotated.yaml", "AIL001") in codes  # (the ConfigMap's SEC: nothing to suppress)
    assert ("annotated.yaml", "GPU002") not in codes and ("unused.yaml", "GPU002") in codes


def test_who_each_restored_object_is_agrees_with_its_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over every plain fixture, restored from the pack after an edit: each object's
    apiVersion, kind and group, and whether it carries an ignore annotation, as the pack
    says them, are what its data says."""
    from ailint.core.model import identity_of
    from ailint.engine.config import Settings
    from ailint.engine.run import lint
    from ailint.engine.suppress import carries_ignore

    tree = tmp_path / "tree"
    plain = [p for p in sorted((ROOT / "fixtures").rglob("*.y*ml")) if "{{" not in p.read_text(errors="replace")]
    for n, p in enumerate(plain):
        q = tree / f"{n:04d}-{p.name}"
        q.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, q)
    (tree / "annotated.yaml").write_text(STREAM, encoding="utf-8")
    monkeypatch.setenv("AILINT_CACHE_DIR", str(tmp_path / "c"))
    lint([str(tree)], Settings(root=str(ROOT)), jobs=1, cache=True)  # (over 256 files: the pack)
    seen: list[tuple[list[K8sObject], tuple[int, ...]]] = []
    real_made = stored.stored_objects

    def recording(source: SourceFile, objs: tuple, tables: object) -> list[K8sObject]:
        out = real_made(source, objs, tables)  # type: ignore[arg-type]
        seen.append((out, stored.annotated(objs)))
        return out

    monkeypatch.setattr(stored, "stored_objects", recording)
    (tree / "added.yaml").write_text(STREAM.replace("name: p", "name: q"), encoding="utf-8")
    lint([str(tree)], Settings(root=str(ROOT)), jobs=1, cache=True)
    assert sum(len(out) for out, _ in seen) > len(plain)
    assert any(marked for _, marked in seen)
    for out, marked in seen:
        for o in out:
            assert (o.api_version, o.kind, o.group) == identity_of(o.data)
        assert marked == tuple(n for n, o in enumerate(out) if carries_ignore(o.data))
