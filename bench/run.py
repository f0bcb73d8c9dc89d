#!/usr/bin/env python3
"""Benchmark ailint against Checkov, whole process against whole process.

    python bench/run.py --install-peer        # once: checkov==3.3.30 in bench/.peer-venv
    python bench/run.py                       # all scenarios, markdown table on stdout
    python bench/run.py --update-readme       # also write the table into README.md

ailint runs as a user has it: a regular (not editable) install of this tree in
bench/.user-venv, rebuilt at the start of every run (`--dev-venv` uses this interpreter's
install instead). Scenarios, each with the targets of the speed issue:

- the plain corpus (../shared/corpus/*/plain, copied to $TMPDIR/ailint-bench/plain, outside
  this work tree so that each folder stays a project of its own, and so one file can be
  edited): cold (`--no-cache`) against a warm Checkov; a first run with an emptied results
  cache; a first run after an install (the whole cache folder emptied: start-up code, rule
  index and results, as on a CI runner); rerun with nothing changed; rerun after editing one
  file (each sample edits it again); and the same tree as one repository (`--scope run`, as
  a single repository of that size lints), cold and rerun after a value edit;
- one small file, cold, first after an install, and warm, against a bare `python -c pass` of an empty venv (more
  rounds than the rest, `--small-repeat`: the ratio of two runs of 10 to 80 ms moves by
  a tenth with one millisecond; Checkov keeps `--repeat`);
- generated corpora of 1, 10 and 100 MB (copies of the corpus files), cold: time and peak
  memory, and seconds per MB to show the growth is linear; the largest again as a first
  run with the cache (an emptied results cache that the run fills: a user's default).

Runs alternate between the tools; the table reports medians of wall time and of peak RSS
(`/usr/bin/time -v`) after a discarded warm-up (which also fills the cache for the warm
rows). A rerun's share of the cold run is the median of its samples' shares, each sample
paired with a cold run just before it: the machine's speed moves by half within the hour,
and two rows measured minutes apart moved the share by a third. The load average of the
machine is printed with the table. `--profile` adds where a cold corpus run spends its time
(one process, stage by stage), and `--phases` its instructions by phase, in one process and
in two (`bench/phases.py`, under valgrind: the same on a busy machine), which show what the
second process adds and what the run waits for; `--timeline` their wall time, CPU and page
faults, and the two-process run's bound with a second process that costs nothing
(`bench/timeline.py`). `python bench/compare.py REV` compares this
tree with an earlier revision, run against run.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
PEER_VENV = ROOT / "bench" / ".peer-venv"
USER_VENV = ROOT / "bench" / ".user-venv"
GENERATED = ROOT / "bench" / "generated"  # not a dot folder: Checkov skips those
PEER = "checkov==3.3.30"
README_START, README_END = "<!-- bench:start -->", "<!-- bench:end -->"
EDIT_MARK = "# bench: edited "


def ailint_cmd(dev: bool) -> list[str]:
    if dev:
        exe = Path(sys.executable).with_name("ailint")
        return [str(exe)] if exe.exists() else [sys.executable, "-m", "ailint"]
    return [str(USER_VENV / "bin" / "ailint")]


def user_install() -> None:
    """This tree installed as a user installs it (a wheel, not an editable install)."""
    fresh = not (USER_VENV / "bin" / "python").exists()
    if fresh:
        subprocess.run([sys.executable, "-m", "venv", str(USER_VENV)], check=True)
    pip = [str(USER_VENV / "bin" / "pip"), "install", "-q", "--disable-pip-version-check"]
    with tempfile.TemporaryDirectory() as tmp:  # build from a copy: no build/ or egg-info in the tree
        src = Path(tmp) / "src"
        shutil.copytree(
            ROOT,
            src,
            ignore=shutil.ignore_patterns(
                ".git", ".venv", "bench", "__pycache__", "*.egg-info", "build", "fixtures", "tests", "docs"
            ),
        )
        if fresh:  # with its dependencies from the index
            subprocess.run([*pip, str(src)], check=True)
        else:  # the same version number: force the new code in
            subprocess.run([*pip, "--force-reinstall", "--no-deps", str(src)], check=True)


def checkov_cmd() -> list[str] | None:
    exe = PEER_VENV / "bin" / "checkov"
    return [str(exe)] if exe.exists() else None


def install_peer() -> None:
    if not (PEER_VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
    subprocess.run([str(PEER_VENV / "bin" / "pip"), "install", "-q", PEER], check=True)


def measure(cmd: list[str], env: dict[str, str], bare_wall: bool = False) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one whole process.

    `bare_wall`: the wall time of a run of its own, with nothing around the command, and
    the peak of a second run under `/usr/bin/time`. Timed under that tool, with its report
    read back, a bare interpreter took 16.1 ms against 13.1 ms and a one-file run 87 ms
    against 77 ms here (medians of 40 alternating rounds): what it adds pulls the ratio of
    two short runs toward 1 (5.3x against 6.0x for the one-file row)."""
    if bare_wall:
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        return time.perf_counter() - t0, measure(cmd, env)[1]
    time_bin = "/usr/bin/time"
    full = [time_bin, "-v", *cmd] if os.path.exists(time_bin) else cmd
    t0 = time.perf_counter()
    proc = subprocess.run(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - t0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr or "")
    rss = int(m.group(1)) / 1024 if m else float("nan")
    return wall, rss


