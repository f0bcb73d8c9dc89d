#!/usr/bin/env python3
"""Wall time, CPU and page faults of a cold run by phase, in one process and in two: what the second process costs, and how fast two could be if it cost nothing.

    python bench/timeline.py                 # the plain corpus (as bench/run.py copies it)
    python bench/timeline.py some/folder     # any paths
    python bench/timeline.py --rounds 9      # medians of 9 alternating pairs (default 5)
    python bench/run.py --timeline           # the same table after the benchmark's own

Why: `bench/phases.py` counts instructions, which a busy machine does not change but which
leave out what an instruction costs where: a page fault takes 2.9 µs on the benchmark's
machine, and the bundle phase's two processes copy the pages they both write. This tool
times the same phases with the same probe (`phases.PROBE` in its "time" mode: at each
boundary the monotonic clock, the process's CPU and its page faults; each forked child's at
its start and its end) and prints, per phase, the wall time of a `--jobs 1` and of a
`--jobs 2` run, then the CPU, the kernel's part of it and the page faults of each run's
processes. (A process forked for the bundle phase that wrote every page of its heap before
its tasks, 17,000 faults, spent the same CPU in all as one that did not: most of what the
two-process bundle phase spends more is the copying of the pages both processes write;
docs/speed.md, the stops of 2026-12-07 from 16:22 and 19:04 UTC.)

Its last row is the bound of the two-process run with today's work: the one process's CPU
split evenly between two processes around the two-process run's serial phases (start-up,
join, finish), that is, a second process that costs nothing. A target below the bound
cannot be reached by making the second process cheaper alone: the one process's work has to
shrink (docs/speed.md, the stop of 2026-12-07 from 17:53 UTC, measured it by hand first).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/phases.py, beside this script
import phases

SERIAL = ("start-up", "join", "finish")  # the phases one process runs alone in a `--jobs 2` run


def attribute(events: list[dict[str, Any]], started: float, ended: float) -> dict[str, Any]:
    """One run's figures from the probe's notes (time mode), `started` and `ended` on the same
    monotonic clock (just before the process was started, once it was waited for): the wall
    time of each phase (each stretch between two of this process's notes belongs to the phase
    it ends in, as in `phases.segments`; the exit to the end, the kernel taking the memory back
    included, to the finish), this process's CPU in each phase (the same stretches) and its
    CPU and page faults at its exit, and each forked child's, summed by the phase it was
    forked in."""
    main = events[0]["pid"]
    named = dict.fromkeys(phases.PHASES, 0.0)
    cpu_by = dict.fromkeys(phases.PHASES, 0.0)
    phase, last = "start-up", started
    forked_in: dict[int, str] = {}
    cpu = faults = kernel = 0.0
    for e in events:
        if e["pid"] != main:
            continue
        named[phase] += e["t"] - last
        cpu_by[phase] += e["cpu"] - cpu
        last = e["t"]
        if e["label"] == "fork":
            forked_in[e["child"]] = "bundle" if phase == "join" else phase
        phase = phases.next_phase(e["label"], phase)
        cpu, faults, kernel = e["cpu"], e["faults"], e["sys"]  # (the last note is the exit's)
    named[phase] += ended - last
    children: dict[str, dict[str, float]] = {}
    for e in events:
        if e["pid"] != main and e["label"] == "child-":
            got = children.setdefault(forked_in.get(e["pid"], "parse"), {"cpu": 0.0, "sys": 0.0, "faults": 0.0, "n": 0})
            got["cpu"] += e["cpu"]
            got["sys"] += e["sys"]
            got["faults"] += e["faults"]
            got["n"] += 1
    return {
        "phases": named,
        "cpu_by": cpu_by,
        "wall": ended - started,
        "cpu": cpu,
        "sys": kernel,
        "faults": faults,
        "children": children,
    }


def timed(python: str, paths: list[str], jobs: int, env: dict[str, str] | None = None) -> dict[str, Any]:
    """One cold run of `ailint check PATHS --jobs JOBS` under the probe: `attribute`'s figures
    and the digest of its report."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "notes.jsonl"
        started = time.monotonic()
        done = subprocess.run(
            phases.probed(python, log, "time", ["--jobs", str(jobs), *paths]),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            check=False,
        )
        ended = time.monotonic()
        events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    if not events or events[0]["label"] != "parse+":
        raise SystemExit(
            f"timeline: `{python} -m ailint check --jobs {jobs}` left no notes of its phases "
            f"(exit {done.returncode}); is ailint installed for that interpreter?"
        )
    got = attribute(events, started, ended)
    got["report"] = hashlib.sha256(done.stdout).hexdigest()
    return got


def bound(one: dict[str, Any], two: dict[str, Any]) -> float:
    """The two-process run's wall time if its second process cost nothing: the one process's
    CPU split evenly around the two-process run's serial phases."""
    serial = sum(two["phases"][k] for k in SERIAL)
    return (total_cpu(one) - serial) / 2 + serial


