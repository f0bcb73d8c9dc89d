"""The doors on real git repositories: context files, --since, --only-changed-lines, the
Action on a pull_request event, discovery's skip list, and fingerprints."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from test_integrations import GPU_BAD, run_action
from tests_support import local_hook_config

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git needed")

GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main"]

NODEPOOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu-inference
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["g6e"]
      taints:
        - key: dedicated
          value: ml-inference
          effect: NoSchedule
"""

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: ai
spec:
  replicas: 2
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      tolerations:
        - key: CriticalAddonsOnly
          operator: Exists
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          resources:
            limits:
              nvidia.com/gpu: 1
"""

# two TRN003 findings on `spec:` (the cluster outlives the job; no deadline)
RAYJOB = """apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: train
spec:
  entrypoint: python train.py
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers:
            - name: head
              image: rayproject/ray:2.9.0
    workerGroupSpecs:
      - groupName: gpu
        replicas: 1
        template:
          spec:
            containers:
              - name: w
                image: rayproject/ray:2.9.0
                resources:
                  limits:
                    nvidia.com/gpu: 1
"""


def git(repo, *args: str) -> str:
    return subprocess.run(GIT + list(args), cwd=repo, check=True, capture_output=True, text=True).stdout


def ailint(cwd, *args: str) -> subprocess.CompletedProcess:
    exe = os.path.join(os.path.dirname(sys.executable), "ailint")
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def codes(proc: subprocess.CompletedProcess) -> list[tuple[str, str]]:
    assert proc.returncode in (0, 1), proc.stderr
    return [(f["code"], f["file"]) for f in json.loads(proc.stdout)["findings"]]


# -- context -------------------------------------------------------------------------------
@pytest.fixture
def split_repo(tmp_path):
    """A repository whose GPU Deployment and NodePool live in different folders."""
    repo = tmp_path / "repo"
    (repo / "infra").mkdir(parents=True)
    (repo / "apps").mkdir()
    (repo / "infra" / "nodepool.yaml").write_text(NODEPOOL)
    (repo / "apps" / "vllm.yaml").write_text(DEPLOYMENT)
    git(repo, "init", "-q")
    return repo


def test_context_flag_joins_but_does_not_report(split_repo):
    alone = codes(ailint(split_repo, "check", "--no-config", "--format", "json", "apps/vllm.yaml"))
    assert "GPU001" not in {c for c, _ in alone}
    joined = ailint(split_repo, "check", "--no-config", "--format", "json", "apps/vllm.yaml", "--context", "infra")
    found = codes(joined)
    assert ("GPU001", "apps/vllm.yaml") in found
    assert all(f == "apps/vllm.yaml" for _, f in found)  # the NodePool's own findings stay out
    report = json.loads(joined.stdout)
    assert report["summary"]["context_files"] == 1 and [f["path"] for f in report["files"]] == ["apps/vllm.yaml"]


def test_context_file_also_linted_is_reported(split_repo):
    both = codes(
        ailint(
            split_repo,
            "check",
            "--no-config",
            "--format",
            "json",
            "apps/vllm.yaml",
            "infra/nodepool.yaml",
            "--context",
            "infra",
        )
    )
    assert any(f == "infra/nodepool.yaml" for _, f in both)


def test_config_context_globs_are_relative_to_the_config(split_repo, tmp_path):
    (split_repo / ".ailint.yaml").write_text('context: ["infra/**/*.yaml"]\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = codes(ailint(split_repo / "apps", "check", "--format", "json", "vllm.yaml"))
    assert ("GPU001", "apps/vllm.yaml") in found


def _pre_commit() -> str:
    exe = shutil.which("pre-commit") or os.path.join(os.path.dirname(sys.executable), "pre-commit")
    if not os.path.exists(exe):
        pytest.skip("pre-commit is not installed")
    return exe


def test_pre_commit_sees_the_repository_through_context(split_repo):
    """A staged Deployment, its NodePool committed earlier and not staged: GPU001 only with `context`."""
    pre_commit = _pre_commit()
    git(split_repo, "add", "infra/nodepool.yaml")
    git(split_repo, "commit", "-q", "-m", "infra")
    git(split_repo, "add", "apps/vllm.yaml")
    env = dict(os.environ, PRE_COMMIT_HOME=str(ROOT / ".pre-commit-cache"))
    config = local_hook_config(split_repo.parent, ROOT)  # the hook as defined, run on the staged files

    def hook() -> subprocess.CompletedProcess:
        return subprocess.run(
            [pre_commit, "run", "--config", str(config), "ailint"],
            cwd=split_repo,
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )

    (split_repo / ".ailint.yaml").write_text("select: [GPU001]\n")
    without = hook()
    assert "GPU001" not in without.stdout and without.returncode == 0, without.stdout + without.stderr
    (split_repo / ".ailint.yaml").write_text('select: [GPU001]\ncontext: ["infra/**"]\n')
    with_context = hook()
    assert with_context.returncode == 1, with_context.stdout + with_context.stderr
    assert "GPU001" in with_context.stdout and "apps/vllm.yaml" in with_context.stdout
    assert "infra/nodepool.yaml:" not in with_context.stdout


# -- --since, --only-changed-lines, the Action on a pull request ------------------------------
@pytest.fixture
def pr_repo(tmp_path):
    """main: a tree with old findings; branch `feature`: one new faulty manifest and an
    unrelated edit above an old finding."""
    repo = tmp_path / "ws"
    repo.mkdir()
    (repo / "old.yaml").write_text(NODEPOOL + "---\n" + DEPLOYMENT)
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs: {}\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "new.yaml").write_text(GPU_BAD)
    old = (repo / "old.yaml").read_text()
    (repo / "old.yaml").write_text("# owned by the platform team\n" + old.replace("replicas: 2", "replicas: 3"))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "feature")
    return repo, base


def test_since_reports_only_new_findings(pr_repo):
    repo, _ = pr_repo
    every = codes(ailint(repo, "check", "--no-config", "--format", "json", "."))
    assert {f for _, f in every} == {"old.yaml", "new.yaml"}
    new = codes(ailint(repo, "check", "--no-config", "--format", "json", "--since", "main", "."))
    assert new and {f for _, f in new} == {"new.yaml"}
    assert sorted(new) == sorted(x for x in every if x[1] == "new.yaml")
    # the work tree was not touched: still on the branch, nothing modified
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "feature"
    assert git(repo, "status", "--porcelain") == ""


def test_since_skips_the_revision_run_when_no_manifest_changed(pr_repo, monkeypatch):
    """A change that touches no file the run reads (code, docs) has the revision's findings
    already: they are the work tree's. REF's tree is not written or linted; once a manifest
    differs (here an untracked one), it is, and only that manifest's findings are new."""
    from ailint.doors.cli import cli
    from ailint.engine import since
    from click.testing import CliRunner

    repo, _ = pr_repo
    git(repo, "checkout", "-q", "-b", "code-only")
    (repo / "app.py").write_text("print('serving')\n")
    (repo / "README.md").write_text("# serving\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "code only")
    written: list[str] = []
    real = since.write_tree

    def write_tree(commit, top, dest, wanted):
        written.append(commit)
        return real(commit, top, dest, wanted)

    monkeypatch.setattr(since, "write_tree", write_tree)
    monkeypatch.chdir(repo)
    args = ["check", "--no-config", "--no-cache", "--format", "json", "--since", "feature", "."]
    quiet = CliRunner().invoke(cli, args)
    assert quiet.exit_code == 0 and json.loads(quiet.output)["findings"] == [] and written == []
    assert json.loads(CliRunner().invoke(cli, args[:-3] + ["."]).output)["findings"], "the tree has findings"
    (repo / "more.yaml").write_text(GPU_BAD)
    loud = CliRunner().invoke(cli, args)
    assert written and {f["file"] for f in json.loads(loud.output)["findings"]} == {"more.yaml"}


def test_since_takes_the_unchanged_files_from_the_work_tree_run(tmp_path, monkeypatch):
    """REF's run takes each file whose text is unchanged from the work tree's run
    (`run.reused`) and parses only the others, with the findings of a run that parses
    everything: here an InferenceService left as it was is judged against REF's runtime
    (tensor parallel 8 on 4 GPUs: SRV004), not the work tree's (4), in one process and in
    two."""
    from ailint.engine import run as run_module
    from ailint.engine import since
    from ailint.engine.config import load_settings

    runtime, isvc = (ROOT / "fixtures" / "SRV004" / "pass_kserve_runtime_tp_matches.yaml").read_text().split("\n---\n")
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "fixtures" / "KRP003", repo / "pools", ignore=shutil.ignore_patterns("*.expected"))
    (repo / "serving").mkdir()
    (repo / "serving" / "runtime.yaml").write_text(
        runtime.replace("--tensor-parallel-size=4", "--tensor-parallel-size=8")
    )
    (repo / "serving" / "isvc.yaml").write_text(isvc)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "serving" / "runtime.yaml").write_text(runtime)
    gone = sorted((repo / "pools").glob("*.yaml"))[0]
    gone.unlink()
    monkeypatch.chdir(repo)
    settings = load_settings(None, no_config=True, cwd=str(repo))
    taken: list[str] = []
    real = run_module.reused

    def counted(c, s, parsed):
        got = real(c, s, parsed)
        if got is not None:
            taken.append(c.display)
        return got

    monkeypatch.setattr(run_module, "reused", counted)
    for jobs in (1, 2):
        head = run_module.lint(["."], settings, jobs=jobs, keep_parsed=True)
        assert head.parsed and not any(f.code == "SRV004" for f in head.findings)
        again = since.findings_at("HEAD", ["."], settings, str(repo), jobs=jobs, reuse=head.parsed)
        parsed_all = since.findings_at("HEAD", ["."], settings, str(repo), jobs=jobs)
        # (reported at the runtime's argument, the field its author wrote)
        assert again == parsed_all and any(f.code == "SRV004" and f.file == "serving/runtime.yaml" for f in again)
    assert "serving/isvc.yaml" in taken and "serving/runtime.yaml" not in taken