def bare_python() -> str:
    """The interpreter of an empty virtual environment (bench/.bare-venv): what `python -c
    pass` costs on a user's machine."""
    venv = ROOT / "bench" / ".bare-venv"
    exe = venv / "bin" / "python"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(exe)


GENERATED_LAYOUT = "2"  # the marker's text: a tree of another layout is built again


def generate(size_mb: int) -> Path:
    """A folder of about size_mb MB built from copies of the plain corpus files.

    The files are taken in an order that mixes the repositories (by a CRC of each one's
    path in the corpus), so a small tree is a sample of the whole corpus. In alphabetical
    order the 1 MB tree was six files of one repository, 1.2 MB of it one CRD (which is
    read and not judged): its time per MB said nothing of the rest."""
    out = GENERATED / f"{size_mb}MB"
    marker = out / ".complete"
    if marker.exists() and marker.read_text(encoding="utf-8") == GENERATED_LAYOUT:
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    files = sorted(
        glob.glob(str(CORPUS / "*" / "plain" / "*.y*ml")),
        key=lambda f: (zlib.crc32(Path(f).relative_to(CORPUS).as_posix().encode("utf-8")), f),
    )
    target = size_mb * 1024 * 1024
    total, i = 0, 0
    while total < target:
        src = files[i % len(files)]
        dst = (
            out / f"c{i // len(files)}_{Path(src).parent.parent.name}__{Path(src).name}"
        )  # names repeat across repositories
        shutil.copyfile(src, dst)
        total += os.path.getsize(dst)
        i += 1
    marker.write_text(GENERATED_LAYOUT, encoding="utf-8")
    return out


# The copy of the plain corpus lies outside this git work tree: each of its folders is a
# repository of its own, and inside ailint's repository the 27 would join as one project
# (`--scope repo`), which no user's run does and running on ../shared/corpus itself does not.
PLAIN = Path(tempfile.gettempdir()) / "ailint-bench" / "plain"


def plain_copy() -> tuple[list[str], Path]:
    """The plain corpus folders copied (fresh each run) and the file the edit scenario edits."""
    out = PLAIN
    shutil.rmtree(out, ignore_errors=True)
    folders = []
    for d in sorted(glob.glob(str(CORPUS / "*" / "plain"))):
        dst = out / Path(d).parent.name
        shutil.copytree(d, dst)
        folders.append(str(dst))
    victim = next(
        p
        for p in sorted(out.rglob("*.yaml"))
        if "\nkind: Deployment" in p.read_text(encoding="utf-8", errors="replace")
    )
    return folders, victim


def edit(victim: Path) -> None:
    """Change one line of the file (a comment: the edit any save makes, keeping its findings)."""
    text = victim.read_text(encoding="utf-8")
    lines = [ln for ln in text.split("\n") if not ln.startswith(EDIT_MARK)]
    victim.write_text("\n".join(lines).rstrip("\n") + f"\n{EDIT_MARK}{time.time_ns()}\n", encoding="utf-8")


def edit_value(victim: Path) -> None:
    """Change a value (the first object's name, back and forth): an edit the parse sees, so
    every cross-resource check that read the object runs again."""
    lines = victim.read_text(encoding="utf-8").split("\n")
    for n, line in enumerate(lines):
        m = re.match(r"^  name: (\S+)$", line)
        if m:
            name = m.group(1)
            lines[n] = f"  name: {name[: -len('-benchx')] if name.endswith('-benchx') else name + '-benchx'}"
            break
    victim.write_text("\n".join(lines), encoding="utf-8")