def total_cpu(run: dict[str, Any]) -> float:
    return float(run["cpu"] + sum(c["cpu"] for c in run["children"].values()))


def total_sys(run: dict[str, Any]) -> float:
    """The kernel's part of `total_cpu`: page faults (a page both processes write after the
    fork is copied for the one that writes it: 2.8 µs each here), reading files, pipes."""
    return float(run["sys"] + sum(c["sys"] for c in run["children"].values()))


def total_faults(run: dict[str, Any]) -> float:
    return float(run["faults"] + sum(c["faults"] for c in run["children"].values()))


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over `runs` (a child phase's over the runs that forked one)."""
    kids: dict[str, dict[str, float]] = {}
    for where in [k for k in phases.PHASES if any(k in r["children"] for r in runs)]:
        have = [r["children"][where] for r in runs if where in r["children"]]
        kids[where] = {f: statistics.median(c[f] for c in have) for f in ("cpu", "sys", "faults", "n")}
    return {
        "phases": {k: statistics.median(r["phases"][k] for r in runs) for k in phases.PHASES},
        "cpu_by": {k: statistics.median(r["cpu_by"][k] for r in runs) for k in phases.PHASES},
        "wall": statistics.median(r["wall"] for r in runs),
        "cpu": statistics.median(r["cpu"] for r in runs),
        "sys": statistics.median(r["sys"] for r in runs),
        "faults": statistics.median(r["faults"] for r in runs),
        "children": kids,
    }


def table(python: str, paths: list[str], rounds: int = 5) -> str:
    """The phases of a cold run of `paths`, medians of `rounds` alternating pairs of a
    `--jobs 1` and a `--jobs 2` run after a warm-up pair, in ailint's settled start-up files
    (markdown)."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "AILINT_CACHE_DIR": cache}
        env.pop("AILINT_NO_CACHE", None)
        phases.settled(python, paths, env, Path(cache))
        ones: list[dict[str, Any]] = []
        twos: list[dict[str, Any]] = []
        for n in range(rounds + 1):
            pair = [(1, ones), (2, twos)] if n % 2 else [(2, twos), (1, ones)]
            for jobs, into in pair:
                run = timed(python, paths, jobs, env)
                if n:  # (the first pair warms the file cache up)
                    into.append(run)
    return render(ones, twos)


def render(ones: list[dict[str, Any]], twos: list[dict[str, Any]]) -> str:
    """The table of `table` from its runs."""
    one, two = median_run(ones), median_run(twos)
    for r, runs in ((one, ones), (two, twos)):
        r["cpu_all"] = statistics.median(total_cpu(x) for x in runs)
        r["faults_all"] = statistics.median(total_faults(x) for x in runs)
        r["sys_all"] = statistics.median(total_sys(x) for x in runs)
    best = statistics.median(bound(a, b) for a, b in zip(ones, twos, strict=True))

    def ms(s: float) -> str:
        return f"{s * 1000:,.0f} ms"

    rows = [
        "| phase | one process: wall, CPU | two processes: wall | two processes: CPU (this process + its child) |",
        "|---|---|---|---|",
    ]
    for k in phases.PHASES:
        shared = f" (half of one process's: {ms(one['phases'][k] / 2)})" if k not in SERIAL else ""
        kid = two["children"].get(k)
        mine = two["cpu_by"][k]
        both = f"{ms(mine + kid['cpu'])} ({ms(mine)} + {ms(kid['cpu'])})" if kid else ms(mine)
        rows.append(
            f"| {phases.LABELS[k]} | {ms(one['phases'][k])}, {ms(one['cpu_by'][k])} | "
            f"{ms(two['phases'][k])}{shared} | {both} |"
        )
    rows += [
        f"| the run | {ms(one['wall'])}, {ms(one['cpu_all'])} | {ms(two['wall'])} | "
        f"{ms(two['cpu_all'])} ({two['cpu_all'] / one['cpu_all']:.2f} of one process's) |",
        f"| of which the kernel's (page faults, reading files) | {ms(one['sys_all'])} | | {ms(two['sys_all'])} |",
        f"| page faults | {one['faults_all']:,.0f} | | {two['faults_all']:,.0f} |",
        f"| with a second process that costs nothing | | {ms(best)} ({best / two['wall']:.2f} of the run) | |",
    ]
    same = {r["report"] for r in ones + twos}
    note = (
        "Every run printed the same report."
        if len(same) == 1
        else f"**The runs printed {len(same)} different reports** (`--jobs 1` and `--jobs 2` must agree)."
    )
    return "\n".join(rows) + "\n\n" + note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="what to lint (default: the plain corpus)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter that has ailint installed")
    ap.add_argument("--rounds", type=int, default=5, help="alternating pairs of runs, after a warm-up pair")
    args = ap.parse_args()
    paths = args.paths or phases.default_paths()
    if not paths:
        sys.exit("timeline: no paths given and no corpus found")
    print(table(args.python, paths, max(1, args.rounds)))


if __name__ == "__main__":
    main()
