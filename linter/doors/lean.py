"""The console entry point, with a lean path for the common `ailint check PATHS [options]`.

Importing click and building its commands is a fifth of a one-file run. For a plain
`check` command line the entry point imports the command modules against `_Recorder`, a
stand-in for click that keeps each decorator's declaration instead of building a parser,
then parses argv from those same declarations and calls the `check` function itself: the
options are the ones `ailint.doors.cli` declares, never a second list.

Anything the lean parser does not handle exactly as click would (`--help`, `--version`,
an unknown option, a value click would reject, an option with a callback, a combined short
flag, another command, ...) goes to click itself, in the same process, with the stand-in
removed first, so the answer there is click's. `tests/test_lean.py` runs the same argument
lists through both paths and compares output and exit code.

`prepare` and `fast_exit` start and end any process that does one run: `ailint check`
here, and the GitHub Action (`ailint.doors.github_action`).
"""

from __future__ import annotations

import _thread
import os
import re
import sys
import types
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# (compiled where it is used: at import, before the code table serves `re`, it cost 0.17 ms
# of every run, and most runs echo nothing through click)
_ANSI = r"\033\[[;?0-9]*[a-zA-Z]"


class _Unsupported(Exception):
    """The command line needs click."""


class _Choice:
    def __init__(self, choices: Any, case_sensitive: bool = True) -> None:
        self.choices = tuple(choices)
        self.exact = case_sensitive

    def convert(self, value: str) -> Any:
        if not self.exact or value not in self.choices:
            raise _Unsupported(value)
        return value


class _IntRange:
    def __init__(self, min: int | None = None, max: int | None = None, **kw: Any) -> None:
        self.min, self.max, self.other = min, max, kw

    def convert(self, value: str) -> Any:
        if self.other or not re.fullmatch(r"[+-]?[0-9]+", value.strip()):
            raise _Unsupported(value)
        n = int(value)
        if (self.min is not None and n < self.min) or (self.max is not None and n > self.max):
            raise _Unsupported(value)
        return n


class _Path:
    def __init__(self, exists: bool = False, path_type: Any = None, **_: Any) -> None:
        self.checked = exists or path_type is not None

    def convert(self, value: str) -> Any:
        if self.checked:
            raise _Unsupported("a path click checks")
        return value


def _convert(type_: Any, value: str) -> Any:
    if type_ is None or type_ is str:
        return value
    if type_ is int:
        return _IntRange().convert(value)
    if isinstance(type_, _Choice | _IntRange | _Path):
        return type_.convert(value)
    raise _Unsupported(f"type {type_!r}")


class _Param:
    """One `click.option` or `click.argument` declaration, as written."""

    def __init__(self, decls: tuple[str, ...], attrs: dict[str, Any], argument: bool) -> None:
        self.argument = argument
        self.attrs = attrs
        self.opts: list[str] = []
        self.secondary: list[str] = []  # the `--no-x` of `--x/--no-x`
        self.name = ""
        for d in decls:
            if argument or d.isidentifier():
                self.name = d
            elif "/" in d:
                on, off = d.split("/", 1)
                self.opts.append(on.strip())
                self.secondary.append(off.strip())
            else:
                self.opts.append(d)
        if not self.name:
            longest = max(self.opts, key=lambda o: (o.startswith("--"), len(o)))
            self.name = longest.lstrip("-").replace("-", "_").lower()
        self.multiple = bool(attrs.get("multiple"))
        self.flag = bool(attrs.get("is_flag")) or bool(self.secondary)
        self.nargs = attrs.get("nargs", 1)
        # counts, envvars, prompts...: click's business. An option with a callback is too
        # when it is given; absent, its callback would see the default (and do nothing).
        self.unsupported = bool(set(attrs) - _PLAIN_ATTRS)
        self.callback = "callback" in attrs
        self.exposed = attrs.get("expose_value", True)

    def default(self) -> Any:
        if "default" in self.attrs:
            d = self.attrs["default"]
            return tuple(d) if self.multiple and d is not None else d
        if (self.argument and self.nargs == -1) or self.multiple:
            return ()
        if self.flag:
            return None if self.secondary else False
        return None


_PLAIN_ATTRS = frozenset(
    {"type", "default", "help", "multiple", "is_flag", "metavar", "nargs", "show_default"}
    | {"callback", "expose_value", "is_eager"}
)


class _Command:
    """What the recorder keeps of a command: its function and its parameters."""

    def __init__(self, fn: Callable[..., Any], name: str | None) -> None:
        self.fn = fn
        self.name = name or fn.__name__.replace("_", "-")
        self.params: list[_Param] = list(reversed(getattr(fn, "__lean_params__", [])))


