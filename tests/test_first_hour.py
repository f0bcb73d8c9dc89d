"""Issue 16, "the first hour": the rough edges a new user hits, each pinned by a test."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ailint.doors.cli import cli
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo"

POD = """apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
    - name: c
      image: vllm/vllm-openai:v0.9.2
      resources:
        requests:
          nvidia.com/gpu: 1
"""


def run(args: list[str], cwd: Path | None = None, input: str | None = None):  # type: ignore[no-untyped-def]
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.fixture
def pod(tmp_path: Path) -> Path:
    p = tmp_path / "pod.yaml"
    p.write_text(POD)
    return p


# -- 1. a typo'd code in the config is a config error, with file, line and nearest code --
@pytest.mark.parametrize(
    ("config", "line", "where", "hint"),
    [
        ("select: [GPU999]\n", 1, "`select[0]`", "did you mean GPU"),
        ("fail-on: error\nextend-select:\n  - SRV001\n  - SRVV\n", 4, "`extend-select[1]`", "did you mean SRV?"),
        ("ignore: GPU001,gpu-reqest-without-limit\n", 1, "`ignore[1]`", "did you mean gpu-request-without-limit?"),
        ('per-file-ignores:\n  "legacy/**":\n    - GPU0002\n', 3, "`per-file-ignores.legacy/**[0]`", "GPU002"),
        ("rules:\n  GPU002: {severity: info}\n  GPU0002:\n    severity: info\n", 3, "`rules.GPU0002`", "GPU002"),
    ],
)
def test_unknown_selector_in_config_is_an_error(
    tmp_path: Path, pod: Path, config: str, line: int, where: str, hint: str
) -> None:
    cfg = tmp_path / ".ailint.yaml"
    cfg.write_text(config)
    r = run(["check", str(pod)], cwd=tmp_path)
    assert r.exit_code == 2, r.output
    assert f"{cfg}:{line}: {where}" in r.output and hint in r.output


def test_unknown_selector_in_pyproject(tmp_path: Path, pod: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.ailint]\nselect = [\n  "GPU002",\n  "GPU999",\n]\n')
    r = run(["check", str(pod)], cwd=tmp_path)
    assert r.exit_code == 2 and "pyproject.toml:4: `select[1]`" in r.output


@pytest.mark.parametrize("pair", ["extendedResourceToleration=maybe", "gpuNodeTaints=notjson", "db.maxConnections=0"])
def test_set_values_are_validated(pod: Path, pair: str) -> None:
    r = run(["check", "--no-config", "--set", pair, str(pod)])
    assert r.exit_code == 2 and f"--set {pair}" in r.output


def test_valid_set_values_still_work(pod: Path) -> None:
    r = run(
        ["check", "--no-config", "--select", "GPU002", "--set", "gpuNodeTaints=nvidia.com/gpu:NoSchedule", str(pod)]
    )
    assert r.exit_code == 1


# -- 4. a standalone suppression covers the node that follows and everything under it ----
def test_standalone_comment_covers_the_list_item(tmp_path: Path) -> None:
    text = (DEMO / "vllm.yaml").read_text()
    assert "            - name: HF_TOKEN\n" in text
    p = tmp_path / "vllm.yaml"
    p.write_text(
        text.replace(
            "            - name: HF_TOKEN\n",
            "            # ailint: ignore[SEC007] test token\n            - name: HF_TOKEN\n",
        )
    )
    r = run(["check", "--no-config", "--select", "SEC007,AIL", "--format", "json", str(p)])
    codes = [f["code"] for f in json.loads(r.output)["findings"]]
    assert codes == [], codes


def test_standalone_comment_covers_a_block_but_not_its_siblings(tmp_path: Path) -> None:
    p = tmp_path / "pod.yaml"
    # two containers, the first under a standalone comment
    second = POD.split("  containers:\n")[1].replace("name: c", "name: d")
    p.write_text(POD.replace("    - name: c\n", "    # ailint: ignore[GPU002]\n    - name: c\n") + second)
    r = run(["check", "--no-config", "--select", "GPU002,AIL", "--format", "json", str(p)])
    found = [(f["code"], f["line"]) for f in json.loads(r.output)["findings"]]
    # the first container (under the comment) is covered, the second list item is not
    assert found == [("GPU002", 17)], found


# -- 5. SARIF URIs relative to the repository root, originalUriBaseIds, Pascal rule names ----
def _git_init(path: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(path)], check=True)


def test_sarif_uris_are_relative_to_the_repository_root(tmp_path: Path) -> None:
    _git_init(tmp_path)
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "pod.yaml").write_text(POD)
    sub = tmp_path / "tools"
    sub.mkdir()
    r = run(["check", "--no-config", "--select", "GPU002", "--format", "sarif", "../k8s/pod.yaml"], cwd=sub)
    run_ = json.loads(r.output)["runs"][0]
    (res,) = run_["results"]
    loc = res["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": "k8s/pod.yaml", "uriBaseId": "%SRCROOT%"}
    assert run_["originalUriBaseIds"] == {"%SRCROOT%": {"uri": tmp_path.resolve().as_uri() + "/"}}
    change = res["fixes"][0]["artifactChanges"][0]["artifactLocation"]
    assert change == loc


def test_sarif_uris_fall_back_to_the_config_root(tmp_path: Path) -> None:
    if any((p / ".git").exists() for p in [tmp_path, *tmp_path.parents]):
        pytest.skip("the temporary folder is inside a git work tree")
    (tmp_path / ".ailint.yaml").write_text("select: [GPU002]\n")
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "pod.yaml").write_text(POD)
    r = run(["check", "--format", "sarif", "pod.yaml"], cwd=tmp_path / "k8s")
    run_ = json.loads(r.output)["runs"][0]
    assert run_["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "k8s/pod.yaml"
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"


def test_sarif_rule_names_are_pascal_identifiers(pod: Path) -> None:
    import re

    # the SARIF validator's rule SARIF2012 (ProvideRuleProperties): `^(\p{Lu}[\p{Ll}\p{Nd}]+)*$`
    pascal = re.compile(r"^([A-Z][a-z0-9]+)*$")
    r = run(["check", "--no-config", "--format", "sarif", str(pod)])
    rules = json.loads(r.output)["runs"][0]["tool"]["driver"]["rules"]
    names = [x["name"] for x in rules]
    assert all(pascal.match(n) for n in names), [n for n in names if not pascal.match(n)]
    assert len(set(names)) == len(names)
    assert dict(zip([x["id"] for x in rules], names))["GPU002"] == "GpuRequestWithoutLimit"


# -- 8. the SARIF schema ships with the repository, so a fresh clone runs the schema tests ---
def test_sarif_schema_ships_with_the_tests() -> None:
    from conftest import SARIF_SCHEMA

    assert SARIF_SCHEMA.is_relative_to(ROOT), SARIF_SCHEMA
    schema = json.loads(SARIF_SCHEMA.read_text())
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    notice = (SARIF_SCHEMA.parent / "NOTICE.md").read_text()
    assert "Copyright © OASIS Open" in notice
    shared = ROOT.parent / "shared" / "ref" / "sarif" / "sarif-schema-2.1.0.json"
    if shared.exists():  # the copy is the reference, unmodified
        assert shared.read_bytes() == SARIF_SCHEMA.read_bytes()


# -- 6. counts and exits that agree -------------------------------------------------------
def test_diff_summary_agrees_with_its_report(tmp_path: Path) -> None:
    import re
    import shutil
    import subprocess
    import sys

    shutil.copytree(DEMO, tmp_path / "demo")
    exe = [sys.executable, "-m", "ailint"]
    p = subprocess.run([*exe, "check", "--no-config", "--diff", "demo"], cwd=tmp_path, capture_output=True, text=True)
    said = re.search(r"would remain \((\d+) fixable with --unsafe-fixes\)", p.stdout + p.stderr)
    shown = re.search(r"in \d+ files?; (\d+) fixable with --unsafe-fixes\.", p.stderr)
    assert said and shown, p.stderr[-600:]
    assert said.group(1) == shown.group(1)


def test_write_baseline_writes_summarises_and_exits_zero(tmp_path: Path, pod: Path) -> None:
    base = tmp_path / "baseline.json"
    r = run(["check", "--no-config", "--write-baseline", str(base), str(pod)])
    assert r.exit_code == 0, r.output
    r2 = run(["check", "--no-config", "--select", "GPU002", "--write-baseline", str(base), str(pod)])
    assert r2.exit_code == 0
    assert r2.output.strip().splitlines() == [f"ailint: wrote 1 fingerprint (1 finding) to {base}"]
    assert json.loads(base.read_text())["fingerprints"]
    assert run(["check", "--no-config", "--select", "GPU002", "--baseline", str(base), str(pod)]).exit_code == 0


def test_report_and_baseline_files_honour_the_umask(tmp_path: Path, pod: Path) -> None:
    old = os.umask(0o022)
    try:
        out, base = tmp_path / "report.json", tmp_path / "base.json"
        run(["check", "--no-config", "--format", "json", "-o", str(out), str(pod)])
        run(["check", "--no-config", "--write-baseline", str(base), str(pod)])
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644
    assert base.stat().st_mode & 0o777 == 0o644


def test_no_files_says_nothing_was_linted(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "README.md").write_text("no manifests here\n")
    p = subprocess.run(
        [sys.executable, "-m", "ailint", "check", "--no-config", str(tmp_path)], capture_output=True, text=True
    )
    assert p.returncode == 0  # as ruff: a warning, not an error
    assert "nothing was linted" in p.stderr
    assert "All clear" not in p.stdout
