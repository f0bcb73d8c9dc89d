"""Dataclasses made from their plans (`ailint.core.classplan`) are the classes `dataclasses`
makes: the same attributes in the same order, the same fields, methods of the same code,
closures, defaults and names, and the same behaviour; a plan that does not fit the class
changes nothing.

The classes are defined twice from one source, each time in a module of its own: once made
by `dataclasses` while their plans are recorded, once made from those plans; then each
ailint dataclass, in a fresh interpreter per way (`dataclasses` alone, recording, replaying).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys
import types
from pathlib import Path

import pytest
from ailint.core import classplan
from conftest import ROOT

_SOURCE = '''
from __future__ import annotations
import functools
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Span:
    """A span."""
    line: int
    column: int = 1
    tags: tuple[str, ...] = ()


@dataclass
class Box:
    """A box."""
    name: str
    items: list[int] = field(default_factory=list)
    note: str | None = field(default=None, repr=False, compare=False)
    seen: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "seen", len(self.items))


@dataclass(order=True, kw_only=True)
class Ranked:
    """Ranked."""
    rank: int
    label: str = "x"


@dataclass(eq=False)
class Plain:
    """No equality: identity hash."""
    value: int = 3

    @property
    def double(self) -> int:
        return self.value * 2

    @functools.cached_property
    def triple(self) -> int:
        return self.value * 3


@dataclass(frozen=True)
class Base:
    """A base."""
    a: int
    b: str = "b"


@dataclass(frozen=True)
class Derived(Base):
    """Derived: inherits a and b, overrides b's default."""
    c: float = 1.5
    b: str = "B"


@dataclass(unsafe_hash=True)
class Hashed:
    """unsafe_hash."""
    key: str
    extra: int = field(default=0, hash=False)


@dataclass(slots=True, weakref_slot=True)
class Weak:
    """A weakref slot."""
    x: int = 0


@dataclass
class Undocumented:
    x: int
    y: int = 2


@dataclass(repr=False)
class OwnRepr:
    """Its own repr."""
    x: int

    def __repr__(self) -> str:
        return f"OwnRepr<{self.x}>"


@dataclass(frozen=True, slots=True, eq=False)
class Identity:
    """Frozen, slots, no eq."""
    obj: object
    path: tuple = ()


@dataclass(match_args=False, init=False)
class NoInit:
    """No __init__, no __match_args__."""
    x: int = 5