class _Group:
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.commands: dict[str, _Command] = {}

    def command(self, name: str | None = None, **_: Any) -> Callable[[Callable[..., Any]], Any]:
        def deco(fn: Callable[..., Any]) -> Any:
            cmd = _Command(fn, name)
            self.commands[cmd.name] = cmd
            return fn

        return deco

    def group(self, name: str | None = None, **_: Any) -> Callable[[Callable[..., Any]], Any]:
        def deco(fn: Callable[..., Any]) -> Any:
            return _Group(fn)

        return deco

    def __call__(self, *_: Any, **__: Any) -> Any:
        raise _Unsupported("the click group itself")


class _Recorder:
    """The parts of click that `ailint.doors.cli` and `ailint.doors.ux` use at import time
    and in `check`: decorators record, `echo` writes."""

    Choice = _Choice
    IntRange = _IntRange
    Path = _Path
    Context = object
    Parameter = object

    @staticmethod
    def option(*decls: str, **attrs: Any) -> Callable[[Any], Any]:
        def deco(fn: Any) -> Any:
            fn.__dict__.setdefault("__lean_params__", []).append(_Param(decls, attrs, argument=False))
            return fn

        return deco

    @staticmethod
    def argument(*decls: str, **attrs: Any) -> Callable[[Any], Any]:
        def deco(fn: Any) -> Any:
            fn.__dict__.setdefault("__lean_params__", []).append(_Param(decls, attrs, argument=True))
            return fn

        return deco

    @staticmethod
    def group(*_: Any, **__: Any) -> Callable[[Any], Any]:
        return _Group

    @staticmethod
    def version_option(*_: Any, **__: Any) -> Callable[[Any], Any]:
        return lambda fn: fn

    @staticmethod
    def echo(message: Any = None, file: Any = None, nl: bool = True, err: bool = False, color: Any = None) -> None:
        stream = file or (sys.stderr if err else sys.stdout)
        text = "" if message is None else str(message)
        if nl:
            text += "\n"
        if color is not True and not _isatty(stream):
            text = re.sub(_ANSI, "", text)
        stream.write(text)
        stream.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:
        return False


def parse(params: list[_Param], argv: list[str]) -> dict[str, Any]:
    """argv (after the command name) as keyword arguments, or _Unsupported."""
    if any(p.unsupported for p in params):
        raise _Unsupported("an option click must handle")
    by_opt: dict[str, tuple[_Param, bool]] = {}
    for p in params:
        for o in p.opts:
            by_opt[o] = (p, True)
        for o in p.secondary:
            by_opt[o] = (p, False)
    args = [p for p in params if p.argument]
    if len(args) != 1 or args[0].nargs != -1:
        raise _Unsupported("arguments")
    values: dict[str, Any] = {p.name: p.default() for p in params if p.exposed}
    positional: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a == "-" or not a.startswith("-"):
            positional.append(a)
            continue
        if a == "--" or a.startswith("---"):
            raise _Unsupported(a)
        name, eq, inline = a.partition("=") if a.startswith("--") else (a, "", "")
        hit = by_opt.get(name)
        if hit is None:
            raise _Unsupported(a)  # unknown, combined short flags, -ovalue, --help...
        p, on = hit
        if p.callback or not p.exposed:
            raise _Unsupported(a)
        if p.flag:
            if eq:
                raise _Unsupported(a)
            values[p.name] = on
            continue
        if p.nargs != 1:
            raise _Unsupported(a)
        if eq:
            raw = inline
        else:
            if i >= len(argv):
                raise _Unsupported(a)  # a missing value: click's message
            raw = argv[i]
            i += 1
            if raw.startswith("-") and raw != "-" and raw in by_opt:
                raise _Unsupported(raw)
        v = _convert(p.attrs.get("type"), raw)
        if p.multiple:
            values[p.name] = (*values[p.name], v)
        else:
            values[p.name] = v
    values[args[0].name] = tuple(positional)
    return values


def _fall_back() -> None:
    """Forget the modules imported against the recorder: click imports them afresh."""
    for name in ("click", "ailint.doors.cli", "ailint.doors.ux"):
        sys.modules.pop(name, None)
    pkg = sys.modules.get("ailint.doors")
    for attr in ("cli", "ux"):
        if pkg is not None and attr in pkg.__dict__:
            delattr(pkg, attr)


