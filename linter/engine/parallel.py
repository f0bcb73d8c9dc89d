"""`--jobs N`: parse files and run single-object rules in this process and forked children,
then share the bundle rules, schema validation and the admission-policy pass the same way.

The parent and its children take chunks of files from one queue (`run_forked`): only the
children's results are pickled back (their position tables packed with marshal first, and,
with `ailint.engine.bounded`, without texts and tables), each as soon as it is done, and the
parent takes them in between its own chunks; results come back in input order. The
queue's last chunks are quarters, largest files first (`_chunks`), so that the processes end
the parse together, and the pods of a child's files are made as they arrive (`_with_pods`),
not in the join that follows. The bundle phase forks the parent once all objects are joined (copy-on-write:
nothing is pickled but the findings), hands out one task per bundle rule (and the schema
and policy passes) through a pipe of task numbers, and puts the findings back in the serial
order (object, then rule), so findings are identical with and without `--jobs`. A task per
rule, not per slice of objects, builds each rule's run-wide indexes in one process only.
With bounded memory (a large input), the parent runs none of these tasks and each pass
that loads a store of its own (schemas, the CEL runtime) ends its child: the parent holds
every object and never grows by a pass, and no process holds two passes' stores at once.
A child that ends while tasks are left (after a task apart, or because it failed: it
then ends without saying it is done, and its exit status says so) is replaced by a fresh
one; one that ended without a task found the queue empty, and no other one would find more.
A child that says it is done is not waited for while it exits (`_Stream`). Without `fork` (Windows), a process pool
parses the files instead.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterable

from ailint.core import codecache
from ailint.core.model import FileResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_STATE: dict[str, Any] = {}
_COMPILED = -(2**31)  # not a task: what a child compiled of ailint's start-up code (`ailint.core.codecache`)
_DONE = 2**64 - 1  # not a length: a child's last note, after its last result
# children that said they were done and may still be exiting: collected at the next fork,
# and at the latest when the process ends (below)
_EXITING: list[int] = []


def _collect(wait: bool = False) -> None:
    """Collect the children of `_EXITING` that have exited by now (all of them, `wait`)."""
    for pid in list(_EXITING):
        try:
            got, _ = os.waitpid(pid, 0 if wait else os.WNOHANG)
        except ChildProcessError:  # (collected by someone else)
            got = pid
        if got:
            _EXITING.remove(pid)


# At exit (`lean.fast_exit` runs these handlers too), the children still exiting are waited
# for, not for their status (each said it was done): a child that is never collected is left
# out of the peak memory the process's own parent reads (`wait4`'s `ru_maxrss`, as
# `/usr/bin/time` does), and the peak of a run with bounded memory is often a child's. By the
# time a run has reported, they have exited.
atexit.register(_collect, wait=True)


def _init(settings: Any, engine_args: tuple) -> None:
    from ailint.engine.run import Engine

    rules, debug, bounded, *rest = engine_args
    _STATE["settings"] = settings
    # the results cache: a worker writes the entries of the files it parses
    _STATE["engine"] = Engine(settings, rules, debug, bounded=bounded, pack=True, cache=rest[0] if rest else None)


def _work(chunk: list) -> list[FileResult]:
    from ailint.engine.run import process_file

    # the objects go to the parent without their memos (K8sObject.__getstate__)
    return [process_file(c, _STATE["settings"], _STATE["engine"]) for c in chunk]


def run_parallel(candidates: list, settings: Any, engine: Any, jobs: int) -> list[FileResult]:
    jobs = max(1, min(jobs, len(candidates), os.cpu_count() or 1))
    if jobs == 1:
        from ailint.engine.run import process_file

        return [process_file(c, settings, engine) for c in candidates]
    # interleaved chunks balance big and small files across workers; 32 a process, not 16:
    # this process also unpickles what the children send (57 ms of the corpus's parse
    # phase), so the queue's last chunk decides who waits, and at 16 the child ended 59 ms
    # before it (at 32: 5 to 31 ms; the cold corpus run 0.98 of the time, paired). Not with
    # bounded memory: there this process held 18 MiB more at 32 (the 100 MB tree: 122 to
    # 140 MiB, and every child forked from it as much more: a peak of 160 MiB, not 142)
    n = max(jobs * (16 if engine.bounded else 32), 1)
    chunks = _chunks(candidates, n, 0 if engine.bounded else jobs)
    order = {id(c): i for i, c in enumerate(candidates)}
    forked = _parse_forked(chunks, settings, engine, jobs)
    if forked is not None:
        ranked = [
            (order[id(c)], fr)
            for chunk, res in zip(chunks, forked, strict=True)
            for c, fr in zip(chunk, res, strict=True)
        ]
        ranked.sort(key=lambda x: x[0])
        return [fr for _, fr in ranked]
    results: list[tuple[int, FileResult]] = []
    from concurrent.futures import ProcessPoolExecutor  # only where `fork` is missing

    with ProcessPoolExecutor(
        max_workers=jobs,
        initializer=_init,
        initargs=(settings, (engine.rules, engine.debug, engine.bounded, engine.cache)),
    ) as ex:
        for chunk, res in zip(chunks, ex.map(_work, chunks)):
            if engine.bounded:
                res = _reshared(res)
            for cand, fr in zip(chunk, res):
                results.append((order[id(cand)], fr))
            if getattr(engine, "progress", None) is not None:
                engine.progress(len(chunk))  # a terminal's progress line
    results.sort(key=lambda x: x[0])
    return [fr for _, fr in results]


def _chunks(candidates: list, n: int, jobs: int) -> list[list]:
    """`candidates` in about `n` chunks, each of files spread across the list (every n-th:
    a folder of CRDs or of small files is shared out, not one process's), the last `2 *
    jobs` chunks' worth in quarters.

    The processes end the phase at most one chunk apart: whichever takes the queue's last
    chunk runs it while the other has nothing left. At 32 chunks a process, a chunk of the
    cold corpus run took 11 to 16 ms, and one core stood idle for 4 to 16 ms at the end of
    the parse (a timeline of the tasks, six runs); with the quarters, largest files first,
    0.0 to 0.3 ms. (0 `jobs`: every n-th file a chunk, as a bounded run takes them.)"""
    if not jobs:
        return [c for c in (candidates[i::n] for i in range(n)) if c]
    spread = [c for i in range(n) for c in candidates[i::n]]
    size = -(-len(spread) // n) or 1
    head = max(0, len(spread) - 2 * jobs * size)
    head -= head % size  # (whole chunks: the tail takes the rest)
    quarter = max(1, size // 4)
    # the tail's largest files first (discovery's stat), so that the last quarters are short
    tail = sorted(spread[head:], key=lambda c: -(c.signature[0] if c.signature else 0))
    return [spread[i : i + size] for i in range(0, head, size)] + [
        tail[i : i + quarter] for i in range(0, len(tail), quarter)
    ]


def _parse_forked(chunks: list[list[Any]], settings: Any, engine: Any, jobs: int) -> list[list[FileResult]] | None:
    """The chunks parsed and object-checked by this process and forked children, taking
    chunks from one queue (`run_forked`): only the children's results are pickled (their
    position tables packed first), the parent's stay as they are. None: no fork here."""
    from ailint.engine.run import process_file

    parent = os.getpid()
    tick = getattr(engine, "progress", None)  # a terminal's progress line
    ticked = [0]

    def work(t: int) -> list[FileResult]:
        if os.getpid() != parent:
            return checked_for_parent(chunks[t], settings, engine)
        out = [process_file(c, settings, engine) for c in chunks[t]]
        if tick is not None:
            tick(len(out))
            ticked[0] += len(out)
        return out

    # with bounded memory the objects' data is made of this process's shared strings and
    # subtrees as each child's chunk arrives (`yamldata.reshared`); otherwise their pods are
    # made as they arrive, for the bundle rules (`_with_pods`)
    taken = _reshared if engine.bounded else _with_pods if engine.bundle_rules else None
    results = run_forked(work, list(range(len(chunks))), jobs, taken=taken)
    if results is None:
        return None
    if tick is not None:  # the children's files, now that their results are in
        tick(sum(len(c) for c in chunks) - ticked[0])
    return [results[t] for t in range(len(chunks))]


def checked_for_parent(candidates: Iterable[Any], settings: Any, engine: Any) -> list[FileResult]:
    """The candidates parsed and object-checked in a forked child, their position tables
    marshalled for the trip to the parent (which unpacks only those it reads)."""
    from ailint.domain.extract import carry_facts
    from ailint.engine.bounded import pack
    from ailint.engine.catalogue import settled
    from ailint.engine.run import process_file

    out = [process_file(c, settings, engine) for c in candidates]
    for fr in out:
        # what this process knows of the objects' pods travels with them (not with bounded
        # memory: see `process_file`), but for an object waiting for the catalogue, whose pods
        # are made again once merged (`workloads.bind`)
        for _, obj in settled(fr) if not engine.bounded else ():
            obj.carried = carry_facts(obj)
        pack(fr)
    return out


def _with_pods(files: list[FileResult]) -> list[FileResult]:
    """A child's files as they arrive, the pod templates of their objects made here (with the
    facts the child worked out of them, `extract.take_carried_facts`), as this process made
    those of its own files in their object rules. The bundle phase's index of the run's pods
    reads them all: made there, the child's half were made after the parse, in the join, which
    no other process shares (a fifth of the cold corpus run's join: 0.171 G instructions
    before, 0.137 G after); made now, they are made while the child still parses, and the
    queue evens that out."""
    from ailint.domain.extract import is_pod_kind, pod_templates
    from ailint.engine.catalogue import settled

    for fr in files:
        for _, obj in settled(fr):  # (an object waiting for the catalogue: its pods come once merged)
            if is_pod_kind(obj):
                pod_templates(obj)
    return files


def _reshared(files: list[FileResult]) -> list[FileResult]:
    """A child's files, their objects' data made of this process's shared strings and
    subtrees (a bounded run shares them: `yamldata.reshared`), not of the copies each
    unpickled chunk brings."""
    from ailint.core.yamldata import reshared

    for fr in files:
        for obj in fr.objects:
            obj.data = reshared(obj.data)
            obj._read_identity()  # (its kind, of the shared strings too)
        if fr.pack_entry is not None:  # (the results cache's entry, made in the worker: of the same data)
            from ailint.engine.cache import with_data

            fr.pack_entry = with_data(fr.pack_entry, fr.objects)
    return files


def run_forked(
    work: Any, tasks: list[int], jobs: int, apart: frozenset[int] | None = None, taken: Any = None
) -> dict[int, Any] | None:
    """`work(task)` for every task, shared by `jobs` processes: the parent and forked children
    take tasks from one pipe until none is left (put the longest first). Returns {task:
    result}, or None when forking is not possible (the caller runs serially).

    A child sends each result as soon as it has it (`_Stream`), and the parent takes in what
    has come between its own tasks: pickling and unpickling overlap the work instead of
    following it (they were a tenth of a cold corpus run), and the queue gives the child
    more tasks while the parent unpickles.

    `apart` (bounded memory, `ailint.engine.bounded`): the parent takes no task, `jobs`
    children do, and a child ends after any task of `apart` (a pass that loads a store of its
    own: the schemas, the CEL runtime), a fresh child taking its place. What a task builds
    then dies with the child that built it; the parent, which holds every object, never
    grows by it, and no process holds two passes' stores at once.

    `taken(result)`, when given, is what this process keeps of each result a child sent,
    worked out as it arrives (before the next task: what it frees is reused at once)."""
    procs = min(jobs, os.cpu_count() or 1)
    if procs < 2 or not _can_fork():
        return None
    rd = _queue(tasks)
    results: dict[int, Any] = {}

    def arrived(got: dict[int, Any]) -> None:
        results.update(got if taken is None else {t: taken(r) for t, r in got.items()})

    if apart is not None:
        _children_only(rd, work, procs, apart, arrived)
    else:
        # each child takes tasks until none are left (no fork now: this process takes them)
        streams = [s for s in (_started(rd, work) for _ in range(procs - 1)) if s is not None]

        def take(t: int) -> int:  # the parent's part: one task, then what the children sent
            results[t] = work(t)
            for stream in streams:
                arrived(stream.received())
            return t

        _drain(rd, take)
        for stream in streams:
            arrived(stream.finish())
    os.close(rd)
    for t in tasks:
        if t not in results:  # a child that failed: its tasks are done here
            results[t] = work(t)
    return results


def _children_only(rd: int, work: Any, procs: int, apart: frozenset[int], arrived: Any) -> None:
    """`run_forked` with `apart`: `procs` children take the tasks while this process only
    receives (`arrived(results)`); a child that ended while tasks are left is replaced by a
    fresh one."""
    import select

    # (no fork now: the tasks left are done by `run_forked` here)
    live = [s for s in (_started(rd, work, apart) for _ in range(procs)) if s is not None]
    while live:
        ready, _, _ = select.select([s.notes for s in live], [], [])
        for stream in [s for s in live if s.notes in ready]:
            arrived(stream.received())
            if not stream.pid:  # ended: after a task apart, or the queue is empty
                live.remove(stream)
                # (a child that sent nothing and did not fail found the queue empty: no
                # other one will; one that fails takes a task each time, so this ends)
                if (stream.sent or stream.failed) and _queued(rd):
                    fresh = _started(rd, work, apart)
                    if fresh is not None:
                        live.append(fresh)


def _started(queue: int, work: Any, apart: frozenset[int] = frozenset()) -> _Stream | None:
    """A child forked to take tasks from `queue` (`_Stream.start`), or None when no process
    can be forked now (no process or memory left): the caller does the work itself."""
    stream = _Stream()
    try:
        stream.start(queue, work, apart)
    except OSError:
        stream.data.close()
        return None
    return stream


def _queued(rd: int) -> bool:
    """Whether the queue `rd` still holds a task (bytes left in the pipe)."""
    import array
    import fcntl
    import termios

    n = array.array("i", [0])
    try:
        fcntl.ioctl(rd, termios.FIONREAD, n, True)
    except OSError:
        return True  # unknown: a fresh child that finds the queue empty ends at once
    return n[0] >= 4


def _can_fork() -> bool:
    import sys

    return (os.cpu_count() or 1) >= 2 and hasattr(os, "fork") and sys.platform != "win32"


def _queue(tasks: Iterable[int]) -> int:
    """A pipe holding the task numbers (4 bytes a task, fewer than PIPE_BUF): its read end."""
    import struct

    rd, wr = os.pipe()
    os.write(wr, b"".join(struct.pack("<i", t) for t in tasks))
    os.close(wr)
    return rd


def _drain(rd: int, run: Any) -> None:
    """`run(task)` for each task number read from the queue `rd` until it is empty (or until
    `run` returns False)."""
    import struct

    while True:
        b = os.read(rd, 4)
        if len(b) < 4:
            return
        if run(struct.unpack("<i", b)[0]) is False:
            return


_TMP_VARS = ("TMPDIR", "TEMP", "TMP")  # where `tempfile.gettempdir` looks, in its order,
_TMP_FOLDERS = ("/tmp", "/var/tmp", "/usr/tmp")  # before these


def _unnamed_file() -> Any:
    """A file with no name (Linux's `O_TMPFILE`) in the temporary folder, as
    `tempfile.TemporaryFile` makes one; `tempfile` itself only where that cannot be had.

    Importing `tempfile` (with `shutil`, `random`, `bz2` and `lzma`) cost 11 M instructions
    before each run's first fork, 4 ms of an edit rerun's serial start."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is not None:
        folders = [os.environ.get(v) for v in _TMP_VARS]
        for folder in (*(f for f in folders if f), *_TMP_FOLDERS):
            try:
                fd = os.open(folder, flag | os.O_RDWR | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
            except OSError:
                continue
            return os.fdopen(fd, "w+b")
    import tempfile

    return tempfile.TemporaryFile()


def _pickle() -> Any:
    """The C pickler that `pickle` hands its work to, without `pickle.py` itself (4 M
    instructions before a run's first fork); `pickle` where there is no C pickler."""
    try:
        import _pickle

        return _pickle
    except ImportError:  # (another Python)
        import pickle

        return pickle


class _Stream:
    """A forked child's results, each pickled into an unlinked file as it is done and
    announced on a pipe (its length): the child never waits for the parent, and the parent
    reads what has come without blocking (`received`), the rest once the child is done
    (`finish`). An announced result is whole; a child that fails sends nothing more.

    A child that has sent everything says so (`_DONE`) and closes its pipe before it exits:
    a process that held the run's objects takes milliseconds to give its memory back (7 ms
    of a cold corpus run's bundle phase, waited for by the parent), and the pipe closed by
    its exit would only close after that. Such a child is collected at the next fork
    (`_collect`); one that ends without saying so is waited for, and its status read."""

    def __init__(self) -> None:
        # shared with the child (it writes, we pread); closed once the child is done or ended
        self.data = _unnamed_file()
        self.offset = 0
        self.pending = b""
        self.pid = 0
        self.failed = False  # the child ended with an error (its task in hand is not done)
        self.sent = 0  # how many results it has handed over
        self.notes = -1
        self.got: dict[int, Any] = {}  # received, not handed over yet
        self.done = False  # the child said it has sent everything (its exit is not waited for)

    def start(self, queue: int, work: Any, apart: frozenset[int] = frozenset()) -> None:
        """Fork the child: it takes tasks from `queue` until none is left, or until it has
        done one of the tasks `apart`."""
        import struct

        pickle = _pickle()

        fd = self.data.fileno()
        _collect()

        def child(notes: int) -> None:
            def send(t: int, result: Any) -> None:
                payload = pickle.dumps((t, result), protocol=-1)  # (the highest)
                view = memoryview(payload)
                while view:
                    view = view[os.write(fd, view) :]
                os.write(notes, struct.pack("<Q", len(payload)))  # < PIPE_BUF: one write

            def run(t: int) -> bool:
                send(t, work(t))
                return t not in apart  # go on?

            codecache.forked()
            _drain(queue, run)
            compiled = codecache.handed_over()
            if compiled is not None:  # for the parent to keep: the next run's children compile none of it
                send(_COMPILED, compiled)
            # everything is sent: the parent goes on now, not once this process has torn
            # down its memory (`_pull`)
            os.write(notes, struct.pack("<Q", _DONE))
            os.close(notes)

        self.pid, self.notes = _fork_child(child)

    def received(self) -> dict[int, Any]:
        """The results announced so far (never waits)."""
        self._pull(block=False)
        return self._hand_over()

    def finish(self) -> dict[int, Any]:
        """The rest of the results, once the child has ended."""
        while self.pid:
            self._pull(block=True)
        return self._hand_over()

    def wait_for(self, t: int) -> tuple[bool, Any]:
        """(True, the result of task `t`) once the child has sent it; (False, None) when the
        child ended without it."""
        while t not in self.got and self.pid:
            self._pull(block=True)
        return (True, self.got.pop(t)) if t in self.got else (False, None)

    def _hand_over(self) -> dict[int, Any]:
        out, self.got = self.got, {}
        compiled = out.pop(_COMPILED, None)
        if compiled is not None:
            codecache.adopt(compiled)
        self.sent += len(out)
        return out

    def _pull(self, block: bool) -> None:
        """Take in what the child has announced (waiting for it when `block`); at the end of
        its announcements, collect the child (whatever its status, what it sent is whole)."""
        if not self.pid:
            return
        os.set_blocking(self.notes, block)
        try:
            chunk = os.read(self.notes, 65536)
        except BlockingIOError:
            return
        if chunk:
            self.got.update(self._load(chunk))
            if not self.done:
                return
        os.close(self.notes)
        if self.done:
            _EXITING.append(self.pid)  # (collected later: `_collect`)
        else:
            _, status = os.waitpid(self.pid, 0)
            self.failed = status != 0
        self.pid = 0
        self.data.close()

    def _load(self, chunk: bytes) -> dict[int, Any]:
        import struct

        pickle = _pickle()

        notes = self.pending + chunk
        whole = len(notes) - len(notes) % 8
        self.pending = notes[whole:]
        out: dict[int, Any] = {}
        for (size,) in struct.iter_unpack("<Q", notes[:whole]):
            if size == _DONE:
                self.done = True
                break
            payload = os.pread(self.data.fileno(), size, self.offset)
            self.offset += size
            t, result = pickle.loads(payload)
            out[t] = result
        return out


def run_beside(*works: Any) -> list[Any] | None:
    """`works` in turn in one forked child while the caller goes on: a function per work
    that gives its result as soon as the child has sent it (worked out here when the child
    failed first), or None when forking is not possible."""
    if not _can_fork():
        return None
    rd = _queue(range(len(works)))
    stream = _started(rd, lambda t: works[t]())
    os.close(rd)
    if stream is None:  # no fork now: the caller does the work
        return None

    def waiter(t: int) -> Any:
        def wait() -> Any:
            sent, value = stream.wait_for(t)
            return value if sent else works[t]()

        return wait

    return [waiter(t) for t in range(len(works))]


def _fork_child(body: Any) -> tuple[int, int]:
    """Fork a child that runs `body(write end of a pipe)` and leaves at once (`os._exit`:
    no cleanup of the parent's state runs twice; exit 1 if `body` raised): (pid, read end)."""
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # (the caller works without the child)
        os.close(r)
        os.close(w)
        raise
    if pid == 0:
        code = 1
        try:
            os.close(r)
            body(w)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    return pid, r
