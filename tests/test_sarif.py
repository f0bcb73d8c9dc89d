"""SARIF output: official 2.1.0 schema, GitHub's expectations, fixes as replacements."""

from __future__ import annotations

import json

import pytest
from ailint.engine.config import Settings
from ailint.engine.registry import all_rules
from ailint.engine.run import lint
from ailint.report import sarif
from conftest import SARIF_SCHEMA
from fixture_harness import FIXTURES


@pytest.fixture(scope="module")
def log():
    s = Settings(root=str(FIXTURES.parent))
    return sarif.build(lint([str(FIXTURES / "GPU002"), str(FIXTURES / "demo")], s))


def test_validates_against_official_schema(log):
    import jsonschema

    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(log)


def test_driver_lists_every_rule_with_metadata(log):
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "ailint" and driver["informationUri"] and driver["version"]
    ids = [r["id"] for r in driver["rules"]]
    assert ids == list(all_rules())
    for r in driver["rules"]:
        assert r["shortDescription"]["text"] and r["fullDescription"]["text"]
        assert r["help"]["text"] and r["help"]["markdown"]
        assert r["defaultConfiguration"]["level"] in ("error", "warning", "note")
        assert r["properties"]["precision"] and r["properties"]["tags"]
        if r["id"].startswith("SEC"):
            assert float(r["properties"]["security-severity"]) > 0


def test_results_have_level_location_and_no_line_hash(log):
    run = log["runs"][0]
    results = run["results"]
    assert results
    rules = run["tool"]["driver"]["rules"]
    for res in results:
        assert res["level"] in ("error", "warning", "note")  # explicit, even when "warning"
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        (loc,) = res["locations"]
        art = loc["physicalLocation"]["artifactLocation"]
        assert not art["uri"].startswith("/") and art["uriBaseId"] == "%SRCROOT%"
        region = loc["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert "primaryLocationLineHash" not in res.get("partialFingerprints", {})
        assert "ailint/v1" in res["partialFingerprints"]


def test_fixes_carry_replacements(log):
    fixed = [r for r in log["runs"][0]["results"] if r.get("fixes")]
    assert fixed
    for r in fixed:
        for fx in r["fixes"]:
            assert fx["artifactChanges"]
            for ch in fx["artifactChanges"]:
                assert ch["replacements"]
                for rep in ch["replacements"]:
                    assert rep["deletedRegion"]["startLine"] >= 1


def test_warning_level_is_kept_explicitly():
    from ailint.core.model import Finding, Severity, Span

    class R:
        findings = [Finding("GPU003", "x", Severity.WARNING, "m", "a.yaml", Span(1, 1, 1, 2))]
        sources: dict = {}

    res = sarif.build(R())["runs"][0]["results"][0]
    assert res["level"] == "warning"
