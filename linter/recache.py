"""Compiled regular expressions kept between runs.

A one-file run compiles about 190 regular expressions (ailint's rules and helpers, PyYAML,
click, the standard library): 58 ms of a 0.29 s run, because the `re` parser and code
generator are pure Python. The compiled form is a list of integers that `_sre.compile`
turns back into a pattern at C speed, so it is cached on disk, next to the rule index.

Safe by construction:
- An entry is stored only after the pattern rebuilt from it compares equal to the pattern
  `re` compiled itself. `Pattern.__eq__` compares the pattern, the flags and the compiled
  code.
- The cache file is keyed by the exact interpreter build and `_sre.MAGIC`.
- A missing, damaged or foreign file is ignored.
- Any surprise falls back to the normal compiler.
- `AILINT_NO_CACHE=1` turns it off, as it does the rule index.

Installed by `ailint/__init__.py` before PyYAML and click are imported.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_ENTRIES: dict[tuple[Any, int], tuple[Any, ...]] = {}
_ADDED = 0
_PATH: str | None = None


def _cache_path() -> str | None:
    if os.environ.get("AILINT_NO_CACHE"):
        return None
    import zlib

    import _sre

    base = os.environ.get("AILINT_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "ailint")
    key = f"{sys.version}|{sys.implementation.cache_tag}|{_sre.MAGIC}|{_sre.CODESIZE}".encode()
    return os.path.join(base, f"re-{zlib.crc32(key):08x}.marshal")


def install() -> None:
    """Route `re`'s compiler through the cache (CPython 3.11 to 3.13, where it was checked)."""
    global _PATH
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 13):
        return
    try:
        import marshal
        import re

        compiler = re._compiler  # type: ignore[attr-defined]
        original = compiler.compile
        if getattr(original, "_ailint", False):
            return  # already installed
        _PATH = _cache_path()
        if _PATH is None:
            return
        try:
            with open(_PATH, "rb") as fh:
                loaded = marshal.load(fh)
            if isinstance(loaded, dict):
                _ENTRIES.update(loaded)
        except (OSError, EOFError, ValueError, TypeError):
            pass
    except Exception:  # noqa: BLE001 - never let a speed-up stop the linter
        return

    import _sre

    def compile(p: Any, flags: Any = 0) -> Any:  # noqa: A001 - the name `re` calls
        global _ADDED
        if not isinstance(p, (str, bytes)):
            return original(p, flags)
        key = (p, int(flags))
        hit = _ENTRIES.get(key)
        if hit is not None:
            try:
                return _sre.compile(p, *hit)
            except Exception:  # noqa: BLE001
                _ENTRIES.pop(key, None)
        pattern = original(p, flags)
        try:
            args = _compiled_form(compiler, p, int(flags))
            if _sre.compile(p, *args) == pattern:
                _ENTRIES[key] = args
                _ADDED += 1
        except Exception:  # noqa: BLE001 - an unusual pattern is simply not cached
            pass
        return pattern

    compile._ailint = True  # type: ignore[attr-defined]
    compiler.compile = compile
    import atexit

    atexit.register(save)


def _compiled_form(compiler: Any, p: Any, flags: int) -> tuple[Any, ...]:
    """What `re._compiler.compile` hands to `_sre.compile` after the pattern itself."""
    parsed = compiler._parser.parse(p, flags)
    code = compiler._code(parsed, flags)
    groupindex = {str(k): int(i) for k, i in parsed.state.groupdict.items()}
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for k, i in groupindex.items():
        indexgroup[i] = k
    # plain ints: the opcodes are int subclasses, which marshal does not store
    return (int(flags | parsed.state.flags), [int(c) for c in code], int(parsed.state.groups - 1), groupindex,
            tuple(indexgroup))


def save() -> None:
    """Write the cache when this process compiled something new (atomically: a reader sees
    the old file or the new one)."""
    global _ADDED
    if not _ADDED or _PATH is None:
        return
    try:
        import marshal

        os.makedirs(os.path.dirname(_PATH), exist_ok=True)
        tmp = f"{_PATH}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            marshal.dump(dict(list(_ENTRIES.items())[-4096:]), fh)  # bounded
        os.replace(tmp, _PATH)
        _ADDED = 0
    except Exception:  # noqa: BLE001 - a read-only home: no cache, same results
        pass
