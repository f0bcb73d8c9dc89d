"""Opt-in rules (`Rule.default` False): outside the default selection, run only when a
selector names their code or name (ruff's explicit preview selection). OBS002 is one."""

from __future__ import annotations

import json
import marshal
from pathlib import Path

from ailint.doors.cli import cli
from ailint.engine import registry
from click.testing import CliRunner
from conftest import ROOT

FIXTURE = ROOT / "fixtures" / "OBS002"


def _codes(select: list[str] | None, ignore: tuple[str, ...] = (), extend: tuple[str, ...] = ()) -> set[str]:
    return {r.rule.code for r in registry.select(select, ignore, extend)}


def test_obs002_is_opt_in_and_the_rest_is_default() -> None:
    rules = registry.all_rules()
    assert rules["OBS002"].rule.default is False
    assert rules["OBS001"].rule.default is True


def test_only_an_explicit_code_or_name_selects_an_opt_in_rule() -> None:
    assert "OBS002" not in _codes(None)
    assert "OBS001" in _codes(None)
    assert "OBS002" not in _codes(["ALL"])
    assert "OBS002" not in _codes(["OBS"])  # a family prefix passes over opt-in rules
    assert "OBS002" not in _codes(["OBS0"])
    assert "OBS001" in _codes(["OBS"])
    assert "OBS002" in _codes(["OBS002"])
    assert "OBS002" in _codes(["crash-logs-not-retained"])
    assert "OBS002" in _codes(None, extend=("OBS002",))
    assert {"OBS002", "GPU001"} <= _codes(None, extend=("OBS002",))  # the defaults stay on
    assert "OBS002" not in _codes(["OBS002"], ignore=("OBS002",))  # equal specificity: ignore wins


def test_the_rule_index_carries_the_flag() -> None:
    rule = registry.all_rules()["OBS002"].rule
    row = registry._rule_to_row(rule)
    assert ("default", False) in row[-1]
    assert registry._rule_from_row(marshal.loads(marshal.dumps(row))) == rule


def _check(args: list[str]) -> list[str]:
    r = CliRunner().invoke(cli, ["check", "--no-config", "--no-cache", "--format", "json", *args])
    assert r.exit_code in (0, 1), r.output
    return [f["code"] for f in json.loads(r.output)["findings"]]


def test_an_opt_in_rule_does_not_run_by_default_and_runs_when_selected() -> None:
    failing = sorted(p for p in FIXTURE.glob("*.yaml") if not p.name.startswith("pass") and ".fixed" not in p.name)
    assert failing
    path = str(failing[0])
    assert "OBS002" not in _check([path])
    assert "OBS002" not in _check([path, "--select", "OBS"])
    assert "OBS002" in _check([path, "--extend-select", "OBS002"])
    assert "OBS002" in _check([path, "--select", "crash-logs-not-retained"])


def test_config_extend_select_turns_it_on(tmp_path: Path) -> None:
    failing = sorted(p for p in FIXTURE.glob("*.yaml") if not p.name.startswith("pass") and ".fixed" not in p.name)
    (tmp_path / "job.yaml").write_text(failing[0].read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / ".ailint.yaml").write_text("extend-select: [OBS002]\n", encoding="utf-8")
    r = CliRunner().invoke(
        cli,
        ["check", "--config", str(tmp_path / ".ailint.yaml"), "--no-cache", "--format", "json", str(tmp_path)],
    )
    assert r.exit_code in (0, 1), r.output
    assert "OBS002" in [f["code"] for f in json.loads(r.output)["findings"]]


def test_rules_listing_marks_opt_in() -> None:
    out = CliRunner().invoke(cli, ["rules", "--no-config"]).output
    row = next(x for x in out.splitlines() if x.startswith("OBS002"))
    assert "opt-in" in row
    assert "opt-in" not in next(x for x in out.splitlines() if x.startswith("OBS001"))
    rows = json.loads(CliRunner().invoke(cli, ["rules", "--no-config", "--format", "json"]).output)
    assert {r["code"]: r["default"] for r in rows}["OBS002"] is False
    page = (ROOT / "docs" / "rules" / "OBS002.md").read_text(encoding="utf-8")
    assert "**Opt-in**" in page
