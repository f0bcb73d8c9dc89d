"""Speed and memory machinery never changes a result.

A run is the same JSON report whether position tables and texts are kept or spilled
(`ailint.engine.bounded`), and whether it runs in one process or several (`--jobs`: worker
processes for the files, forked processes for the bundle rules and schema validation).
"""

from __future__ import annotations

import json
import pickle
import shutil

import pytest
from conftest import CORPUS, ROOT, needs_shared

# (jobs, bounded) compared with the reference (1, False): together the two inputs cover
# spilling, worker processes and the forked bundle phase, each with and without the others.
FIXTURE_MODES = [(2, True)]
CORPUS_MODES = [(1, True), (2, False)]


def _report(paths: list[str], jobs: int, bounded: bool) -> dict:
    from ailint.engine.config import Settings
    from ailint.engine.run import lint
    from ailint.report import json as rep

    result = lint(paths, Settings(root=str(ROOT)), jobs=jobs, bounded=bounded)
    return json.loads(rep.render(result))


def _compare(paths: list[str], modes: list[tuple[int, bool]]) -> None:
    ref = _report(paths, 1, False)
    assert ref["findings"], "the comparison needs findings"
    for jobs, bounded in modes:
        got = _report(paths, jobs, bounded)
        assert got["files"] == ref["files"], (jobs, bounded)
        assert got["findings"] == ref["findings"], (jobs, bounded)


def test_fixtures_as_one_bundle_same_in_every_mode():
    _compare([str(ROOT / "fixtures")], FIXTURE_MODES)


@needs_shared
def test_corpus_slice_same_in_every_mode():
    repos = [
        "aws-samples__awsome-distributed-training",
        "kubernetes-sigs__descheduler",
        "NVIDIA__KAI-scheduler",
        "ray-project__kuberay",
    ]
    paths = [str(CORPUS / r / "plain") for r in repos if (CORPUS / r / "plain").is_dir()]
    if not paths:
        pytest.skip("corpus slice not present")
    _compare(paths, CORPUS_MODES)


def _spilled_file(tmp_path):
    from ailint.core.model import SourceFile
    from ailint.engine.bounded import spill
    from ailint.engine.load import Limits, load_text

    src = ROOT / "fixtures" / "demo" / "vllm.yaml"
    path = tmp_path / "vllm.yaml"
    shutil.copyfile(src, path)
    text = path.read_text(encoding="utf-8")
    fr = load_text(SourceFile(str(path), "vllm.yaml", text), Limits())
    tables = [dict(o.positions) for o in fr.objects]
    spill(fr, Limits())
    return path, text, fr, tables


def test_spilled_positions_and_text_come_back_identical(tmp_path):
    _path, text, fr, tables = _spilled_file(tmp_path)
    assert [dict(o.positions.items()) for o in fr.objects] == tables
    assert fr.source.text == text
    # a worker's result crosses to the parent without the table or the text
    again = pickle.loads(pickle.dumps(fr))
    assert [dict(o.positions.items()) for o in again.objects] == tables
    assert again.source.text == text


def test_a_spilled_file_changed_during_the_run_is_an_error(tmp_path):
    from ailint.engine.bounded import FileChangedError

    path, text, fr, _ = _spilled_file(tmp_path)
    path.write_text(text.replace("vllm", "VLLM"), encoding="utf-8")
    with pytest.raises(FileChangedError):
        fr.objects[0].positions.get(())
