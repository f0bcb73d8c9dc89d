"""ailint's start-up code kept across runs: the `.pyc` of what `dataclasses` and `re` compile,
and the modules of ailint and of PyYAML's parser in one file.

Python keeps a module's bytecode in its `.pyc` file, but two kinds of code a run makes at
start-up are compiled afresh by every process, and finding and reading 130 `.pyc` files one
by one has a cost of its own (see "modules" below):

- `@dataclass` writes the source text of a class's `__init__`, `__repr__`, `__eq__`,
  `__hash__` (and, frozen, `__setattr__` and `__delattr__`) and compiles it with `exec` each
  time the class is created, that is at every import. A one-file run creates 67 classes of
  ailint, and compiling their 297 methods was a fifth of it (19 of 94 ms in the process).
- `re.compile` parses a pattern and generates its program in Python. A one-file run compiles
  about 110 patterns (ailint's rules, PyYAML's reader and resolver, the schema checks): 13 of
  82 ms.

(attrs, which sarif-om's 60 classes are made with, does the same with `compile`:
`serve_attrs()` gives it one that takes each text's code from the table, as below.)

The methods' code was only part of what `@dataclass` costs: reading the fields and writing
the texts took as long again. The table also keeps a plan of each of ailint's dataclasses
(`ailint.core.classplan`: what `dataclasses` did to it, checked by replaying it on a copy
before it is kept), and `dataclasses._process_class` makes a class from its plan when the
table has one for its module's source (10 to 5 ms of a one-file run).

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

A module is served from the table only when its source file has the size and mtime its
code was read with (what CPython checks a `.pyc` against), with the same `__file__`,
`__path__` and `__spec__.origin`; anything else is imported the usual way.

Like the rule index, the table is ailint's own code, not a result: `--no-cache` keeps it,
`AILINT_NO_CACHE=1` turns it off, `ailint clean` removes it. Forked workers use it but never
write it; only the process that installed it does, at exit.
"""

from __future__ import annotations

import _imp
import builtins
import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# 7: a text is kept under its digest (the header had every text whole: 0.2 MB read each run);
# 6: tables of 5 may pair a module's stamp with older code (fixed in save)
MAGIC = b"AILC7\n"
# per kind; 2.5 versions of ailint's texts (a version makes about 400), past it a save keeps what the run met
MAX_ENTRIES = 1024
DATACLASS, REGEX, MODULE, CLASS = "dataclass", "regex", "module", "class"
KINDS = (DATACLASS, REGEX, MODULE, CLASS)

# The table file: MAGIC, the keyed MAC of the header, the header's length, the header (per
# kind, each key's entry: its offset after the header, its length and its CRC-32; a module's
# also its source file's path, size and mtime), then the entries. An entry is a text's code
# object, a pattern's program (its opcodes as bytes) or a module's code, marshalled. The file
# is mapped, not read: a run decodes the header and only the entries it meets (a one-file
# run: 300 of 430 texts, 110 of 440 patterns, 130 modules), each checked against its CRC.
# Reading a 1 MB table whole and checking its MAC took 4 ms of a 60 ms run.
_tables: dict[str, dict[Any, tuple[Any, ...]]] = {k: {} for k in KINDS}  # kind -> key -> where on disk
_met: dict[str, set[Any]] = {k: set() for k in KINDS}  # keys of the file used this run
_new: dict[str, dict[Any, bytes]] = {k: {} for k in KINDS}  # compiled this run (or by a worker), not saved
_carried: dict[str, dict[Any, bytes]] = {k: {} for k in KINDS}  # saved already, or the parent's (in a worker)
_state: dict[str, Any] = {"dir": None, "pid": None, "file": b""}  # file: the entries, mapped
_counts: dict[str, int] = {k: 0 for k in KINDS}  # entries this run added (its own and its workers'), saved or not
_builtin_exec = builtins.exec
_originals: dict[str, Any] = {}  # re's own compiler, once replaced
_HEAD = len(MAGIC) + 32 + 8  # MAGIC, the header's MAC, its length


def table_file(directory: str) -> str:
    """The table of this interpreter build in `directory`."""
    from binascii import crc32  # zlib's CRC-32; binascii is loaded anyway (base64)

    tag = crc32(f"{sys.version}\0{marshal.version}".encode())
    return os.path.join(directory, f"code-{tag:08x}.bin")


