#!/usr/bin/env python3
"""Benchmark ailint against Checkov, whole process against whole process.

    python bench/run.py --install-peer        # once: checkov==3.3.30 in bench/.peer-venv
    python bench/run.py                       # all scenarios, markdown table on stdout
    python bench/run.py --update-readme       # also write the table into README.md

Scenarios: the plain corpus (../shared/corpus/*/plain), one small file (ailint beside a
bare `python -c pass`), and generated corpora of 1, 10 and 100 MB (copies of the corpus
files, renamed) to show how time and memory grow. Runs alternate between the tools;
the table reports medians of wall time and of peak RSS (`/usr/bin/time -v`). Checkov's
first run after install compiles its modules: a warm-up run of each tool is discarded.
"""

from __future__ import annotations

import argparse
import glob
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
PEER_VENV = ROOT / "bench" / ".peer-venv"
GENERATED = ROOT / "bench" / "generated"  # not a dot folder: Checkov skips those
PEER = "checkov==3.3.30"
README_START, README_END = "<!-- bench:start -->", "<!-- bench:end -->"


def ailint_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("ailint")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ailint"]


def checkov_cmd() -> list[str] | None:
    exe = PEER_VENV / "bin" / "checkov"
    return [str(exe)] if exe.exists() else None


def install_peer() -> None:
    if not (PEER_VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
    subprocess.run([str(PEER_VENV / "bin" / "pip"), "install", "-q", PEER], check=True)


def measure(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one whole process."""
    time_bin = "/usr/bin/time"
    if os.path.exists(time_bin):
        full = [time_bin, "-v", *cmd]
    else:
        full = cmd
    # As on a user's machine, a tool's first (discarded) run may cache its bytecode: with
    # PYTHONDONTWRITEBYTECODE set, every run would compile each edited module again.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t0 = time.perf_counter()
    proc = subprocess.run(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - t0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr or "")
    rss = int(m.group(1)) / 1024 if m else float("nan")
    return wall, rss


def bare_python() -> str:
    """The interpreter of an empty virtual environment (bench/.bare-venv): what `python -c
    pass` costs on a user's machine. The development venv's own interpreter is slower to
    start (its editable-install hook imports pathlib and more at every start), which would
    flatter the ratio."""
    venv = ROOT / "bench" / ".bare-venv"
    exe = venv / "bin" / "python"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(exe)


def generate(size_mb: int) -> Path:
    """A folder of about size_mb MB built from copies of the plain corpus files."""
    out = GENERATED / f"{size_mb}MB"
    marker = out / ".complete"
    if marker.exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    files = sorted(glob.glob(str(CORPUS / "*" / "plain" / "*.y*ml")))
    target = size_mb * 1024 * 1024
    total, i = 0, 0
    while total < target:
        src = files[i % len(files)]
        dst = out / f"c{i // len(files)}_{Path(src).name}"
        shutil.copyfile(src, dst)
        total += os.path.getsize(dst)
        i += 1
    marker.write_text("")
    return out


def scenarios(sizes: list[int]) -> list[tuple[str, list[str], list[str], list[str] | None]]:
    """(name, ailint args, checkov args, extra baseline command)."""
    plain = sorted(glob.glob(str(CORPUS / "*" / "plain")))
    small = ROOT / "fixtures" / "demo" / "vllm.yaml"
    out: list[tuple[str, list[str], list[str], list[str] | None]] = [
        (
            f"plain corpus ({len(plain)} folders, 1,922 files)",
            ["check", "--format", "json", "--fail-on", "never", *plain],
            [a for d in plain for a in ("-d", d)],
            None,
        ),
        (
            "one small file",
            ["check", "--format", "json", "--fail-on", "never", str(small)],
            ["-f", str(small)],
            [bare_python(), "-c", "pass"],
        ),
    ]
    for mb in sizes:
        d = str(generate(mb))
        out.append((f"generated {mb} MB", ["check", "--format", "json", "--fail-on", "never", d], ["-d", d], None))
    return out


def run(args: argparse.Namespace) -> str:
    if not CORPUS.is_dir():
        sys.exit(f"bench: {CORPUS} not found (the benchmark needs ../shared/corpus)")
    peer = checkov_cmd()
    if peer is None and not args.no_peer:
        print("bench: Checkov is not installed; run with --install-peer first, or --no-peer", file=sys.stderr)
    rows = []
    for name, a_args, c_args, baseline in scenarios(args.sizes):
        cmds = {"ailint": ailint_cmd() + a_args}
        if peer and not args.no_peer and not (name.startswith("generated 100") and args.skip_peer_100):
            cmds["checkov"] = peer + [
                "--framework",
                "kubernetes",
                "--quiet",
                "--compact",
                "-o",
                "json",
                "--skip-download",
                *c_args,
            ]
        if baseline:
            cmds["python -c pass"] = baseline
        for cmd in cmds.values():  # warm-up, discarded
            measure(cmd)
        samples: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
        for _ in range(args.repeat):
            for k, cmd in cmds.items():  # alternate between tools
                samples[k].append(measure(cmd))
        med = {k: (statistics.median(s[0] for s in v), statistics.median(s[1] for s in v)) for k, v in samples.items()}
        ratio = ""
        if "checkov" in med:
            ratio = f"{med['checkov'][0] / med['ailint'][0]:.1f}x faster"
        if "python -c pass" in med:
            ratio = f"{med['ailint'][0] / med['python -c pass'][0]:.1f}x `python -c pass`"
            if "checkov" in med:
                ratio += f"; {med['checkov'][0] / med['ailint'][0]:.1f}x faster than Checkov"
        rows.append((name, med, ratio))
        print(f"bench: {name}: " + ", ".join(f"{k} {v[0]:.2f}s {v[1]:.0f}MiB" for k, v in med.items()), file=sys.stderr)
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            m = re.search(r"model name\s*:\s*(.*)", fh.read())
            cpu = m.group(1) if m else cpu
    except OSError:
        pass
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores ({cpu}), Python "
        f"{platform.python_version()}, medians of {args.repeat} alternating runs after a discarded warm-up "
        f"(`python bench/run.py`).",
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
    return "\n".join(lines) + "\n"


def update_readme(table: str) -> None:
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    if README_START not in text:
        return
    before, rest = text.split(README_START, 1)
    _, after = rest.split(README_END, 1)
    readme.write_text(f"{before}{README_START}\n{table}{README_END}{after}", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--install-peer", action="store_true", help=f"install {PEER} into bench/.peer-venv and exit")
    ap.add_argument("--no-peer", action="store_true", help="measure ailint only")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1, 10, 100])
    ap.add_argument("--skip-peer-100", action="store_true", help="do not run Checkov on the 100 MB corpus")
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
