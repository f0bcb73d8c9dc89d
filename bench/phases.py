#!/usr/bin/env python3
"""Instructions of a cold run by phase, in one process and in two: where a `--jobs 2` run's critical path goes.

    python bench/phases.py                 # the plain corpus (as bench/run.py copies it)
    python bench/phases.py some/folder     # any paths
    python bench/run.py --phases           # the same table after the benchmark's own

Why: wall times on this machine move by a third within minutes, and the instruction counts of
`bench/compare.py --count` are those of one process (`--jobs 1`): neither shows what the two
processes of a `--jobs 2` run add (pickling, unpickling, work both do) or which of them the run
waits for. Here the run goes under `valgrind --tool=callgrind --dump-before=_Fork`: every fork
writes the counts so far and starts from zero, so a forked child's file holds its own work only
(cachegrind's child files also hold everything its parent did before the fork). Forks are also
made at the phase boundaries (a child that leaves at once), and the segments are named:

    start-up    the interpreter, imports, the config and the walk for files
    parse       reading, parsing and object rules, in this process and in its forked child
    join        joining the files: the catalogue pass, project contexts, shared indexes
    bundle      bundle rules, schema validation and the admission-policy pass, in both
    finish      findings merged, suppressions; then the report

The critical path is start-up + the longer parse + join + the longer bundle + finish, and
with each shared phase split evenly between the processes: the queue they take their tasks
from evens out their time, not their instructions, and an instruction does not cost the
same in both (page faults and cache misses: a forked process copies each page it writes
first, which the counts leave out; `time -v` gives their number).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# Run in the measured interpreter: wraps the phase boundaries with a fork whose child leaves
# at once (callgrind dumps the counts at each fork), and logs each fork of this process.
PROBE = r"""
import json, os, sys
LOG = open(sys.argv.pop(1), "a", buffering=1)
# "count": fork at each boundary (callgrind dumps there); "time": note the clock, the CPU (and
# the kernel's part of it) and the page faults there instead (bench/timeline.py), and each
# forked child's at its start and end
TIMED = sys.argv.pop(1) == "time"
if TIMED:
    import resource, time
MAIN = os.getpid()
def note(label, child=0):
    e = {"pid": os.getpid(), "label": label, "child": child}
    if TIMED:
        r = resource.getrusage(resource.RUSAGE_SELF)
        e.update(t=time.monotonic(), cpu=r.ru_utime + r.ru_stime, sys=r.ru_stime, faults=r.ru_minflt)
    LOG.write(json.dumps(e) + "\n")
def split(label):
    if os.getpid() != MAIN:
        return
    note(label)
    if TIMED:
        return
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
def bounded(mod, name, tag=None, enter=True, leave=True):
    inner = getattr(mod, name)
    def wrapper(*a, **k):
        if enter:
            split((tag or name) + "+")
        out = inner(*a, **k)
        if leave:
            split((tag or name) + "-")
        return out
    setattr(mod, name, wrapper)
def probe():
    import ailint.engine.parallel as par, ailint.engine.run as run
    fork_child = par._fork_child
    def forked(body):
        if os.getpid() != MAIN:
            return fork_child(body)
        if TIMED:
            inner = body
            def body(*a):
                note("child+")
                try:
                    return inner(*a)
                finally:
                    note("child-")
        pid, r = fork_child(body)
        note("fork", pid)
        return pid, r
    par._fork_child = forked
    bounded(run, "process_files", "parse"); bounded(par, "run_parallel", "parse")
    bounded(run, "finish"); bounded(par, "run_forked", enter=False)
    # in one process (no fork to mark the bundle phase): its first chunk, and the passes after it
    bounded(run, "bundle_chunk", leave=False); bounded(run, "_provider_passes_apart", enter=False)
    if TIMED:  # the run's last moment this process sees (`lean.fast_exit` ends with it)
        real_exit = os._exit
        def _exit(code):
            if os.getpid() == MAIN:
                note("exit")
            real_exit(code)
        os._exit = _exit
