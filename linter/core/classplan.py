"""What `@dataclass` does to a class, kept as a plan and done again without `dataclasses`.

Creating a dataclass is not cheap: `dataclasses` reads every field (its default, whether its
annotation names a `ClassVar`), writes the source text of each method, runs it, and for
`slots=True` builds the class a second time. The code table (`ailint.core.codecache`)
already keeps the methods' compiled code; what was left was the work around it: 10 ms of a
one-file run on a quiet moment (68 classes, 150 us each), a tenth of the run. Made from
their plans, the same classes take about 70% of that (17 to 12 ms on a slow moment): what
remains is unmarshalling the methods' code, making the functions and, for `slots=True`,
the second class.

`record` writes down what `dataclasses` did to a class: its parameters object, and each
attribute it set, in order, a generated method as its code with what its closure, defaults,
annotations and dict hold, each named by where a later run finds it (the class, a field's
default or factory, a name of `dataclasses` or of the builtins, a constant). `replay` does
the same to the class in a later run: the fields are made as `dataclasses._get_field` makes
plain ones, the methods are functions made from their code (no text, no `exec`), and a
`slots=True` class is rebuilt by `dataclasses` itself.

Why a replayed class is the class `dataclasses` makes:

- a plan is kept only once it was checked: `record` makes a copy of the class as it was
  defined, replays the plan on it and describes both results; the plan is kept only when the
  two descriptions are equal (each attribute `dataclasses` set, in order, and each field
  default it replaced or removed; every slot of every field; the parameters object; each
  method's code, closure, defaults, annotations, names and dict; the class rebuilt with
  `__slots__`). A Python whose `dataclasses` works otherwise gets no plan and makes its
  classes as before;
- a plan is looked up by the class's module and qualified name and the module's source file
  with its size and mtime (what CPython checks a `.pyc` against; whether `typing` was
  loaded, which decides whether `dataclasses` looks for `ClassVar`, is the code table's
  to check); it is replayed only when the class still has the same names in its body, the
  same annotations, the same kind of default for each (none, a value, a `field()`), the same
  bases handing down the same fields, the same `__post_init__` and docstring presence and
  the same decorator arguments;
- only plain classes are planned: string annotations (`from __future__ import annotations`),
  no `ClassVar`, `InitVar` or `KW_ONLY`, no field metadata, the metaclass `type`, no base with
  `__init_subclass__` and no descriptor with `__set_name__` in the body but a `property`, a
  `functools.cached_property` or a `field()` (a copy of the class runs those again, and these
  only take their name). Anything else is made by `dataclasses`, every time.
"""

from __future__ import annotations

import builtins
import sys
from types import CellType, FunctionType, MemberDescriptorType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SKIPPED_KEYS = ("__dict__", "__weakref__")  # made by `type()` itself: a copy has its own
# (the arguments `dataclass()` hands `_process_class` after the class, in order)
_KW_ONLY, _FROZEN, _WEAKREF_SLOT = 7, 5, 9


class Unplannable(Exception):
    """The class, or what `dataclasses` did to it, is not one a plan can say."""


def plannable(cls: type) -> bool:
    """Whether a copy of `cls` can be made to check a plan on (see the module's docstring)."""
    if type(cls) is not type or "<locals>" in cls.__qualname__:
        return False
    if any("__init_subclass__" in b.__dict__ for b in cls.__mro__[1:-1]):
        return False
    from functools import cached_property

    field = sys.modules["dataclasses"].Field  # its `__set_name__` hands the call to its default's
    return all(
        not hasattr(type(v), "__set_name__")
        or type(v) is property  # (its `__set_name__` names it in its error messages)
        or type(v) is cached_property
        or (type(v) is field and not hasattr(type(v.default), "__set_name__"))
        for v in cls.__dict__.values()
    )


