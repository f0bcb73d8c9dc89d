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
- it lives in the cache folder (private to its owner, `ailint.core.cachedir`), its header
  behind that folder's keyed MAC and each entry behind its digest in the header, so a table
  another user or a torn write produced is never loaded, an entry that does not match is
  compiled again, and whatever cannot be read is an empty table;
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

MAGIC = b"AILC3\n"
# per kind; 2.5 versions of ailint's texts (a version makes about 400), past it a save keeps what the run met
MAX_ENTRIES = 1024
DATACLASS, REGEX = "dataclass", "regex"
KINDS = (DATACLASS, REGEX)

# The table file: MAGIC, the keyed MAC of the header, the header's length, the header (per
# kind, each key's entry: its offset after the header, its length and its BLAKE2b digest),
# then the entries. An entry is a text's code object or a pattern's program (its opcodes as
# bytes), marshalled. The file is mapped, not read: a run decodes the header (about a quarter
# of the file) and only the entries it meets (a one-file run: 300 of 430 texts and 110 of 440
# patterns), each checked against its digest. Reading a 1 MB table whole and checking its MAC
# took 4 ms of a 60 ms run.
_tables: dict[str, dict[Any, tuple[int, int, bytes]]] = {k: {} for k in KINDS}  # kind -> key -> where on disk
_met: dict[str, set[Any]] = {k: set() for k in KINDS}  # keys of the file used this run
_new: dict[str, dict[Any, bytes]] = {k: {} for k in KINDS}  # compiled this run (or by a worker), not saved
_carried: dict[str, dict[Any, bytes]] = {k: {} for k in KINDS}  # saved already, or the parent's (in a worker)
_state: dict[str, Any] = {"dir": None, "saving": False, "pid": None, "file": b""}  # file: the entries, mapped
_counts: dict[str, int] = {k: 0 for k in KINDS}  # entries this run added (its own and its workers'), saved or not
_builtin_exec = builtins.exec
_originals: dict[str, Any] = {}  # re's own compiler, once replaced
_HEAD = len(MAGIC) + 32 + 8  # MAGIC, the header's MAC, its length


def table_file(directory: str) -> str:
    """The table of this interpreter build in `directory`."""
    from binascii import crc32  # zlib's CRC-32; binascii is loaded anyway (base64)

    tag = crc32(f"{sys.version}\0{marshal.version}".encode())
    return os.path.join(directory, f"code-{tag:08x}.bin")


def _stored(kind: str, key: Any) -> bytes | None:
    """The entry kept for `key`: from the table file (its digest checked), or compiled earlier
    in this run; None when there is none."""
    where = _tables[kind].get(key)
    if where is not None:
        try:
            start, length, digest = where
            entry = bytes(_state["file"][start : start + length])
            if _digest(entry) == digest:
                _met[kind].add(key)
                return entry
        except (TypeError, ValueError):
            pass
        del _tables[kind][key]  # not what was written: compiled again, and saved anew
    return _new[kind].get(key) or _carried[kind].get(key)


def _keep(kind: str, key: Any, entry: bytes) -> None:
    _new[kind][key] = entry
    _counts[kind] += 1
    if not _state["saving"]:
        import atexit

        _state["saving"] = True
        atexit.register(save)


def _digest(entry: bytes) -> bytes:
    from ailint.core.digest import blake2b

    return blake2b(entry, digest_size=16).digest()


def _exec(source: Any, globals: Any = None, locals: Any = None, /, **kwargs: Any) -> None:
    """`exec` for `dataclasses`: a text runs as the code the table holds for it (compiled
    now, and saved at exit, when the table has none); anything else goes to the builtin."""
    if source.__class__ is str and not kwargs:
        stored = _stored(DATACLASS, source)
        if stored is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            _keep(DATACLASS, source, marshal.dumps(code))
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
        stored = _stored(REGEX, key)
        if stored is not None:
            try:
                return _build(p, marshal.loads(stored))
            except Exception:  # a program this build cannot take: compile it, as without a table
                return original(p, flags)
        pattern = original(p, flags)
        program = _program(p, flags, pattern)
        if program is not None:
            _keep(REGEX, key, marshal.dumps(program))
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
    """Map the table from the cache folder and hand `dataclasses` the caching `exec` and
    `re` the caching compiler. Before any dataclass of ailint is created and before the
    patterns of the modules a run imports; nothing when `AILINT_NO_CACHE` is set."""
    if os.environ.get("AILINT_NO_CACHE"):
        return
    from ailint.core.paths import user_cache_dir

    directory = user_cache_dir()
    _state["dir"] = directory
    _state["pid"] = os.getpid()
    tables, _state["file"] = _load(directory)
    for kind in KINDS:
        _tables[kind].clear()
        _tables[kind].update(tables[kind])
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