def empty_results(cache_dir: str) -> None:
    """The results cache emptied (ailint's start-up code and rule index stay, as on the
    machine of a user who ran ailint before on other files)."""
    for entry in Path(cache_dir).glob("results-v*"):
        shutil.rmtree(entry, ignore_errors=True)


def empty_cache(cache_dir: str) -> None:
    """The whole cache folder emptied: ailint's start-up code, rule index and results alike,
    as on a CI runner, where each job installs ailint afresh and runs it once."""
    for entry in Path(cache_dir).iterdir() if Path(cache_dir).is_dir() else ():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def scenarios(args: argparse.Namespace, plain: list[str], victim: Path, cache_dir: str) -> list[dict]:
    small = ROOT / "fixtures" / "demo" / "vllm.yaml"
    fmt = ["check", "--format", "json", "--fail-on", "never"]
    n_files = sum(1 for d in plain for p in Path(d).rglob("*") if p.suffix in (".yaml", ".yml", ".json"))
    rows: list[dict] = [
        {
            "name": f"plain corpus ({len(plain)} folders, {n_files:,} files), cold (`--no-cache`)",
            "key": "cold",
            "ailint": [*fmt, "--no-cache", *plain],
            "checkov": [a for d in plain for a in ("-d", d)],
        },
        {
            "name": "plain corpus, first run with the cache (an empty one, filled)",
            "key": "fill",
            "ailint": [*fmt, *plain],
            "before": lambda: empty_results(cache_dir),
            "of": "cold",
        },
        {
            "name": "plain corpus, first run after an install (an empty cache folder: a CI runner's run)",
            "key": "fresh",
            "ailint": [*fmt, *plain],
            "before": lambda: empty_cache(cache_dir),
            "of": "cold",
        },
        {"name": "plain corpus, rerun with nothing changed", "key": "warm", "ailint": [*fmt, *plain], "of": "cold"},
        {
            "name": "plain corpus, rerun after editing one file",
            "key": "edit",
            "ailint": [*fmt, *plain],
            "before": lambda: edit(victim),
            "of": "cold",
        },
        {
            "name": "plain corpus, rerun after changing a value in one file",
            "key": "edit-value",
            "ailint": [*fmt, *plain],
            "before": lambda: edit_value(victim),
            "of": "cold",
        },
        {
            # the same tree as one repository (`--scope run`): every cross-resource call can
            # read every object, so an edit reaches more of them than in 27 projects
            "name": "plain corpus as one repository (`--scope run`), cold (`--no-cache`)",
            "key": "repo-cold",
            "ailint": [*fmt, "--no-cache", "--scope", "run", *plain],
        },
        {
            "name": "plain corpus as one repository, rerun after changing a value in one file",
            "key": "repo-edit",
            "ailint": [*fmt, "--scope", "run", *plain],
            "before": lambda: edit_value(victim),
            "of": "repo-cold",
        },
        {
            "name": "one small file, cold (`--no-cache`)",
            "key": "one",
            "ailint": [*fmt, "--no-cache", str(small)],
            "checkov": ["-f", str(small)],
            "baseline": [bare_python(), "-c", "pass"],
        },
        {
            "name": "one small file, first run after an install (an empty cache folder)",
            "key": "one-fresh",
            "ailint": [*fmt, str(small)],
            "before": lambda: empty_cache(cache_dir),
            "baseline": [bare_python(), "-c", "pass"],
        },
        {
            "name": "one small file, rerun (cached)",
            "key": "one-warm",
            "ailint": [*fmt, str(small)],
            "baseline": [bare_python(), "-c", "pass"],
        },
    ]
    for mb in args.sizes:
        d = str(generate(mb))
        row = {"name": f"generated {mb} MB, cold", "key": f"gen{mb}", "ailint": [*fmt, "--no-cache", d], "mb": mb}
        if args.peer_generated:
            row["checkov"] = ["-d", d]
        rows.append(row)
    if args.sizes:  # what a user's first run does by default: it fills the results cache
        mb = max(args.sizes)
        rows.append(
            {
                "name": f"generated {mb} MB, first run with the cache (an empty one, filled)",
                "key": f"gen{mb}-fill",
                "ailint": [*fmt, str(generate(mb))],
                "before": lambda: empty_results(cache_dir),
                "mb": mb,
            }
        )
        # and what each of its next runs does: a value edited in one file of the large tree
        big_victim = generated_victim(mb)
        rows.append(
            {
                "name": f"generated {mb} MB, rerun after changing a value in one file",
                "key": f"gen{mb}-edit",
                "ailint": [*fmt, str(generate(mb))],
                "before": lambda: edit_value(big_victim),
                "of": f"gen{mb}",
                "mb": mb,
            }
        )
    return rows


