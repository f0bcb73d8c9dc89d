"""Schema validation (`SCH`): core kinds and the AI custom resources, offline.

Core kinds are validated against the strict OpenAPI JSON schemas that `kubernetes-validate`
ships (`kubernetes-json-schema/v<version>-local-strict/_definitions.json`), for the
Kubernetes version of `settings.kube_version` (the newest shipped version not newer than
it). Custom resources are validated against the compact schemas that `schemas/generate.py`
derives from their CRDs (`schemas/crds/`, package data of `ailint.schemas`). A few CRD
CEL rules (`x-kubernetes-validations`) that decide whether a Karpenter or Kueue object is
accepted are re-implemented in Python (`ailint.schema.crd_rules`), and what an object the
fast checker rejects is told is worked out in `ailint.schema.findings`: both are imported only
when an object needs them.

Speed: every schema is loaded and compiled once per process. Each object first goes
through a compiled boolean checker (plain closures, about ten times faster than
jsonschema); only objects it rejects are validated by jsonschema (with a `referencing`
registry holding the definitions), which reports every error with its path. jsonschema and
referencing are imported only here, inside functions, so runs without schema validation
never pay for them.

Objects of kinds with no schema and CustomResourceDefinitions themselves get no finding.
Null values never do: the API server prunes nulls of custom resources and accepts them in
core objects.
"""

from __future__ import annotations