def _stored(kind: str, key: Any) -> bytes | memoryview | None:
    """The entry kept for `key`: from the table file (its digest checked), or compiled earlier
    in this run; None when there is none.

    An entry of the file is a view of the mapped file, not a copy: the 2.3 MB a one-file run
    decodes were copied into fresh memory first (550 page faults of the run's 4,000) only to
    be unmarshalled and dropped. Whoever takes one unmarshals it and lets it go (a module's
    loader drops it once its code is made), so no view outlives the run's need of it."""
    where = _tables[kind].get(key)
    if where is not None:
        try:
            start, length, digest = where[:3]
            entry = _state["file"][start : start + length]
            if len(entry) == length and _digest(entry) == digest:
                _met[kind].add(key)
                return entry
        except (TypeError, ValueError):
            pass
        del _tables[kind][key]  # not what was written: compiled again, and saved anew
    return _new[kind].get(key) or _carried[kind].get(key)


def _keep(kind: str, key: Any, entry: bytes) -> None:
    _new[kind][key] = entry
    _counts[kind] += 1


def _digest(entry: bytes | memoryview) -> int:
    """An entry's check: its CRC-32 (a fourth of BLAKE2b's time, for the 2 MB a run decodes).
    It catches a damaged file; the header that holds it is behind the folder's MAC, and the
    folder is its owner's only, as trusted as the `.pyc` files Python loads unchecked."""
    return _crc32(entry)


def _text_key(text: str) -> bytes:
    """What the code of a text is kept under: its BLAKE2b digest (16 bytes), not the text,
    which made the table's header, read whole by every run, four times as large."""
    from ailint.core.digest import blake2b

    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _exec(source: Any, globals: Any = None, locals: Any = None, /, **kwargs: Any) -> None:
    """`exec` for `dataclasses`: a text runs as the code the table holds for it (compiled
    now, and saved at exit, when the table has none); anything else goes to the builtin."""
    if source.__class__ is str and not kwargs:
        key = _text_key(source)
        stored = _stored(DATACLASS, key)
        if stored is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            _keep(DATACLASS, key, marshal.dumps(code))
        else:
            code = marshal.loads(stored)
        source = code
    _builtin_exec(source, globals, locals, **kwargs)


def serve_attrs() -> None:
    """Give attrs (imported now, if it is not yet) a `compile` that takes the code of each
    text it writes for a class from the table, as `dataclasses` gets its `exec`: sarif-om
    defines 60 attrs classes, and compiling their methods was a sixth of a one-file run with
    `--format sarif`. Call it before the classes are defined (before `import sarif_om`);
    nothing when the table is off, or attrs no longer compiles through a module global."""
    global _attrs_inherited
    if _state["dir"] is None:
        return
    try:
        from attr import _make
    except ImportError:
        return
    caller: Any = getattr(_make, "_compile_and_eval", None)
    code = getattr(caller, "__code__", None)
    if getattr(_make, "compile", None) is _attrs_compile or code is None:
        return
    # what `compile` called from attrs' module inherits: its future statements (its
    # `from __future__ import annotations`), as the flags of its code say
    import __future__

    mask = 0
    for name in __future__.all_feature_names:
        mask |= getattr(__future__, name).compiler_flag
    _attrs_inherited = code.co_flags & mask
    setattr(_make, "compile", _attrs_compile)  # noqa: B010 (a module global, found before the builtin)


_attrs_inherited = 0
_builtin_compile = builtins.compile


def _attrs_compile(
    source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False, optimize: int = -1, **kw: Any
) -> Any:
    """`compile` for attrs' module: the flags it would inherit there made explicit, and the
    code of an `exec` text taken from the table (keyed by its flags, file name and text:
    the code holds the name its tracebacks show); anything else goes to the builtin."""
    if not dont_inherit:
        flags |= _attrs_inherited
    if source.__class__ is str and filename.__class__ is str and mode == "exec" and optimize == -1 and not kw:
        key = _text_key(f"\0attrs\0{flags}\0{filename}\0{source}")
        stored = _stored(DATACLASS, key)
        if stored is not None:
            return marshal.loads(stored)
        code = _builtin_compile(source, filename, mode, flags, True, optimize)
        _keep(DATACLASS, key, marshal.dumps(code))
        return code
    return _builtin_compile(source, filename, mode, flags, True, optimize, **kw)


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
        if _from_unstable_source():
            return original(p, flags)
        made = _compiled_once(p, flags) if _replica["same"] else None
        if made is None:
            pattern = original(p, flags)
            program = _program(p, flags, pattern)
            if program is not None:
                # the steps `_program` repeats gave `re`'s own pattern: from now on they are
                # taken once, instead of `re`'s and then again for the program
                _replica["same"] = True
        else:
            pattern, program = made
        if program is not None:
            _keep(REGEX, key, marshal.dumps(program))
        return pattern
    return original(p, flags)