# the wrapped modules are imported once the run has put its code table in place, as a run
# imports them: imported before, they would be compiled, and their classes made, anew
import ailint.core.codecache as codecache
install = codecache.install
def installed(*a, **k):
    out = install(*a, **k)
    probe()
    return out
codecache.install = installed
sys.argv = ["ailint", *sys.argv[1:]]
from ailint.doors.lean import main
main()
"""


PHASES = ("start-up", "parse", "join", "bundle", "finish")
LABELS = {
    "start-up": "start-up (interpreter, imports, config, the walk)",
    "parse": "parse (reading, parsing, object rules)",
    "join": "join (catalogue pass, project contexts, shared indexes)",
    "bundle": "bundle (bundle rules, schema, admission policies)",
    "finish": "finish (suppressions, sorting, the report)",
}


def totals(path: Path) -> int:
    """The instructions a callgrind output file counts (0 when there is none)."""
    if not path.exists():
        return 0
    m = re.search(r"^totals: (\d+)", path.read_text(errors="replace"), re.M)
    return int(m.group(1)) if m else 0


def measure(
    python: str, args: list[str], out: Path, env: dict[str, str] | None = None
) -> dict[str, int | dict[str, int]]:
    """Run `ailint check ARGS` under callgrind; the instructions of each named segment."""
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--dump-before=_Fork",
        f"--callgrind-out-file={out}/cg.%p",
        *probed(python, out / "forks.jsonl", "count", args),
    ]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return segments(out)


def probed(python: str, log: Path, mode: str, args: list[str]) -> list[str]:
    """The command of a cold `ailint check ARGS` (its JSON report) under the probe, which
    notes its boundaries in `log`: forking at each (`count`), or timing each (`time`)."""
    return [python, "-c", PROBE, str(log), mode, "check", "--format", "json", "--fail-on", "never", "--no-cache", *args]


def segments(out: Path) -> dict[str, int | dict[str, int]]:
    """The instructions of each named segment, from the callgrind files in `out` and the
    probe's log of forks (`forks.jsonl`): this process's, and each forked child's by phase."""
    events = [json.loads(line) for line in (out / "forks.jsonl").read_text().splitlines()]
    main = events[0]["pid"]
    # the parent's dump n holds what it did up to its n-th fork: a boundary's own fork (its
    # label), or a child's ("fork"); the file without a number, what it did after the last
    forks = [e for e in events if e["pid"] == main]
    segments = [(e["label"], totals(out / f"cg.{main}.{n}")) for n, e in enumerate(forks, start=1)]
    segments.append(("exit", totals(out / f"cg.{main}")))
    named = dict.fromkeys(PHASES, 0)
    children: dict[str, int] = {}
    phase = "start-up"
    for (label, count), event in zip(segments, [*forks, None], strict=True):
        named[phase] += count  # a segment belongs to the phase it ends in
        if label == "fork" and event is not None:  # a child of this phase (parse or bundle)
            where = "bundle" if phase == "join" else phase
            children[where] = children.get(where, 0) + totals(out / f"cg.{event['child']}")
        phase = next_phase(label, phase)
    return {**named, "children": children}


def next_phase(label: str, phase: str) -> str:
    """The phase the run is in after the probe's boundary `label`, from `phase`: a fork in
    the join is the bundle phase's child; the parse's `run_forked` returns inside the parse,
    the bundle phase's ends it; in one process the bundle phase starts at its first chunk
    and ends after the policy passes."""
    return {
        "parse+": "parse",
        "parse-": "join",
        "fork": "bundle" if phase == "join" else phase,
        "bundle_chunk+": "bundle",
        "run_forked-": phase if phase == "parse" else "finish",
        "_provider_passes_apart-": "finish",
    }.get(label, phase)