'''

_NAMES = (
    "Span",
    "Box",
    "Ranked",
    "Plain",
    "Base",
    "Derived",
    "Hashed",
    "Weak",
    "Undocumented",
    "OwnRepr",
    "Identity",
    "NoInit",
)


def _module(name: str, process_class) -> types.ModuleType:
    """`_SOURCE` run as module `name` with `dataclasses._process_class` as given."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    original = dataclasses._process_class
    dataclasses._process_class = process_class
    try:
        exec(compile(_SOURCE, f"<{name}>", "exec"), module.__dict__)
    finally:
        dataclasses._process_class = original
    return module


def _made_both_ways(tag: str) -> tuple[types.ModuleType, types.ModuleType, dict[str, tuple]]:
    """The classes made by `dataclasses` (plans recorded) and made from the plans."""
    original = dataclasses._process_class
    plans: dict[str, tuple] = {}

    def recording(cls, *params):
        before = dict(cls.__dict__)
        fp = classplan.fingerprint(cls, params)
        made = original(cls, *params)
        plan = classplan.record(cls, before, made, params, fp) if classplan.plannable(cls) else None
        assert plan is not None, cls.__qualname__
        plans[cls.__qualname__] = plan
        return made

    def replaying(cls, *params):
        made = classplan.replay(cls, params, plans[cls.__qualname__])
        assert made is not None, cls.__qualname__
        return made

    # one module name, as a later run has (the bases of a class are named by their module)
    recorded = _module(f"plan_module_{tag}", recording)
    replayed = _module(f"plan_module_{tag}", replaying)
    return recorded, replayed, plans


def _dump(value, cls, seen=None):
    """A class attribute as data: functions by their code and what they hold (this module's
    own reading, not the describer's)."""
    seen = set() if seen is None else seen
    if value is cls:
        return "<the class>"
    if isinstance(value, types.FunctionType):
        if id(value) in seen:
            return "<seen function>"
        seen.add(id(value))
        code = value.__code__
        closure = [_dump(c.cell_contents, cls, seen) for c in value.__closure__ or ()]
        return {
            "code": [
                code.co_code.hex(),
                repr([_ordered(k) for k in code.co_consts if not hasattr(k, "co_code")]),
                code.co_names,
                code.co_varnames,
                code.co_freevars,
                code.co_filename,
                code.co_name,
            ],
            "name": value.__name__,
            "qualname": value.__qualname__,
            "module": value.__module__.split("_")[0],
            "doc": value.__doc__,
            "defaults": repr(value.__defaults__),
            "kwdefaults": repr(value.__kwdefaults__),
            "annotations": repr(value.__annotations__),
            "closure": closure,
            "dict": {k: _dump(v, cls, seen) for k, v in value.__dict__.items()},
            "globals": value.__globals__.get("__name__", "").split("_")[0],
        }
    if isinstance(value, dataclasses.Field):
        return {s: _dump(getattr(value, s), cls, seen) for s in value.__slots__}
    if isinstance(value, dict):
        return {k: _dump(v, cls, seen) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_dump(v, cls, seen) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if type(value).__name__ == "_DataclassParams":
        return {s: getattr(value, s) for s in type(value).__slots__}
    return f"<{type(value).__qualname__}>"


def _ordered(const: object) -> object:
    """A code constant as its repr compares across processes: a frozenset (Python 3.13's
    frozen `__setattr__` holds the field names as one) in sorted order, not in the order a
    process's string hashes give it."""
    return sorted(const, key=repr) if isinstance(const, frozenset) else const


def _structure(cls) -> dict:
    return {
        "keys": [k for k in vars(cls)],
        "values": {
            k: _dump(v, cls) for k, v in vars(cls).items() if k not in ("__dict__", "__weakref__", "__module__")
        },
        "mro": [c.__name__ for c in cls.__mro__],
        "slots": getattr(cls, "__slots__", None),
        "qualname": cls.__qualname__,
    }


def test_a_replayed_class_is_the_class_dataclasses_makes() -> None:
    recorded, replayed, plans = _made_both_ways("same")
    assert set(plans) == set(_NAMES)
    for name in _NAMES:
        a, b = getattr(recorded, name), getattr(replayed, name)
        assert a is not b
        assert _structure(a) == _structure(b), name


def test_replayed_classes_behave_as_made_by_dataclasses() -> None:
    recorded, replayed, _ = _made_both_ways("behave")
    for m in (recorded, replayed):
        sys.modules[m.__name__] = m  # what pickle finds the class by
        span = m.Span(3)
        assert repr(span) == "Span(line=3, column=1, tags=())"
        assert span == m.Span(3, 1, ()) and hash(span) == hash(m.Span(3))
        with pytest.raises(dataclasses.FrozenInstanceError):
            span.line = 4  # type: ignore[misc]
        assert not hasattr(span, "__dict__")
        assert pickle.loads(pickle.dumps(span)) == span  # frozen with slots: __getstate__
        box = m.Box("b", [1, 2])
        assert box.seen == 2 and repr(box) == "Box(name='b', items=[1, 2], seen=2)"
        assert m.Box("b", note="n") == m.Box("b") and m.Box("b").items is not m.Box("b").items
        assert [f.name for f in dataclasses.fields(m.Box)] == ["name", "items", "note", "seen"]
        assert dataclasses.replace(box, name="c").name == "c" and dataclasses.asdict(box)["items"] == [1, 2]
        assert m.Ranked(rank=1) < m.Ranked(rank=2) and sorted([m.Ranked(rank=2), m.Ranked(rank=1)])[0].rank == 1
        with pytest.raises(TypeError):
            m.Ranked(1)  # keyword-only
        plain = m.Plain()
        assert plain != m.Plain() and plain.double == 6 and plain.triple == 9
        derived = m.Derived(1)
        assert (derived.a, derived.b, derived.c) == (1, "B", 1.5)
        assert [f.name for f in dataclasses.fields(m.Derived)] == ["a", "b", "c"]
        assert hash(m.Hashed("k", 1)) == hash(m.Hashed("k", 2))
        import weakref

        assert weakref.ref(m.Weak())  # a weakref slot
        assert m.Undocumented.__doc__ == "Undocumented(x: 'int', y: 'int' = 2)"
        assert repr(m.OwnRepr(1)) == "OwnRepr<1>"
        assert m.Identity(1) != m.Identity(1)
        assert not hasattr(m.NoInit, "__match_args__") and m.NoInit().x == 5
        assert m.Span.__match_args__ == ("line", "column", "tags")


def test_a_plan_that_does_not_fit_changes_nothing() -> None:
    """A plan replayed on a class it was not made for (other names in its body, other
    decorator arguments, not a plan at all) is refused before anything of the class changes."""
    _, _, plans = _made_both_ways("fit")
    params = (True, True, True, False, False, True, True, False, True, False)  # Span's own
    for body in (
        "    line: int\n    column: int = 1\n    tags: tuple[str, ...] = ()\n",  # Span itself
        "    line: int\n    column: int = 2\n    extra: str = ''\n",  # other fields
    ):
        module = types.ModuleType("plan_module_fit")
        sys.modules["plan_module_fit"] = module
        source = f"from __future__ import annotations\nclass Span:\n    'A span.'\n{body}"
        exec(compile(source, "<plan_module_fit>", "exec"), module.__dict__)
        before = dict(vars(module.Span))
        if "extra" in body:
            assert classplan.replay(module.Span, params, plans["Span"]) is None
        other = (True, True, True, True, False, True, True, False, True, False)  # order=True
        assert classplan.replay(module.Span, other, plans["Span"]) is None
        assert classplan.replay(module.Span, params, ("not", "a", "plan")) is None
        assert classplan.replay(module.Span, params, plans["Box"]) is None
        assert dict(vars(module.Span)) == before
        if "extra" not in body:  # and the plan does fit the class it was made for
            made = classplan.replay(module.Span, params, plans["Span"])
            assert made is not None and made(4).column == 1


def test_classes_a_plan_cannot_say_get_none() -> None:
    module = types.ModuleType("plan_unplannable")
    sys.modules["plan_unplannable"] = module
    source = (
        "from __future__ import annotations\n"
        "from dataclasses import InitVar, KW_ONLY, field\n"
        "class WithInitVar:\n    'x'\n    a: int\n    b: InitVar[int] = 0\n"
        "class WithKwOnly:\n    'x'\n    a: int\n    _: KW_ONLY\n    b: int = 0\n"
        "class WithMetadata:\n    'x'\n    a: int = field(default=0, metadata={'k': 1})\n"
        "class Meta(type):\n    pass\n"
        "class WithMeta(metaclass=Meta):\n    'x'\n    a: int = 0\n"
    )
    exec(compile(source, "<plan_unplannable>", "exec"), module.__dict__)
    original = dataclasses._process_class
    params = (True, True, True, False, False, False, True, False, False, False)
    for name in ("WithInitVar", "WithKwOnly", "WithMetadata", "WithMeta"):
        cls = getattr(module, name)
        before = dict(vars(cls))
        fp = classplan.fingerprint(cls, params)
        made = original(cls, *params)
        assert classplan.record(cls, before, made, params, fp) is None, name
    assert not classplan.plannable(module.WithMeta)


_ALL_CLASSES = r"""
import os, sys, json, pkgutil, importlib
if not os.environ.get("PLAIN"):
    from ailint.core import codecache
    codecache.install()
sys.path.insert(0, os.path.join(os.getcwd(), "tests"))
from test_classplan import _structure
import ailint
names = sorted(i.name for i in pkgutil.walk_packages(ailint.__path__, "ailint.") if "__main__" not in i.name)
out = {}
for name in names:
    try:
        module = importlib.import_module(name)
    except ImportError:
        continue
    for attr, value in sorted(vars(module).items()):
        if isinstance(value, type) and "__dataclass_fields__" in vars(value) and value.__module__ == name:
            out[f"{name}.{attr}"] = json.loads(json.dumps(_structure(value), default=repr))
counts = [-1, -1]
if not os.environ.get("PLAIN"):
    counts = [codecache.replayed_here(), codecache.compiled_here("class")]
    codecache.save()
print(json.dumps({"classes": out, "counts": counts}))
"""


def _all_classes(cache: Path, **extra: str) -> dict:
    env = {**os.environ, "AILINT_CACHE_DIR": str(cache), **extra}
    env.pop("AILINT_NO_CACHE", None)
    proc = subprocess.run(
        [sys.executable, "-c", _ALL_CLASSES], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_every_dataclass_of_ailint_is_the_same_made_from_its_plan(tmp_path: Path) -> None:
    """Each dataclass of every ailint module: made by `dataclasses` alone, made while its
    plan is recorded, and made from its plan in the next process are the same class."""
    plain = _all_classes(tmp_path / "c", PLAIN="1")
    first = _all_classes(tmp_path / "c")
    second = _all_classes(tmp_path / "c")
    assert len(plain["classes"]) > 90
    assert plain["classes"] == first["classes"] == second["classes"]
    assert first["counts"][1] > 90, "the first run recorded a plan of each"
    assert second["counts"] == [len(plain["classes"]), 0], "the second made every class from its plan"