def test_unchanged_since_counts_every_file_a_run_reads(tmp_path):
    """`since.unchanged_since`: manifests (tracked, untracked, ignored when the run reads
    ignored files too), `.gitignore` files, and symlinks decide; other files do not."""
    from ailint.engine.since import unchanged_since

    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "a.yaml").write_text("kind: ConfigMap\n")
    (repo / "code.py").write_text("x = 1\n")
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    commit = git(repo, "rev-parse", "HEAD").strip()
    top = os.path.realpath(repo)

    def manifest(rel: str) -> bool:
        return rel.endswith((".yaml", ".yml", ".json"))

    def same(with_ignored: bool = False) -> bool:
        return unchanged_since(commit, top, manifest, with_ignored=with_ignored)

    assert same()
    (repo / "code.py").write_text("x = 2\n")
    (repo / "notes.txt").write_text("untracked, not a manifest\n")
    assert same(), "files a run does not read"
    (repo / "build").mkdir()
    (repo / "build" / "out.yaml").write_text("kind: ConfigMap\n")
    assert same() and not same(with_ignored=True), "an ignored manifest counts when ignored files are read"
    (repo / "b.yaml").write_text("kind: ConfigMap\n")
    assert not same(), "an untracked manifest"
    (repo / "b.yaml").unlink()
    (repo / "a.yaml").write_text("kind: Secret\n")
    assert not same(), "a changed manifest"
    git(repo, "checkout", "-q", "--", "a.yaml")
    (repo / ".gitignore").write_text("build/\ndist/\n")
    assert not same(), "a .gitignore decides what is read"
    git(repo, "checkout", "-q", "--", ".gitignore")
    (repo / "a.yaml").unlink()
    assert not same(), "a removed manifest"
    git(repo, "checkout", "-q", "--", "a.yaml")
    assert same()
    os.symlink("a.yaml", repo / "link.yaml")
    git(repo, "add", "link.yaml")
    git(repo, "commit", "-q", "-m", "link")
    commit = git(repo, "rev-parse", "HEAD").strip()
    assert not same(), "a symlinked manifest: REF's tree is written without it"
    git(repo, "rm", "-q", "link.yaml")
    git(repo, "commit", "-q", "-m", "no link")
    commit = git(repo, "rev-parse", "HEAD").strip()
    assert same()
    git(repo, "update-index", "--assume-unchanged", "a.yaml")
    assert not same(), "git diff would not see an edit of a file it is told not to look at"


