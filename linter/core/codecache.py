"""ailint's start-up code kept across runs: the `.pyc` of what `dataclasses` and `re` compile.

Python keeps a module's bytecode in its `.pyc` file, but two kinds of code a run makes at
start-up are compiled afresh by every process:

- `@dataclass` writes the source text of a class's `__init__`, `__repr__`, `__eq__`,
  `__hash__` (and, frozen, `__setattr__` and `__delattr__`) and compiles it with `exec` each
  time the class is created, that is at every import. A one-file run creates 67 classes of
  ailint, and compiling their 297 methods was a fifth of it (19 of 94 ms in the process).
- `re.compile` parses a pattern and generates its program in Python. A one-file run compiles
  about 110 patterns (ailint's rules, PyYAML's reader and resolver, the schema checks): 13 of
  82 ms.

`install()` gives `dataclasses` an `exec` that takes each text's code object from a table
that earlier runs compiled, and gives `re` a compiler that builds each pattern it has met from
its stored program (`_sre.compile`, the last step of `re`'s own compiler); anything not in the
table is compiled as before, and `save()` (at exit) writes the table back when the run
compiled something new.

Why a class or a pattern is the same either way:

- the code of a text is what `compile` makes of it, with `dont_inherit=True`: the flags
  `dataclasses` compiles its texts with (it has no `__future__` import), whoever calls;
- a pattern's program is kept only when the pattern rebuilt from it equals the one `re`
  compiled in that run (`Pattern.__eq__` compares the pattern, its flags and its whole
  program; the group names and count are compared too), and not when compiling it warned;
- the table is per interpreter build (`sys.version` and marshal's version name the file):
  another Python never reads it;
- it lives in the cache folder (private to its owner, `ailint.core.cachedir`) behind that
  folder's keyed MAC, so a table another user or a torn write produced is never loaded, and
  whatever cannot be read is an empty table;
- `dataclasses` finds `exec` among its module's globals before the builtin one, and `re` calls
  its compiler through the module attribute: a Python that stops doing either never calls
  these, and a call with anything else (a code object, a parsed pattern, `re.DEBUG`) goes to
  the original unchanged.

Like the rule index, the table is ailint's own code, not a result: `--no-cache` keeps it,
`AILINT_NO_CACHE=1` turns it off, `ailint clean` removes it. Forked workers use it but never
write it; only the process that installed it does, at exit.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAGIC = b"AILC2\n"
MAX_ENTRIES = (
    1024  # per kind; 2.5 versions of ailint's texts (a version makes about 400), past it a save keeps what the run met
)
DATACLASS, REGEX = "dataclass", "regex"
KINDS = (DATACLASS, REGEX)

# kind -> key -> code as it is stored: a text's code object marshalled (decoded when a class
# needs it), a pattern's program with its opcodes as bytes (listed when the pattern is built).
# Kept encoded, a table of 400 texts and 430 patterns reads in 1.5 ms instead of 5.
_tables: dict[str, dict[Any, Any]] = {k: {} for k in KINDS}
_met: dict[str, set[Any]] = {k: set() for k in KINDS}  # keys looked up this run
_new: dict[str, dict[Any, Any]] = {k: {} for k in KINDS}  # keys compiled this run
_state: dict[str, Any] = {"dir": None, "saving": False, "pid": None}
_counts: dict[str, int] = {k: 0 for k in KINDS}  # entries this run added (its own and its workers'), saved or not
_builtin_exec = builtins.exec
_originals: dict[str, Any] = {}  # re's own compiler, once replaced

_codes, _programs = _tables[DATACLASS], _tables[REGEX]
_codes_met, _programs_met = _met[DATACLASS], _met[REGEX]
_codes_new, _programs_new = _new[DATACLASS], _new[REGEX]


def table_file(directory: str) -> str:
    """The table of this interpreter build in `directory`."""
    from binascii import crc32  # zlib's CRC-32; binascii is loaded anyway (base64)

    tag = crc32(f"{sys.version}\0{marshal.version}".encode())
    return os.path.join(directory, f"code-{tag:08x}.bin")


def _schedule_save() -> None:
    if not _state["saving"]:
        import atexit

        _state["saving"] = True
        atexit.register(save)


def _exec(source: Any, globals: Any = None, locals: Any = None, /, **kwargs: Any) -> None:
    """`exec` for `dataclasses`: a text runs as the code the table holds for it (compiled
    now, and saved at exit, when the table has none); anything else goes to the builtin."""
    if source.__class__ is str and not kwargs:
        stored = _codes.get(source)
        if stored is not None:
            _codes_met.add(source)
        else:
            stored = _codes_new.get(source)
        if stored is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            _codes_new[source] = marshal.dumps(code)
            _counts[DATACLASS] += 1
            _schedule_save()
        else:
            code = marshal.loads(stored)
        source = code
    _builtin_exec(source, globals, locals, **kwargs)


def _re_compile(p: Any, flags: int = 0) -> Any:
    """`re`'s compiler (`re._compiler.compile`) for this process: a pattern the table holds
    is built from its program; any other is compiled by `re`, and its program kept for the
    next run when the pattern rebuilt from it is the same."""
    original = _originals["re"]
    if (p.__class__ is str or p.__class__ is bytes) and flags.__class__ is int and not flags & _RE_DEBUG:
        key = (p, flags)
        program = _programs.get(key)
        if program is not None:
            try:
                pattern = _build(p, program)
            except Exception:  # a program this build cannot take: compile it, as without a table
                return original(p, flags)
            _programs_met.add(key)
            return pattern
        pattern = original(p, flags)
        if key not in _programs_new:
            program = _program(p, flags, pattern)
            if program is not None:
                _programs_new[key] = program
                _counts[REGEX] += 1
                _schedule_save()
        return pattern
    return original(p, flags)


def _program(p: str | bytes, flags: int, pattern: Any) -> tuple[Any, ...] | None:
    """The arguments `re._compiler.compile` hands `_sre.compile` for `p`, when a pattern
    built from them equals `pattern` (what `re` compiled) and parsing `p` gives no warning;
    None otherwise. The steps are those of `re._compiler.compile` itself."""
    import warnings
    from re import _compiler, _parser  # type: ignore[attr-defined]

    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            parsed = _parser.parse(p, flags)
            code = [int(op) for op in _compiler._code(parsed, flags)]
        if warned:
            return None
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, i in groupindex.items():
            indexgroup[i] = name
        opcodes = _array(_OPCODE, code).tobytes()
        program = (flags | parsed.state.flags, opcodes, parsed.state.groups - 1, groupindex, tuple(indexgroup))
        rebuilt = _build(p, program)
    except Exception:  # a `re` whose steps differ: the pattern is simply not kept
        return None
    same = rebuilt == pattern and rebuilt.groups == pattern.groups and rebuilt.groupindex == pattern.groupindex
    return program if same else None


def _build(p: str | bytes, program: tuple[Any, ...]) -> Any:
    """The pattern `p` built from its stored program (`_sre.compile`, as `re` does last)."""
    flags, opcodes, groups, groupindex, indexgroup = program
    return _sre_compile(p, flags, _array(_OPCODE, opcodes).tolist(), groups, groupindex, indexgroup)


def install() -> None:
    """Read the table from the cache folder and hand `dataclasses` the caching `exec` and
    `re` the caching compiler. Before any dataclass of ailint is created and before the
    patterns of the modules a run imports; nothing when `AILINT_NO_CACHE` is set."""
    if os.environ.get("AILINT_NO_CACHE"):
        return
    from ailint.core.paths import user_cache_dir

    directory = user_cache_dir()
    _state["dir"] = directory
    _state["pid"] = os.getpid()
    loaded = _load(directory)
    for kind in KINDS:
        _tables[kind].clear()
        _tables[kind].update(loaded[kind])
    import dataclasses

    setattr(dataclasses, "exec", _exec)  # noqa: B010 (a module global, found before the builtin)
    _install_re()


def _install_re() -> None:
    global _sre_compile, _RE_DEBUG, _array
    import re
    from array import array

    compiler = getattr(re, "_compiler", None)
    sre = sys.modules.get("_sre")
    if compiler is None or sre is None or not callable(getattr(compiler, "compile", None)):
        return
    if getattr(sre, "CODESIZE", None) != array(_OPCODE).itemsize:
        return  # opcodes of another width than the bytes are stored in
    if "re" not in _originals:
        _originals["re"] = compiler.compile
    _sre_compile, _array = sre.compile, array
    _RE_DEBUG = int(re.DEBUG)
    compiler.compile = _re_compile


_sre_compile: Any = None
_RE_DEBUG = 128
_OPCODE = "I"  # an SRE opcode: 4 bytes (`_sre.CODESIZE`)
_array: Any = None


def _load(directory: str) -> dict[str, dict[Any, Any]]:
    from ailint.core.cachedir import opened, read_secret

    empty: dict[str, dict[Any, Any]] = {k: {} for k in KINDS}
    key = read_secret(directory)
    if key is None:
        return empty
    try:
        with open(table_file(directory), "rb") as fh:
            payload = opened(MAGIC, key, fh.read())
        got = marshal.loads(payload) if payload is not None else None
    except (OSError, ValueError, EOFError, TypeError):
        return empty
    if not isinstance(got, dict):
        return empty
    codes, programs = got.get(DATACLASS), got.get(REGEX)
    if isinstance(codes, dict):
        empty[DATACLASS] = {k: v for k, v in codes.items() if _is_code_entry(k, v)}
    if isinstance(programs, dict):
        empty[REGEX] = {k: v for k, v in programs.items() if _is_program_entry(k, v)}
    return empty


def _is_code_entry(key: Any, value: Any) -> bool:
    return isinstance(key, str) and isinstance(value, bytes)


def _is_program_entry(key: Any, value: Any) -> bool:
    return (
        isinstance(key, tuple)
        and len(key) == 2
        and isinstance(key[0], str | bytes)
        and isinstance(key[1], int)
        and isinstance(value, tuple)
        and len(value) == 5
        and isinstance(value[1], bytes)
    )


def save() -> None:
    """Write the table back with what this run compiled (atomically; never an error).
    Only the process that installed it writes: a forked worker's exit leaves it alone."""
    directory = _state["dir"]
    if directory is None or _state["pid"] != os.getpid() or not any(_new.values()):
        return
    try:
        from ailint.core.cachedir import private_dir, sealed, secret, write_private

        private_dir(directory)
        key = secret(directory)
        on_disk = _load(directory)
        table: dict[str, dict[Any, Any]] = {}
        for kind in KINDS:
            merged = {**on_disk[kind], **_tables[kind]}  # what a run beside this one saved meanwhile stays
            if len(merged) + len(_new[kind]) > MAX_ENTRIES:
                merged = {k: c for k, c in merged.items() if k in _met[kind]}
            merged.update(_new[kind])
            table[kind] = merged
        write_private(table_file(directory), sealed(MAGIC, key, marshal.dumps(table)))
        for kind in KINDS:
            _tables[kind].update(_new[kind])
            _new[kind].clear()
    except (OSError, ValueError):
        pass  # a read-only or foreign folder: the next run compiles again, as without a table


