"""Compiled dataclass methods kept across runs: the `.pyc` of what `dataclasses` generates.

`@dataclass` writes the source text of a class's `__init__`, `__repr__`, `__eq__`,
`__hash__` (and, frozen, `__setattr__` and `__delattr__`) and compiles it with `exec` each
time the class is created, that is at every import. Python keeps a module's bytecode in its
`.pyc` file, but not these texts: a one-file run creates 67 classes of ailint, and compiling
their 297 methods was a fifth of it (19 of 94 ms in the process). `install()` gives the
`dataclasses` module an `exec` that takes each text's code from a table that earlier runs
compiled, and compiles a text it has not met, as before; `save()` (at exit) writes the table
back when the run compiled something new.

Why a class is the same either way:

- the code of a text is what `compile` makes of it, with `dont_inherit=True`: the flags
  `dataclasses` compiles its texts with (it has no `__future__` import), whoever calls;
- the table is per interpreter build (`sys.version` and marshal's version name the file):
  another Python never reads it;
- it lives in the cache folder (private to its owner, `ailint.core.cachedir`) behind that
  folder's keyed MAC, so a table another user or a torn write produced is never loaded, and
  whatever cannot be read is an empty table;
- `dataclasses` finds `exec` among its module's globals before the builtin one: a Python
  whose `dataclasses` stops compiling texts never calls this one, and a call with anything
  but a text goes to the builtin unchanged.

Like the rule index, the table is ailint's own code, not a result: `--no-cache` keeps it,
`AILINT_NO_CACHE=1` turns it off, `ailint clean` removes it.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys
from types import CodeType
from typing import Any

MAGIC = b"AILD1\n"
MAX_ENTRIES = 1024  # 2.5 versions of ailint (a version makes about 400): beyond, a save keeps the texts this run met

_table: dict[str, Any] = {}  # text -> code object
_met: set[str] = set()  # texts looked up this run
_new: dict[str, Any] = {}  # texts compiled this run
_state: dict[str, Any] = {"dir": None, "saving": False}
_builtin_exec = builtins.exec


def table_file(directory: str) -> str:
    """The table of this interpreter build in `directory`."""
    import zlib

    tag = zlib.crc32(f"{sys.version}\0{marshal.version}".encode())
    return os.path.join(directory, f"dataclass-code-{tag:08x}.bin")


def _exec(source: Any, globals: Any = None, locals: Any = None, /, **kwargs: Any) -> None:
    """`exec` for `dataclasses`: a text runs as the code the table holds for it (compiled
    now, and saved at exit, when the table has none); anything else goes to the builtin."""
    if source.__class__ is str and not kwargs:
        code = _table.get(source)
        if code is None:
            code = _new.get(source)
            if code is None:
                code = _new[source] = compile(source, "<string>", "exec", dont_inherit=True)
                if not _state["saving"]:
                    import atexit

                    _state["saving"] = True
                    atexit.register(save)
        else:
            _met.add(source)
        source = code
    _builtin_exec(source, globals, locals, **kwargs)


def install() -> None:
    """Read the table from the cache folder and hand `dataclasses` the caching `exec`.
    Before any dataclass of ailint is created; nothing when `AILINT_NO_CACHE` is set."""
    if os.environ.get("AILINT_NO_CACHE"):
        return
    from ailint.core.paths import user_cache_dir

    directory = user_cache_dir()
    _state["dir"] = directory
    _table.clear()
    _table.update(_load(directory))
    import dataclasses

    setattr(dataclasses, "exec", _exec)  # noqa: B010 (a module global, found before the builtin)


def _load(directory: str) -> dict[str, Any]:
    from ailint.core.cachedir import opened, read_secret

    key = read_secret(directory)
    if key is None:
        return {}
    try:
        with open(table_file(directory), "rb") as fh:
            payload = opened(MAGIC, key, fh.read())
        got = marshal.loads(payload) if payload is not None else None
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if not isinstance(got, dict):
        return {}
    return {k: v for k, v in got.items() if isinstance(k, str) and isinstance(v, CodeType)}


def save() -> None:
    """Write the table back with what this run compiled (atomically; never an error)."""
    directory = _state["dir"]
    if not _new or directory is None:
        return
    try:
        from ailint.core.cachedir import private_dir, sealed, secret, write_private

        private_dir(directory)
        key = secret(directory)
        table = {**_load(directory), **_table}  # what a run beside this one saved meanwhile stays
        if len(table) + len(_new) > MAX_ENTRIES:
            table = {t: c for t, c in table.items() if t in _met}
        table.update(_new)
        write_private(table_file(directory), sealed(MAGIC, key, marshal.dumps(table)))
        _table.update(_new)
        _new.clear()
    except (OSError, ValueError):
        pass  # a read-only or foreign folder: the next run compiles again, as without a table


def compiled_here() -> int:
    """How many texts this process compiled (not found in the table)."""
    return len(_new)
