"""`bench/timeline.py` puts each stretch of a run's wall time in the phase it ends in, each
forked child's CPU in the phase it was forked in, and computes the bound of two processes
from them: a stretch in the wrong phase, or a child counted twice, would move the bound that
docs/speed.md reads the cold target against."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from conftest import bench_module

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def timeline():
    return bench_module("timeline")


def note(
    pid: int, label: str, t: float, cpu: float = 0.0, faults: float = 0.0, child: int = 0, sys: float = 0.0
) -> dict:
    return {"pid": pid, "label": label, "child": child, "t": t, "cpu": cpu, "sys": sys, "faults": faults}


TWO = [  # this process's notes carry its CPU so far (cumulative), a child's its own at its end
    note(1, "parse+", 1.0, cpu=0.9),
    note(2, "child+", 1.01),
    note(1, "fork", 1.02, cpu=0.95, child=2),
    note(1, "run_forked-", 4.0, cpu=3.4),
    note(2, "child-", 4.0, cpu=2.9, faults=800, sys=0.2),
    note(1, "parse-", 4.5, cpu=3.9),
    note(1, "finish+", 4.6, cpu=4.0),
    note(3, "child+", 5.0),
    note(1, "fork", 5.0, cpu=4.4, child=3),
    note(1, "bundle_chunk+", 5.1, cpu=4.5),  # this process's schema task: still the bundle phase
    note(3, "child-", 7.0, cpu=1.8, faults=900, sys=0.3),
    note(1, "run_forked-", 7.0, cpu=5.3),
    note(1, "finish-", 7.5, cpu=5.8),
    note(1, "exit", 7.7, cpu=6.0, faults=3000, sys=0.4),
]


def test_two_processes(timeline):
    got = timeline.attribute(TWO, 0.0, 8.0)
    assert got["phases"] == pytest.approx({"start-up": 1.0, "parse": 3.5, "join": 0.5, "bundle": 2.0, "finish": 1.0})
    assert got["cpu_by"] == pytest.approx({"start-up": 0.9, "parse": 3.0, "join": 0.5, "bundle": 0.9, "finish": 0.7})
    assert got["wall"] == 8.0
    assert (got["cpu"], got["sys"], got["faults"]) == (6.0, 0.4, 3000)
    assert got["children"] == {
        "parse": {"cpu": 2.9, "sys": 0.2, "faults": 800, "n": 1},
        "bundle": {"cpu": 1.8, "sys": 0.3, "faults": 900, "n": 1},
    }
    assert timeline.total_cpu(got) == pytest.approx(10.7)
    assert timeline.total_sys(got) == pytest.approx(0.9)


def test_one_process(timeline):
    events = [
        note(1, "parse+", 0.5),
        note(1, "parse-", 6.5),
        note(1, "finish+", 6.6),
        note(1, "bundle_chunk+", 6.8),
        note(1, "bundle_chunk+", 9.0),  # the schema pass: still the bundle phase
        note(1, "_provider_passes_apart-", 10.0),
        note(1, "finish-", 10.3),
        note(1, "exit", 10.4, cpu=10.2, faults=5000),
    ]
    got = timeline.attribute(events, 0.0, 10.5)
    assert got["phases"] == pytest.approx({"start-up": 0.5, "parse": 6.0, "join": 0.3, "bundle": 3.2, "finish": 0.5})
    assert got["children"] == {}
    assert timeline.total_cpu(got) == 10.2


def test_bound_and_table(timeline):
    """The bound splits the one process's CPU evenly around the two-process run's serial
    phases; the table says whether every run printed the same report."""
    two = {**timeline.attribute(TWO, 0.0, 8.0), "report": "a"}
    one = {
        "phases": {"start-up": 0.5, "parse": 6.0, "join": 0.3, "bundle": 3.2, "finish": 0.5},
        "cpu_by": {"start-up": 0.5, "parse": 5.9, "join": 0.3, "bundle": 3.1, "finish": 0.4},
        "wall": 10.5,
        "cpu": 10.2,
        "sys": 0.5,
        "faults": 5000,
        "children": {},
        "report": "a",
    }
    # serial: start-up 1.0 + join 0.5 + finish 1.0 = 2.5; (10.2 - 2.5) / 2 + 2.5 = 6.35
    assert timeline.bound(one, two) == pytest.approx(6.35)
    text = timeline.render([one], [two])
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("|")}
    assert rows["with a second process that costs nothing"] == (
        "| with a second process that costs nothing | | 6,350 ms (0.79 of the run) | |"
    )
    assert rows["parse (reading, parsing, object rules)"].endswith(
        "| 6,000 ms, 5,900 ms | 3,500 ms (half of one process's: 3,000 ms) | 5,900 ms (3,000 ms + 2,900 ms) |"
    )
    assert rows["join (catalogue pass, project contexts, shared indexes)"].endswith(
        "| 300 ms, 300 ms | 500 ms | 500 ms |"
    )
    assert rows["the run"] == "| the run | 10,500 ms, 10,200 ms | 8,000 ms | 10,700 ms (1.05 of one process's) |"
    # the kernel's part: this process's and each child's, summed
    assert rows["of which the kernel's (page faults, reading files)"].endswith("| 500 ms | | 900 ms |")
    assert text.endswith("Every run printed the same report.")
    assert "2 different reports" in timeline.render([one], [{**two, "report": "b"}])


def test_a_real_run(timeline):
    """The probe's notes of a real run: the phases add up to its wall time, the parse is
    timed, and one process and two print the same report (each forked child counted where it
    was forked, on a machine that has two cores)."""
    paths = sorted(str(p) for p in (ROOT / "fixtures" / "demo").glob("*.yaml"))
    assert len(paths) > 1
    one = timeline.timed(sys.executable, paths, 1)
    two = timeline.timed(sys.executable, paths, 2)
    for run in (one, two):
        assert sum(run["phases"].values()) == pytest.approx(run["wall"])
        assert all(v >= 0 for v in run["phases"].values())
        assert run["phases"]["parse"] > 0 and run["cpu"] > 0
        assert sum(run["cpu_by"].values()) == pytest.approx(run["cpu"])
        assert 0 <= run["sys"] <= run["cpu"]
    assert one["children"] == {}
    assert one["report"] == two["report"]
    if (os.cpu_count() or 1) >= 2:
        assert two["children"]["parse"]["n"] == 1 and two["children"]["parse"]["cpu"] > 0


def test_a_run_that_leaves_no_notes(timeline):
    """An interpreter without ailint (here, a program that exits at once) is a clear message,
    not a traceback of the table's arithmetic."""
    false = shutil.which("false")
    if false is None:
        pytest.skip("no `false` program here")
    with pytest.raises(SystemExit, match="left no notes of its phases"):
        timeline.timed(false, [str(ROOT / "fixtures" / "demo")], 1)