class _Deferred(types.ModuleType):
    """Stands in `sys.modules` for a module not loaded yet: the first read of a name it
    does not hold loads the real module, which then takes its place (and lends this one
    its names, for whoever kept a reference)."""

    def __getattr__(self, name: str) -> Any:
        real_name = self.__name__
        accelerator = _accelerators.get(real_name)
        if accelerator is not None and not name.startswith("_"):
            # its C module's public names are the module's (`defer_import`): taken on the
            # first read of one, not at start, so a run that reads none loads neither
            try:
                fast = __import__(accelerator)
            except ImportError:
                fast = None
            if fast is not None and name in fast.__dict__:
                self.__dict__.update({k: v for k, v in fast.__dict__.items() if not k.startswith("_")})
                return fast.__dict__[name]
        if sys.modules.get(real_name) is self:
            del sys.modules[real_name]
        import importlib

        real = importlib.import_module(real_name)
        self.__dict__.update(real.__dict__)
        return getattr(real, name)


class _DeferredInit(types.ModuleType):
    """A package in `sys.modules` whose `__init__` has not run: its submodules import as
    usual (its `__path__` is set), and the first read of any other name runs the package's
    `__init__` in this same module object, which is an ordinary module from then on.

    The `__init__` runs once, under a lock: another thread that reads a name meanwhile waits
    for it (a webhook's request threads), and a read from inside it finds the module as
    partly made as an import leaves it."""

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("__"):
            sub = f"{self.__name__}.{name}"
            try:
                __import__(sub)  # (binds the submodule here, as any import of it does)
            except ModuleNotFoundError as exc:
                if exc.name != sub:
                    raise
            else:
                return sys.modules[sub]
        with _INIT_LOCK:
            if type(self) is _DeferredInit:
                if self.__name__ in _initializing:
                    raise AttributeError(f"partially initialized module {self.__name__!r} has no attribute {name!r}")
                _initializing.add(self.__name__)
                try:
                    loader: Any = getattr(self.__spec__, "loader", None)
                    loader.exec_module(self)
                finally:  # an ordinary module from now on, even if the `__init__` failed
                    _initializing.discard(self.__name__)
                    setattr(self, "__class__", types.ModuleType)  # noqa: B010
        return getattr(self, name)


_INIT_LOCK = _thread.RLock()
_initializing: set[str] = set()


def defer_import(name: str, accelerator: str | None = None) -> None:
    """Make `import name` give a stand-in that loads the module on its first attribute read.

    `dataclasses` imports `inspect` (with `ast`, `dis` and `tokenize`: a tenth of a cached
    one-file run) only to build a docstring for a class that has none; every ailint dataclass has
    one, so a run that never reads `inspect` never loads it, and a module that reads it gets
    the real one. (`importlib.util.LazyLoader` cannot do this on Python 3.11: an `import`
    statement reads the module's `__spec__`, which loads it.) `tests/test_lean.py` checks
    that a one-file run leaves it unloaded, and that a read loads it whole.

    `accelerator`: the C module whose public names the module re-exports as they are (it
    defines its own only for a Python without it). The first read of one of them takes them
    all from the C module, so reading them loads nothing more (and a run that reads none,
    such as a cached rerun, imports neither); any other name (`__all__`, `__file__`,
    `__doc__`), or any name when the C module is missing, loads the real module, as above.
    """
    if name in sys.modules:
        return
    from ailint.core.pkgdata import find_spec

    spec = find_spec(name)
    if spec is None:
        return
    stand_in = _Deferred(name)
    stand_in.__spec__ = spec  # what an `import` statement reads: not a load
    if accelerator is not None:
        _accelerators[name] = accelerator
        del stand_in.__doc__  # (the real module's, read from it)
    sys.modules[name] = stand_in


_accelerators: dict[str, str] = {}  # a deferred module -> the C module whose public names it re-exports


def defer_init(name: str) -> None:
    """Make `import name` give the package `name` without running its `__init__` (see
    `_DeferredInit`): for a package whose `__init__` imports much that a run does not read.

    PyYAML's `__init__` imports its loaders and dumpers and builds their classes; a check
    reads its C parser, nodes, resolver and constructor, each from its own submodule
    (`ailint.core.yamldata`). The parser's C module reads the error classes of nine
    submodules, which import as they would anyway; `yaml.loader`, `yaml.dumper`,
    `yaml.cyaml` and the `__init__` itself are not run until something reads a name of the
    package (`yaml.safe_load`, `yaml.CSafeLoader`): 0.6% of a one-file run's instructions
    (cachegrind: 273.2 M, from 274.9 M). PyYAML's `__init__` binds no name of a submodule to
    anything else, so a submodule read first is what `yaml.<name>` is after the `__init__`
    too (`tests/test_lean.py` compares the two).
    """
    if name in sys.modules:
        return
    from importlib._bootstrap import module_from_spec  # type: ignore[import-not-found]  # (`importlib.util`'s)

    from ailint.core.pkgdata import find_spec

    spec = find_spec(name)
    if spec is None or spec.submodule_search_locations is None or spec.loader is None:
        return
    module = module_from_spec(spec)  # (what an import makes before running the `__init__`)
    module.__class__ = _DeferredInit
    sys.modules[name] = module


