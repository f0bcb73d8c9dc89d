"""`--scope run|repo|dir`: what the cross-resource rules join (ailint.engine.scope).

Two unrelated git repositories linted in one run: a Spot NodePool of one must not host the
GPU Deployment of the other (REL006) unless `--scope run` asks for one cluster."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

POOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu-spot
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["spot", "on-demand"]
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["g5", "g6"]
      taints:
        - key: nvidia.com/gpu
          effect: NoSchedule
"""

VLLM = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "Qwen/Qwen2.5-7B-Instruct"]
          resources:
            limits:
              nvidia.com/gpu: 1
"""

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git_init(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)


def _two_repos(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "infra", tmp_path / "serving"
    _git_init(a)
    _git_init(b)
    (a / "pool.yaml").write_text(POOL)
    (b / "deploy").mkdir()
    (b / "deploy" / "vllm.yaml").write_text(VLLM)
    return a, b


def _codes(
    args: list[str], cwd: Path, cache_dir: Path | None = None, select: str = "REL006,GPU001"
) -> list[tuple[str, str, int]]:
    env = {**os.environ}
    if cache_dir is None:
        args = [*args, "--no-cache"]
    else:
        env["AILINT_CACHE_DIR"] = str(cache_dir)
        env.pop("AILINT_NO_CACHE", None)
    out = subprocess.run(
        [sys.executable, "-m", "ailint", "check", *args, "--format", "json", "--select", select],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode in (0, 1), out.stderr
    data = json.loads(out.stdout)
    return sorted((f["code"], f["file"], f["line"]) for f in data["findings"])


@needs_git
def test_repo_scope_keeps_another_repositorys_nodepool_out(tmp_path: Path) -> None:
    _two_repos(tmp_path)
    joined = _codes(["infra", "serving", "--scope", "run"], tmp_path)
    assert [c for c, _, _ in joined].count("REL006") == 2  # the pool hosts the other repo's pods
    assert all(f.endswith("vllm.yaml") for _, f, _ in joined)
    assert _codes(["infra", "serving", "--scope", "repo"], tmp_path) == []
    assert _codes(["infra", "serving"], tmp_path) == []  # repo is the default


POLICY = """apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: team-label
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: ["apps"]
        apiVersions: ["v1"]
        operations: ["CREATE", "UPDATE"]
        resources: ["deployments"]
  validations:
    - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
      message: deployments carry a team label
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: team-label
spec:
  policyName: team-label
  validationActions: [Deny]
"""


@needs_git
def test_a_repositorys_admission_policy_judges_only_its_own_objects(tmp_path: Path) -> None:
    a, _ = _two_repos(tmp_path)
    (a / "policy.yaml").write_text(POLICY)
    joined = _codes(["infra", "serving", "--scope", "run"], tmp_path, select="POL")
    assert [c for c, _, _ in joined] == ["POL001"] and joined[0][1].endswith("vllm.yaml")
    assert _codes(["infra", "serving"], tmp_path, select="POL") == []  # repo scope, the default


@needs_git
def test_a_context_policy_judges_every_repository(tmp_path: Path) -> None:
    """A cluster's admission policy given with `--context` joins every repository, as its
    NodePools join every repository's cross-resource rules: both repositories' Deployments
    without a team label are judged (not only the first project's), each once."""
    a, _ = _two_repos(tmp_path)
    (a / "vllm.yaml").write_text(VLLM.replace("name: vllm", "name: vllm-infra"))
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "policy.yaml").write_text(POLICY)
    for cache in (None, tmp_path / "c", tmp_path / "c"):  # fresh, cached, and the rerun
        found = _codes(["infra", "serving", "--context", "cluster"], tmp_path, cache, select="POL")
        assert [(c, Path(f).parts[0]) for c, f, _ in found] == [("POL001", "infra"), ("POL001", "serving")]


@needs_git
def test_a_broken_policy_file_is_reported_once_for_all_repositories(tmp_path: Path) -> None:
    """`--policies` files are read once for the run; the pass runs once per repository, and
    a policy file's own problem (a YAML error) is one finding, not one per repository."""
    a, _ = _two_repos(tmp_path)
    (a / "vllm.yaml").write_text(VLLM.replace("name: vllm", "name: vllm-infra"))
    (tmp_path / "good.yaml").write_text(POLICY)
    (tmp_path / "broken.yaml").write_text("kind: ValidatingAdmissionPolicy\nmetadata: {name: x\n")
    args = ["infra", "serving", "--policies", "good.yaml", "--policies", "broken.yaml"]
    found = _codes(args, tmp_path, select="POL,YML")
    assert [(c, Path(f).parts[0]) for c, f, _ in found] == [
        ("POL001", "infra"),
        ("POL001", "serving"),
        ("YML001", "broken.yaml"),
    ]


@needs_git
def test_same_repository_still_joins_and_dir_scope_splits_folders(tmp_path: Path) -> None:
    a, b = _two_repos(tmp_path)
    shutil.move(str(a / "pool.yaml"), str(b / "pool.yaml"))  # the pool now lives in the serving repo
    assert len(_codes(["serving"], tmp_path)) == 2
    assert len(_codes(["serving", "--scope", "repo"], tmp_path)) == 2
    assert _codes(["serving", "--scope", "dir"], tmp_path) == []  # deploy/ and the repo root differ


def test_outside_git_the_given_paths_are_the_projects(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "one" / "pool.yaml").write_text(POOL)
    (tmp_path / "two" / "vllm.yaml").write_text(VLLM)
    if subprocess.run(["git", "-C", str(tmp_path), "rev-parse"], capture_output=True, check=False).returncode == 0:
        pytest.skip("the temporary folder lies inside a git work tree")
    assert _codes(["one", "two"], tmp_path) == []  # two given folders: two projects
    assert len(_codes(["."], tmp_path)) == 2  # one given folder: one project
    assert len(_codes(["one", "two", "--scope", "run"], tmp_path)) == 2


@needs_git
def test_scope_cached_and_uncached_identical(tmp_path: Path) -> None:
    a, b = _two_repos(tmp_path)
    cache = tmp_path / "cache"
    for scope in ("repo", "run", "repo", "dir", "run"):
        args = ["infra", "serving", "--scope", scope]
        assert _codes(args, tmp_path, cache) == _codes(args, tmp_path)
    # the pool moves into the serving repository: the cached repo-scope run sees the join
    shutil.move(str(a / "pool.yaml"), str(b / "pool.yaml"))
    args = ["infra", "serving", "--scope", "repo"]
    assert _codes(args, tmp_path, cache) == _codes(args, tmp_path)
    assert len(_codes(args, tmp_path, cache)) == 2
    # a `.git` removed: the same files now form one project (the given folder)
    shutil.move(str(b / "pool.yaml"), str(a / "pool.yaml"))
    shutil.rmtree(a / ".git")
    shutil.rmtree(b / ".git")
    args = ["."]
    first = _codes(args, tmp_path, cache)
    assert first == _codes(args, tmp_path) and len(first) == 2


def test_config_scope_key(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "pool.yaml").write_text(POOL)
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "vllm.yaml").write_text(VLLM)
    (tmp_path / ".ailint.yaml").write_text("scope: dir\n")
    assert _codes(["."], tmp_path) == []
    (tmp_path / ".ailint.yaml").write_text("scope: run\n")
    assert len(_codes(["."], tmp_path)) == 2
    (tmp_path / ".ailint.yaml").write_text("scope: everything\n")
    out = subprocess.run(
        [sys.executable, "-m", "ailint", "check", ".", "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2 and "scope" in out.stderr, out.stderr