def _load(directory: str) -> tuple[dict[str, dict[Any, tuple[int, int, bytes]]], Any]:
    """The table file's header (per kind, where each entry is) and the file, mapped; empty
    when there is none, or it is torn, of another folder's key, or not a table."""
    from ailint.core.cachedir import mac, read_secret
    from ailint.core.digest import compare_digest

    empty: dict[str, dict[Any, tuple[int, int, bytes]]] = {k: {} for k in KINDS}
    key = read_secret(directory)
    if key is None:
        return empty, b""
    try:
        import mmap

        with open(table_file(directory), "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < _HEAD:
                return empty, b""
            view = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        length = int.from_bytes(view[len(MAGIC) + 32 : _HEAD], "little")
        header = view[_HEAD : _HEAD + length]
        if view[: len(MAGIC)] != MAGIC or len(header) != length:
            return empty, b""
        if not compare_digest(view[len(MAGIC) : len(MAGIC) + 32], mac(key, (header,))):
            return empty, b""
        got = marshal.loads(header)
    except (OSError, ValueError, EOFError, TypeError):
        return empty, b""
    if not isinstance(got, dict):
        return empty, b""
    # the header is this folder's own (its MAC): its entries are taken as they are, each
    # checked against its digest when a run reads it (`_stored`)
    for kind in KINDS:
        entries = got.get(kind)
        if isinstance(entries, dict):
            empty[kind] = entries
    return empty, memoryview(view)[_HEAD + length :]


def _is_code_key(key: Any) -> bool:
    return isinstance(key, str)


def _is_pattern_key(key: Any) -> bool:
    return isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str | bytes) and isinstance(key[1], int)


def save() -> None:
    """Write the table back with what this run compiled (atomically; never an error).
    Only the process that installed it writes: a forked worker's exit leaves it alone."""
    directory = _state["dir"]
    if directory is None or _state["pid"] != os.getpid() or not any(_new.values()):
        return
    try:
        from ailint.core.cachedir import mac, private_dir, secret, write_private

        private_dir(directory)
        key = secret(directory)
        on_disk, other = _load(directory)  # what a run beside this one saved meanwhile stays
        header: dict[str, dict[Any, tuple[int, int, bytes]]] = {}
        header_entries: dict[str, dict[Any, bytes]] = {}
        parts: list[bytes] = []
        offset = 0
        for kind in KINDS:
            entries: dict[Any, bytes] = {}
            for source, places in ((other, on_disk[kind]), (_state["file"], _tables[kind])):
                for k, where in places.items():
                    try:
                        start, length, digest = where
                        entry = bytes(source[start : start + length])
                    except (TypeError, ValueError):
                        continue
                    if len(entry) == length and _digest(entry) == digest:
                        entries[k] = entry
            entries.update(_carried[kind])
            if len(entries) + len(_new[kind]) > MAX_ENTRIES:
                entries = {k: e for k, e in entries.items() if k in _met[kind] or k in _carried[kind]}
            entries.update(_new[kind])
            header_entries[kind] = entries
            header[kind] = {}
            for k, entry in entries.items():
                header[kind][k] = (offset, len(entry), _digest(entry))
                parts.append(entry)
                offset += len(entry)
        head = marshal.dumps(header)
        pieces = [MAGIC, mac(key, (head,)), len(head).to_bytes(8, "little"), head, *parts]
        _unmap(other)  # a mapped file cannot be replaced on Windows
        _unmap(_state["file"])
        _state["file"] = b""
        _tables[DATACLASS].clear()
        _tables[REGEX].clear()
        for kind in KINDS:
            _carried[kind].update(header_entries[kind])
        write_private(table_file(directory), pieces)
        for kind in KINDS:
            _carried[kind].update(_new[kind])
            _new[kind].clear()
    except (OSError, ValueError):
        pass  # a read-only or foreign folder: the next run compiles again, as without a table


def _unmap(view: Any) -> None:
    """Let go of a mapped table (`_load`): the view, then the mapping."""
    if isinstance(view, memoryview):
        mapping = view.obj
        view.release()
        close = getattr(mapping, "close", None)
        if close is not None:
            try:
                close()
            except BufferError:  # another view of it is still alive: the collector closes it
                pass


def forked() -> None:
    """In a forked worker, before its first task: what it compiles from now on is what
    `handed_over` gives back (what the parent compiled before the fork is the parent's)."""
    for kind in KINDS:
        _carried[kind].update(_new[kind])
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
    for kind, valid in ((DATACLASS, _is_code_key), (REGEX, _is_pattern_key)):
        entries = got.get(kind)
        if not isinstance(entries, dict):
            continue
        for k, v in entries.items():
            if valid(k) and isinstance(v, bytes) and _stored(kind, k) is None:  # none kept, or a bad one
                _keep(kind, k, v)


def discard() -> None:
    """Write no table at exit: `ailint clean` leaves none behind (what it compiled stays in
    this process only)."""
    _state["dir"] = None


def compiled_here(kind: str = DATACLASS) -> int:
    """How many texts (or patterns, `kind="regex"`) this run compiled, not found in the table:
    in this process and in the workers it forked (`adopt`)."""
    return _counts[kind]
