"""ailint's start-up code kept across runs (`ailint.core.codecache`): the methods
`dataclasses` compiles and the programs of the patterns `re` compiles.

Each case runs a fresh interpreter: the table is read when the entry point starts, before
any dataclass exists and before the patterns of the modules a run imports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ailint.core.codecache import MAGIC
from conftest import ROOT

# Classes with every feature ailint's dataclasses use; the fingerprint is what a class is made
# of (each generated method's code, annotations and defaults) and how it behaves.
_FINGERPRINT = r"""
import os, sys, json, dataclasses
from dataclasses import dataclass, field
if not os.environ.get("PLAIN"):
    from ailint.core import codecache
    codecache.install()

@dataclass(frozen=True, slots=True)
class Span:
    "doc"
    line: int
    column: int = 1
    tags: tuple[str, ...] = ()

@dataclass
class Box:
    "doc"
    name: str
    items: list[int] = field(default_factory=list)
    note: str | None = field(default=None, repr=False, compare=False)

@dataclass(order=True, kw_only=True)
class Ranked:
    "doc"
    rank: int
    label: str = "x"

def code_of(fn):
    c = fn.__code__
    # (a frozenset in sorted order: its repr's order is a process's string hashes')
    consts = [sorted(k, key=repr) if isinstance(k, frozenset) else k for k in c.co_consts if not hasattr(k, "co_code")]
    return [c.co_code.hex(), repr(consts), c.co_names,
            c.co_varnames, c.co_freevars, repr(getattr(fn, "__annotations__", None)), repr(fn.__defaults__),
            repr(fn.__kwdefaults__), fn.__qualname__, c.co_filename]

METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__", "__ge__")
out = {}
for cls in (Span, Box, Ranked):
    out[cls.__name__] = {}
    for name in METHODS:
        fn = getattr(vars(cls).get(name), "__wrapped__", vars(cls).get(name))  # __repr__ is wrapped
        out[cls.__name__][name] = code_of(fn) if hasattr(fn, "__code__") else repr(fn)
s = Span(3)
try:
    s.line = 4
    frozen = "no"
except dataclasses.FrozenInstanceError:
    frozen = "yes"
out["behaviour"] = [repr(s), s == Span(3, 1, ()), hash(s) == hash(Span(3)), frozen, repr(Box("b")),
                    Box("b", note="n") == Box("b"), Ranked(rank=1) < Ranked(rank=2),
                    [f.name for f in dataclasses.fields(Box)], repr(dataclasses.replace(s, column=2))]
compiled = codecache.compiled_here() if not os.environ.get("PLAIN") else -1
if not os.environ.get("PLAIN"):
    codecache.save()
print(json.dumps({"fingerprint": out, "compiled": compiled}))
"""


def _env(cache: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "AILINT_CACHE_DIR": str(cache), **extra}
    for k in ("AILINT_NO_CACHE", "PYTHONDONTWRITEBYTECODE"):
        if k not in extra:
            env.pop(k, None)
    return env


def _run_json(script: str, cache: Path, **extra: str) -> dict:
    """What `script` prints as JSON, run in a fresh interpreter with `cache` as the cache folder."""
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=_env(cache, **extra), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _fingerprint(cache: Path, **extra: str) -> dict:
    return _run_json(_FINGERPRINT, cache, **extra)


def test_classes_from_the_table_are_the_classes_compiled_afresh(tmp_path: Path) -> None:
    """Plain `dataclasses`, a first run that compiles and saves, and a run that takes every
    method from the table make the same classes: the same code, annotations and defaults,
    and the same behaviour (frozen, eq, hash, order, repr, fields, replace)."""
    plain = _fingerprint(tmp_path / "c", PLAIN="1")
    first = _fingerprint(tmp_path / "c")
    second = _fingerprint(tmp_path / "c")
    # (each class's methods: one text each before Python 3.13, one text a class since)
    assert first["compiled"] >= 3 and second["compiled"] == 0
    assert plain["fingerprint"] == first["fingerprint"] == second["fingerprint"]
    assert plain["fingerprint"]["behaviour"][3] == "yes"


_EXIT_PROBE = """
import os, sys
real_exit = os._exit
parent = os.getpid()
def probe(code):
    from ailint.core import codecache
    if os.getpid() == parent:  # a forked worker leaves by os._exit too
        print("COMPILED", codecache.compiled_here(), codecache.compiled_here("regex"),
              codecache.compiled_here("module"), codecache.compiled_here("class"), file=sys.stderr)
    real_exit(code)
os._exit = probe
sys.argv = ["ailint", *sys.argv[1:]]
from ailint.doors.lean import main
main()
"""


def _check_counts(cache: Path, *flags: str, **extra: str) -> tuple[str, int, int, int, int]:
    """The demo's JSON report, and how many dataclass texts, patterns, modules and class
    plans the run compiled (or read from their `.pyc`, or recorded) and kept."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _EXIT_PROBE,
            "check",
            "--no-config",
            "--no-cache",
            "--format",
            "json",
            *flags,
            "fixtures/demo",
        ],
        cwd=ROOT,
        env=_env(cache, **extra),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1 and proc.stdout, proc.stderr
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("COMPILED"))
    _, texts, patterns, modules, plans = line.split()
    return proc.stdout, int(texts), int(patterns), int(modules), int(plans)