def test_since_unknown_revision_is_a_usage_error(pr_repo):
    repo, _ = pr_repo
    proc = ailint(repo, "check", "--no-config", "--since", "no-such-branch", ".")
    assert proc.returncode == 2 and "no-such-branch" in proc.stderr and "Traceback" not in proc.stderr


def test_only_changed_lines(pr_repo):
    repo, _ = pr_repo
    old = (repo / "old.yaml").read_text()
    (repo / "old.yaml").write_text(old.replace("          effect: NoSchedule\n", "          effect: NoSchedule\n", 1))
    # the replicas line changed on the branch; the findings on other lines of old.yaml did not
    changed = codes(
        ailint(repo, "check", "--no-config", "--format", "json", "--only-changed-lines", "--since", "main", ".")
    )
    every = codes(ailint(repo, "check", "--no-config", "--format", "json", "."))
    assert {f for _, f in changed} <= {"new.yaml", "old.yaml"}
    assert sorted(x for x in changed if x[1] == "new.yaml") == sorted(x for x in every if x[1] == "new.yaml")
    assert len([x for x in changed if x[1] == "old.yaml"]) < len([x for x in every if x[1] == "old.yaml"])
    # against HEAD (the branch itself) nothing differs
    assert codes(ailint(repo, "check", "--no-config", "--format", "json", "--only-changed-lines", ".")) == []


