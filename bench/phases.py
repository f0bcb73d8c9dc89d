#!/usr/bin/env python3
"""Instructions of a cold run by phase and by process: where a `--jobs 2` run's critical path goes.

    python bench/phases.py                 # the plain corpus (as bench/run.py copies it), --jobs 2
    python bench/phases.py --jobs 1        # the same run in one process
    python bench/phases.py some/folder     # any paths

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
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLAIN = Path(tempfile.gettempdir()) / "ailint-bench" / "plain"  # bench/run.py's copy
CORPUS = ROOT.parent / "shared" / "corpus"

# Run in the measured interpreter: wraps the phase boundaries with a fork whose child leaves
# at once (callgrind dumps the counts at each fork), and logs each fork of this process.
PROBE = r"""
import json, os, sys
LOG = open(sys.argv.pop(1), "a", buffering=1)
MAIN = os.getpid()
def note(label, child=0):
    LOG.write(json.dumps({"pid": os.getpid(), "label": label, "child": child}) + "\n")
def split(label):
    if os.getpid() != MAIN:
        return
    note(label)
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
        pid, r = fork_child(body)
        note("fork", pid)
        return pid, r
    par._fork_child = forked
    bounded(run, "process_files", "parse"); bounded(par, "run_parallel", "parse")
    bounded(run, "finish"); bounded(par, "run_forked", enter=False)
    # in one process (no fork to mark the bundle phase): its first chunk, and the passes after it
    bounded(run, "bundle_chunk", leave=False); bounded(run, "_provider_passes_apart", enter=False)
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


def totals(path: Path) -> int:
    """The instructions a callgrind output file counts (0 when there is none)."""
    if not path.exists():
        return 0
    m = re.search(r"^totals: (\d+)", path.read_text(errors="replace"), re.M)
    return int(m.group(1)) if m else 0


def measure(python: str, args: list[str], out: Path) -> dict[str, int | dict[str, int]]:
    """Run `ailint check ARGS` under callgrind; the instructions of each named segment."""
    log = out / "forks.jsonl"
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--dump-before=_Fork",
        f"--callgrind-out-file={out}/cg.%p",
        python,
        "-c",
        PROBE,
        str(log),
        "check",
        "--format",
        "json",
        "--fail-on",
        "never",
        "--no-cache",
        *args,
    ]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return segments(out)


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
    named = dict.fromkeys(("start-up", "parse", "join", "bundle", "finish"), 0)
    children: dict[str, int] = {}
    phase = "start-up"
    for (label, count), event in zip(segments, [*forks, None], strict=True):
        named[phase] += count  # a segment belongs to the phase it ends in
        if label == "fork" and event is not None:  # a child of this phase (parse or bundle)
            where = "bundle" if phase == "join" else phase
            children[where] = children.get(where, 0) + totals(out / f"cg.{event['child']}")
        phase = {
            "parse+": "parse",
            "parse-": "join",
            "fork": "bundle" if phase == "join" else phase,
            "bundle_chunk+": "bundle" if phase == "join" else phase,
            "run_forked-": phase if phase == "parse" else "finish",
            "_provider_passes_apart-": "finish",
        }.get(label, phase)
    return {**named, "children": children}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="what to lint (default: the plain corpus)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--python", default=sys.executable, help="the interpreter that has ailint installed")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("phases: valgrind is needed (Debian: apt-get install valgrind)")
    paths = args.paths
    if not paths:
        paths = sorted(str(p) for p in PLAIN.iterdir()) if PLAIN.is_dir() else []
        paths = paths or sorted(glob.glob(str(CORPUS / "*" / "plain")))
    if not paths:
        sys.exit("phases: no paths given and no corpus found")
    with tempfile.TemporaryDirectory() as tmp:
        got = measure(args.python, ["--jobs", str(args.jobs), *paths], Path(tmp))
    kids = got.pop("children")
    assert isinstance(kids, dict)
    g = {k: int(v) for k, v in got.items() if isinstance(v, int)}
    print("| segment | this process | forked child |")
    print("|---|---|---|")
    for name in ("start-up", "parse", "join", "bundle", "finish"):
        child = kids.get(name)
        print(f"| {name} | {g[name] / 1e9:.3f} G | {'' if child is None else f'{child / 1e9:.3f} G'} |")
    longer = sum(max(g[k], kids.get(k, 0)) for k in g)
    even = sum((g[k] + kids[k]) / 2 if k in kids else g[k] for k in g)
    print(f"\nall processes: {(sum(g.values()) + sum(kids.values())) / 1e9:.3f} G")
    print(f"critical path: {longer / 1e9:.3f} G (the longer process of each shared phase),")
    print(f"{even / 1e9:.3f} G (each shared phase split evenly)")


if __name__ == "__main__":
    main()
