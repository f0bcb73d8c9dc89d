"""`--jobs`: the forked queue of `ailint.engine.parallel.run_forked`, on its own."""

from __future__ import annotations

import os
import time

import pytest
from ailint.engine.parallel import run_forked

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or (os.cpu_count() or 1) < 2, reason="needs fork and 2 cores")


def test_every_task_comes_back_once_from_whichever_process_ran_it() -> None:
    parent = os.getpid()

    def work(t: int) -> tuple[int, list[int]]:
        time.sleep(0.004)  # long enough that the child takes its share
        return os.getpid(), list(range(t * 100))  # a result worth pickling

    got = run_forked(work, list(range(60)), 2)
    assert got is not None and sorted(got) == list(range(60))
    assert all(v[1] == list(range(t * 100)) for t, v in got.items())
    ran_by = {v[0] for v in got.values()}
    assert parent in ran_by and len(ran_by) == 2, "both processes took tasks"


def test_a_child_that_fails_midway_keeps_what_it_sent_and_the_rest_is_done_here() -> None:
    parent = os.getpid()
    log = os.pipe()

    def work(t: int) -> int:
        if os.getpid() != parent:
            os.write(log[1], b"c")
            if t >= 30:
                raise RuntimeError("the child breaks")
        time.sleep(0.003)
        return t * t

    got = run_forked(work, list(range(60)), 2)
    os.close(log[1])
    child_calls = b""
    while chunk := os.read(log[0], 4096):
        child_calls += chunk
    os.close(log[0])
    assert got == {t: t * t for t in range(60)}
    assert child_calls, "the child ran some tasks before it broke"