def generated_victim(size_mb: int) -> Path:
    """The file of the generated tree whose value the large edit row changes (its first
    Deployment), its text kept to be put back when the benchmark ends (`restore_victims`)."""
    victim = next(
        p
        for p in sorted(generate(size_mb).glob("*.yaml"))
        if "\nkind: Deployment" in p.read_text(encoding="utf-8", errors="replace")
    )
    if not _VICTIMS:
        import atexit

        atexit.register(restore_victims)  # (a run stopped half-way leaves the tree as it found it)
    _VICTIMS.setdefault(victim, victim.read_text(encoding="utf-8"))
    return victim


_VICTIMS: dict[Path, str] = {}  # files of the generated trees the run edits, with their texts


def restore_victims() -> None:
    for victim, text in _VICTIMS.items():
        victim.write_text(text, encoding="utf-8")


def stage_profile(cmd_python: str, plain: list[str], env: dict[str, str]) -> str:
    """Where a cold corpus run (one process) spends its time, stage by stage."""
    code = r"""
import gc, sys, time, json
gc.disable()  # as `ailint check` runs (ailint.doors.lean)
T = {}
t0 = time.perf_counter()
def timed(owner, name, label, generator=False):
    f = getattr(owner, name)
    def w(*a, **k):
        t = time.perf_counter()
        try:
            return iter(list(f(*a, **k))) if generator else f(*a, **k)  # a generator works as it is read
        finally:
            T[label] = T.get(label, 0.0) + time.perf_counter() - t
    setattr(owner, name, w)
from ailint.doors import cli
from ailint.engine import run, load, registry, sources
import ailint.schema.validate as validate
t_import = time.perf_counter() - t0
timed(run, "load_text", "parse (libyaml + positions)")
timed(run.Engine, "check_object", "single-object rules")
timed(run, "bundle_chunk", "bundle rules + schema")
timed(validate, "validate_objects", "schema validation")
timed(run, "discover", "discovery", generator=True)
for p in registry.providers():
    timed(p, "run_pass", "admission-policy pass")
timed(cli, "_emit", "JSON report")  # made as it is written (ailint.report.json.render_chunks)
sys.argv = ["ailint", "check", "--format", "json", "--fail-on", "never", "--no-cache", "--jobs", "1", *sys.argv[1:]]
out = sys.stdout
sys.stdout = open("/dev/null", "w")
try:
    cli.cli(prog_name="ailint")
except SystemExit:
    pass
total = time.perf_counter() - t0
T["bundle rules"] = T.pop("bundle rules + schema", 0.0) - T.get("schema validation", 0.0)
T["start-up imports"] = t_import
out.write(json.dumps({"total": total, **T}))
"""
    for _ in range(2):  # the first run is a warm-up, as for every row (the rule index, the code table)
        proc = subprocess.run(
            [cmd_python, "-c", code, *plain], capture_output=True, text=True, env=env, check=False, timeout=600
        )
    try:
        t = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return f"(profile failed: {proc.stderr.strip()[-300:]})"
    total = t.pop("total")
    parts = sorted(t.items(), key=lambda kv: -kv[1])
    rest = total - sum(v for _, v in parts)
    shown = (
        ", ".join(f"{k} {v:.2f} s" for k, v in parts) + f", the rest (joining, suppressions, rule imports) {rest:.2f} s"
    )
    return f"Where a cold corpus run spends its time (`--jobs 1`, one process, {total:.2f} s): {shown}."