def _check(cache: Path, **extra: str) -> tuple[str, int]:
    out, texts, *_ = _check_counts(cache, **extra)
    return out, texts


def test_a_second_check_compiles_nothing(tmp_path: Path) -> None:
    """`--no-cache` keeps the table (ailint's own code, like the rule index): the second
    check of the demo compiles nothing and reports the same bytes."""
    out1, compiled1, patterns1, modules1, plans1 = _check_counts(tmp_path / "c")
    out2, compiled2, patterns2, modules2, plans2 = _check_counts(tmp_path / "c")
    assert compiled1 > 50 and compiled2 == 0
    assert patterns1 > 50 and patterns2 == 0, "every pattern of the second run came from the table"
    assert modules1 > 50 and modules2 == 0, "every module of the second run came from the table"
    assert plans1 > 50 and plans2 == 0, "every dataclass of the second run was made from its plan"
    assert out1 == out2
    names = os.listdir(tmp_path / "c")
    assert any(n.startswith("code-") for n in names), names
    table = next(tmp_path / "c" / n for n in names if n.startswith("code-"))
    assert table.stat().st_mode & 0o077 == 0, "owner-only, like the results cache"


def test_what_forked_workers_compile_is_kept_by_their_parent(tmp_path: Path) -> None:
    """With `--jobs 2` the workers parse files and run rules the parent never does, so they
    compile patterns (and dataclass methods) of their own; they hand them to the parent,
    which saves them with its own: a `--jobs 1` run afterwards, doing all the work in one
    process, compiles nothing."""
    out2, _, patterns, _, _ = _check_counts(tmp_path / "c", "--jobs", "2")
    assert patterns > 50
    out1, texts, patterns, modules, plans = _check_counts(tmp_path / "c", "--jobs", "1")
    assert (texts, patterns, modules, plans) == (0, 0, 0, 0)
    assert out1 == out2


def test_a_torn_foreign_or_unreadable_table_is_compiled_again(tmp_path: Path) -> None:
    """A table cut short, one whose MAC another folder's key made, or one that is not a
    table at all is never loaded: the run compiles its methods as without one, and saves a
    good table for the next run. An entry whose bytes differ from its digest in the header
    is compiled again, alone."""
    cache, other = tmp_path / "c", tmp_path / "other"
    baseline, _ = _check(cache)
    _check(other)
    table = next(cache / n for n in os.listdir(cache) if n.startswith("code-"))
    good = table.read_bytes()
    foreign = next(other / n for n in os.listdir(other) if n.startswith("code-")).read_bytes()
    for bad in (good[: len(MAGIC) + 60], foreign, MAGIC + b"\0" * 40, b""):
        table.write_bytes(bad)
        out, compiled = _check(cache)
        assert out == baseline and compiled > 50
        assert _check(cache)[1] == 0, "the run saved a good table again"
    # cut after its header: the entries before the cut are used, the others compiled again
    good = table.read_bytes()
    table.write_bytes(good[: len(good) * 2 // 3])
    out, *counts = _check_counts(cache)
    assert out == baseline and 0 < sum(counts) < 400
    assert _check_counts(cache)[1:] == (0, 0, 0, 0)
    # one entry changed after its header was written: that entry alone is compiled again
    good = table.read_bytes()
    table.write_bytes(good[:-3] + bytes(b ^ 0xFF for b in good[-3:]))
    out, *counts = _check_counts(cache)
    assert out == baseline and sum(counts) == 1
    assert _check_counts(cache)[1:] == (0, 0, 0, 0)
    table.unlink()
    table.mkdir()  # unreadable (a folder in its place): compiled, and nothing raises
    out, compiled = _check(cache)
    assert out == baseline and compiled > 50


def test_no_cache_env_leaves_dataclasses_alone(tmp_path: Path) -> None:
    code = (
        "import dataclasses\nfrom ailint.core import codecache\ncodecache.install()\n"
        "print('exec' in vars(dataclasses))\n"
    )
    for extra, expected in (({"AILINT_NO_CACHE": "1"}, "False"), ({}, "True")):
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path / "c", **extra), capture_output=True, text=True
        )
        assert proc.stdout.strip() == expected, proc.stderr