def counted(
    python: str, paths: list[str], jobs: int, env: dict[str, str] | None = None
) -> tuple[dict[str, int], dict[str, int]]:
    """(this process's, the forked children's) instructions by phase of one cold run."""
    with tempfile.TemporaryDirectory() as tmp:
        got = measure(python, ["--jobs", str(jobs), *paths], Path(tmp), env)
    kids = got.pop("children")
    assert isinstance(kids, dict)
    return {k: int(v) for k, v in got.items() if isinstance(v, int)}, kids


def settled(python: str, paths: list[str], env: dict[str, str], cache: Path, most: int = 6) -> None:
    """Run `ailint check PATHS` uncounted, in one process and in two, until a round leaves
    the cache folder as it found it.

    The first runs of new code write ailint's code table and what it replays (class plans,
    patterns) at exit, what one process or two meet is not all the same, and a pattern or
    module met only now and then is written a few runs later: in a folder only one-process
    runs had used, this probe counted the finish of one at 0.35 G instead of 0.27 (after an
    install, 0.46), though a plain run there costs what it costs in a settled folder."""
    cmd = [python, "-m", "ailint", "check", "--format", "json", "--fail-on", "never", "--no-cache"]

    def state() -> list[tuple[str, int, int]]:
        return sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in cache.rglob("*") if p.is_file())

    for _ in range(most):
        before = state()
        for jobs in ("1", "2"):
            subprocess.run(
                [*cmd, "--jobs", jobs, *paths],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                check=False,
            )
        if before and state() == before:
            return


def table(python: str, paths: list[str]) -> str:
    """The instructions of a cold run of `paths` in one process and in two, by phase, with
    the two processes' critical path (markdown)."""
    with tempfile.TemporaryDirectory() as cache:  # ailint's start-up files, settled first
        env = {**os.environ, "AILINT_CACHE_DIR": cache}
        env.pop("AILINT_NO_CACHE", None)
        settled(python, paths, env, Path(cache))
        one, _ = counted(python, paths, 1, env)
        two, kids = counted(python, paths, 2, env)

    def g(n: float) -> str:
        return f"{n / 1e9:.3f} G"

    total_one = sum(one.values())
    total_two = sum(two.values()) + sum(kids.values())
    longer = sum(max(two[k], kids.get(k, 0)) for k in PHASES)
    even = sum((two[k] + kids[k]) / 2 if k in kids else two[k] for k in PHASES)
    lines = [
        "| phase | one process (`--jobs 1`) | two processes: the parent | two processes: the forked child |",
        "|---|---|---|---|",
        *(f"| {LABELS[k]} | {g(one[k])} | {g(two[k])} | {g(kids[k]) if k in kids else ''} |" for k in PHASES),
        f"| all | {g(total_one)} | {g(total_two)} in all ({total_two / total_one:.3f}) | |",
        f"| critical path | {g(total_one)} | {g(even)} to {g(longer)} ({even / total_one:.2f} to "
        f"{longer / total_one:.2f}) | |",
    ]
    return "\n".join(lines)


def default_paths() -> list[str]:
    """The corpus copy `bench/run.py` makes, else the corpus's plain folders."""
    from run import CORPUS, PLAIN  # bench/run.py, beside this script

    paths = sorted(str(p) for p in PLAIN.iterdir()) if PLAIN.is_dir() else []
    return paths or sorted(glob.glob(str(CORPUS / "*" / "plain")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="what to lint (default: the plain corpus)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter that has ailint installed")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("phases: valgrind is needed (Debian: apt-get install valgrind)")
    paths = args.paths or default_paths()
    if not paths:
        sys.exit("phases: no paths given and no corpus found")
    print(table(args.python, paths))
    print(
        "\nCritical path: start-up, join and finish, plus each shared phase split evenly between the"
        " processes, or its longer process (the queue evens out their time, not their instructions)."
    )


if __name__ == "__main__":
    main()