# Whether `_program`'s steps, those of `re._compiler.compile`, have given a pattern equal to
# what `re` compiled in this process (then a pattern the table lacks is compiled by them
# once: a first run compiled each pattern twice, 40 ms of a one-file run).
_replica = {"same": False}


def _compiled_once(p: str | bytes, flags: int) -> tuple[Any, tuple[Any, ...]] | None:
    """`p` compiled by `re`'s steps, and its program, from one parse; None when the parse
    warns (`re` compiles it again, so the warning is shown as usual, and it is not kept) or
    when it is not the main thread's (`catch_warnings` is process-wide)."""
    program = _program(p, flags, None)
    if program is None:
        return None
    return _build(p, program), program


# Modules whose patterns are built anew in each process: `tokenize` joins the string prefixes
# from a set (hash-randomized order), so its pseudo-token pattern differs from run to run
# (`inspect.signature` tokenizes, and attrs calls it when jsonschema builds its classes).
# Kept, each run would add one more never-met entry and write the whole table at exit.
_UNSTABLE_SOURCES = frozenset({"tokenize"})


def _from_unstable_source() -> bool:
    """Whether the pattern being compiled comes from one of `_UNSTABLE_SOURCES` (the first
    caller outside `re`'s own modules)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name not in ("re", "re._compiler", "functools", __name__):
            return name in _UNSTABLE_SOURCES
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _program(p: str | bytes, flags: int, pattern: Any) -> tuple[Any, ...] | None:
    """The arguments `re._compiler.compile` hands `_sre.compile` for `p`, when a pattern
    built from them equals `pattern` (what `re` compiled; None: not checked) and parsing `p`
    gives no warning; None otherwise. The steps are those of `re._compiler.compile` itself."""
    import warnings
    from re import _compiler, _parser  # type: ignore[attr-defined]

    threading = sys.modules.get("threading")
    if threading is not None and threading.current_thread() is not threading.main_thread():
        return None  # `catch_warnings` is process-wide: never from a thread (the webhook's requests)
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
        if pattern is None:
            return program
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

    global _crc32
    from binascii import crc32

    _crc32 = crc32
    directory = user_cache_dir()
    _state["dir"] = directory
    _state["pid"] = os.getpid()
    tables, _state["file"] = _load(directory)
    for kind in KINDS:
        _tables[kind].clear()
        _tables[kind].update(tables[kind])
    _install_re()  # first: importing `dataclasses` compiles a pattern
    import dataclasses

    setattr(dataclasses, "exec", _exec)  # noqa: B010 (a module global, found before the builtin)
    _install_plans(dataclasses)
    if _ModuleFinder not in sys.meta_path:
        _before.update(n for n in sys.modules if n.startswith(SERVED))  # the entry point's own
        sys.meta_path.insert(0, _ModuleFinder)
        _install_fast_load()
        import atexit

        atexit.register(save)  # which also keeps the modules this run imported the usual way


def _install_plans(dataclasses: Any) -> None:
    """Hand `dataclasses` a `_process_class` that replays the plans of ailint's classes
    (`ailint.core.classplan`) and records those it lacks; a `dataclasses` without one, or of
    another signature, is left alone."""
    original = getattr(dataclasses, "_process_class", None)
    code = getattr(original, "__code__", None)
    if original is _planned or code is None or code.co_argcount != 11 or code.co_varnames[:1] != ("cls",):
        return
    _originals["dataclass"] = original
    dataclasses._process_class = _planned


def _planned(cls: Any, *params: Any) -> Any:
    """`dataclasses._process_class` for this process: a class of ailint's whose plan the
    table keeps is made from it; any other is made by `dataclasses`, and its plan kept for
    the next run when `classplan.record` could check it.

    A plan recorded while `typing` was loaded holds whether or not it is (with `typing`,
    `dataclasses` looks for `ClassVar` annotations, and a planned class has none); one
    recorded without it holds only without it, and a run with `typing` records it anew."""
    original = _originals["dataclass"]
    key = _plan_key(cls)
    if key is None:
        return original(cls, *params)
    from ailint.core import classplan

    typing_loaded = "typing" in sys.modules
    stored = _stored(CLASS, key)
    if stored is not None:
        try:
            with_typing, plan = marshal.loads(stored)
        except (ValueError, EOFError, TypeError):
            with_typing, plan = False, None
        if isinstance(plan, tuple) and (with_typing or not typing_loaded):
            made = classplan.replay(cls, params, plan)
            if made is not None:
                _replayed[0] += 1
                return made
    if not classplan.plannable(cls):
        return original(cls, *params)
    before = dict(cls.__dict__)
    fingerprint = classplan.fingerprint(cls, params)
    made = original(cls, *params)
    if fingerprint is not None:
        plan = classplan.record(cls, before, made, params, fingerprint)
        if plan is not None:
            try:
                _keep(CLASS, key, marshal.dumps((typing_loaded, plan)))
            except ValueError:  # a value marshal cannot write: no plan
                pass
    return made


_replayed = [0]


def _plan_key(cls: Any) -> tuple[Any, ...] | None:
    """What the plan of `cls` is kept under: its module, qualified name and the module's
    source file with its size and mtime; None for a class outside ailint's modules or not
    at a module's top level."""
    module = cls.__module__
    if not isinstance(module, str) or not module.startswith("ailint.") or "<locals>" in cls.__qualname__:
        return None
    stamp = _served.get(module)
    if stamp is None:  # imported the usual way: its file's own stamp
        origin = getattr(getattr(sys.modules.get(module), "__spec__", None), "origin", None)
        if not isinstance(origin, str):
            return None
        try:
            st = os.stat(origin)
        except (OSError, ValueError):
            return None
        stamp = (origin, st.st_size, st.st_mtime_ns)
    return (module, cls.__qualname__, *stamp)