def test_clean_removes_the_table(tmp_path: Path) -> None:
    """`ailint clean` removes the code table, the kept scan of the Kubernetes definitions
    (`ailint.schema.lazydefs`) and the rule and family indexes, and nothing writes one of
    them back before the command ends."""
    _check(tmp_path / "c")
    assert {n.split("-")[0] for n in os.listdir(tmp_path / "c")} >= {"code", "defs", "families", "rules"}
    proc = subprocess.run(
        [sys.executable, "-m", "ailint", "clean"], cwd=ROOT, env=_env(tmp_path / "c"), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert not [n for n in os.listdir(tmp_path / "c") if n.startswith(("code-", "defs-", "families-", "rules-"))]


def test_a_table_past_its_bound_keeps_only_what_a_run_met(tmp_path: Path) -> None:
    """Texts of older versions pile up until the table passes its bound; the next save
    keeps only the texts that run met, so the table a start-up reads stays small."""
    cache = tmp_path / "c"
    junk = (
        "from ailint.core import codecache\ncodecache.install()\n"
        "for n in range(codecache.MAX_ENTRIES + 10):\n    codecache._exec(f'x = {n}', {}, {})\n"
        "codecache.save()\nprint(len(codecache._load(codecache._state['dir'])[0]['dataclass']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", junk], cwd=ROOT, env=_env(cache), capture_output=True, text=True)
    assert proc.returncode == 0 and int(proc.stdout) > 1000, proc.stderr
    _, compiled = _check(cache)
    assert compiled > 50
    count = (
        "from ailint.core import codecache\ncodecache.install()\n"
        "codes = codecache._tables['dataclass']\n"
        "junk = {codecache._text_key(f'x = {n}') for n in range(codecache.MAX_ENTRIES + 10)}\n"
        "print(len(codes), sum(k in junk for k in codes))\n"
    )
    proc = subprocess.run([sys.executable, "-c", count], cwd=ROOT, env=_env(cache), capture_output=True, text=True)
    total, old = map(int, proc.stdout.split())
    assert old == 0 and 50 < total < 1000, (total, old)
    assert _check(cache)[1] == 0


# Patterns with each feature of `re`'s compiler: named groups and backreferences, inline and
# argument flags, bytes, character ranges beyond the BMP, lookarounds, verbose mode, repeats.
_PATTERNS = r"""
import os, sys, json, re
if not os.environ.get("PLAIN"):
    from ailint.core import codecache
    codecache.install()
# what `install` compiled itself: the patterns of `dataclasses` and what it imports (one on
# Python 3.11, two on 3.13), compiled after the table took over `re`'s compiler
at_install = codecache.compiled_here("regex") if not os.environ.get("PLAIN") else -1
SOURCES = [
    (r"(?P<key>[a-z]+)=(?P<value>\d+)(?P=key)?", 0),
    (r"(?i)gpu|NEURON", 0),
    (r"^nvidia\.com/(gpu|mig-\d+g\.\d+gb)$", re.IGNORECASE | re.MULTILINE),
    ("[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]", 0),
    (r"(?<=v)\d+(?!\.)", 0),
    ("  \\d+ # digits\n  (?:\\.\\d*)?  # fraction", re.VERBOSE),
    (rb"\x00(?P<b>[\x80-\xff]{2,5}?)", 0),
    (r"a{3,}b*?c+?(?>d+)", re.DOTALL),
    (r"\bword\b\s*", re.ASCII),
]
out = []
for source, flags in SOURCES:
    p = re.compile(source, flags)
    probe = "ab=12ab nvidia.com/mig-1g.5gb v12 3.5 aaabccddd word \ud7ff" if isinstance(source, str) else b"\x00\x81\x82\x83"
    found = [m.span() for m in p.finditer(probe)]
    out.append([repr(p), p.flags, p.groups, dict(p.groupindex), found])
built = codecache.compiled_here("regex") if not os.environ.get("PLAIN") else -1
if not os.environ.get("PLAIN"):
    codecache.save()
print(json.dumps({"patterns": out, "compiled": built, "at_install": at_install}))
"""


def _patterns(cache: Path, **extra: str) -> dict:
    return _run_json(_PATTERNS, cache, **extra)


def test_patterns_from_the_table_are_the_patterns_compiled_afresh(tmp_path: Path) -> None:
    """Plain `re`, a first run that compiles and keeps each program, and a run that builds
    every pattern from the table make the same patterns: flags, groups, group names, and the
    same matches."""
    plain = _patterns(tmp_path / "c", PLAIN="1")
    first = _patterns(tmp_path / "c")
    second = _patterns(tmp_path / "c")
    # the nine above, and what `dataclasses` compiles when `install` imports it (after
    # handing `re` the table's compiler: the entry point imports it no earlier)
    assert first["at_install"] >= 1 and first["compiled"] == first["at_install"] + 9
    assert second["compiled"] == 0
    assert plain["patterns"] == first["patterns"] == second["patterns"]


