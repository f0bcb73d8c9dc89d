"""The GitHub Action run as a runner would, the pre-commit hook, and deploy/ linting clean."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


GPU_BAD = """apiVersion: v1
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


def _substitute(text: str, inputs: dict, action_path: str) -> str:
    def repl(m):
        expr = m.group(1).strip()
        if expr.startswith("inputs."):
            return inputs.get(expr[len("inputs.") :], "")
        if expr == "github.action_path":
            return action_path
        return ""

    return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", repl, text)


def run_action(workspace, tmp_path, env_extra=None, **given):
    """Execute action.yml's `run` steps like a runner: inputs substituted, GITHUB_* files set
    (`env_extra`: more of the runner's variables, e.g. GITHUB_EVENT_NAME and GITHUB_EVENT_PATH)."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    inputs.update(given)
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir()
    # the action's own install is what a runner does; here the venv under test stands in for it
    (runner_temp / "ailint-venv").symlink_to(os.path.dirname(os.path.dirname(sys.executable)))
    files = {n: tmp_path / n for n in ("output", "summary", "env")}
    for f in files.values():
        f.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AILINT_"))}
    env.update(
        RUNNER_TEMP=str(runner_temp),
        GITHUB_OUTPUT=str(files["output"]),
        GITHUB_STEP_SUMMARY=str(files["summary"]),
        GITHUB_ENV=str(files["env"]),
        GITHUB_REPOSITORY="acme/ml-platform",
        GITHUB_SHA="abc123",
        GITHUB_WORKSPACE=str(workspace),
    )
    env.update(env_extra or {})
    stdout, code = "", 0
    for step in action["runs"]["steps"]:
        if "uses" in step:
            continue
        step_env = dict(env)
        for k, v in (step.get("env") or {}).items():
            step_env[k] = _substitute(str(v), inputs, str(ROOT))
        for line in files["env"].read_text().splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                step_env[k] = v
        proc = subprocess.run(
            ["bash", "-e", "-c", _substitute(step["run"], inputs, str(ROOT))],
            cwd=workspace,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        stdout += proc.stdout
        code = proc.returncode
        if code:
            break
    outputs = dict(line.split("=", 1) for line in files["output"].read_text().splitlines() if "=" in line)
    return code, stdout, outputs, files["summary"].read_text()


def test_action_reports_and_fails_on_errors(tmp_path):
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / "pod.yaml").write_text(GPU_BAD)
    code, stdout, outputs, summary = run_action(ws, tmp_path, **{"fail-on": "error"})
    assert code == 1
    sarif = json.loads(_read(outputs["sarif-file"]))
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"]
    assert outputs["errors"] != "0" and int(outputs["findings"]) >= 1
    assert "::error file=pod.yaml,line=11" in stdout
    assert "## ailint" in summary and "| error |" in summary
    assert "https://github.com/acme/ml-platform/blob/abc123/pod.yaml#L11" in summary


def test_action_passes_on_clean_input_and_respects_inputs(tmp_path):
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / "pod.yaml").write_text(GPU_BAD.replace("requests:", "limits:"))
    sarif_path = tmp_path / "out" / "x.sarif"
    code, stdout, outputs, summary = run_action(
        ws, tmp_path, **{"sarif-file": str(sarif_path), "summary": "false", "annotations": "false", "fail-on": "error"}
    )
    assert code == 0 and outputs["sarif-file"] == str(sarif_path) and sarif_path.exists()
    assert summary == "" and "::error" not in stdout


def test_action_keeps_results_in_the_cache_folder_a_later_job_restores(tmp_path):
    """With `results-cache: true` the action lints through the results cache, as `ailint
    check` does: the folder it fills is what a workflow's `actions/cache` step restores for
    the next job, whose fresh checkout (every file with a new mtime) gets the same report
    from it. By default, and with AILINT_NO_CACHE=1, it keeps no results (a runner's empty
    folder would only be filled)."""
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / "pod.yaml").write_text(GPU_BAD)
    (ws / "ok.yaml").write_text(GPU_BAD.replace("requests:", "limits:").replace("name: p", "name: q"))
    cache = tmp_path / "cache"
    runs = []
    for n in range(2):
        runner = tmp_path / f"job{n}"
        runner.mkdir()
        code, stdout, outputs, summary = run_action(
            ws, runner, env_extra={"AILINT_CACHE_DIR": str(cache)}, **{"results-cache": "true"}
        )
        shown = stdout.replace(str(runner), "RUNNER")  # (the install step names the runner's folder)
        runs.append((code, shown, {k: v for k, v in outputs.items() if k != "sarif-file"}))
        runs[-1] += (summary.replace(str(runner), "RUNNER"),)
        runs[-1] += (_read(outputs["sarif-file"]).replace(str(runner), "RUNNER"),)
        assert list(cache.glob("results-v*")), "the results are kept in the cache folder"
        for f in ws.iterdir():  # the next job's checkout
            os.utime(f, (f.stat().st_atime + 10, f.stat().st_mtime + 10))
    assert runs[0] == runs[1] and runs[0][0] == 1 and "::error file=pod.yaml" in runs[0][1]
    for n, (given, extra) in enumerate((({}, {}), ({"results-cache": "true"}, {"AILINT_NO_CACHE": "1"}))):
        runner = tmp_path / f"off{n}"
        runner.mkdir()
        none = tmp_path / f"none{n}"
        code, *_ = run_action(ws, runner, env_extra={"AILINT_CACHE_DIR": str(none), **extra}, **given)
        assert code == 1 and not list(none.glob("results-v*"))
    runner = tmp_path / "bad"
    runner.mkdir()
    code, stdout, outputs, _ = run_action(ws, runner, **{"results-cache": "sometimes"})
    assert code == 2 and "::error title=ailint::results-cache: expected true or false" in stdout


def test_action_process_starts_and_ends_as_a_check_does(tmp_path):
    """The action's one run is set up as `ailint check` is (`lean.prepare`): its start-up code
    is served from, and kept in, the cache folder's code table, which an `actions/cache` step
    restores for the next job; the run's output and exit code are the same either way."""
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / "pod.yaml").write_text(GPU_BAD)
    cache = tmp_path / "cache"
    reports = []
    for n in range(2):
        runner = tmp_path / f"job{n}"
        runner.mkdir()
        code, stdout, outputs, _ = run_action(ws, runner, env_extra={"AILINT_CACHE_DIR": str(cache)})
        assert list(cache.glob("code-*.bin")), "the start-up code is kept for the next run"
        reports.append((code, stdout.replace(str(runner), "RUNNER"), _read(outputs["sarif-file"])))
    assert reports[0] == reports[1] and reports[0][0] == 1 and "::error file=pod.yaml" in reports[0][1]