def replayed_here() -> int:
    """How many classes this process made from their plans (`ailint.core.classplan`)."""
    return _replayed[0]


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
_crc32: Any = None
_RE_DEBUG = 128
_OPCODE = "I"  # an SRE opcode: 4 bytes (`_sre.CODESIZE`)
_array: Any = None


def _load(directory: str) -> tuple[dict[str, dict[Any, tuple[Any, ...]]], Any]:
    """The table file's header (per kind, where each entry is) and the file, mapped; empty
    when there is none, or it is torn, of another folder's key, or not a table."""
    from ailint.core.cachedir import mac, read_secret
    from ailint.core.digest import compare_digest

    empty: dict[str, dict[Any, tuple[Any, ...]]] = {k: {} for k in KINDS}
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


# -- modules: their code served from the table, as `.pyc` files are, without a finder's walk --
# Importing one of ailint's modules costs a search of its package folder, a stat and a read of
# its `.pyc`, besides unmarshalling and running it: for the 130 modules of a one-file run,
# 3.5 ms of 60. The table keeps each module's code with its source file's size and mtime, the
# two things CPython checks a `.pyc` against; a module whose source changed, or that the table
# lacks, is imported the usual way and kept at exit. A module is keyed by its name and its
# package's `__path__` (where Python looks for it): every install of ailint that shares the
# cache folder (a venv per project, an editable checkout) has its own entries.
# The packages whose modules the table serves: ailint's, and PyYAML's, whose parser every run
# that reads YAML imports (13 modules, each a finder's walk, a stat and a `.pyc` read: 1.5% of
# a one-file run's instructions, 245.0 to 241.4 M, and 2% of its time).
SERVED = ("ailint.", "yaml.")
_module_sources: dict[tuple[str, str], tuple[Any, ...]] = {}  # key -> (origin, locations, size, mtime_ns)
_before: set[str] = set()  # imported before the table was read
_served: dict[str, tuple[str, int, int]] = {}  # module -> the source stamp its code was served for