def test_a_pattern_from_the_table_equals_what_re_compiles() -> None:
    """The equality a program is kept by covers the whole program: a program with one
    opcode changed builds a pattern that is not equal, so it would not be kept."""
    code = r"""
import re, array
from ailint.core import codecache
codecache.install()
original = codecache._originals["re"]
for source, flags in ((r"(?P<x>a+)b", 0), (r"[a-z]{2,}", re.I), (b"\d", 0)):
    compiled = original(source, int(flags))
    program = codecache._program(source, int(flags), compiled)
    assert program is not None, source
    assert codecache._build(source, program) == compiled
    ops = array.array("I", program[1]); ops[-2] ^= 1
    try:
        other = codecache._build(source, (program[0], ops.tobytes(), *program[2:]))
    except RuntimeError:
        other = None
    assert other != compiled
    assert codecache._program(source, int(flags), re.compile("zz")) is None, "another pattern is not the same"
print("ok")
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=_env(Path("/nonexistent-ailint")), capture_output=True, text=True
    )
    assert proc.stdout.strip() == "ok", proc.stderr


def test_a_pattern_that_warns_is_never_kept(tmp_path: Path) -> None:
    """`re` warns of a possible nested set when it compiles `[[a]`: such a pattern is compiled
    by `re` in every run, so the warning is not lost when the table is warm; `re.DEBUG`
    (which prints the program) also goes to `re` itself."""
    code = (
        # (`dataclasses` first: the pattern it compiles would be kept, and counted, otherwise)
        "import re, warnings, sys, dataclasses\nfrom ailint.core import codecache\ncodecache.install()\n"
        "with warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter('always')\n"
        "    re.compile('[[a]')\n"
        "re.compile('x+', re.DEBUG)\n"
        "print(len(w), codecache.compiled_here('regex'), file=sys.stderr)\ncodecache.save()\n"
    )
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path / "c"), capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.split()[-2:] == ["1", "0"], proc.stderr
        assert "MAX_REPEAT" in proc.stdout, "re.DEBUG printed its program"


def test_no_cache_env_leaves_re_alone(tmp_path: Path) -> None:
    code = "import re\nfrom ailint.core import codecache\ncodecache.install()\nprint(re._compiler.compile.__module__)\n"
    for extra, expected in (({"AILINT_NO_CACHE": "1"}, "re._compiler"), ({}, "ailint.core.codecache")):
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path / "c", **extra), capture_output=True, text=True
        )
        assert proc.stdout.strip() == expected, proc.stderr


_MODULES_PROBE = r"""
import os, sys, json
real_exit = os._exit
parent = os.getpid()
def probe(code):
    if os.getpid() == parent:
        names = ("ailint.core.model", "ailint.domain.workloads", "ailint.rules.gpu", "ailint.engine.run",
                 "yaml.composer", "yaml.nodes")
        out = {}
        for n in names:
            m = sys.modules[n]
            out[n] = [m.__file__, getattr(m, "__path__", None) and list(m.__path__), m.__spec__.origin,
                      m.__name__, m.__package__, m.__cached__, type(m.__spec__.loader).__name__]
        import linecache, traceback
        f = sys.modules["ailint.core.model"].__spec__.origin
        out["source line"] = linecache.getline(f, 1).strip()
        print("MODULES", json.dumps(out), file=sys.stderr)
    real_exit(code)