def test_annotations_are_capped_per_type(tmp_path):
    ws = tmp_path / "repo"
    ws.mkdir()
    for i in range(14):
        (ws / f"p{i}.yaml").write_text(GPU_BAD)
    code, stdout, _outputs, _ = run_action(ws, tmp_path, **{"fail-on": "never"})
    assert code == 0
    errors = [line for line in stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 10
    assert re.search(r"::notice title=ailint::\d+ more findings", stdout)


def test_deploy_manifests_have_no_error_findings():
    from ailint.engine.config import Settings
    from ailint.engine.run import lint

    result = lint([str(ROOT / "deploy")], Settings(root=str(ROOT)))
    assert result.files and not [f for f in result.findings if f.severity.value == "error"], result.findings


def test_pre_commit_hooks_file():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    ids = {h["id"]: h for h in hooks}
    assert ids["ailint"]["entry"] == "ailint check" and ids["ailint"]["language"] == "python"
    assert ids["ailint-fix"]["entry"].startswith("ailint check --fix")


@pytest.mark.skipif(shutil.which("git") is None, reason="git needed")
def test_pre_commit_try_repo(tmp_path):
    """`pre-commit try-repo` installs the hook from this working tree, as users would."""
    pre_commit = shutil.which("pre-commit") or os.path.join(os.path.dirname(sys.executable), "pre-commit")
    if not os.path.exists(pre_commit):
        pytest.skip("pre-commit is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main"]
    subprocess.run(git + ["init", "-q"], cwd=repo, check=True)
    (repo / "bad.yaml").write_text(GPU_BAD)
    (repo / "good.yaml").write_text(GPU_BAD.replace("requests:", "limits:"))
    (repo / ".ailint.yaml").write_text("select: [GPU002]\n")  # the repo's own config is honoured
    subprocess.run(git + ["add", "."], cwd=repo, check=True)
    env = dict(os.environ, PRE_COMMIT_HOME=str(ROOT / ".pre-commit-cache"))
    # one install from the working tree (try-repo uses a fresh store every time): both files
    both = subprocess.run(
        [pre_commit, "try-repo", str(ROOT), "ailint", "--files", "bad.yaml", "good.yaml"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert both.returncode == 1, both.stdout + both.stderr
    assert "bad.yaml:" in both.stdout and "GPU002" in both.stdout
    assert "good.yaml:" not in both.stdout
    # the clean file alone passes: the same hook definition, run as a local hook
    from tests_support import local_hook_config

    config = local_hook_config(tmp_path, ROOT)
    good = subprocess.run(
        [pre_commit, "run", "--config", str(config), "ailint", "--files", "good.yaml"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert good.returncode == 0, good.stdout + good.stderr