def test_action_on_pull_request_annotates_only_new_findings(pr_repo, tmp_path):
    repo, base = pr_repo
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7, "base": {"sha": base}, "head": {"sha": "x"}}}))
    extra = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)}
    code, stdout, outputs, summary = run_action(repo, tmp_path, env_extra=extra, **{"fail-on": "never"})
    assert code == 0, stdout
    notes = [line for line in stdout.splitlines() if line.startswith(("::error ", "::warning ", "::notice file"))]
    assert notes and all("file=new.yaml" in line for line in notes), notes
    sarif = json.loads(Path(outputs["sarif-file"]).read_text())
    files = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
    assert "old.yaml" in files and "new.yaml" in files  # the SARIF keeps the whole picture
    assert int(outputs["total-findings"]) > int(outputs["findings"]) > 0
    assert "new findings since" in summary
    # no summary row is located in old.yaml (a new finding's message may still name it as the other object)
    assert not re.search(r"\| \[?old\.yaml:\d+", summary), summary
    assert ".github/workflows" not in stdout + summary  # not a manifest: skipped, no YML008


def test_action_on_push_reports_everything(pr_repo, tmp_path):
    repo, _ = pr_repo
    code, stdout, outputs, _ = run_action(
        repo, tmp_path, env_extra={"GITHUB_EVENT_NAME": "push"}, **{"fail-on": "never"}
    )
    assert code == 0 and outputs["findings"] == outputs["total-findings"]
    assert "file=old.yaml" in stdout


@pytest.mark.parametrize(
    ("inputs", "needle"),
    [
        ({"fail-on": "warn"}, "fail-on"),
        ({"annotations": "maybe"}, "annotations"),
        ({"new-findings-only": "sometimes"}, "new-findings-only"),
        ({"config": "no/such/.ailint.yaml"}, "config"),
    ],
)
def test_action_bad_inputs_fail_with_an_error_line_and_a_sarif_file(tmp_path, inputs, needle):
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / "pod.yaml").write_text(GPU_BAD)
    code, stdout, outputs, _ = run_action(ws, tmp_path, **inputs)
    assert code == 2 and "Traceback" not in stdout
    assert any(line.startswith("::error title=ailint::" + needle) for line in stdout.splitlines()), stdout
    sarif = json.loads(Path(outputs["sarif-file"]).read_text())
    assert sarif["runs"][0]["invocations"][0]["executionSuccessful"] is False