class _ModuleFinder:
    """The first finder on `sys.meta_path` in a run: the modules of `SERVED` from the table."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        if not path or not name.startswith(SERVED):
            return None  # another package's, or top-level (ailint itself comes before the table)
        key = (name, "\0".join(path))
        where = _tables[MODULE].get(key)
        if where is None or len(where) != 7:
            return None
        origin, locations, size, mtime = where[3:]
        try:
            st = os.stat(origin)
        except (OSError, TypeError, ValueError):
            return None
        if st.st_size != size or st.st_mtime_ns != mtime:
            return None  # edited since: Python's own finder reads it, and the exit keeps it anew
        code = _stored(MODULE, key)
        if code is None:
            return None
        _served[name] = (origin, size, mtime)  # what its classes' plans are kept under
        spec = _module_spec(name, _LOADER, origin=origin, loader_state=code, is_package=locations is not None)
        if locations is not None:
            spec.submodule_search_locations = list(locations)
        spec.has_location = True
        if _PLAIN_CACHED and origin.startswith("/") and origin.endswith(".py"):
            # `__cached__`, as `importlib.util.cache_from_source` names it with no pycache
            # prefix and no -O (6 of the 35 us an import of a module of the table takes)
            head, _, tail = origin.rpartition("/")
            spec.cached = f"{head}/__pycache__/{tail[:-3]}.{_CACHE_TAG}.pyc"
        return spec

    @staticmethod
    def invalidate_caches() -> None:
        pass


class _ModuleLoader:
    """Runs a module's kept code in its module, as `SourceFileLoader` runs a `.pyc`'s."""

    @staticmethod
    def create_module(spec: Any) -> None:
        return None

    @staticmethod
    def exec_module(module: Any) -> None:
        spec = module.__spec__
        entry, spec.loader_state = spec.loader_state, None  # a view of the table: not kept
        code = marshal.loads(entry)
        # the source's own path in every code object, as importlib gives a `.pyc`'s (whose
        # code names the path it was compiled from: `compileall` of a relative folder, a
        # tree moved since); one comparison where it is already
        _fix_co_filename(code, spec.origin)
        _builtin_exec(code, module.__dict__)


_LOADER: Any = _ModuleLoader()  # a loader by protocol (importlib.abc would import typing)
_fix_co_filename: Any = getattr(_imp, "_fix_co_filename")  # noqa: B009 (not in typeshed)
_CACHE_TAG = sys.implementation.cache_tag
# whether a module's `__cached__` is `<folder>/__pycache__/<name>.<tag>.pyc`, as importlib
# names it on POSIX without `PYTHONPYCACHEPREFIX` or -O (else importlib works it out)
_PLAIN_CACHED = (
    bool(_CACHE_TAG) and sys.pycache_prefix is None and not sys.flags.optimize and os.sep == "/" and os.altsep is None
)


def _install_fast_load() -> None:
    """Have importlib hand the loading of the table's modules to `_fast_find_and_load`."""
    import _thread

    # importlib._bootstrap, whose `_find_and_load` the C import calls for a module it lacks
    bootstrap: Any = sys.modules.get("_frozen_importlib")
    original = getattr(bootstrap, "_find_and_load", None)
    if original is not None and original is not _fast_find_and_load:
        _fast["original"] = original
        _fast["threads"] = _thread._count
        bootstrap._find_and_load = _fast_find_and_load


_fast: dict[str, Any] = {}  # importlib's own `_find_and_load`; how many other threads run


def _fast_find_and_load(name: str, import_: Any) -> Any:
    """The module `name`, loaded as importlib's `_find_and_load` loads it, with less of its
    machinery when the table serves it: no module lock, no walk of `sys.meta_path` (the
    table's finder is its first entry), no `hasattr` probes of the new module. Each import
    of a one-file run took 30 us, and 127 of them are ailint's (260 to 252 M instructions).

    Only while this is the process's one thread (no other import can see a half-made
    module without the lock) and not under `python -v`; anything else, a module the table
    does not serve, or one whose parent is not imported yet goes to importlib unchanged."""
    modules = sys.modules
    if name in modules or not name.startswith(SERVED) or _fast["threads"]() or sys.flags.verbose:
        return _fast["original"](name, import_)
    parent_name, _, child = name.rpartition(".")
    parent = modules.get(parent_name)
    path = getattr(parent, "__path__", None)
    spec = None if path is None else _ModuleFinder.find_spec(name, path)
    if spec is None:
        return _fast["original"](name, import_)
    module: Any = _new_module(name)
    # what importlib's `_init_module_attrs` sets on a module of a spec with a location
    module.__spec__ = spec
    module.__loader__ = spec.loader
    module.__package__ = spec.parent
    if spec.submodule_search_locations is not None:
        module.__path__ = spec.submodule_search_locations
    module.__file__ = spec.origin
    if spec.cached is not None:
        module.__cached__ = spec.cached
    spec._initializing = True
    modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        modules.pop(name, None)
        raise
    finally:
        spec._initializing = False
    module = modules[name]  # (a module may put another object in its place, as importlib allows)
    setattr(parent, child, module)
    return module