import json
import operator
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from ailint.core import pkgdata
from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, K8sObject, Path, Span
from ailint.domain.patches import kustomize_patches
from ailint.schema.errors import Declined, schema_errors
from ailint.schema.errors import is_type as _is_type
from ailint.schema.lazydefs import LazyDefinitions, load_definitions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The resource.Quantity pattern of the API machinery (and of every controller-gen CRD).
QUANTITY_RE = lazy_re(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

CODES = {
    "unknown-field": "SCH001",
    "wrong-type": "SCH002",
    "enum": "SCH003",
    "required": "SCH004",
    "quantity": "SCH005",
    "api-version": "SCH006",
    "cel": "SCH007",
    "constraint": "SCH008",
}

# Groups whose every version is gone from Kubernetes (still "known": their kinds moved).
_REMOVED_CORE_GROUPS = {"extensions"}

# Custom-resource versions removed upstream, with the kind that replaced the old one.
# Karpenter: v1alpha5 Provisioner/Machine and v1alpha1 AWSNodeTemplate became v1beta1
# NodePool/NodeClaim/EC2NodeClass in v0.32 and were dropped in v0.33; v1beta1 was dropped in
# v1.1 in favour of v1 (https://karpenter.sh/docs/upgrading/v1-migration/).
_RENAMED_KINDS = {
    ("karpenter.sh", "Provisioner"): "NodePool",
    ("karpenter.sh", "Machine"): "NodeClaim",
    ("karpenter.k8s.aws", "AWSNodeTemplate"): "EC2NodeClass",
}

# Versions of a kind that another controller serves, with no schema shipped here: not
# removed, only not validated. Kubeflow's Training Operator (v1) serves `kubeflow.org/v1`
# MPIJob beside the MPI Operator's `v2beta1` (training-operator pkg/apis/kubeflow.org/v1/mpi_types.go).
_SERVED_ELSEWHERE = {("kubeflow.org", "MPIJob"): frozenset({"v1"})}


# ---------------------------------------------------------------------------------------
# Schema stores
# ---------------------------------------------------------------------------------------
@lru_cache(maxsize=16)  # (asked once per object, of the run's one or two versions)
def _parse_version(v: str) -> tuple[int, int] | None:
    m = _VERSION.match(str(v).strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


_VERSION = lazy_re(r"^v?(\d+)\.(\d+)")


def _kv_schema_root() -> str | None:
    """The `kubernetes-json-schema` folder of the installed kubernetes-validate (not imported)."""
    spec = pkgdata.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        root = os.path.join(loc, "kubernetes-json-schema")
        if os.path.isdir(root):
            return root
    return None


def _shipped_versions(root: str) -> list[tuple[int, int]]:
    out = set()
    for name in os.listdir(root):
        m = re.match(r"^v(\d+)\.(\d+)\.\d+-local-strict$", name)
        if m:
            out.add((int(m.group(1)), int(m.group(2))))
    return sorted(out)


@dataclass
class _CoreStore:
    """The core definitions of one Kubernetes version, indexed by group/version/kind."""

    version: tuple[int, int]
    requested: tuple[int, int]
    defs: dict[str, Any]
    gvk: dict[tuple[str, str], str]  # (apiVersion, kind) -> definition name
    kinds: dict[str, list[str]]  # kind -> apiVersions serving it
    groups: set[str]
    root: str
    shipped: list[tuple[int, int]]
    checkers: dict[str, Callable[[Any], bool]] = field(default_factory=dict)
    validators: dict[str, Any] = field(default_factory=dict)
    _latest_gvk: set[tuple[str, str]] | None = None
    _compiler: Any = None
    _other: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    _names: dict[int, str] | None = None

    def defs_of(self, version: tuple[int, int]) -> dict[str, Any]:
        """The definitions of another shipped version (loaded once, only when needed)."""
        if version == self.version:
            return self.defs
        d = self._other.get(version)
        if d is None:
            d = self._other[version] = load_definitions(
                os.path.join(self.root, f"v{version[0]}.{version[1]}.0-local-strict", "_definitions.json")
            )
        return d

    def future_gvks(self) -> set[tuple[str, str]]:
        """(apiVersion, kind) pairs of the newest shipped version (to tell new from removed)."""
        if self._latest_gvk is None:
            self._latest_gvk = set(_gvk_index(self.defs_of(self.shipped[-1])))
        return self._latest_gvk

    def added_later(self, schema_node: Any, key: str) -> str | None:
        """The first newer shipped Kubernetes version whose same definition has field `key`."""
        defs = self.defs["$defs"]
        if isinstance(defs, LazyDefinitions):  # not every definition decoded to name one
            name = defs.name_of(schema_node)
        else:
            if self._names is None:
                self._names = {id(v): k for k, v in defs.items()}
            name = self._names.get(id(schema_node))
        if name is None:
            return None
        for v in self.shipped:
            if v > self.version:
                props = (self.defs_of(v)["$defs"].get(name) or {}).get("properties") or {}
                if key in props:
                    return f"{v[0]}.{v[1]}"
        return None

    def checker(self, name: str) -> Callable[[Any], bool]:
        c = self.checkers.get(name)
        if c is None:
            if self._compiler is None:
                self._compiler = Compiler(self.defs)
            c = self.checkers[name] = self._compiler.compile(self.defs["$defs"][name])
        return c

    def validator(self, name: str) -> Any:
        v = self.validators.get(name)
        if v is None:
            import jsonschema
            from referencing import Registry, Resource

            whole = dict(self.defs)  # `$defs` stays lazy: a `$ref` decodes the definition it names
            registry = Registry().with_resource(self.defs["$id"], Resource.from_contents(whole))
            v = self.validators[name] = jsonschema.Draft202012Validator(
                {"$ref": f"{self.defs['$id']}#/$defs/{name}"}, registry=registry, format_checker=_format_checker()
            )
        return v


def _gvk_index(defs: dict[str, Any]) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    all_defs = defs.get("$defs", {})
    entries = (
        all_defs.gvk_entries()
        if isinstance(all_defs, LazyDefinitions)
        else ((name, d.get("x-kubernetes-group-version-kind")) for name, d in all_defs.items())
    )
    for name, found in entries:
        for g in found or ():
            group, version, kind = g.get("group", ""), g.get("version", ""), g.get("kind", "")
            if kind.endswith("List") and name.endswith("List"):
                continue
            out[(f"{group}/{version}" if group else version, kind)] = name
    return out


_CORE: dict[tuple[int, int], _CoreStore | None] = {}


def core_store(kube_version: str) -> _CoreStore | None:
    """The core schema store for `kube_version` (cached per process); None if unavailable."""
    requested = _parse_version(kube_version) or (1, 33)
    if requested in _CORE:
        return _CORE[requested]
    store = None
    root = _kv_schema_root()
    if root is not None:
        shipped = _shipped_versions(root)
        if shipped:
            usable = [v for v in shipped if v <= requested] or [shipped[0]]
            version = usable[-1]
            defs = load_definitions(
                os.path.join(root, f"v{version[0]}.{version[1]}.0-local-strict", "_definitions.json")
            )
            q = defs["$defs"].get("io.k8s.apimachinery.pkg.api.resource.Quantity")
            if isinstance(q, dict):
                q["format"] = "quantity"  # checked by our format checker and fast checker
            gvk = _gvk_index(defs)
            kinds: dict[str, list[str]] = {}
            for av, kind in gvk:
                kinds.setdefault(kind, []).append(av)
            groups = {av.rsplit("/", 1)[0] if "/" in av else "" for av, _ in gvk}
            store = _CoreStore(version, requested, defs, gvk, kinds, groups, root, shipped)
    _CORE[requested] = store
    return store


@dataclass
class _CrdSchema:
    """A custom resource's schema with its fast checker and, once needed, its jsonschema validator."""

    schema: dict[str, Any]
    compiler: Compiler
    checker: Callable[[Any], bool]
    validator: Any = None


class _CrdStore:
    """The generated custom-resource schemas (`ailint.schemas/crds`), loaded on demand."""

    def __init__(self) -> None:
        self.base = pkgdata.path("ailint.schemas", "crds")
        try:
            self.index: dict[str, dict[str, Any]] = json.loads(
                pkgdata.read_text("ailint.schemas", "crds", "index.json")
            )
        except (OSError, ValueError):
            self.index = {}
        self.loaded: dict[str, _CrdSchema] = {}

    def get(self, group: str, version: str, kind: str) -> _CrdSchema | None:
        entry = self.index.get(group, {}).get(kind)
        if not entry:
            return None
        fname = entry.get("files", {}).get(version)
        if not fname:
            return None
        s = self.loaded.get(fname)
        if s is None:
            schema = json.loads(pkgdata.read_text("ailint.schemas", "crds", fname))
            compiler = Compiler(schema)
            s = self.loaded[fname] = _CrdSchema(schema, compiler, compiler.compile(schema))
        return s

    def validator(self, s: _CrdSchema) -> Any:
        if s.validator is None:
            import jsonschema

            s.validator = jsonschema.Draft202012Validator(s.schema, format_checker=_format_checker())
        return s.validator


_CRDS: _CrdStore | None = None


def crd_store() -> _CrdStore:
    global _CRDS
    if _CRDS is None:
        _CRDS = _CrdStore()
    return _CRDS


_FORMAT_CHECKER: Any = None


def _format_checker() -> Any:
    global _FORMAT_CHECKER
    if _FORMAT_CHECKER is None:
        import jsonschema

        fc = jsonschema.FormatChecker(formats=())
        fc.checks("quantity")(_is_quantity)
        _FORMAT_CHECKER = fc
    return _FORMAT_CHECKER


def _is_quantity(value: Any) -> bool:
    return not isinstance(value, str) or bool(QUANTITY_RE.match(value))


# ---------------------------------------------------------------------------------------
# The compiled boolean checker: True when jsonschema would report nothing we report
# ---------------------------------------------------------------------------------------
_IGNORED = {
    "description",
    "default",
    "$schema",
    "$id",
    "$defs",
    "title",
    "example",
    "examples",
    "readOnly",
    "writeOnly",
    "deprecated",
    "$comment",
    "nullable",
}


_CLASSES = {"string": str, "object": dict, "array": list, "boolean": bool}
# a value of exactly one of these classes is of the type (a subclass, a float that is an integer: ask `_is_type`)
_EXACT: dict[str, tuple[type, ...]] = {
    **{t: (c,) for t, c in _CLASSES.items()},
    "integer": (int,),
    "number": (int, float),
}


def _type_check(types: tuple[str, ...]) -> Callable[[Any], bool]:
    """The check of a JSON Schema `type` that one isinstance does not decide (`_type_classes`
    makes those): `integer`, `number`, an unknown name, or only `null` (null is handled by
    the caller)."""
    types = tuple(t for t in types if t != "null")
    if not types:
        return _never_unless_null
    exact = frozenset(c for t in types for c in _EXACT.get(t, ()))  # classes that are surely of a type
    return lambda x: x.__class__ in exact or any(_is_type(x, t) for t in types)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


class Compiler:
    """Compiles a JSON Schema (the subset CRDs and the Kubernetes OpenAPI use) to closures.

    Unknown keywords compile to "invalid", so the object goes to jsonschema: the checker
    may send too many objects to the slow path, never too few.
    """

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.memo: dict[int, Callable[[Any], bool]] = {}

    def resolve(self, ref: str) -> Any:
        frag = ref.split("#", 1)[1] if "#" in ref else ""
        node: Any = self.doc
        for part in frag.split("/"):
            if part:
                node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def defaulted(self, node: dict[str, Any], name: str) -> bool:
        """Whether property `name` of `node` has a default (following `$ref`s)."""
        sub = (node.get("properties") or {}).get(name)
        for _ in range(20):
            if not isinstance(sub, dict):
                return False
            if "default" in sub:
                return True
            ref = sub.get("$ref")
            if not isinstance(ref, str) or not ref.startswith("#"):
                return False
            sub = self.resolve(ref)
        return False

    def compile(self, node: Any) -> Callable[[Any], bool]:
        if node is True or node == {}:
            return _always
        if node is False:
            return _never_unless_null
        key = id(node)
        fn = self.memo.get(key)
        if fn is not None:
            return fn
        cell: list[Callable[[Any], bool]] = []
        self.memo[key] = lambda x: cell[0](x)  # recursion placeholder
        ref = _only_ref(node)
        # `{$ref: X, description: ...}` is X's own checker, not one that calls it: most
        # properties of the Kubernetes schemas are such a node (two calls fewer a value). A
        # cycle of such nodes ends at the placeholder above, as a cycle of `lazy` ones did.
        fn = self._build(node) if ref is None else self.compile(self.resolve(ref))
        cell.append(fn)
        self.memo[key] = fn
        return fn

    def _build(self, node: dict[str, Any]) -> Callable[[Any], bool]:
        checks: list[Callable[[Any], bool]] = []
        classes: tuple[type, ...] | None = None  # a `type` that one isinstance decides
        items: Any = _NO_ITEMS
        for k, v in node.items():
            if k in _IGNORED or k.startswith("x-") or k in ("properties", "additionalProperties", "format"):
                continue
            if k == "$ref":
                checks.append(self.lazy(self.resolve(v)))
            elif k == "type":
                types = tuple(v) if isinstance(v, list) else (v,)
                classes = _type_classes(types)
                if classes is None:
                    checks.append(_type_check(types))
            elif k == "required":
                # the API server applies defaults before it checks required fields
                req = tuple(r for r in v if not self.defaulted(node, r))

                def required(x: Any, req: frozenset[Any] = frozenset(req)) -> bool:
                    return not isinstance(x, dict) or x.keys() >= req

                checks.append(required)
            elif k == "enum":
                allowed = list(v)
                if allowed and all(e.__class__ is str for e in allowed):  # (most enums: one set lookup)

                    def in_str_enum(x: Any, a: frozenset[str] = frozenset(allowed)) -> bool:
                        return x.__class__ is str and x in a

                    checks.append(in_str_enum)
                else:

                    def in_enum(x: Any, a: list[Any] = allowed) -> bool:
                        return any(_equal(x, e) for e in a)

                    checks.append(in_enum)
            elif k == "items":
                items = v
            elif k == "pattern":
                rx = re.compile(v)

                def matches(x: Any, rx: re.Pattern[str] = rx) -> bool:
                    return not isinstance(x, str) or rx.search(x) is not None

                checks.append(matches)
            elif k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                op: Callable[[Any, Any], bool] = {
                    "minimum": operator.ge,
                    "maximum": operator.le,
                    "exclusiveMinimum": operator.gt,
                    "exclusiveMaximum": operator.lt,
                }[k]

                def bounded(x: Any, op: Callable[[Any, Any], bool] = op, b: Any = v) -> bool:
                    return not _is_type(x, "number") or op(x, b)

                checks.append(bounded)
            elif k in ("minLength", "maxLength"):

                def str_length(x: Any, k: str = k, n: Any = v) -> bool:
                    return not isinstance(x, str) or (len(x) >= n if k == "minLength" else len(x) <= n)

                checks.append(str_length)
            elif k in ("minItems", "maxItems"):

                def list_length(x: Any, k: str = k, n: Any = v) -> bool:
                    return not isinstance(x, list) or (len(x) >= n if k == "minItems" else len(x) <= n)

                checks.append(list_length)
            elif k in ("minProperties", "maxProperties"):

                def dict_length(x: Any, k: str = k, n: Any = v) -> bool:
                    return not isinstance(x, dict) or (len(x) >= n if k == "minProperties" else len(x) <= n)

                checks.append(dict_length)
            elif k == "uniqueItems":
                if v:
                    checks.append(
                        lambda x: (
                            not isinstance(x, list)
                            or len({json.dumps(i, sort_keys=True, default=str) for i in x}) == len(x)
                        )
                    )
            elif k in ("oneOf", "anyOf", "allOf"):
                subs = [self.compile(s) for s in v]
                if k == "anyOf":

                    def any_of(x: Any, subs: list[Callable[[Any], bool]] = subs) -> bool:
                        return any(f(x) for f in subs)

                    checks.append(any_of)
                elif k == "allOf":

                    def all_of(x: Any, subs: list[Callable[[Any], bool]] = subs) -> bool:
                        return all(f(x) for f in subs)

                    checks.append(all_of)
                else:

                    def one_of(x: Any, subs: list[Callable[[Any], bool]] = subs) -> bool:
                        return sum(1 for f in subs if f(x)) == 1

                    checks.append(one_of)
            elif k == "not":
                sub = self.compile(v)

                def negated(x: Any, f: Callable[[Any], bool] = sub) -> bool:
                    return not f(x)

                checks.append(negated)
            else:
                return _never_unless_null  # a keyword we do not know: let jsonschema decide
        if node.get("format") == "quantity":
            checks.append(_is_quantity)
        props = node.get("properties")
        addl = node.get("additionalProperties", True)
        # `type: object` with properties and `type: array` with items are one check each,
        # which also decides the type (most nodes of a schema: one call a value, not three)
        null_safe = None  # a check that says yes to null itself: alone, it needs no guard
        if props is not None or addl is not True:
            strict = classes == (dict,)
            null_safe = self._object_check(props or {}, addl, strict)
            checks.append(null_safe)
            classes = None if strict else classes
        if items is not _NO_ITEMS:
            strict = classes == (list,)
            null_safe = self._items_check(items, strict)
            checks.append(null_safe)
            classes = None if strict else classes
        if classes is not None:
            return _typed(classes, checks)
        if not checks:
            return _always
        if len(checks) == 1:
            only = checks[0]
            if only is null_safe:
                return only
            return lambda x: x is None or only(x)
        if len(checks) == 2:
            a, b = checks
            return lambda x: x is None or (a(x) and b(x))
        tup = tuple(checks)

        def node_check(x: Any) -> bool:
            if x is None:
                return True
            for c in tup:  # noqa: SIM110 - a loop, not `all()` over a generator: 56,000 calls a corpus run
                if not c(x):
                    return False
            return True

        return node_check

    def _object_check(self, props: dict[str, Any], addl: Any, strict: bool = False) -> Callable[[Any], bool]:
        """properties + additionalProperties; each property compiled on first use. `strict`:
        also `type: object` (anything but a mapping or null fails)."""
        compiled: dict[str, Callable[[Any], bool]] = {}
        compile_ = self.compile
        rest: Callable[[Any], bool] | None = None if addl is True else (_never_unless_null if addl is False else None)

        def obj_check(x: Any) -> bool:
            nonlocal rest
            if not isinstance(x, dict):
                return x is None or not strict
            for k, v in x.items():
                f = compiled.get(k)
                if f is None:
                    sub = props.get(k)
                    if sub is not None:
                        f = compiled[k] = compile_(sub)
                    elif addl is True:
                        continue
                    else:
                        if rest is None:
                            rest = compile_(addl)
                        f = rest
                if not f(v):
                    return False
            return True

        return obj_check

    def _items_check(self, node: Any, strict: bool = False) -> Callable[[Any], bool]:
        """Each item checked by `node`'s checker, compiled on the first list it meets and
        then called directly (not through a `lazy` wrapper once per item). `strict`: also
        `type: array` (anything but a list or null fails)."""
        cell: list[Callable[[Any], bool]] = []
        compile_ = self.compile

        def items_check(x: Any) -> bool:
            if not isinstance(x, list):
                return x is None or not strict
            if x:
                f = cell[0] if cell else _first(cell, compile_, node)
                for i in x:
                    if not f(i):
                        return False
            return True

        return items_check

    def lazy(self, node: Any) -> Callable[[Any], bool]:
        """A checker for `node` compiled on its first call (most of a schema is never used)."""
        if node is True or node == {}:
            return _always
        fn = self.memo.get(id(node))
        if fn is not None:
            return fn
        cell: list[Callable[[Any], bool]] = []

        def run(x: Any) -> bool:
            if not cell:
                cell.append(self.compile(node))
            return cell[0](x)

        return run


_NO_ITEMS = object()  # a node without `items`


def _typed(classes: tuple[type, ...], checks: list[Callable[[Any], bool]]) -> Callable[[Any], bool]:
    """A node's checker whose `type` is an isinstance of `classes`, then `checks` (null passes)."""
    if not checks:
        return lambda x: x is None or isinstance(x, classes)
    if len(checks) == 1:
        only = checks[0]
        return lambda x: x is None or (isinstance(x, classes) and only(x))
    tup = tuple(checks)

    def typed_check(x: Any) -> bool:
        if x is None:
            return True
        if not isinstance(x, classes):
            return False
        for c in tup:  # noqa: SIM110 - a loop, not `all()` over a generator (as `node_check`)
            if not c(x):
                return False
        return True

    return typed_check


def _type_classes(types: tuple[str, ...]) -> tuple[type, ...] | None:
    """The classes whose instances are exactly the values of a JSON Schema `type` but null
    (null passes every check), when one isinstance decides it; None otherwise."""
    named = tuple(t for t in types if t != "null")
    if not named or not all(t in _CLASSES for t in named):
        return None
    return tuple(_CLASSES[t] for t in named)  # bool is no subclass of str, dict or list


def _first(cell: list[Callable[[Any], bool]], compile_: Callable[[Any], Callable[[Any], bool]], node: Any) -> Any:
    """`node` compiled into `cell`, on first use."""
    cell.append(compile_(node))
    return cell[0]


def _only_ref(node: Any) -> str | None:
    """The `$ref` of a schema node that says nothing else the checker reads, or None."""
    ref = node.get("$ref") if node.__class__ is dict else None
    if ref.__class__ is not str:
        return None
    for k in node:
        if k != "$ref" and k not in _IGNORED and not k.startswith("x-"):
            return None
    return ref  # type: ignore[no-any-return]


def _always(x: Any) -> bool:
    return True


def _never_unless_null(x: Any) -> bool:
    return x is None


# ---------------------------------------------------------------------------------------
# Findings
# ---------------------------------------------------------------------------------------
@dataclass
class Collector:
    """Collects findings for one run: the enabled codes, severities and de-duplication."""

    settings: Any
    enabled: set[str]
    patch_names: set[str] = field(default_factory=set)  # files named as patches by a Kustomization
    core: _CoreStore | None = None  # the core store, while a core object is reported
    findings: list[Finding] = field(default_factory=list)
    seen: set[tuple] = field(default_factory=set)
    rules: dict[str, Any] = field(default_factory=dict)

    def add(self, code: str, obj: K8sObject, path: Path, message: str, span: Span) -> None:
        if code not in self.enabled:
            return
        key = (id(obj), code, path, message)
        if key in self.seen:
            return
        self.seen.add(key)
        reg = self.rules.get(code)
        if reg is None:
            from ailint.engine.registry import all_rules

            reg = self.rules[code] = all_rules()[code].rule
        from ailint.engine.config import severity_override

        sev = severity_override(self.settings, code) or reg.severity
        self.findings.append(Finding(code, reg.name, sev, message, obj.file, span, obj.ref, tuple(path)))


def validate_objects(
    objects: Iterable[K8sObject], settings: Any, enabled_codes: Iterable[str], patches: set[str] | None = None
) -> list[Finding]:
    """Every SCH finding on `objects` (only for the codes in `enabled_codes`). `patches`: the
    kustomize patch names of the whole run, when `objects` is part of it (the cache)."""
    objects = list(objects)
    out = Collector(settings, set(enabled_codes), kustomize_patches(objects) if patches is None else patches)
    if not out.enabled:
        return []
    for obj in objects:
        try:
            validate_object(obj, settings.kube_version, out)
        except Exception as exc:
            if os.environ.get("AILINT_DEBUG_SCHEMA"):
                raise
            from ailint.engine.registry import engine_rule

            r = engine_rule("AIL003")
            out.findings.append(
                Finding(
                    r.code,
                    r.name,
                    r.severity,
                    f"schema validation crashed on this object ({type(exc).__name__}: {exc}); please report it",
                    obj.file,
                    obj.span(()),
                    obj.ref,
                )
            )
    return out.findings


def validate_object(obj: K8sObject, kube_version: str, out: Collector) -> None:
    kind, av = obj.kind, obj.api_version
    if not kind or not av or kind == "CustomResourceDefinition":
        return
    group = obj.group
    version = av.rsplit("/", 1)[-1]
    crds = crd_store()
    if group in crds.index:
        entry = crds.index[group].get(kind)
        s = crds.get(group, version, kind)
        if s is not None:
            if not s.checker(obj.data):
                _report(obj, _Judge(s.schema, s.compiler, lambda: crds.validator(s)), out, s.compiler)
            _cel_findings(obj, out)
            return
        _crd_version_finding(obj, group, version, kind, entry, crds, out)
        return
    store = core_store(kube_version)
    if store is None:
        return
    name = store.gvk.get((av, kind))
    if name is not None:
        if not store.checker(name)(obj.data):
            out.core = store
            try:
                _report(
                    obj,
                    _Judge(store.defs["$defs"][name], store._compiler, lambda: store.validator(name)),
                    out,
                    store._compiler,
                )
            finally:
                out.core = None
        return
    _core_version_finding(obj, group, kind, store, out)


# -- apiVersion ---------------------------------------------------------------------------
def _crd_version_finding(
    obj: K8sObject, group: str, version: str, kind: str, entry: Any, crds: _CrdStore, out: Collector
) -> None:
    if version in _SERVED_ELSEWHERE.get((group, kind), ()):
        return  # served by another operator: nothing to validate it against
    new_kind = kind
    if not entry:
        new_kind = _RENAMED_KINDS.get((group, kind), "")
        entry = crds.index[group].get(new_kind) if new_kind else None
        if not entry:
            return  # a kind we have no schema for: not a finding
    served = entry.get("versions") or []
    if not served:
        return
    target = f"{group}/{served[0]}"
    if new_kind != kind:
        msg = (
            f"`{obj.api_version}` {kind} was removed; use `{target}` {new_kind} "
            "(its fields changed too: see the upstream migration guide)"
        )
    else:
        what = "was removed" if _version_key(version) < _version_key(served[0]) else "is not served"
        msg = (
            f"`{obj.api_version}` {kind} {what}; the {kind} CRD serves "
            f"{', '.join(f'`{group}/{v}`' for v in served)}: use `{target}`"
        )
    out.add(CODES["api-version"], obj, ("apiVersion",), msg, obj.value_span(("apiVersion",)))


def _version_key(v: str) -> tuple[int, int, int]:
    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", v)
    if not m:
        return (0, 0, 0)
    stage = {"alpha": 0, "beta": 1, None: 2}[m.group(2)]
    return (int(m.group(1)), stage, int(m.group(3) or 0))


def _core_version_finding(obj: K8sObject, group: str, kind: str, store: _CoreStore, out: Collector) -> None:
    if group not in store.groups and group not in _REMOVED_CORE_GROUPS:
        return
    if (obj.api_version, kind) in store.future_gvks():
        return  # served by a newer Kubernetes than kube-version: the manifest targets a newer cluster
    if store.requested < store.shipped[0]:
        return  # older than any schema we ship: we cannot tell
    serving = store.kinds.get(kind)
    if not serving:
        return  # the kind itself is gone (or never existed): nothing to suggest
    same_group = [av for av in serving if (av.rsplit("/", 1)[0] if "/" in av else "") == group]
    choices = same_group or serving
    choices = sorted(choices, key=lambda av: _version_key(av.rsplit("/", 1)[-1]), reverse=True)
    ver = f"{store.version[0]}.{store.version[1]}"
    msg = f"`{obj.api_version}` {kind} is not served by Kubernetes {ver} (removed); use `{choices[0]}`"
    out.add(CODES["api-version"], obj, ("apiVersion",), msg, obj.value_span(("apiVersion",)))


# -- what a rejected object is told (ailint.schema.findings) and the CRDs' CEL rules ------------
class _Judge:
    """What `_report` asks for an object's errors: `ailint.schema.errors` where it is exact
    (most objects the fast checker sends), else the jsonschema validator `make` builds (and
    imports jsonschema for) only then."""

    __slots__ = ("compiler", "make", "root")

    def __init__(self, root: Any, compiler: Compiler | None, make: Callable[[], Any]) -> None:
        self.root, self.compiler, self.make = root, compiler, make

    def iter_errors(self, data: Any) -> Iterable[Any]:
        if self.compiler is not None:
            try:
                return schema_errors(self.root, data, self.compiler.resolve, _is_quantity)
            except (Declined, RecursionError):
                pass
        return self.make().iter_errors(data)  # type: ignore[no-any-return]


def _report(obj: K8sObject, validator: Any, out: Collector, compiler: Compiler | None = None) -> None:
    """The findings of an object the fast checker rejected (`ailint.schema.findings`,
    imported only then)."""
    from ailint.schema.findings import report

    report(obj, validator, out, compiler)


# the kinds whose CRDs' CEL rules decide acceptance, and the function of
# `ailint.schema.crd_rules` that re-implements them (imported only for these kinds)
CEL_RULES = {
    ("karpenter.sh", "NodePool"): "nodepool",
    ("karpenter.sh", "NodeClaim"): "nodeclaim",
    ("karpenter.k8s.aws", "EC2NodeClass"): "ec2nodeclass",
    ("kueue.x-k8s.io", "ResourceFlavor"): "resourceflavor",
}


def _cel_findings(obj: K8sObject, out: Collector) -> None:
    name = CEL_RULES.get((obj.group, obj.kind))
    if name is None or CODES["cel"] not in out.enabled:
        return
    from ailint.schema import crd_rules

    for path, message, anchor in getattr(crd_rules, name)(obj):
        span = obj.value_span(path) if anchor == "value" else obj.span(path)
        out.add(CODES["cel"], obj, path, message, span)
