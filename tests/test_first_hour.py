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