os._exit = probe
sys.argv = ["ailint", *sys.argv[1:]]
from ailint.doors.lean import main
main()
"""


def test_modules_from_the_table_are_the_modules_imported_from_their_files(tmp_path: Path) -> None:
    """A module served from the table has the `__file__`, `__path__`, `__spec__.origin`,
    `__name__`, `__package__` and `__cached__` it has when imported from its file, and its
    source is found for tracebacks; only its loader differs. PyYAML's parser modules are
    served as ailint's are (`codecache.SERVED`)."""

    def modules(**extra: str) -> dict:
        proc = subprocess.run(
            [sys.executable, "-c", _MODULES_PROBE, "check", "--no-config", "--no-cache", "fixtures/demo/vllm.yaml"],
            cwd=ROOT, env=_env(tmp_path / "c", **extra), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES"))
        return json.loads(line.split(" ", 1)[1])

    plain = modules(AILINT_NO_CACHE="1")
    modules()  # keeps them
    served = modules()
    for name in (
        "ailint.core.model",
        "ailint.domain.workloads",
        "ailint.rules.gpu",
        "ailint.engine.run",
        "yaml.composer",
        "yaml.nodes",
    ):
        assert plain[name][6] == "SourceFileLoader" and served[name][6] == "_ModuleLoader", name
        assert served[name][:6] == plain[name][:6], name
    assert served["source line"] == plain["source line"] != ""


def test_a_module_whose_source_changed_is_not_served(tmp_path: Path, monkeypatch) -> None:
    """The finder serves a module only from the folder it was kept from (another install
    sharing the cache folder has entries of its own), and only while its source file has
    the size and mtime its code was kept with, as CPython checks a `.pyc`: an edit (either
    one) sends it to Python's own finder, and so does a source that is gone."""
    import marshal

    from ailint.core import codecache

    source = tmp_path / "mod.py"
    source.write_text("VALUE = 1\n")
    st = source.stat()
    code = marshal.dumps(compile("VALUE = 1\n", str(source), "exec"))
    monkeypatch.setitem(codecache._state, "file", code)
    monkeypatch.setitem(codecache._tables, "module", {})
    monkeypatch.setattr(codecache, "_crc32", __import__("binascii").crc32)
    place = (0, len(code), codecache._crc32(code), str(source), None)
    tables = codecache._tables["module"]
    here = [str(tmp_path)]
    key = ("ailint.probe", str(tmp_path))  # the name, and its package's `__path__` joined
    tables[key] = (*place, st.st_size, st.st_mtime_ns)
    spec = codecache._ModuleFinder.find_spec("ailint.probe", here)
    assert spec is not None and spec.origin == str(source) and spec.loader_state == code
    assert codecache._ModuleFinder.find_spec("ailint.probe", [str(tmp_path / "other-install")]) is None
    for size, mtime in ((st.st_size + 1, st.st_mtime_ns), (st.st_size, st.st_mtime_ns + 1)):
        tables[key] = (*place, size, mtime)
        assert codecache._ModuleFinder.find_spec("ailint.probe", here) is None
    tables[key] = (*place, st.st_size, st.st_mtime_ns)
    source.unlink()
    assert codecache._ModuleFinder.find_spec("ailint.probe", here) is None


def _served_module(tmp_path: Path, monkeypatch, source_text: str, compiled_as: str | None = None) -> None:
    """A table that serves `ailint.fastprobe` from `tmp_path/fastprobe.py` (`source_text`),
    a module of the `ailint` package (`tmp_path` added to its `__path__`); its code names
    `compiled_as` as its file (default: the source's path)."""
    import marshal

    from ailint.core import codecache

    source = tmp_path / "fastprobe.py"
    source.write_text(source_text)
    st = source.stat()
    code = marshal.dumps(compile(source_text, compiled_as or str(source), "exec"))
    monkeypatch.setitem(codecache._state, "file", code)
    monkeypatch.setitem(codecache._tables, "module", {})
    monkeypatch.setattr(codecache, "_crc32", __import__("binascii").crc32)
    import ailint

    monkeypatch.setattr(ailint, "__path__", [*ailint.__path__, str(tmp_path)])
    codecache._tables["module"][("ailint.fastprobe", "\0".join(ailint.__path__))] = (
        0, len(code), codecache._crc32(code), str(source), None, st.st_size, st.st_mtime_ns,
    )  # fmt: skip


def test_the_fast_load_makes_the_module_importlib_makes(tmp_path: Path, monkeypatch) -> None:
    """A module the table serves, loaded by `_fast_find_and_load`, has the attributes
    importlib's own load gives it, is bound on its package and is no longer initializing;
    a module that fails while it runs is not left in `sys.modules` nor on its package, and
    the exception reaches the importer."""
    from ailint.core import codecache

    monkeypatch.setitem(codecache._fast, "original", lambda name, import_: pytest.fail(f"importlib loaded {name}"))
    monkeypatch.setitem(codecache._fast, "threads", lambda: 0)
    _served_module(tmp_path, monkeypatch, "VALUE = __name__\n")
    monkeypatch.delitem(sys.modules, "ailint.fastprobe", raising=False)
    try:
        module = codecache._fast_find_and_load("ailint.fastprobe", __import__)
        spec = module.__spec__
        assert sys.modules["ailint.fastprobe"] is module and sys.modules["ailint"].fastprobe is module
        assert module.VALUE == "ailint.fastprobe" and module.__file__ == spec.origin == str(tmp_path / "fastprobe.py")
        assert module.__loader__ is spec.loader and module.__package__ == "ailint" and not spec._initializing
        assert module.__cached__ == str(tmp_path / "__pycache__" / f"fastprobe.{sys.implementation.cache_tag}.pyc")
        assert not hasattr(module, "__path__")
    finally:
        sys.modules.pop("ailint.fastprobe", None)
        vars(sys.modules["ailint"]).pop("fastprobe", None)

    _served_module(tmp_path, monkeypatch, "raise LookupError('broken at import')\n")
    with pytest.raises(LookupError, match="broken at import"):
        codecache._fast_find_and_load("ailint.fastprobe", __import__)
    assert "ailint.fastprobe" not in sys.modules and not hasattr(sys.modules["ailint"], "fastprobe")


def test_the_fast_load_leaves_other_threads_and_other_modules_to_importlib(tmp_path: Path, monkeypatch) -> None:
    """While another thread runs (it could import the same module without the lock), under
    `python -v`, for a module the table does not serve and for another package's module,
    `_fast_find_and_load` hands the import to importlib's own `_find_and_load`."""
    from ailint.core import codecache

    asked: list[str] = []
    monkeypatch.setitem(codecache._fast, "original", lambda name, import_: asked.append(name) or name)
    monkeypatch.setitem(codecache._fast, "threads", lambda: 1)
    _served_module(tmp_path, monkeypatch, "VALUE = 1\n")
    assert codecache._fast_find_and_load("ailint.fastprobe", __import__) == "ailint.fastprobe"
    monkeypatch.setitem(codecache._fast, "threads", lambda: 0)
    assert codecache._fast_find_and_load("ailint.not_in_the_table", __import__) == "ailint.not_in_the_table"
    assert codecache._fast_find_and_load("json.tool", __import__) == "json.tool"
    assert asked == ["ailint.fastprobe", "ailint.not_in_the_table", "json.tool"]
    assert "ailint.fastprobe" not in sys.modules


def _private_copy(tmp_path: Path) -> tuple[Path, str]:
    """A copy of ailint's source tree laid out as it installs (rules/ inside the package, the
    schemas linked), and the PYTHONPATH that imports it ahead of the editable install. A test
    that edits a source file edits this copy: the real tree's size and mtime key the rule index
    of every other run, and tests running beside it (`-n 2`) would see their index go stale."""
    import shutil

    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "linter", src / "ailint", ignore=ignore)
    shutil.copytree(ROOT / "rules", src / "ailint" / "rules", ignore=ignore)
    (src / "ailint" / "schemas").symlink_to(ROOT / "schemas", target_is_directory=True)
    return src, str(src)