# Imported at a run's start by modules that read them only on paths a check rarely takes:
# `inspect` by `dataclasses` (a docstring for a class without one: with `ast`, `dis` and
# `tokenize`, a tenth of a one-file run) and `base64` by PyYAML (`!!binary` scalars, which
# ailint never constructs). PyYAML imports `datetime` for timestamps, and on Python 3.11
# `datetime.py` defines every class in Python before it replaces them with `_datetime`'s
# (0.9% of a one-file run's instructions, 1.3% of its time); its stand-in holds `_datetime`'s
# names, which are the module's.
_DEFERRED: tuple[tuple[str, str | None], ...] = (("inspect", None), ("base64", None), ("datetime", "_datetime"))
_DEFERRED_INIT = ("yaml",)


def prepare(one_run: bool) -> None:
    """Set up a process that starts ailint, before any of ailint's modules is imported: the
    deferred imports, and the start-up code table (`ailint.core.codecache`: before any
    dataclass or pattern of a run is created, a third of a one-file run). `one_run`: the
    process does one run and ends with `fast_exit` (`ailint check`, the GitHub Action).

    Such a process runs without the cyclic collector, which mostly walks the many acyclic
    objects a run keeps. Off, a cold run of the corpus takes 1.05 s instead of 1.09 s and an
    edit rerun 0.28 s instead of 0.30 s, with the same peak memory on the corpus and the
    100 MB tree: the cycles a run drops (pod templates and their containers of merged
    objects, about 20 MiB on the corpus) wait for a full collection, which a growing heap
    puts off past the peak anyway. Off before the run's first import: it would otherwise walk
    the classes and functions 150 modules create at import, none of them garbage (0.8 ms of
    a one-file run). In-process callers keep it on (`cli._check` only raises its thresholds)."""
    if one_run:
        import gc

        gc.disable()
    for name, accelerator in _DEFERRED:
        defer_import(name, accelerator)
    for name in _DEFERRED_INIT:
        defer_init(name)
    from ailint.core import codecache

    codecache.install()


def fast_exit(code: Any) -> None:
    """End the process without tearing the heap down: a run ends holding every parsed
    object, which the interpreter's orderly shutdown would free one by one (about 35 ms of a
    0.3 s one-file run, more on a large tree) for nothing. Output is flushed and atexit
    handlers run (worker pools, temp files) before `os._exit`."""
    import atexit

    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message") prints the message, exit 1
        print(code, file=sys.stderr)
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # `ailint check . | head`: the reader left; say nothing
        reader_left(sys.stdout)
        code = code or 1
    except Exception:
        code = code or 1
    os._exit(code)


def reader_left(stream: Any) -> None:
    """The reader of `stream` is gone: what is still buffered or written goes nowhere, and
    no later flush raises (as a `| head` reader expects)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stream.fileno())
    os.close(devnull)


def main() -> None:
    argv = sys.argv[1:]
    prepare(one_run=argv[:1] == ["check"])
    if (
        argv[:1] == ["check"]
        and not os.environ.get("AILINT_NO_LEAN")
        and not any(a.startswith("_") for a in os.environ if a.startswith("_AILINT_COMPLETE"))
    ):
        lean_check(argv[1:])  # returns only when click must handle the command line
    from ailint.doors import cli

    cli.main()


def lean_check(argv: list[str]) -> None:
    if "click" in sys.modules:
        return  # the real click is loaded already (an embedding program): use it
    sys.modules["click"] = _Recorder  # type: ignore[assignment]
    try:
        from ailint.doors import cli

        group = cli.cli
        if not isinstance(group, _Group) or "check" not in group.commands:
            raise _Unsupported("no check command")
        cmd = group.commands["check"]
        kwargs = parse(cmd.params, argv)
    except _Unsupported:
        _fall_back()
        return
    except BaseException:
        _fall_back()
        raise
    cli.ends_with_exit()
    try:
        cmd.fn(**kwargs)
        code: Any = 0
    except SystemExit as stop:
        code = stop.code
    fast_exit(code)