def run(args: argparse.Namespace) -> str:
    if not CORPUS.is_dir():
        sys.exit(f"bench: {CORPUS} not found (the benchmark needs ../shared/corpus)")
    if not args.dev_venv:
        print("bench: installing this tree in bench/.user-venv", file=sys.stderr)
        user_install()
    peer = None if args.no_peer else checkov_cmd()
    if peer is None and not args.no_peer:
        print("bench: Checkov is not installed; run with --install-peer first, or --no-peer", file=sys.stderr)
    cache_dir = tempfile.mkdtemp(prefix="ailint-bench-cache-")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "AILINT_NO_CACHE")}
    env["AILINT_CACHE_DIR"] = cache_dir
    plain, victim = plain_copy()
    ailint = ailint_cmd(args.dev_venv)
    load_before = os.getloadavg()
    rows = []
    med_by_key: dict[str, dict[str, tuple[float, float]]] = {}
    cmd_by_key: dict[str, list[str]] = {}
    for sc in scenarios(args, plain, victim, cache_dir):
        cmd_by_key[sc["key"]] = ailint + sc["ailint"]
        cmds = {"ailint": ailint + sc["ailint"]}
        if peer and "checkov" in sc:
            cmds["checkov"] = peer + [
                "--framework",
                "kubernetes",
                "--quiet",
                "--compact",
                "-o",
                "json",
                "--skip-download",
                *sc["checkov"],
            ]
        if "baseline" in sc:
            cmds["python -c pass"] = sc["baseline"]
        before = sc.get("before")
        for cmd in cmds.values():  # warm-up, discarded (Checkov compiles; ailint fills the cache)
            measure(cmd, env)
        samples: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
        repeat = args.large_repeat if sc.get("mb", 0) >= 100 and args.large_repeat else args.repeat
        rounds = max(repeat, args.small_repeat) if "baseline" in sc else repeat
        # a row measured as a share of another ("of"): each sample is paired with a run of
        # that row's command just before it (a `--no-cache` run leaves the results cache as
        # it is), so the share compares two runs of one moment, not two rows minutes apart
        reference = cmd_by_key.get(sc.get("of", ""))
        shares: list[float] = []
        order = list(cmds.items())
        for r in range(rounds):
            # alternate between tools, and the order in which they run each round: a command
            # run right after another pays for what that one left behind (a bare interpreter
            # right after a one-file ailint run took 11.0 and 11.3 ms here, in two rounds of
            # 40, against 10.4 and 10.5 ms right after another bare one)
            for k, cmd in order if r % 2 == 0 else order[::-1]:
                if k == "checkov" and r >= repeat:
                    continue  # (seconds a run: its median is steady in `repeat` rounds)
                ref = measure(reference, env)[0] if reference is not None and k == "ailint" else None
                if before and k == "ailint":
                    before()
                samples[k].append(measure(cmd, env, bare_wall="baseline" in sc))
                if ref is not None:
                    shares.append(samples[k][-1][0] / ref)
        med = {k: (statistics.median(s[0] for s in v), statistics.median(s[1] for s in v)) for k, v in samples.items()}
        med_by_key[sc["key"]] = med
        notes = []
        if "checkov" in med:
            notes.append(f"{med['checkov'][0] / med['ailint'][0]:.1f}x faster than Checkov")
        if "python -c pass" in med:
            # each round's ailint run against the bare interpreter's of the same round: the
            # quartiles show how far the host's swings move a ratio of two short runs
            ratios = [a[0] / b[0] for a, b in zip(samples["ailint"], samples["python -c pass"], strict=True)]
            q1, _, q3 = statistics.quantiles(ratios, n=4)
            notes.append(f"{statistics.median(ratios):.1f}x `python -c pass` (paired; quartiles {q1:.1f} to {q3:.1f})")
        if shares:
            notes.append(f"{100 * statistics.median(shares):.0f}% of the cold run (paired)")
        if "mb" in sc:
            notes.append(f"{med['ailint'][0] / sc['mb']:.2f} s/MB")
        if repeat != args.repeat:
            notes.append(f"median of {repeat}")
        if rounds != repeat:
            notes.append(f"medians of {rounds}" + (f" (Checkov {repeat})" if "checkov" in med else ""))
        rows.append((sc["name"], med, "; ".join(notes)))
        print(
            f"bench: {sc['name']}: " + ", ".join(f"{k} {v[0]:.3f}s {v[1]:.0f}MiB" for k, v in med.items()),
            file=sys.stderr,
        )
    python = str(Path(ailint[0]).with_name("python"))
    profile = stage_profile(python, plain, env) if args.profile else ""
    by_phase = phase_table(python, plain) if args.phases else ""
    by_time = time_table(python, plain) if args.timeline else ""
    edit(victim)  # leave no trace of the run's edits but a fresh copy next time
    restore_victims()  # (the generated trees are kept from run to run)
    shutil.rmtree(cache_dir, ignore_errors=True)
    load_after = os.getloadavg()
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            m = re.search(r"model name\s*:\s*(.*)", fh.read())
            cpu = m.group(1) if m else cpu
    except OSError:
        pass
    install = "`pip install` of this tree in a fresh venv" if not args.dev_venv else "the development venv"
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} cores ({cpu}), Python "
        f"{platform.python_version()}, ailint from {install}; medians of {args.repeat} alternating runs after a "
        f"discarded warm-up (`python bench/run.py`); load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after (other work on the machine makes every figure noisier).",
        "",
        "| scenario | ailint | peak RSS | Checkov 3.3.30 | peak RSS | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for name, med, ratio in rows:
        a = med["ailint"]
        c = med.get("checkov")
        base = med.get("python -c pass")
        cs = f"{c[0]:.2f} s" if c else "–"
        cm = f"{c[1]:.0f} MiB" if c else "–"
        if base:
            cs = f"{cs} (python -c pass: {base[0] * 1000:.0f} ms)"
        lines.append(f"| {name} | {a[0]:.2f} s | {a[1]:.0f} MiB | {cs} | {cm} | {ratio} |")
    if profile:
        lines += ["", profile]
    if by_phase:
        lines += ["", by_phase]
    if by_time:
        lines += ["", by_time]
    return "\n".join(lines) + "\n"