def test_a_module_edited_since_is_kept_anew_and_served_again(tmp_path: Path) -> None:
    """After its source changes (here its mtime), a module is imported from its file once,
    kept with its new size and mtime, and served from the table by the next run (a stale
    stamp kept over the new one made every later run import and save it again)."""
    src, pythonpath = _private_copy(tmp_path)
    source = src / "ailint" / "report" / "explain.py"
    cache = tmp_path / "c"
    first = _check_counts(cache, PYTHONPATH=pythonpath)
    assert _check_counts(cache, PYTHONPATH=pythonpath)[3] == 0
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    edited = _check_counts(cache, PYTHONPATH=pythonpath)
    assert edited[3] >= 1
    assert _check_counts(cache, PYTHONPATH=pythonpath)[3] == 0, "the edited module is served from the table again"
    assert edited[0] == first[0]


def test_a_pattern_compiled_in_a_thread_is_compiled_by_re_and_not_kept(tmp_path: Path) -> None:
    """Keeping a program checks its parse for warnings with `warnings.catch_warnings`, which
    is process-wide: a pattern first compiled in a thread (a webhook request) is compiled by
    `re` as before and not kept."""
    code = (
        "import re, threading, sys, dataclasses\nfrom ailint.core import codecache\ncodecache.install()\n"
        "out = []\nt = threading.Thread(target=lambda: out.append(re.compile('th(r)ead+')))\nt.start(); t.join()\n"
        "print(out[0].match('threaddd') is not None, codecache.compiled_here('regex'), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path / "c"), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.split()[-2:] == ["True", "0"], proc.stderr


def test_a_save_keeps_each_module_with_the_stamp_of_its_own_code(tmp_path: Path, monkeypatch) -> None:
    """A module's code and its source's stamp are kept as one pair, whichever run saves.

    A run that had read the table before another run kept a module anew (after a reinstall)
    saved the other run's new stamp with its own old code; every later run then served the
    old code as current, and an import of a name only the new code has failed. Both paths
    that merge are checked: a save over a table another run wrote since, and a worker's
    module taken in by a parent that holds an older one."""
    import binascii
    import marshal

    from ailint.core import codecache as cc

    monkeypatch.setattr(cc, "_crc32", binascii.crc32)
    monkeypatch.setattr(cc, "record_modules", lambda: None)  # no real module of this process
    names = ("_tables", "_new", "_carried", "_met", "_counts", "_module_sources", "_state")
    for name in names:
        monkeypatch.setattr(cc, name, getattr(cc, name))  # restored after the test

    def process() -> dict:
        """A fresh run's state, with the table of tmp_path read as a run reads it at start."""
        state = {
            "_tables": {k: {} for k in cc.KINDS},
            "_new": {k: {} for k in cc.KINDS},
            "_carried": {k: {} for k in cc.KINDS},
            "_met": {k: set() for k in cc.KINDS},
            "_counts": dict.fromkeys(cc.KINDS, 0),
            "_module_sources": {},
            "_state": {"dir": str(tmp_path), "pid": os.getpid(), "file": b""},
        }
        tables, state["_state"]["file"] = cc._load(str(tmp_path))
        for kind in cc.KINDS:
            state["_tables"][kind].update(tables[kind])
        become(state)
        return state

    def become(state: dict) -> None:
        for name in names:
            setattr(cc, name, state[name])

    key = ("ailint.probe", str(tmp_path))
    origin = str(tmp_path / "probe.py")
    old = marshal.dumps(compile("OLD = 0\n", origin, "exec"))
    new = marshal.dumps(compile("OLD = 0\nNEW = 1\n", origin, "exec"))
    old_stamp, new_stamp = (origin, None, 8, 1_000), (origin, None, 16, 2_000)
    pairs = {old_stamp: old, new_stamp: new}

    def kept_pair() -> tuple:
        process()
        stamp = tuple(cc._tables[cc.MODULE][key][3:])
        return stamp, cc._stored(cc.MODULE, key)

    def keep_module(code: bytes, stamp: tuple) -> None:
        cc._new[cc.MODULE][key] = code
        cc._module_sources[key] = stamp

    process()
    keep_module(old, old_stamp)
    cc.save()
    assert kept_pair() == (old_stamp, old)

    # a run reads the table, another keeps the module anew meanwhile, then the first saves
    first = process()
    process()
    keep_module(new, new_stamp)
    cc.save()
    become(first)
    cc._new[cc.REGEX][("x+", 0)] = b"program"  # something of its own to save
    cc.save()
    stamp, code = kept_pair()
    assert (stamp, code) == (new_stamp, new), "the newer pair stays, whole"

    # a parent that served the module from an older table takes in a worker's newer read
    keep_module(old, old_stamp)
    cc.save()
    process()
    assert cc._stored(cc.MODULE, key) == old
    cc.adopt(marshal.dumps(({cc.MODULE: {key: new}}, {key: new_stamp})))
    cc.save()
    stamp, code = kept_pair()
    assert pairs[stamp] == code and stamp == new_stamp

    # a worker's module without the stamp it was read with is not kept
    process()
    cc.adopt(marshal.dumps(({cc.MODULE: {("ailint.other", str(tmp_path)): new}}, {})))
    assert not cc._new[cc.MODULE]


def test_a_pattern_built_anew_in_each_process_is_not_kept(tmp_path: Path) -> None:
    """`tokenize` builds its pseudo-token pattern from a set, in hash order, so each process
    compiles another string (attrs tokenizes through `inspect.signature` when jsonschema
    builds its classes). Kept, every run would add an entry no run meets again and write the
    whole table at exit; a pattern of any other module is kept as before."""
    code = (
        "import io, re, sys, tokenize, dataclasses\nfrom ailint.core import codecache\ncodecache.install()\n"
        "list(tokenize.generate_tokens(io.StringIO('x = 1\\n').readline))\n"
        "before = codecache.compiled_here('regex')\n"
        "re.compile('ailint-test-[0-9]+' + sys.argv[1])\n"
        "print(before, codecache.compiled_here('regex'), file=sys.stderr)\ncodecache.save()\n"
    )
    for seed in ("1", "2"):
        env = {**_env(tmp_path / "c"), "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-c", code, seed], cwd=ROOT, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.split()[-2:] == ["0", "1"], proc.stderr


# sarif-om's classes, made by attrs: each generated method's code as `code_of` above reads it
_ATTRS_FINGERPRINT = r"""
import os, sys, json
if not os.environ.get("PLAIN"):
    from ailint.core import codecache
    codecache.install()
    codecache.serve_attrs()
import attr
import sarif_om as om

def code_of(fn):
    c = fn.__code__
    # (a frozenset in sorted order: its repr's order is a process's string hashes')
    consts = [sorted(k, key=repr) if isinstance(k, frozenset) else k for k in c.co_consts if not hasattr(k, "co_code")]
    return [c.co_code.hex(), repr(consts), c.co_names,
            c.co_varnames, c.co_freevars, c.co_flags, repr(getattr(fn, "__annotations__", None)),
            repr(fn.__defaults__), repr(fn.__kwdefaults__), fn.__qualname__, c.co_filename]

out = {}
for name in sorted(n for n in dir(om) if attr.has(getattr(om, n))):
    cls = getattr(om, name)
    out[name] = {m: code_of(vars(cls)[m]) for m in ("__init__", "__repr__", "__eq__") if m in vars(cls)}
r = om.Region(start_line=3, end_line=4)
out["behaviour"] = [repr(r), r == om.Region(start_line=3, end_line=4), repr(om.Result(message=om.Message(text="m")))]
compiled = codecache.compiled_here() if not os.environ.get("PLAIN") else -1
if not os.environ.get("PLAIN"):
    codecache.save()
print(json.dumps({"fingerprint": out, "compiled": compiled}))
"""


def test_attrs_classes_from_the_table_are_the_classes_compiled_afresh(tmp_path: Path) -> None:
    """sarif-om's attrs classes made with the methods' code from the table are the classes
    attrs compiles itself: the same code, flags (attrs' `from __future__ import
    annotations`), annotations, defaults and file names, and the same behaviour."""
    plain = _run_json(_ATTRS_FINGERPRINT, tmp_path / "c", PLAIN="1")
    first = _run_json(_ATTRS_FINGERPRINT, tmp_path / "c")
    second = _run_json(_ATTRS_FINGERPRINT, tmp_path / "c")
    assert first["compiled"] > 30 and second["compiled"] == 0
    assert plain["fingerprint"] == first["fingerprint"] == second["fingerprint"]
    assert len(plain["fingerprint"]) > 30


def test_a_second_sarif_report_compiles_nothing(tmp_path: Path) -> None:
    """The SARIF report's first run keeps what attrs compiled; the second compiles none of
    it and writes the same bytes."""
    out1, compiled1, *_ = _check_counts(tmp_path / "c", "--format", "sarif")
    out2, compiled2, *_ = _check_counts(tmp_path / "c", "--format", "sarif")
    assert compiled1 > 30 and compiled2 == 0
    assert out1 == out2 and '"version": "2.1.0"' in out1


def test_a_first_run_keeps_a_module_from_its_pyc_only_when_importlib_would_take_it(tmp_path: Path) -> None:
    """What a first run keeps of a module imported the usual way is the code in its `.pyc`
    (read as bytes, not unmarshalled and marshalled again), and only from a `.pyc` that
    importlib takes for the source as it is: this Python's magic number, checked by
    timestamp, with the source's mtime and size. Any other `.pyc` is passed over, and the
    code is read through the loader, as before."""
    import importlib.util
    import marshal
    import py_compile

    from ailint.core import codecache

    source = tmp_path / "mod.py"
    source.write_text("VALUE = 41 + 1\n")
    cached = importlib.util.cache_from_source(str(source))
    py_compile.compile(str(source), cfile=cached, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    body = codecache._pyc_body(cached, source.stat())
    assert body is not None
    namespace: dict = {}
    exec(marshal.loads(body), namespace)
    assert namespace["VALUE"] == 42
    assert codecache._pyc_body(None, source.stat()) is None  # no `.pyc` named
    assert codecache._pyc_body(str(tmp_path / "missing.pyc"), source.stat()) is None
    st = source.stat()
    source.write_text("VALUE = 41 + 10\n")  # one byte more, and maybe the same second
    assert codecache._pyc_body(cached, source.stat()) is None, "the source's size changed"
    source.write_text("VALUE = 41 + 1\n")
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    assert codecache._pyc_body(cached, source.stat()) is None, "the source's mtime changed"
    py_compile.compile(str(source), cfile=cached, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    assert codecache._pyc_body(cached, source.stat()) is None, "a hash-based .pyc"
    py_compile.compile(str(source), cfile=cached, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    assert codecache._pyc_body(cached, source.stat()) is not None
    data = Path(cached).read_bytes()
    Path(cached).write_bytes(b"\0\0\r\n" + data[4:])
    assert codecache._pyc_body(cached, source.stat()) is None, "another Python's magic number"


def test_a_first_run_compiles_each_pattern_once_into_the_pattern_re_makes(tmp_path: Path) -> None:
    """Once `re`'s steps have given `re`'s own pattern in a process, a pattern the table
    lacks is compiled by those steps once (not by `re` and then again for its program), and
    is the pattern `re` makes: equal (its whole program), with the same groups and names."""
    code = r"""
import re, sys
from ailint.core import codecache
codecache.install()
original = codecache._originals["re"]
sources = [(r"(?P<x>a+)b", 0), (r"[a-z]{2,}", re.I), (b"\d+(?=x)", 0), (r"(?<![\w-])(sk-[\w-]{20,})", 0),
           (r"^kind:\s*(\S+)$", re.M), (r"caf\u00e9|\u0130nfo", re.I), (r"(a)(?P<b>b)?(?(2)c|d)", 0)]
parses = []
real_parse = re._parser.parse
re._parser.parse = lambda *a, **k: parses.append(a[0]) or real_parse(*a, **k)
for source, flags in sources:
    got = re.compile(source, flags)
    want = original(source, int(flags))
    assert got == want and got.groups == want.groups and got.groupindex == want.groupindex, source
print(codecache._replica["same"], parses.count(sources[-1][0]), codecache.compiled_here("regex") >= len(sources))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path / "c"), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    # the last pattern: parsed once by the compile (the table's steps) and once by `original`
    assert proc.stdout.split() == ["True", "2", "True"], proc.stdout + proc.stderr


def test_a_served_module_names_its_source_as_importlib_makes_a_pyc_name_it(tmp_path: Path, monkeypatch) -> None:
    """A `.pyc` names the path it was compiled from (`compileall` of a relative folder, a
    tree moved since), and a first run keeps a module's code from its `.pyc`; served, its
    code names the source's own path, as importlib makes it name it: tracebacks, `inspect`
    and the dataclass plans kept by it see the file that is there."""
    from ailint.core import codecache

    monkeypatch.setitem(codecache._fast, "original", lambda name, import_: pytest.fail(f"importlib loaded {name}"))
    monkeypatch.setitem(codecache._fast, "threads", lambda: 0)
    _served_module(tmp_path, monkeypatch, "def where():\n    return 1\n", compiled_as="linter/fastprobe.py")
    monkeypatch.delitem(sys.modules, "ailint.fastprobe", raising=False)
    try:
        module = codecache._fast_find_and_load("ailint.fastprobe", __import__)
        assert module.where.__code__.co_filename == str(tmp_path / "fastprobe.py") == module.__file__
    finally:
        sys.modules.pop("ailint.fastprobe", None)
        vars(sys.modules["ailint"]).pop("fastprobe", None)