def fingerprint(cls: type, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """What `dataclasses` reads of `cls` besides its module's source, taken before it changes
    the class (see the module's docstring). None when an annotation is not a string."""
    got = _read(cls, params, sys.modules["dataclasses"])
    return None if got is None else got[0]


def _read(cls: type, params: tuple[Any, ...], dc: Any) -> tuple[tuple[Any, ...], list[Any]] | None:
    """(the fingerprint of `cls`, the value each of its own annotated names has on the class
    now: `dc.MISSING` for none); None when an annotation is not a string. A replay reads the
    defaults once, here, not again to make the fields."""
    missing = dc.MISSING
    field_type = dc.Field
    body = cls.__dict__
    annotations = body.get("__annotations__", {})
    kinds = []
    defaults = []
    for name, annotation in annotations.items():
        if annotation.__class__ is not str:
            return None
        default = getattr(cls, name, missing)
        defaults.append(default)
        if isinstance(default, field_type):
            kinds.append("F")
        elif default is missing or isinstance(default, MemberDescriptorType):
            kinds.append("M")
        else:
            kinds.append("V")
    mro = cls.__mro__
    handed_down: list[Any] = []
    for b in mro[-1:0:-1]:
        base_fields = b.__dict__.get("__dataclass_fields__")
        if base_fields is None:
            continue
        handed_down.append(getattr(b.__dict__.get("__dataclass_params__"), "frozen", None))
        plain = dc._FIELD
        for f in base_fields.values():
            handed_down.append(
                (
                    f.name,
                    f.type if f.type.__class__ is str else None,
                    f.default is missing,
                    f.default_factory is missing,
                    f.init,
                    f.repr,
                    f.hash,
                    f.compare,
                    f.kw_only,
                    f._field_type is plain,
                )
            )
    names = [k for k in body if k not in _SKIPPED_KEYS]
    return (
        tuple(names),
        tuple(annotations.items()),
        "".join(kinds),
        tuple([(b.__module__, b.__qualname__) for b in mro[1:]]),
        tuple(handed_down),
        hasattr(cls, "__post_init__"),
        bool(body.get("__doc__")),
        params,
    ), defaults


class _Describer:
    """Names each value `dataclasses` put on a class by where a replay finds it again
    (`_Resolver` is its inverse)."""

    def __init__(self, cls: type, fields: dict[str, Any], names: tuple[dict[int, str], dict[int, str]]) -> None:
        dc = sys.modules["dataclasses"]
        self.cls = cls
        self.fields = fields
        self.module_globals = sys.modules[cls.__module__].__dict__
        self.dc_globals = dc.__dict__
        self.reprlib_globals = _reprlib_globals()
        self.dc_names, self.builtin_names = names
        self.functions: list[Any] = []
        self.function_index: dict[int, int] = {}
        self.keep: list[Any] = []  # what was described stays alive: no id is reused meanwhile

    def value(self, v: Any) -> tuple[Any, ...]:
        if v is self.cls:
            return ("cls",)
        t = v.__class__
        if v is None or t is bool or t is int or t is float or t is str or t is bytes:
            return ("c", v)
        if t is tuple:
            return ("t", tuple(self.value(x) for x in v))
        at = self.function_index.get(id(v))
        if at is not None:
            return ("fn", at)
        name = self.dc_names.get(id(v))
        if name is not None:
            return ("d", name)
        name = self.builtin_names.get(id(v))
        if name is not None:
            return ("b", name)
        for field_name, f in self.fields.items():
            if v is f.default:
                return ("fd", field_name)
            if v is f.default_factory:
                return ("ff", field_name)
        if t is FunctionType:
            return ("fn", self.function(v))
        if t is set and not v:
            return ("set",)
        raise Unplannable(f"a value of type {t.__name__}")

    def function(self, fn: Any) -> int:
        """The index of `fn` in the plan's function table, where it is described once (a
        function is entered before what it refers to: a wrapper before the method it wraps)."""
        at = len(self.functions)
        self.function_index[id(fn)] = at
        self.keep.append(fn)
        self.functions.append(None)
        if fn.__globals__ is self.module_globals:
            where = "m"
        elif fn.__globals__ is self.dc_globals:
            where = "d"
        elif fn.__globals__ is self.reprlib_globals:
            where = "r"  # `__repr__`'s wrapper on Python 3.13 (`reprlib.recursive_repr`)
        else:
            raise Unplannable("a function of another module")
        try:
            closure = None if fn.__closure__ is None else tuple(self.value(c.cell_contents) for c in fn.__closure__)
        except ValueError:  # an empty cell
            raise Unplannable("an empty closure cell") from None
        self.functions[at] = (
            fn.__code__,
            where,
            fn.__name__,
            fn.__qualname__,
            fn.__module__,
            self.value(fn.__doc__),
            None if fn.__defaults__ is None else self.value(fn.__defaults__),
            None if fn.__kwdefaults__ is None else tuple((k, self.value(v)) for k, v in fn.__kwdefaults__.items()),
            tuple((k, self.value(v)) for k, v in fn.__annotations__.items()),
            closure,
            tuple((k, self.value(v)) for k, v in fn.__dict__.items()),
        )
        return at

    def field_state(self, f: Any) -> tuple[Any, ...]:
        """Every slot of a field, for the check of a plan (a replay takes defaults and
        factories from the class: of those, the kind)."""
        out = []
        for slot in f.__class__.__slots__:
            v = getattr(f, slot)
            if slot in ("default", "default_factory"):
                name = self.dc_names.get(id(v)) or self.builtin_names.get(id(v))
                out.append((slot, ("named", name) if name else ("type", v.__class__.__qualname__)))
            elif slot == "metadata":
                if v is not self.dc_globals.get("_EMPTY_METADATA"):
                    raise Unplannable("field metadata")
                out.append((slot, ("d", "_EMPTY_METADATA")))
            else:
                out.append((slot, self.value(v)))
        return tuple(out)


def _reprlib_globals(load: bool = False) -> dict[str, Any] | None:
    """`reprlib`'s globals: Python 3.13's `dataclasses` wraps `__repr__` with
    `reprlib.recursive_repr`, whose wrapper runs in them (3.11's and 3.12's wrapper is
    `dataclasses`' own). None when `reprlib` is not loaded (and `load` is false)."""
    module = sys.modules.get("reprlib")
    if module is None and load:
        import reprlib as module
    return None if module is None else module.__dict__


def global_names() -> tuple[dict[int, str], dict[int, str]]:
    """By id, the name of each value of `dataclasses`' globals and of the builtins (the first
    name, where one value has two): how a plan names what it finds of theirs on a class."""
    dc = sys.modules["dataclasses"]
    return (
        {id(v): k for k, v in reversed(dc.__dict__.items())},
        {id(v): k for k, v in reversed(builtins.__dict__.items())},
    )


def describe(
    cls: type,
    before: dict[str, Any],
    result: type,
    fingerprint: tuple[Any, ...],
    names: tuple[dict[int, str], dict[int, str]] | None = None,
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(the plan, what else a check compares) of what `dataclasses` did to `cls`, whose body
    was `before` and which it made into `result` (`cls` itself, or its copy with
    `__slots__`). Unplannable when the plan cannot say it."""
    dc = sys.modules["dataclasses"]
    if type(cls) is not type:
        raise Unplannable("a metaclass")
    body = cls.__dict__
    fields = body["__dataclass_fields__"]
    own = before.get("__annotations__", {})
    if any(f._field_type is not dc._FIELD for f in fields.values()) or any(n not in fields for n in own):
        raise Unplannable("a ClassVar, InitVar or KW_ONLY")
    d = _Describer(cls, fields, names or global_names())
    params_object = body["__dataclass_params__"]
    params_state = tuple((s, d.value(getattr(params_object, s))) for s in params_object.__class__.__slots__)
    changes = []
    for key, value in body.items():
        if key in ("__dataclass_params__", "__dataclass_fields__") or key in own:
            continue  # what a replay makes itself
        if key not in before or before[key] is not value:
            changes.append((key, d.value(value)))
    if any(k not in body and k not in own for k in before):
        raise Unplannable("an attribute removed")
    plan = (fingerprint, params_state, tuple(d.functions), tuple(changes), result is not cls)
    check = (
        tuple((name, d.field_state(f)) for name, f in fields.items()),
        tuple((name, d.value(body[name]) if name in body else ("absent",)) for name in own),
        tuple(k for k in body if k not in _SKIPPED_KEYS),
        tuple(k for k in result.__dict__ if k not in _SKIPPED_KEYS),
        result.__dict__.get("__slots__"),
        result.__qualname__,
        type(result) is type(cls),
    )
    return plan, check


def replay(cls: type, params: tuple[Any, ...], plan: tuple[Any, ...]) -> type | None:
    """`cls` made into the dataclass `plan` says `dataclasses` made of it, or None, with
    `cls` unchanged, when the plan is not for this class as it is now."""
    dc = sys.modules["dataclasses"]
    try:
        expected, params_state, functions, changes, slots = plan
        read = _read(cls, params, dc)
        if read is None or read[0] != expected:
            return None
        body = cls.__dict__
        # the fields, as `_process_class` and `_get_field` make plain ones: nothing of `cls` changes yet
        fields: dict[str, Any] = {}
        for b in cls.__mro__[-1:0:-1]:
            base_fields = getattr(b, "__dataclass_fields__", None)
            if base_fields is not None:
                for f in base_fields.values():
                    fields[f.name] = f
        own = []
        missing, field_type, plain, kw_only = dc.MISSING, dc.Field, dc._FIELD, params[_KW_ONLY]
        for (name, annotation), default in zip(body.get("__annotations__", {}).items(), read[1], strict=True):
            if isinstance(default, field_type):
                f = default
            else:
                if isinstance(default, MemberDescriptorType):
                    default = missing
                # what `field(default=default)` makes (its one check: a default and a factory)
                f = field_type(default, missing, True, True, None, True, None, missing)
            if f.default.__class__.__hash__ is None:
                return None  # a mutable default: `dataclasses` says what is wrong with it
            own.append((name, annotation, f))
        for name, annotation, f in own:
            f.name = name
            f.type = annotation
            f._field_type = plain
            if f.kw_only is missing:
                f.kw_only = kw_only
            fields[name] = f
        resolve = _Resolver(cls, fields, dc)
        params_object = object.__new__(dc._DataclassParams)
        for slot, value in params_state:
            setattr(params_object, slot, value[1] if value[0] == "c" else resolve.value(value))
        resolve.build(functions)
        values = [(key, desc[1] if desc[0] == "c" else resolve.value(desc)) for key, desc in changes]
    except (TypeError, ValueError, AttributeError, KeyError, IndexError):
        return None  # not a plan of this Python's `dataclasses`
    # what `_process_class` does to the class, in its order
    cls.__dataclass_params__ = params_object  # type: ignore[attr-defined]
    for name, _, f in own:
        if isinstance(getattr(cls, name, None), dc.Field):
            if f.default is dc.MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    cls.__dataclass_fields__ = fields  # type: ignore[attr-defined]
    for key, value in values:
        setattr(cls, key, value)
    if slots:
        cls = dc._add_slots(cls, params[_FROZEN], params[_WEAKREF_SLOT])
    sys.modules["abc"].update_abstractmethods(cls)
    return cls


class _Resolver:
    """The values a plan names (`_Describer.value`), found again for a class being made."""

    def __init__(self, cls: type, fields: dict[str, Any], dc: Any) -> None:
        self.cls = cls
        self.fields = fields
        self.dc = dc
        self.functions: list[Any] = []

    def value(self, desc: tuple[Any, ...]) -> Any:
        kind = desc[0]
        if kind == "c":
            return desc[1]
        if kind == "t":
            return tuple(self.value(x) for x in desc[1])
        if kind == "fn":
            return self.functions[desc[1]]
        if kind == "d":
            return self.dc.__dict__[desc[1]]
        if kind == "b":
            return builtins.__dict__[desc[1]]
        if kind == "fd":
            return self.fields[desc[1]].default
        if kind == "ff":
            return self.fields[desc[1]].default_factory
        if kind == "cls":
            return self.cls
        if kind == "set":
            return set()
        raise ValueError(f"not a value of a plan: {kind!r}")

    def build(self, table: tuple[tuple[Any, ...], ...]) -> None:
        """The plan's functions: each made first with empty closure cells (a wrapper closes
        over the method made after it), then filled in."""
        where = {"m": sys.modules[self.cls.__module__].__dict__, "d": self.dc.__dict__}
        functions = self.functions
        value = self.value
        made = []
        for entry in table:
            closure = entry[9]
            cells = None if closure is None else tuple([CellType() for _ in closure])
            if entry[1] == "r" and "r" not in where:
                where["r"] = _reprlib_globals(load=True)
            fn = FunctionType(entry[0], where[entry[1]], entry[2], None, cells)
            functions.append(fn)
            made.append(cells)
        for fn, cells, entry in zip(functions, made, table, strict=True):
            _, _, _, qualname, module, doc, defaults, kwdefaults, annotations, closure, extra = entry
            if cells is not None:
                for cell, desc in zip(cells, closure, strict=True):
                    cell.cell_contents = value(desc)
            fn.__qualname__ = qualname
            fn.__module__ = module
            # (a constant, most of a plan's values, is read here: a call per value was a
            # fifth of a replay)
            fn.__doc__ = doc[1] if doc[0] == "c" else value(doc)
            if defaults is not None:
                fn.__defaults__ = value(defaults)
            if kwdefaults is not None:
                fn.__kwdefaults__ = {k: value(v) for k, v in kwdefaults}
            fn.__annotations__ = {k: v[1] if v[0] == "c" else value(v) for k, v in annotations}
            for k, v in extra:
                setattr(fn, k, value(v))


def record(
    cls: type, before: dict[str, Any], result: type, params: tuple[Any, ...], fingerprint: tuple[Any, ...]
) -> tuple[Any, ...] | None:
    """The plan of what `dataclasses` did to `cls` (its body was `before`, its `fingerprint`
    taken then; it made `result`), once replaying the plan on a copy of the class as it was
    defined made the same class; None when it did not, or a plan cannot say it."""
    try:
        names = global_names()  # (once for both descriptions: 300 values each time)
        plan, check = describe(cls, before, result, fingerprint, names)
        copy = type(cls.__name__, cls.__bases__, {k: v for k, v in before.items() if k not in _SKIPPED_KEYS})
        copy.__qualname__ = cls.__qualname__
        copy_before = dict(copy.__dict__)
        made = replay(copy, params, plan)
        if made is None:
            return None
        again = describe(copy, copy_before, made, fingerprint, names)
    except Exception:  # Unplannable, or a `dataclasses` that works otherwise
        return None
    return plan if (plan, check) == again else None
