"""`--jobs N`: parse files and run single-object rules in worker processes.

Workers return each file's result (objects included, so bundle rules can join them in the
parent); results come back in input order, so findings are identical with and without
`--jobs`.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from .model import FileResult

_STATE: dict[str, Any] = {}


def _init(settings: Any, engine_args: tuple) -> None:
    from .run import Engine

    rules, debug, bounded = engine_args
    _STATE["settings"] = settings
    _STATE["engine"] = Engine(settings, rules, debug, bounded=bounded)


def _work(chunk: list) -> list[FileResult]:
    from .run import process_file

    return [process_file(c, _STATE["settings"], _STATE["engine"]) for c in chunk]


def run_parallel(candidates: list, settings: Any, engine: Any, jobs: int) -> list[FileResult]:
    jobs = max(1, min(jobs, len(candidates), os.cpu_count() or 1))
    if jobs == 1:
        from .run import process_file

        return [process_file(c, settings, engine) for c in candidates]
    # interleaved chunks balance big and small files across workers
    n = max(jobs * 4, 1)
    chunks = [candidates[i::n] for i in range(n)]
    chunks = [c for c in chunks if c]
    order = {id(c): i for i, c in enumerate(candidates)}
    results: list[tuple[int, FileResult]] = []
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init, initargs=(settings, (engine.rules, engine.debug, engine.bounded))) as ex:
        for chunk, res in zip(chunks, ex.map(_work, chunks)):
            for cand, fr in zip(chunk, res):
                results.append((order[id(cand)], fr))
    results.sort(key=lambda x: x[0])
    return [fr for _, fr in results]
