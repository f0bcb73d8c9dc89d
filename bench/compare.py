#!/usr/bin/env python3
"""Compare this tree with an earlier revision, run against run on the same machine.

    python bench/compare.py 9a33c65                 # paired wall times, cold corpus and one file
    python bench/compare.py 9a33c65 --count         # also instructions of one process (valgrind),
                                                    # which a busy machine does not change
    python bench/compare.py HEAD~3 --pairs 40 --scenario one
    python bench/compare.py HEAD~3 --scenario edit  # a rerun after editing one file (the cache on)
    python bench/compare.py HEAD~3 --scenario edit-value  # ... after changing a value in it
    python bench/compare.py HEAD~3 --scenario repo-edit  # the same, the corpus copy as one
                                                    # repository (`--scope run`)
    python bench/compare.py HEAD~3 --scenario fresh # one file, the cache folder emptied first
    python bench/compare.py HEAD~3 --scenario large --pairs 4  # the generated 100 MB tree:
                                                    # time and peak memory (a bounded run)
    python bench/compare.py HEAD~3 --scenario fill  # a first run with the cache: the corpus
                                                    # copy, the results emptied before each pair
    python bench/compare.py HEAD~3 --scenario large-fill --pairs 3  # the same on the 100 MB
                                                    # tree, with peak memory

Why: the machine's speed moves by half within an hour (Checkov's own time in `bench/run.py`
went from 6.6 to 14.7 s on one day), so two versions timed at different moments cannot be
told apart. Here each pair runs both installs back to back, in alternating order, and the
figure is the median of the pairs' ratios; `--count` counts the instructions of a run in one
process (`--jobs 1`) with `valgrind --tool=cachegrind`, which repeat to a tenth of a percent
whatever else the machine does (the CPU work, not what the second process costs or saves).

Each side is a regular install (as `bench/run.py` makes one) in its own venv under
`bench/.compare/`, with its own cache folder, warmed up before it is measured.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
WORK = ROOT / "bench" / ".compare"
SMALL = ROOT / "fixtures" / "demo" / "vllm.yaml"
SIDES = ("revision", "tree")  # each side's cache folder: bench/.compare/cache-<side>
_SKIP = shutil.ignore_patterns(".git", ".venv", "bench", "__pycache__", "*.egg-info", "build", "tests", "docs")


def install(name: str, source: Path) -> Path:
    """`source` installed (not editable) in `bench/.compare/<name>`: its `ailint`."""
    venv = WORK / name
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    with tempfile.TemporaryDirectory() as tmp:  # from a copy: no build/ or egg-info left behind
        src = Path(tmp) / "src"
        shutil.copytree(source, src, ignore=_SKIP)
        pip = [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, "--force-reinstall", "--no-deps", str(src)], check=True)
        subprocess.run([*pip, str(src)], check=True)  # its dependencies, when they are missing
    return venv / "bin" / "ailint"


def revision_tree(rev: str) -> Path:
    """The files of git revision `rev`, checked out beside (the work tree is not touched)."""
    out = WORK / f"tree-{rev.replace('/', '_')}"
    if out.exists():
        shutil.rmtree(out)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(out), rev], check=True)
    return out


def scenario(which: str) -> tuple[list[str], Callable[[], None] | None]:
    """The command line of a scenario, and what runs before each of its pairs."""
    fmt = ["check", "--format", "json", "--fail-on", "never", "--no-cache"]
    if which == "one":
        return [*fmt, str(SMALL)], None
    if which == "fresh":  # one small file, each side's whole cache folder emptied first (a CI runner)
        return [*fmt, str(SMALL)], lambda: [shutil.rmtree(WORK / f"cache-{n}", ignore_errors=True) for n in SIDES]
    if which in ("large", "large-fill"):  # as bench/run.py's 100 MB rows: a bounded run (memory is the limit)
        bench_run = _bench_run()
        if which == "large-fill":  # its first run with the cache: an emptied one, filled
            return [*fmt[:-1], str(bench_run.generate(100))], _empty_results
        return [*fmt, str(bench_run.generate(100))], None
    if which in ("edit", "edit-value", "repo-edit", "fill"):  # as bench/run.py's rows: its copy of the corpus
        bench_run = _bench_run()
        plain, victim = bench_run.plain_copy()
        if which == "fill":  # a first run with the cache (a user's first `ailint check`)
            return [*fmt[:-1], *plain], _empty_results
        if which == "edit-value":  # a value changed: the calls that read it run again
            return [*fmt[:-1], *plain], lambda: bench_run.edit_value(victim)
        if which == "repo-edit":  # the same in one repository (`--scope run`): every call can read it
            return [*fmt[:-1], "--scope", "run", *plain], lambda: bench_run.edit_value(victim)
        return [*fmt[:-1], *plain], lambda: bench_run.edit(victim)  # one file edited (a comment)
    return [*fmt, *sorted(str(p) for p in CORPUS.glob("*/plain"))], None


def _bench_run() -> Any:
    """`bench/run.py`, whose trees and edits the scenarios share (a script beside this one)."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import run as bench_run

    return bench_run


