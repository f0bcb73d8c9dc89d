#!/usr/bin/env python3
"""Speed of the doors: a pre-commit run (5 staged files, a 200-file context) and a webhook request.

    python bench/doors.py [--ailint PATH/TO/ailint] [--runs 7] [--requests 300]

The repository is generated under a temporary folder from the fixtures (200 manifests in
`infra/`, 5 in `apps/`, a git repository as pre-commit sees it). Timed as whole processes,
as the hook runs them (`ailint check FILES`), median of `--runs` after one discarded warm-up:

- `5 files`: `ailint check apps/*.yaml` (what the hook ran before context files existed);
- `5 files + 200 context`: the same with `--context infra` (skipped when the ailint under test
  has no `--context`);
- `205 files`: `ailint check apps infra` (the only way to get the joins before).

The webhook request is timed in-process on the interpreter of that ailint: the
`Reviewer.review` of one AdmissionReview (the vLLM Deployment of the README), median and p95
over `--requests` after a warm-up; no HTTP (bench/webhook_latency.py measures the server).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "vllm", "namespace": "ai"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "vllm"}},
        "template": {
            "metadata": {"labels": {"app": "vllm"}},
            "spec": {
                "containers": [
                    {
                        "name": "vllm",
                        "image": "vllm/vllm-openai:v0.9.2",
                        "args": ["--model", "Qwen/Qwen2.5-7B-Instruct", "--tensor-parallel-size", "2"],
                        "resources": {"limits": {"nvidia.com/gpu": 1}},
                        "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                    }
                ]
            },
        },
    },
}

REVIEW_SNIPPET = """
import json, statistics, sys, time
try:
    from ailint.doors.webhook import Reviewer
    from ailint.engine.config import Settings
except ImportError:  # the layout before linter/ had subpackages
    from ailint.webhook import Reviewer
    from ailint.config import Settings
obj = json.loads(sys.argv[1]); n = int(sys.argv[2])
r = Reviewer(Settings()); r.warm()
body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u", "operation": "CREATE", "object": obj}}
for _ in range(20):
    r.review(json.loads(json.dumps(body)))
ms = []
for _ in range(n):
    b = json.loads(json.dumps(body))
    t = time.perf_counter(); answer, codes, _ = r.review(b); ms.append((time.perf_counter() - t) * 1000)
ms.sort()
print(json.dumps({"p50": statistics.median(ms), "p95": ms[int(len(ms) * 0.95) - 1],
                  "codes": sorted(set(codes)), "warnings": answer["response"].get("warnings", [])}))
"""


def make_repo(dest: Path) -> None:
    files = sorted(f for f in glob.glob(str(ROOT / "fixtures" / "*" / "*.yaml")) if not f.endswith(".fixed.yaml"))
    (dest / "infra").mkdir(parents=True)
    (dest / "apps").mkdir()
    for i, f in enumerate(files[:200]):
        shutil.copy(f, dest / "infra" / f"m{i:03}.yaml")
    for i, f in enumerate(files[200:205]):
        shutil.copy(f, dest / "apps" / f"a{i}.yaml")
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)


def timed(cmd: list[str], cwd: Path, runs: int) -> float:
    subprocess.run(cmd, cwd=cwd, capture_output=True)  # warm-up: bytecode, page cache
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, capture_output=True)
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ailint", default=str(Path(sys.executable).with_name("ailint")))
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--requests", type=int, default=300)
    args = ap.parse_args()
    exe = args.ailint
    python = str(Path(exe).with_name("python"))
    has_context = "--context" in subprocess.run([exe, "check", "--help"], capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory(prefix="ailint-doors-") as tmp:
        repo = Path(tmp)
        make_repo(repo)
        apps = sorted(str(p.relative_to(repo)) for p in (repo / "apps").glob("*.yaml"))
        base = [exe, "check", "--no-config", "--format", "json", *apps]
        rows = [("5 files", timed(base, repo, args.runs))]
        if has_context:
            rows.append(("5 files + 200 context", timed([*base, "--context", "infra"], repo, args.runs)))
        rows.append(
            ("205 files", timed([exe, "check", "--no-config", "--format", "json", "apps", "infra"], repo, args.runs))
        )
    env = dict(os.environ, PYTHONPATH="")
    review = subprocess.run(
        [python, "-c", REVIEW_SNIPPET, json.dumps(DEPLOYMENT), str(args.requests)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    hook = json.loads(review.stdout)
    print(f"ailint: {exe}  (nproc {os.cpu_count()}, load {os.getloadavg()[0]:.2f})")
    for label, secs in rows:
        print(f"  pre-commit {label:<24} {secs * 1000:7.0f} ms")
    print(f"  webhook review of one Deployment  p50 {hook['p50']:.2f} ms, p95 {hook['p95']:.2f} ms")
    print(f"    codes: {', '.join(hook['codes'])}")
    for w in hook["warnings"]:
        print(f"    warning: {w}")


if __name__ == "__main__":
    main()
