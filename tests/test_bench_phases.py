"""`bench/phases.py` names each callgrind dump after the phase it ends in: a wrong mapping
would put a phase's instructions in another's row and mislead every reading of the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import bench_module


@pytest.fixture(scope="module")
def phases():
    return bench_module("phases")


def write_run(folder: Path, parent: int, forks: list[tuple[str, int]], counts: list[int], children: dict[int, int]):
    """Fake callgrind output: the parent's dump n (`cg.PID.n`) ends at its n-th fork, the last
    file (`cg.PID`) holds the rest; a child's file holds its own work; plus the probe's log."""
    with (folder / "forks.jsonl").open("w") as log:
        for label, child in forks:
            log.write(json.dumps({"pid": parent, "label": label, "child": child}) + "\n")
    for n, count in enumerate(counts[:-1], start=1):
        (folder / f"cg.{parent}.{n}").write_text(f"events: Ir\ntotals: {count}\n")
    (folder / f"cg.{parent}").write_text(f"events: Ir\ntotals: {counts[-1]}\n")
    for pid, count in children.items():
        (folder / f"cg.{pid}").write_text(f"events: Ir\ntotals: {count}\n")
    (folder / "cg.999").write_text("events: Ir\ntotals: 5\n")  # a boundary's child, which left at once


def test_two_processes(tmp_path, phases):
    forks = [
        ("parse+", 0),
        ("fork", 200),  # the parse child
        ("run_forked-", 0),
        ("parse-", 0),
        ("finish+", 0),
        ("fork", 300),  # the bundle child
        ("bundle_chunk+", 0),  # this process's schema task: still the bundle phase
        ("run_forked-", 0),
        ("finish-", 0),
    ]
    write_run(tmp_path, 100, forks, [1, 2, 30, 4, 5, 60, 700, 7000, 8000, 90000], {200: 11, 300: 22})
    got = phases.segments(tmp_path)
    assert got == {
        "start-up": 1,
        "parse": 2 + 30 + 4,
        "join": 5 + 60,
        "bundle": 700 + 7000,
        "finish": 8000 + 90000,
        "children": {"parse": 11, "bundle": 22},
    }


def test_one_process(tmp_path, phases):
    forks = [
        ("parse+", 0),
        ("parse-", 0),
        ("finish+", 0),
        ("bundle_chunk+", 0),
        ("bundle_chunk+", 0),  # the schema pass: still the bundle phase
        ("_provider_passes_apart-", 0),
        ("finish-", 0),
    ]
    write_run(tmp_path, 100, forks, [1, 20, 3, 40, 500, 6000, 70000, 800000], {})
    got = phases.segments(tmp_path)
    assert got == {
        "start-up": 1,
        "parse": 20,
        "join": 3 + 40,
        "bundle": 500 + 6000,
        "finish": 70000 + 800000,
        "children": {},
    }


def test_table_critical_path(phases, monkeypatch):
    """The critical path adds the serial phases to each shared phase split evenly, or to its
    longer process; the totals count every process."""
    m = 1_000_000
    one = {"start-up": 100 * m, "parse": 4000 * m, "join": 50 * m, "bundle": 2000 * m, "finish": 300 * m}
    two = {"start-up": 100 * m, "parse": 2500 * m, "join": 90 * m, "bundle": 1200 * m, "finish": 300 * m}
    kids = {"parse": 2300 * m, "bundle": 1000 * m}
    monkeypatch.setattr(phases, "counted", lambda python, paths, jobs, env: (one, {}) if jobs == 1 else (two, kids))
    monkeypatch.setattr(phases, "settled", lambda *args: None)  # (no ailint run here)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in phases.table("python", ["x"]).splitlines()}
    assert rows["all"] == "| all | 6.450 G | 7.490 G in all (1.161) | |"
    # 100 + (2,500 + 2,300) / 2 + 90 + (1,200 + 1,000) / 2 + 300, and with the longer processes
    assert rows["critical path"] == "| critical path | 6.450 G | 3.990 G to 4.190 G (0.62 to 0.65) | |"
    assert rows["parse (reading, parsing, object rules)"].endswith("| 4.000 G | 2.500 G | 2.300 G |")
    assert rows["join (catalogue pass, project contexts, shared indexes)"].endswith("| 0.050 G | 0.090 G |  |")