# -- discovery -----------------------------------------------------------------------------
def test_walk_skips_non_manifests_and_counts_them(tmp_path):
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    (tmp_path / ".pre-commit-config.yaml").write_text("repos: []\n")
    (tmp_path / ".pre-commit-hooks.yaml").write_text("- id: x\n")
    (tmp_path / ".ailint.yaml").write_text("select: [GPU]\n")
    (tmp_path / "baseline.json").write_text('{"version": 1, "tool": "ailint", "fingerprints": []}\n')
    (tmp_path / "package.json").write_text('{"name": "x"}\n')
    (tmp_path / "docker-compose.yml").write_text("services: {}\n")
    (tmp_path / "chart").mkdir()
    (tmp_path / "chart" / "Chart.yaml").write_text("name: c\nversion: 1.0.0\n")
    (tmp_path / "chart" / "values.yaml").write_text("replicas: 2\n")
    (tmp_path / "chart" / "values-prod.yaml").write_text("replicas: 3\n")
    (tmp_path / "pod.json").write_text(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}))
    (tmp_path / "values-dev.yaml").write_text("replicas: 1\n")
    (tmp_path / "stray.yaml").write_text("replicas: 3\n")  # not known to be something else: YML008
    proc = ailint(tmp_path, "check", "--format", "json", ".")
    report = json.loads(proc.stdout)
    # a chart folder is rendered as a whole when rendering is available (chart/Chart.yaml)
    assert sorted(f["path"] for f in report["files"] if f["path"] != "chart/Chart.yaml") == ["pod.json", "stray.yaml"]
    assert [f["code"] for f in report["findings"] if f["file"] == "stray.yaml"] == ["YML008"]
    assert not [f for f in report["findings"] if f["code"] == "YML008" and f["file"] != "stray.yaml"]
    skipped = report["summary"]["skipped"]
    assert skipped["files"] == 11
    assert skipped["by_reason"] == {
        "Compose file": 1,
        "GitHub workflow": 1,
        "Helm chart file": 1,
        "Helm values file": 3,
        "JSON without apiVersion and kind": 1,
        "ailint baseline": 1,
        "ailint config": 1,
        "pre-commit file": 2,
    }
    named = codes(ailint(tmp_path, "check", "--no-config", "--format", "json", "package.json", "values-dev.yaml"))
    assert sorted(named) == [("YML008", "package.json"), ("YML008", "values-dev.yaml")]


# -- fingerprints --------------------------------------------------------------------------
def _lint_text(tmp_path, name: str, text: str):
    from ailint.engine.config import Settings
    from ailint.engine.run import lint

    (tmp_path / name).write_text(text)
    return lint([str(tmp_path / name)], Settings(root=str(tmp_path))).findings


def test_fingerprints_are_unique_per_finding(tmp_path):
    from ailint.engine.baseline import fingerprint, fingerprints

    findings = _lint_text(tmp_path, "job.yaml", RAYJOB)
    trn = [f for f in findings if f.code == "TRN003"]
    assert len(trn) == 2 and trn[0].span.line == trn[1].span.line  # two findings on one line
    assert fingerprint(trn[0]) != fingerprint(trn[1])
    fps = fingerprints(findings)
    assert len(set(fps)) == len(findings)
    # the same words on the same field twice still get two fingerprints
    doubled = fingerprints([trn[0], trn[0]])
    assert len(set(doubled)) == 2


def test_fingerprints_stable_across_unrelated_edits(tmp_path):
    from ailint.engine.baseline import fingerprints

    before = fingerprints(_lint_text(tmp_path, "a.yaml", RAYJOB + "---\n" + GPU_BAD))
    edited = "# a comment\n\n" + RAYJOB.replace("python train.py", "python train.py --epochs 3")
    edited += "---\n" + GPU_BAD.replace("name: c", "name: c\n      command: [serve]")
    after = fingerprints(_lint_text(tmp_path, "a.yaml", edited))
    assert sorted(before) == sorted(after)
