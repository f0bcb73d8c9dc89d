"""bench/cache_fuzz.py: a short run on fixture folders ends with every cached rerun equal to a
fresh one, and a report pair that differs is explained by the findings only one run has."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, bench_module

cache_fuzz = bench_module("cache_fuzz")


def test_a_short_run_on_fixtures_finds_every_rerun_the_same(tmp_path: Path) -> None:
    work = tmp_path / "work"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "cache_fuzz.py"),
            *("--source", str(ROOT / "fixtures" / "GPU001"), "--source", str(ROOT / "fixtures" / "SRV004")),
            *("--rounds", "3", "--jobs", "1", "--seed", "3", "--context", "--work", str(work)),
            *("--arg=--scope", "--arg=dir"),  # every folder a project of its own
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "round 2: same" in done.stdout
    assert not work.exists()  # removed when every round agreed


def test_differences_name_the_findings_only_one_run_has() -> None:
    one = {"code": "GPU001", "file": "a.yaml", "line": 3}
    two = {"code": "GPU003", "file": "b.yaml", "line": 9}
    cached = json.dumps({"findings": [one, two]})
    fresh = json.dumps({"findings": [one]})
    got = cache_fuzz.differences(cached, fresh)
    assert len(got) == 1 and got[0].startswith("cached only:") and "GPU003" in got[0]
    assert cache_fuzz.differences(fresh, fresh) == [
        "the same findings; the reports differ elsewhere (order, files, counts)"
    ]
    assert cache_fuzz.differences("not json", fresh) == ["a report is not JSON"]