def phase_table(python: str, plain: list[str]) -> str:
    """The cold corpus run's instructions by phase, in one process and in two (`phases.py`)."""
    import phases  # bench/phases.py, beside this script

    if shutil.which("valgrind") is None:
        return "(no valgrind here: no instructions by phase)"
    print("bench: counting instructions by phase (valgrind, a few minutes)", file=sys.stderr)
    return (
        "Instructions of a cold corpus run by phase (`python bench/phases.py`: callgrind, its counts "
        "written at each fork; the same on a busy machine):\n\n" + phases.table(python, plain)
    )


def time_table(python: str, plain: list[str]) -> str:
    """The cold corpus run's wall time, CPU and page faults by phase, in one process and in
    two, with the bound of two processes (`timeline.py`)."""
    import timeline  # bench/timeline.py, beside this script

    print("bench: timing the phases (bench/timeline.py)", file=sys.stderr)
    return (
        "Wall time of a cold corpus run by phase (`python bench/timeline.py`: medians of 5 alternating "
        "pairs; the last row splits the one process's CPU evenly around the two-process run's serial "
        "phases, that is, with a second process that costs nothing):\n\n" + timeline.table(python, plain)
    )


def update_readme(table: str) -> None:
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    if README_START not in text:
        return
    before, rest = text.split(README_START, 1)
    _, after = rest.split(README_END, 1)
    readme.write_text(f"{before}{README_START}\n{table.rstrip()}\n\n{README_END}{after}", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--install-peer", action="store_true", help=f"install {PEER} into bench/.peer-venv and exit")
    ap.add_argument("--no-peer", action="store_true", help="measure ailint only")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1, 10, 100])
    ap.add_argument("--large-repeat", type=int, default=0, help="runs of the 100 MB corpus (default: --repeat)")
    ap.add_argument(
        "--small-repeat",
        type=int,
        default=25,
        help="runs of ailint and the bare interpreter in the one-small-file rows",
    )
    ap.add_argument("--peer-generated", action="store_true", help="also run Checkov on the generated corpora (slow)")
    ap.add_argument("--dev-venv", action="store_true", help="time this interpreter's ailint, not a user install")
    ap.add_argument("--profile", action="store_true", help="add where a cold corpus run spends its time")
    ap.add_argument("--phases", action="store_true", help="add its instructions by phase and process (valgrind)")
    ap.add_argument("--timeline", action="store_true", help="add its wall time, CPU and page faults by phase")
    ap.add_argument("--update-readme", action="store_true")
    args = ap.parse_args()
    if args.install_peer:
        install_peer()
        return
    table = run(args)
    print(table)
    if args.update_readme:
        update_readme(table)


if __name__ == "__main__":
    main()