_new_module = type(sys)


def _module_spec(*args: Any, **kwargs: Any) -> Any:
    """`importlib.machinery.ModuleSpec`, imported on the first module the table serves."""
    global _module_spec
    from importlib.machinery import ModuleSpec

    _module_spec = ModuleSpec
    return ModuleSpec(*args, **kwargs)


def record_modules() -> None:
    """Keep the code of the `SERVED` modules this process imported the usual way (their
    `.pyc`, read again once) with their source's size and mtime, for the next run."""
    from importlib.machinery import SourceFileLoader

    for name, module in list(sys.modules.items()):
        if not name.startswith(SERVED) or name in _before:
            continue
        spec = getattr(module, "__spec__", None)
        loader = getattr(spec, "loader", None)
        if spec is None or loader.__class__ is not SourceFileLoader or not str(spec.origin).endswith(".py"):
            continue  # served from the table already, a stand-in, or not from a source file
        try:
            st = os.stat(spec.origin)
        except (OSError, ValueError):
            continue
        locations = spec.submodule_search_locations
        place = (spec.origin, tuple(locations) if locations is not None else None, st.st_size, st.st_mtime_ns)
        package = sys.modules.get(name.rpartition(".")[0])
        searched = getattr(package, "__path__", None)
        if searched is None:
            continue
        key = (name, "\0".join(searched))  # what `find_spec` is asked with
        if key in _new[MODULE]:
            continue
        kept = _tables[MODULE].get(key)
        if (kept is not None and tuple(kept[3:]) == place) or _module_sources.get(key) == place:
            _met[MODULE].add(key)
            continue  # kept already (and imported the usual way all the same: a worker's, say)
        entry = _pyc_body(spec.cached, st)
        if entry is None:
            try:
                code = loader.get_code(name)
            except (OSError, ImportError, SyntaxError, ValueError):
                continue
            if code is None:
                continue
            entry = marshal.dumps(code)
        _module_sources[key] = place
        _keep(MODULE, key, entry)


