"""`bench/compare.py` reports the peak memory of both sides for the large scenario: read
wrongly (the wrong line of `/usr/bin/time -v`, or one side's figure under the other's name),
a change that grows the 100 MB run's peak would read as one that shrinks it."""

from __future__ import annotations

import os
import sys

import pytest
from conftest import bench_module

needs_time = pytest.mark.skipif(not os.path.exists("/usr/bin/time"), reason="needs GNU time at /usr/bin/time")


@pytest.fixture(scope="module")
def compare():
    return bench_module("compare")


def _holding(mib: int) -> list[str]:
    """A process that holds about `mib` MiB (touched, so resident) for a moment."""
    return [sys.executable, "-c", f"b = bytearray({mib} << 20); b[::4096] = b'x' * len(b[::4096])"]


@needs_time
def test_a_run_timed_with_peaks_records_its_peak(compare):
    peaks: list[float] = []
    wall = compare.timed(_holding(64), dict(os.environ), peaks)
    assert wall > 0 and len(peaks) == 1
    assert 64 <= peaks[0] < 64 + 200  # the bytes it held, and an interpreter's worth more


@needs_time
def test_paired_reports_each_sides_peak_under_its_own_name(compare):
    env = dict(os.environ)
    got = compare.paired(_holding(16), _holding(96), env, env, 2, peaks=True)
    assert "peak RSS" in got
    small, large = (float(x) for x in got.split("peak RSS ")[1].split(" MiB (medians)")[0].split(" MiB -> "))
    assert 16 <= small < large and large >= 96  # the revision's first, this tree's second


def test_paired_without_peaks_reports_times_only(compare):
    env = dict(os.environ)
    got = compare.paired([sys.executable, "-c", "pass"], [sys.executable, "-c", "pass"], env, env, 2)
    assert "paired:" in got and "peak" not in got


def test_a_first_run_scenario_empties_each_sides_results_and_keeps_the_rest(compare, tmp_path, monkeypatch):
    """`--scenario fill` and `large-fill` time a first run with the cache: before each pair,
    each side's results go (a rerun would be timed otherwise) and its code table, rule index
    and scans stay (a first run after an install is another row)."""
    monkeypatch.setattr(compare, "WORK", tmp_path)
    for side in compare.SIDES:
        results = tmp_path / f"cache-{side}" / "results-v2" / "ab"
        results.mkdir(parents=True)
        (results / "entry").write_bytes(b"x")
        (tmp_path / f"cache-{side}" / "code-1.bin").write_bytes(b"code")
    compare._empty_results()
    for side in compare.SIDES:
        assert not list((tmp_path / f"cache-{side}").glob("results-v*"))
        assert (tmp_path / f"cache-{side}" / "code-1.bin").read_bytes() == b"code"
