#!/usr/bin/env python3
"""Random edits between cached runs, each checked against a fresh run: the results cache's fuzzer.

    python bench/cache_fuzz.py                          # the plain corpus, 60 rounds, seed 1
    python bench/cache_fuzz.py --seed 7 --rounds 200 --jobs 1
    python bench/cache_fuzz.py --context                # cluster objects moved to a --context folder
    AILINT_BOUNDED=1 python bench/cache_fuzz.py         # the bounded-memory path (pack segments)
    python bench/cache_fuzz.py --source fixtures/GPU001 --rounds 3
    python bench/cache_fuzz.py --arg=--scope --arg=dir      # every folder a project

Why: a cached rerun must report exactly what a fresh run reports, and the bundle phase's
reuse (`ailint.engine.tracking`) decides per call what an edit can have changed. The suite's
tests edit fixed trees; this edits a copy of real manifests at random, spread over projects
(about half the corpus folders get a `.git`, so each is a repository of its own), with edits
aimed at what other objects read: NodePool taints, runtimes, DRA claims, PDB and Service
selectors, RBAC verbs, namespaces, names and kinds, plus comments, removals, copies and
moves into another project. Each round runs `ailint check --format json` with the cache and
with `--no-cache` and compares the bytes. It found the two invalidation gaps fixed on
2026-12-07 (a catalogue object's edit in another project, a context file's edit).

On a mismatch it prints the round's edits and the findings only one run had, keeps the tree
(`--work`) for a look, and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"

# (what a file must hold, a pattern in it, its replacement; None: a comment appended)
EDITS: list[tuple[str, str | None, str]] = [
    ("kind: NodePool", r"effect: NoSchedule", "effect: PreferNoSchedule"),
    ("kind: NodePool", r"nvidia\.com/gpu", "nvidia.com/gpx"),
    ("kind: NodePool", r"consolidationPolicy: \w+", "consolidationPolicy: WhenEmpty"),
    ("ServingRuntime", r"image: \S+", "image: vllm/vllm-openai:latest"),
    ("ServingRuntime", r"--tensor-parallel-size[= ]\d", "--tensor-parallel-size=8"),
    ("ServingRuntime", r"name: (\S+)", r"name: \1-x"),
    ("InferenceService", r"nvidia\.com/gpu: \"?\d+\"?", "nvidia.com/gpu: 4"),
    ("ResourceClaim", r"deviceClassName: \S+", "deviceClassName: nic.example.com"),
    ("kind: PodDisruptionBudget", r"app: ", "app: x-"),
    ("kind: Kustomization", r"- (\S+\.yaml)", r"- x-\1"),
    ("kind: Service\n", r"app: ", "app: y-"),
    ("kind: ClusterRole", r"- delete", "- get"),
    ("kind: ClusterRole", r"- get", "- delete"),
    ("kind: Role", r"verbs: \[[^\]]*\]", 'verbs: ["*"]'),  # a role that grants nothing overbroad starts to
    ("kind: NetworkPolicy", r"cidr: \S+", "cidr: 0.0.0.0/0"),  # a policy's block made broad
    # a pod a NodePool's expiry can interrupt, or that do-not-disrupt protects, or no longer
    ("backoffLimit: ", r"(\n\s*)backoffLimit: ", r"\1activeDeadlineSeconds: 99999999\1backoffLimit: "),
    ("do-not-disrupt", r'karpenter\.sh/do-not-disrupt: "true"', 'karpenter.sh/do-not-disrupt: "false"'),
    ("do-not-disrupt", r'karpenter\.sh/do-not-disrupt: "false"', 'karpenter.sh/do-not-disrupt: "true"'),
    ("kind: Deployment", r"namespace: \S+", "namespace: elsewhere"),
    ("kind: Deployment", r"tolerations:", "tolerationz:"),
    ("kind: RayCluster", r"nvidia\.com/gpu", "nvidia.com/gpx"),
    ("kind: LocalQueue", r"clusterQueue: \S+", "clusterQueue: other"),
    ("kind: ValidatingAdmissionPolicyBinding", r"validationActions: \[[^\]]*\]", "validationActions: [Warn]"),
    ("kind: ValidatingAdmissionPolicy\n", r"expression: .*", 'expression: "true"'),
    # a policy that comes to take every kind: the kinds no binding took before are judged
    ("resourceRules:", r"apiGroups:(\s*)\[[^\]]*\]", r'apiGroups:\1["*"]'),
    ("resourceRules:", r"apiVersions:(\s*)\[[^\]]*\]", r'apiVersions:\1["*"]'),
    ("resourceRules:", r"resources:(\s*)\[[^\]]*\]", r'resources:\1["*"]'),
    ("", r"  name: (\S+)", r"  name: \1-n"),
    ("", r"kind: (\w+)", r"kind: \1X"),
    ("", None, ""),
]
# what goes to the context folder with --context: objects that describe the cluster
EXTRA: list[str] = []  # more `ailint check` arguments (--arg)
CLUSTER_KINDS = (
    "kind: NodePool",
    "ServingRuntime",
    "ResourceClaimTemplate",
    "kind: Namespace",
    "kind: PriorityClass",
    "kind: ValidatingAdmissionPolicy",
)


class Tree:
    """A copy of the source folders to edit, each a project of its own or not."""

    def __init__(self, work: Path, sources: list[Path], rnd: random.Random, context: bool) -> None:
        self.rnd = rnd
        self.root = work / "tree"
        self.cluster = work / "cluster" if context else None
        shutil.rmtree(work, ignore_errors=True)
        self.folders = []
        for src in sources:
            dst = self.root / (src.parent.name if src.name == "plain" else src.name)
            shutil.copytree(src, dst)
            if rnd.random() < 0.5:
                (dst / ".git").mkdir()
            self.folders.append(dst)
        self.files = sorted(p for p in self.root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        if self.cluster is not None:
            self.cluster.mkdir(parents=True)
            picked = [p for p in self.files if any(k in _text(p) for k in CLUSTER_KINDS)]
            for p in rnd.sample(picked, min(25, len(picked))):
                moved = self.cluster / f"{p.parent.name}__{p.name}"
                p.rename(moved)
                self.files[self.files.index(p)] = moved

    def args(self) -> list[str]:
        return (["--context", str(self.cluster)] if self.cluster else []) + [str(f) for f in self.folders]

    def edit(self) -> str:
        """One random edit; what it did, or "" when the drawn edit found nothing to change."""
        live = [p for p in self.files if p.exists()]
        roll = self.rnd.random()
        if roll < 0.1:  # a copy or a move into another project
            src = self.rnd.choice(live)
            dst = self.rnd.choice(self.folders) / f"{'copied' if roll < 0.05 else 'moved'}-{src.name}"
            if roll < 0.05:
                shutil.copyfile(src, dst)
            else:
                src.rename(dst)
            self.files.append(dst)
            return f"{'copy' if roll < 0.05 else 'move'} {src} -> {dst}"
        if roll < 0.14:
            victim = self.rnd.choice(live)
            victim.unlink()
            return f"remove {victim}"
        holds, pattern, new = self.rnd.choice(EDITS)
        candidates = [p for p in live if holds in _text(p)]
        if not candidates:
            return ""
        victim = self.rnd.choice(candidates)
        text = _text(victim)
        if pattern is None:
            text += "\n# edited by cache_fuzz\n"
        else:
            found = list(re.finditer(pattern, text))
            if not found:
                return ""
            m = self.rnd.choice(found)
            text = text[: m.start()] + m.expand(new) + text[m.end() :]
        victim.write_text(text, encoding="utf-8")
        return f"{pattern or 'a comment'!s} in {victim}"


def _text(p: Path) -> str:
    return p.read_text(encoding="utf-8", errors="replace")


def check(python: str, args: list[str], cache: str, jobs: int, cached: bool) -> str:
    cmd = [python, "-m", "ailint", "check", "--format", "json", "--fail-on", "never", "--jobs", str(jobs), *EXTRA]
    env = {**os.environ, "AILINT_CACHE_DIR": cache}
    done = subprocess.run(
        [*cmd, *([] if cached else ["--no-cache"]), *args], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode not in (0, 1) or done.stderr.strip():
        print(f"exit {done.returncode}: {done.stderr[-2000:]}", file=sys.stderr)
    return done.stdout


def differences(cached: str, fresh: str) -> list[str]:
    """The findings only one of the two reports has (or what else differs)."""
    try:
        a = {json.dumps(f, sort_keys=True) for f in json.loads(cached)["findings"]}
        b = {json.dumps(f, sort_keys=True) for f in json.loads(fresh)["findings"]}
    except (ValueError, KeyError, TypeError):
        return ["a report is not JSON"]
    out = [f"cached only: {x[:500]}" for x in sorted(a - b)[:5]]
    out += [f"fresh only: {x[:500]}" for x in sorted(b - a)[:5]]
    return out or ["the same findings; the reports differ elsewhere (order, files, counts)"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", action="append", type=Path, help="folders to copy (default: the corpus's plain/)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--context", action="store_true", help="move cluster objects to a --context folder")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ailint-cache-fuzz")
    ap.add_argument("--python", default=sys.executable, help="the interpreter that has ailint installed")
    ap.add_argument("--arg", action="append", default=[], help="one more `ailint check` argument (repeatable)")
    args = ap.parse_args()
    EXTRA[:] = args.arg
    sources = args.source or sorted(CORPUS.glob("*/plain"))
    if not sources:
        sys.exit(f"cache_fuzz: nothing to copy ({CORPUS} not found; give --source)")
    rnd = random.Random(args.seed)
    tree = Tree(args.work, sources, rnd, args.context)
    cache = str(args.work / "cache")
    if check(args.python, tree.args(), cache, args.jobs, True) != check(
        args.python, tree.args(), cache, args.jobs, False
    ):
        sys.exit("cache_fuzz: the first cached run differs from a fresh one")
    for n in range(args.rounds):
        done = [e for e in (tree.edit() for _ in range(rnd.choice((1, 1, 2, 3)))) if e]
        cached = check(args.python, tree.args(), cache, args.jobs, True)
        fresh = check(args.python, tree.args(), cache, args.jobs, False)
        if cached != fresh:
            print(f"round {n}: the cached rerun differs from a fresh run after:")
            print("\n".join(f"  {e}" for e in done))
            print("\n".join(f"  {d}" for d in differences(cached, fresh)))
            print(f"the tree is kept in {args.work}")
            sys.exit(1)
        print(f"round {n}: same ({'; '.join(done) or 'no edit'})", flush=True)
    shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
