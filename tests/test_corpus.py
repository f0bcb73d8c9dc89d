"""The real corpus (../shared/corpus): no crash, every file accounted for, every finding
placed, JSON and SARIF valid. Skipped when ../shared is absent."""

from __future__ import annotations

import json

import pytest
from conftest import CORPUS, SARIF_SCHEMA, needs_shared

pytestmark = needs_shared


@pytest.fixture(scope="module")
def corpus_result():
    from ailint.engine.config import Settings
    from ailint.engine.run import lint

    s = Settings(root=str(CORPUS))
    return lint([str(CORPUS)], s, jobs=2)


def test_every_file_is_listed(corpus_result):
    on_disk = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    assert len(corpus_result.files) == len(on_disk)
    assert len(on_disk) >= 2400


def test_no_rule_crashed_and_every_finding_is_placed(corpus_result):
    crashes = [f"{f.file}:{f.span.line} {f.message}" for f in corpus_result.findings if f.code == "AIL003"]
    assert not crashes, "\n".join(crashes[:20])
    for f in corpus_result.findings:
        assert f.span.line >= 1 and f.span.col >= 1, f
        assert (f.span.end_line, f.span.end_col) >= (f.span.line, f.span.col), f


def test_templated_files_are_reported_not_crashed(corpus_result):
    templated = {fs.path for fs in corpus_result.files if "/templated/" in fs.path}
    flagged = {f.file for f in corpus_result.findings if f.code.startswith("YML")}
    assert templated and templated <= flagged | {fs.path for fs in corpus_result.files if fs.objects}


def test_json_and_sarif_are_valid(corpus_result):
    import jsonschema
    from ailint.report import json as json_report
    from ailint.report import sarif
    from tests_support import report_schema

    jsonschema.validate(json.loads(json_report.render(corpus_result)), report_schema())
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema.Draft4Validator(schema).validate(sarif.build(corpus_result))