def _empty_results() -> None:
    """Each side's results cache emptied (its code table, rule index and scans kept, as
    `bench/run.py`'s first-run rows keep them)."""
    for side in SIDES:
        for results in (WORK / f"cache-{side}").glob("results-v*"):
            shutil.rmtree(results, ignore_errors=True)


def timed(cmd: list[str], env: dict[str, str], peaks: list[float] | None = None) -> float:
    """Wall seconds of `cmd`; with `peaks`, run under `/usr/bin/time -v` and its peak RSS
    (MiB, the largest of its processes) appended there."""
    time_bin = "/usr/bin/time"
    if peaks is not None and os.path.exists(time_bin):
        t = time.perf_counter()
        proc = subprocess.run(
            [time_bin, "-v", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True, check=False
        )
        wall = time.perf_counter() - t
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr or "")
        peaks.append(int(m.group(1)) / 1024 if m else float("nan"))
        return wall
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - t


def paired(
    a: list[str],
    b: list[str],
    env_a: dict[str, str],
    env_b: dict[str, str],
    pairs: int,
    before: Callable[[], None] | None = None,
    peaks: bool = False,
) -> str:
    """Median of the pairs' ratios; `before` runs ahead of each pair (an edit both sides
    then see for the first time); `peaks`: each side's peak RSS too (medians)."""
    for _ in range(2):  # warm-up: each side's code table and rule index (and results cache)
        timed(a, env_a)
        timed(b, env_b)
    ta: list[float] = []
    tb: list[float] = []
    pa: list[float] | None = [] if peaks else None
    pb: list[float] | None = [] if peaks else None
    for i in range(pairs):
        if before is not None:
            before()
        if i % 2:
            ta.append(timed(a, env_a, pa))
            tb.append(timed(b, env_b, pb))
        else:
            tb.append(timed(b, env_b, pb))
            ta.append(timed(a, env_a, pa))
    ratios = sorted(y / x for x, y in zip(ta, tb, strict=True))
    m = statistics.median
    q = len(ratios) // 4
    peak = f"; peak RSS {m(pa):.1f} MiB -> {m(pb):.1f} MiB (medians)" if pa and pb else ""
    return (
        f"{m(ta) * 1000:.1f} ms -> {m(tb) * 1000:.1f} ms (medians of {pairs}); this tree / the revision, "
        f"paired: {m(ratios):.3f} (quartiles {ratios[q]:.3f} to {ratios[-q - 1]:.3f}){peak}"
    )


def instructions(ailint: str, args: list[str], env: dict[str, str]) -> int | None:
    """Instructions of a run in one process (`--jobs 1`: a forked child's count would start
    with its parent's, and how the files fall between the two processes changes from run to
    run); None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        vg = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}"]
        subprocess.run(
            [*vg, ailint, *args, "--jobs", "1"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        m = re.search(r"^summary: (\d+)", out.read_text(encoding="utf-8"), re.M) if out.exists() else None
        return int(m.group(1)) if m else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("revision", help="the git revision to compare this tree with")
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument(
        "--scenario",
        choices=("corpus", "one", "edit", "edit-value", "repo-edit", "fill", "fresh", "large", "large-fill", "both"),
        default="both",
    )
    ap.add_argument("--count", action="store_true", help="also count instructions (valgrind)")
    args = ap.parse_args()
    if not CORPUS.is_dir() and args.scenario not in ("one", "fresh"):
        sys.exit(f"compare: {CORPUS} not found (the corpus scenario needs ../shared/corpus)")
    WORK.mkdir(parents=True, exist_ok=True)
    tree = revision_tree(args.revision)
    try:
        old = install("revision", tree)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    new = install("tree", ROOT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AILINT_")}
    env_a = {**env, "AILINT_CACHE_DIR": str(WORK / f"cache-{SIDES[0]}")}
    env_b = {**env, "AILINT_CACHE_DIR": str(WORK / f"cache-{SIDES[1]}")}
    for which in ("corpus", "one") if args.scenario == "both" else (args.scenario,):
        cmd, before = scenario(which)
        pairs = args.pairs if which not in ("one", "fresh") else max(args.pairs, 40)
        peaks = which in ("large", "large-fill")
        got = paired([str(old), *cmd], [str(new), *cmd], env_a, env_b, pairs, before, peaks=peaks)
        print(f"{which}: {got}")
        if args.count:
            if before is not None:
                before()
            a = instructions(str(old), cmd, env_a)
            b = instructions(str(new), cmd, env_b)
            if a is None or b is None:
                print(f"{which}: no valgrind here: no instruction counts")
            else:
                print(f"{which}: {a / 1e9:.3f} G -> {b / 1e9:.3f} G instructions, one process ({b / a:.3f})")


if __name__ == "__main__":
    main()