def _pyc_body(cached: Any, st: os.stat_result) -> bytes | None:
    """The marshalled code of a module's `.pyc` (what the table keeps), when the file is one
    importlib takes for the source stamped `st` (this Python's magic number, checked by the
    source's mtime and size, as `_validate_timestamp_pyc` does); None otherwise.

    A first run keeps the code of the 300 modules it imported; reading it back through
    `get_code` unmarshalled each `.pyc` to marshal it again: 39 ms of a one-file run."""
    if not isinstance(cached, str):
        return None
    try:
        with open(cached, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if (
        len(data) <= 16
        or data[:4] != _pyc_magic()
        or data[4:8] != b"\0\0\0\0"  # (flags: checked by timestamp, not a hash-based .pyc)
        or int.from_bytes(data[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
        or int.from_bytes(data[12:16], "little") != st.st_size & 0xFFFFFFFF
    ):
        return None
    return data[16:]


def _pyc_magic() -> bytes:
    from importlib.util import MAGIC_NUMBER

    return MAGIC_NUMBER


def _is_module_key(key: Any) -> bool:
    return (
        isinstance(key, tuple)
        and len(key) == 2
        and isinstance(key[0], str)
        and key[0].startswith(SERVED)
        and isinstance(key[1], str)
    )


def _is_module_source(place: Any) -> bool:
    return (
        isinstance(place, tuple)
        and len(place) == 4
        and isinstance(place[0], str)
        and (place[1] is None or (isinstance(place[1], tuple) and all(isinstance(p, str) for p in place[1])))
        and isinstance(place[2], int)
        and isinstance(place[3], int)
    )


def _is_class_key(key: Any) -> bool:
    """(module, qualified name) as a module's key is made, then its source's path, size, mtime."""
    return (
        isinstance(key, tuple)
        and len(key) == 5
        and _is_module_key(key[:2])
        and isinstance(key[2], str)
        and isinstance(key[3], int)
        and isinstance(key[4], int)
    )


def _is_code_key(key: Any) -> bool:
    return isinstance(key, bytes) and len(key) == 16


def _is_pattern_key(key: Any) -> bool:
    return isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str | bytes) and isinstance(key[1], int)


def save() -> None:
    """Write the table back with what this run compiled (atomically; never an error).
    Only the process that installed it writes: a forked worker's exit leaves it alone."""
    directory = _state["dir"]
    if directory is None or _state["pid"] != os.getpid():
        return
    try:
        record_modules()
    except Exception:  # never an error at exit: the modules are imported the usual way next time
        pass
    if not any(_new.values()):
        return
    try:
        from ailint.core.cachedir import mac, private_dir, secret, write_private

        private_dir(directory)
        key = secret(directory)
        on_disk, other = _load(directory)  # what a run beside this one saved meanwhile stays
        header: dict[str, dict[Any, tuple[Any, ...]]] = {}
        header_entries: dict[str, dict[Any, bytes]] = {}
        parts: list[bytes] = []
        offset = 0
        for kind in KINDS:
            # each entry with the stamp of its own source (a module's): this run's table, then
            # the file as another run left it since (newer), then what this run compiled
            kept: dict[Any, tuple[bytes, tuple[Any, ...]]] = {}
            for source, places in ((_state["file"], _tables[kind]), (other, on_disk[kind])):
                for k, where in places.items():
                    try:
                        start, length, digest = where[:3]
                        entry = bytes(source[start : start + length])
                    except (TypeError, ValueError):
                        continue
                    if len(entry) == length and _digest(entry) == digest:
                        kept[k] = (entry, tuple(where[3:]))
            for k, entry in _carried[kind].items():
                kept[k] = (entry, _module_sources.get(k, ()))
            if len(kept) + len(_new[kind]) > MAX_ENTRIES:
                kept = {k: e for k, e in kept.items() if k in _met[kind] or k in _carried[kind]}
            for k, entry in _new[kind].items():
                kept[k] = (entry, _module_sources.get(k, ()))
            header_entries[kind] = {k: entry for k, (entry, _) in kept.items()}
            header[kind] = {}
            for k, (entry, stamp) in kept.items():
                header[kind][k] = (offset, len(entry), _digest(entry), *stamp)
                parts.append(entry)
                offset += len(entry)
        head = marshal.dumps(header)
        pieces = [MAGIC, mac(key, (head,)), len(head).to_bytes(8, "little"), head, *parts]
        _unmap(other)  # a mapped file cannot be replaced on Windows
        _unmap(_state["file"])
        _state["file"] = b""
        for kind in KINDS:
            _tables[kind].clear()
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
    if _state["dir"] is None:
        return None
    try:
        record_modules()
    except Exception:  # a worker's modules are then imported the usual way next time
        pass
    if not any(_new.values()):
        return None
    return marshal.dumps((_new, _module_sources))


def adopt(blob: bytes) -> None:
    """Take in what a forked worker compiled (`handed_over`), to be saved with this run's own."""
    try:
        got, places = marshal.loads(blob)
    except (ValueError, EOFError, TypeError):
        return
    if not isinstance(got, dict) or not isinstance(places, dict):
        return
    for kind, valid in (
        (DATACLASS, _is_code_key),
        (REGEX, _is_pattern_key),
        (MODULE, _is_module_key),
        (CLASS, _is_class_key),
    ):
        entries = got.get(kind)
        if not isinstance(entries, dict):
            continue
        for k, v in entries.items():
            if not (valid(k) and isinstance(v, bytes)):
                continue
            if kind != MODULE:
                if _stored(kind, k) is None:  # none kept, or a bad one
                    _keep(kind, k, v)
                continue
            # a worker imports a module the usual way when the table's stamp is not its file's:
            # its code is kept, always with the stamp it was read with, unless this run read it too
            place = places.get(k)
            if k not in _new[MODULE] and place is not None and _is_module_source(place):
                _module_sources[k] = tuple(place)
                _keep(kind, k, v)


def discard() -> None:
    """Write no table at exit: `ailint clean` leaves none behind (what it compiled stays in
    this process only)."""
    _state["dir"] = None


def compiled_here(kind: str = DATACLASS) -> int:
    """How many texts (or patterns, `kind="regex"`) this run compiled, not found in the table:
    in this process and in the workers it forked (`adopt`)."""
    return _counts[kind]