def forked() -> None:
    """In a forked worker, before its first task: what it compiles from now on is what
    `handed_over` gives back (what the parent compiled before the fork is the parent's)."""
    for kind in KINDS:
        _tables[kind].update(_new[kind])
        _new[kind].clear()
        _counts[kind] = 0


def handed_over() -> bytes | None:
    """What a forked worker compiled, marshalled for its parent to `adopt`; None if nothing."""
    if not any(_new.values()) or _state["dir"] is None:
        return None
    return marshal.dumps(_new)


def adopt(blob: bytes) -> None:
    """Take in what a forked worker compiled (`handed_over`), to be saved with this run's own."""
    try:
        got = marshal.loads(blob)
    except (ValueError, EOFError, TypeError):
        return
    if not isinstance(got, dict):
        return
    kept = 0
    for kind, valid in ((DATACLASS, _is_code_entry), (REGEX, _is_program_entry)):
        entries = got.get(kind)
        if not isinstance(entries, dict):
            continue
        for k, v in entries.items():
            if k not in _tables[kind] and k not in _new[kind] and valid(k, v):
                _new[kind][k] = v
                _counts[kind] += 1
                kept += 1
    if kept:
        _schedule_save()


def discard() -> None:
    """Write no table at exit: `ailint clean` leaves none behind (what it compiled stays in
    this process only)."""
    _state["dir"] = None


def compiled_here(kind: str = DATACLASS) -> int:
    """How many texts (or patterns, `kind="regex"`) this run compiled, not found in the table:
    in this process and in the workers it forked (`adopt`)."""
    return _counts[kind]
