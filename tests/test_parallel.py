"""`--jobs`: the forked queue of `ailint.engine.parallel.run_forked`, on its own."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from ailint.engine.parallel import run_forked

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or (os.cpu_count() or 1) < 2, reason="needs fork and 2 cores")


def _count_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one for each child `run_forked` forks (counted in the parent,
    whatever the children then did)."""
    from ailint.engine import parallel

    real = parallel._fork_child
    forks: list[int] = []

    def counted(body: object) -> tuple[int, int]:
        forks.append(1)
        return real(body)

    monkeypatch.setattr(parallel, "_fork_child", counted)
    return forks


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


def test_with_tasks_apart_only_children_work_and_each_task_apart_ends_its_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bounded memory: the parent (which holds every object) runs no task, and what a task
    apart loads (a schema store, the CEL runtime) dies with its child."""
    forks = _count_forks(monkeypatch)
    parent = os.getpid()

    def work(t: int) -> tuple[int, int]:
        time.sleep(0.002)
        return os.getpid(), t * 3

    tasks = [-1, -2, *range(40)]
    got = run_forked(work, tasks, 2, apart=frozenset({-1, -2}))
    assert got is not None and sorted(got) == sorted(tasks)
    assert all(v[1] == t * 3 for t, v in got.items())
    ran_by = {t: v[0] for t, v in got.items()}
    assert parent not in ran_by.values(), "the parent took no task"
    assert ran_by[-1] != ran_by[-2], "the two tasks apart ran in two children"
    others = {ran_by[t] for t in range(40)}
    assert ran_by[-1] not in others and ran_by[-2] not in others, "a child ends after a task apart"
    assert len(forks) == 4, "each child of a task apart was replaced by a fresh one for the rest"


def test_with_tasks_apart_a_child_that_fails_is_replaced_and_nothing_is_lost(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The child of task 0 ends after it (a task apart), and the first child to take another
    task breaks on it, having sent nothing: both are replaced while tasks are left, and the
    task in the broken child's hands is done here."""
    forks = _count_forks(monkeypatch)
    parent = os.getpid()
    broke = tmp_path / "broke"

    def work(t: int) -> tuple[int, int]:
        if os.getpid() != parent and t != 0:
            try:
                os.close(os.open(broke, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                raise RuntimeError("the child breaks on its first task")
        time.sleep(0.005)
        return os.getpid(), t + 1

    got = run_forked(work, list(range(30)), 2, apart=frozenset({0}))
    assert got is not None and {t: v[1] for t, v in got.items()} == {t: t + 1 for t in range(30)}
    by_parent = [t for t in range(30) if got[t][0] == parent]
    assert len(by_parent) == 1 and by_parent[0] != 0, "only the broken child's task is done here"
    assert got[0][0] not in {got[t][0] for t in range(1, 30)}, "the child of task 0 ended after it"
    assert len(forks) == 4, "two at the start, one for the child of task 0, one for the broken one"


def test_with_tasks_apart_no_fork_left_means_the_parent_does_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork that fails (no process left, no memory) is no error: the tasks no child took
    are done in the parent."""
    from ailint.engine import parallel

    real = parallel._fork_child
    forks: list[int] = []

    def fork_once(body: object) -> tuple[int, int]:
        forks.append(1)
        if len(forks) > 1:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return real(body)

    monkeypatch.setattr(parallel, "_fork_child", fork_once)
    parent = os.getpid()
    got = run_forked(lambda t: (os.getpid(), t), [-1, *range(20)], 2, apart=frozenset({-1}))
    assert got is not None and {t: v[1] for t, v in got.items()} == {t: t for t in [-1, *range(20)]}
    assert got[-1][0] != parent, "the one child ran the task apart"
    assert all(got[t][0] == parent for t in range(20)), "the rest was done here"


def test_a_fork_that_fails_is_no_error_the_parent_takes_every_task(monkeypatch: pytest.MonkeyPatch) -> None:
    from ailint.engine import parallel

    def no_fork(body: object) -> tuple[int, int]:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(parallel, "_fork_child", no_fork)
    parent = os.getpid()
    got = run_forked(lambda t: (os.getpid(), t * 2), list(range(12)), 2)
    assert got == {t: (parent, t * 2) for t in range(12)}


def test_run_beside_without_a_fork_says_so_and_leaks_no_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    from ailint.engine import parallel

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(parallel.os, "fork", no_fork)
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    assert parallel.run_beside(lambda: 1) is None
    assert run_forked(lambda t: t, list(range(5)), 2) == {t: t for t in range(5)}
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before, "no pipe or temporary file left open"


def test_with_tasks_apart_an_unknown_queue_forks_no_endless_children(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the pipe cannot say what it holds, a fresh child that finds it empty ends the
    replacing: the run ends, with every task done once."""
    from ailint.engine import parallel

    monkeypatch.setattr(parallel, "_queued", lambda rd: True)
    forks: list[int] = []
    real = parallel._fork_child

    def counted(body: object) -> tuple[int, int]:
        forks.append(1)
        return real(body)

    monkeypatch.setattr(parallel, "_fork_child", counted)
    got = run_forked(lambda t: t, [-1, -2, *range(6)], 2, apart=frozenset({-1, -2}))
    assert got == {t: t for t in [-1, -2, *range(6)]}
    assert len(forks) <= 6


def test_a_childs_results_go_to_an_unnamed_file(tmp_path, monkeypatch):
    """The file a forked child streams its results into has no name (nothing is left behind
    in the temporary folder, whatever ends the run) and reads back what was written; where
    no folder takes an unnamed file, `tempfile` makes one as it would."""
    import tempfile

    from ailint.engine.parallel import _unnamed_file

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with _unnamed_file() as fh:
        fh.write(b"result")
        fh.flush()
        assert os.pread(fh.fileno(), 6, 0) == b"result"
        if hasattr(os, "O_TMPFILE"):
            assert os.fstat(fh.fileno()).st_nlink == 0
    assert list(tmp_path.iterdir()) == []

    made = []
    real = tempfile.TemporaryFile

    def recorded(*a, **k):
        made.append(1)
        return real(*a, **k)

    from ailint.engine import parallel

    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    for var in parallel._TMP_VARS:
        monkeypatch.setenv(var, str(not_a_folder))
    monkeypatch.setattr(parallel, "_TMP_FOLDERS", ())
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(tempfile, "TemporaryFile", recorded)
    with _unnamed_file() as fh:
        fh.write(b"x")
        fh.flush()
        assert os.pread(fh.fileno(), 1, 0) == b"x"
    assert made == [1]
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


def test_what_the_parent_keeps_of_a_childs_result_is_worked_out_once_as_it_arrives() -> None:
    """`taken` sees every result a child sent, once, and none of the parent's own."""
    parent = os.getpid()

    def work(t: int) -> tuple[int, int]:
        time.sleep(0.004)  # long enough that the child takes its share
        return os.getpid(), t

    seen: list[int] = []

    def taken(result: tuple[int, int]) -> tuple[int, int, str]:
        assert os.getpid() == parent  # worked out here, not in the child
        seen.append(result[1])
        return (*result, "taken")

    got = run_forked(work, list(range(40)), 2, taken=taken)
    assert got is not None and sorted(got) == list(range(40))
    from_child = sorted(t for t, v in got.items() if v[0] != parent)
    assert from_child, "the child took tasks"
    assert sorted(seen) == from_child  # each of the child's results once, none of the parent's
    assert all((len(v) == 3) == (v[0] != parent) for v in got.values())


def test_a_child_that_has_sent_everything_is_not_waited_for_and_is_collected_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The parent goes on once the child says it is done, while the child still exits (a
    child that held a run's objects takes milliseconds to give its memory back); the child is
    collected at a later fork. Here the child's exit is held back until the parent lets it go."""
    import select

    from ailint.engine import parallel

    real_exit = os._exit
    hold = os.pipe()

    def slow_exit(code: int) -> None:  # the child's exit, held until the parent closes `hold`
        if os.getpid() != parent:  # (or for 5 s: a parent that waits for the exit gets it then)
            os.close(hold[1])
            select.select([hold[0]], [], [], 5)
        real_exit(code)

    parent = os.getpid()
    monkeypatch.setattr(parallel, "_EXITING", [])  # (children of earlier tests are not this test's)
    monkeypatch.setattr(parallel.os, "_exit", slow_exit)
    got = run_forked(lambda t: (time.sleep(0.002), os.getpid(), t)[1:], list(range(30)), 2)
    os.close(hold[0])
    assert got is not None and {t: v[1] for t, v in got.items()} == {t: t for t in range(30)}
    children = {v[0] for v in got.values()} - {parent}
    assert len(children) == 1, "the child took tasks"
    (child,) = children
    assert [child] == parallel._EXITING, "kept to be collected"
    assert os.waitpid(child, os.WNOHANG) == (0, 0), "run_forked returned while the child had not exited"
    os.close(hold[1])  # the child may exit now
    deadline = time.monotonic() + 30
    while parallel._EXITING and time.monotonic() < deadline:
        parallel._collect()
        time.sleep(0.01)
    assert parallel._EXITING == [], "collected once it exited"
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)


def _candidates(sizes: list[int]) -> list:
    from ailint.engine.sources import Candidate

    return [Candidate(f"f{i}.yaml", f"f{i}.yaml", signature=(s, 0, 0, i, 0)) for i, s in enumerate(sizes)]


@pytest.mark.parametrize("count", [2, 7, 64, 100, 2280])
def test_the_parse_chunks_hold_every_file_once_and_end_in_quarters_largest_first(count: int) -> None:
    from ailint.engine.parallel import _chunks

    files = _candidates([(i * 7919) % 1000 for i in range(count)])
    chunks = _chunks(files, 64, 2)
    flat = [c for chunk in chunks for c in chunk]
    assert sorted(flat, key=lambda c: c.path) == sorted(files, key=lambda c: c.path)
    assert len({id(c) for c in flat}) == count, "no file in two chunks"
    size = -(-count // 64)
    quarter = max(1, size // 4)
    tail = flat[len(flat) - min(count, 2 * 2 * size) :]
    assert [c.signature[0] for c in tail] == sorted((c.signature[0] for c in tail), reverse=True)
    assert all(len(chunk) <= quarter for chunk in chunks[-(len(tail) // quarter) :])


def test_bounded_parse_chunks_are_even_and_spread() -> None:
    from ailint.engine.parallel import _chunks

    files = _candidates(list(range(100)))
    assert _chunks(files, 32, 0) == [files[i::32] for i in range(32)]
    assert _chunks(files[:5], 32, 0) == [[f] for f in files[:5]]


def test_a_childs_peak_memory_counts_in_what_the_runs_parent_reads() -> None:
    """A child that is not waited for while it exits is still collected before the process
    ends (`lean.fast_exit` runs the exit handlers): `/usr/bin/time` and the benchmark read a
    run's peak memory from `wait4`, which counts only the children that were collected."""
    import subprocess
    import sys

    code = (
        "import os, time\n"
        "from ailint.engine.parallel import run_forked\n"
        "parent = os.getpid()\n"
        "def work(t):\n"
        "    if os.getpid() != parent:\n"
        "        big = b'x' * (200 << 20)  # in the child only: 200 MiB, every page written\n"
        "        del big\n"
        "    time.sleep(0.01)\n"
        "    return t\n"
        "assert run_forked(work, list(range(20)), 2) == {t: t for t in range(20)}\n"
        "from ailint.doors.lean import fast_exit\n"
        "fast_exit(0)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert usage.ru_maxrss > 150 * 1024, f"peak {usage.ru_maxrss} KiB: the child's 200 MiB are not counted"


def test_the_pods_of_a_childs_files_are_made_as_they_arrive_not_in_the_join(monkeypatch: pytest.MonkeyPatch) -> None:
    """The join (`finish`) runs in the parent alone: the pod templates of every object whose
    pods depend on no other file are made before it, those of the child's files as they
    arrive (with the facts the child worked out), as the parent's own were by their object
    rules. The run reports what a one-process run reports."""
    import json

    from ailint.core.model import K8sObject
    from ailint.domain.extract import TEMPLATES_MEMO, is_pod_kind
    from ailint.engine import run
    from ailint.engine.catalogue import settled
    from ailint.engine.config import Settings
    from ailint.report import json as rep
    from conftest import ROOT

    parent = os.getpid()
    real_process_file = run.process_file
    parsed_here: list[str] = []

    def slow_here(c: Any, *a: object, **k: object) -> object:  # the child takes files too
        if os.getpid() == parent:
            parsed_here.append(c.path)
            time.sleep(0.02)
        return real_process_file(c, *a, **k)

    seen: list[tuple[K8sObject, bool]] = []
    real_finish = run.finish

    def finish(file_results: list, *a: object, **k: object) -> object:
        for fr in file_results:
            for _, obj in settled(fr):
                if is_pod_kind(obj):
                    seen.append((obj, obj.memo is not None and TEMPLATES_MEMO in obj.memo))
        return real_finish(file_results, *a, **k)

    monkeypatch.setattr(run, "process_file", slow_here)
    monkeypatch.setattr(run, "finish", finish)
    paths = sorted(str(p) for p in (ROOT / "fixtures" / "demo").glob("*.yaml"))
    two = run.lint(paths, Settings(), jobs=2)
    assert set(paths) - set(parsed_here), "the child parsed some of the files"
    assert seen and all(made for _, made in seen), "every settled workload's pods made before the join"
    assert all(o.carried is None for o, _ in seen), "the facts the child carried were taken"
    monkeypatch.setattr(run, "finish", real_finish)
    one = run.lint(paths, Settings(), jobs=1)
    assert json.loads(rep.render(two)) == json.loads(rep.render(one))
