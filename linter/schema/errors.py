"""The schema errors of an object, worked out without jsonschema where that is exact.

The fast checker (`ailint.schema.validate.Compiler`) says whether an object may have an
error; when it may, the findings come from the errors jsonschema's Draft 2020-12 validator
yields (`ailint.schema.findings` reads each one's keyword, value, instance, path and schema node).
Most such objects are kustomize patches missing required fields or values with `${...}`
placeholders, whose errors `_report` then drops. Importing jsonschema and running it cost
half of the schema pass of a corpus run (0.05 s to import, 0.04 s to validate 100 objects).

`schema_errors` yields the same errors for the keywords whose jsonschema semantics are
plain (`type`, `required`, `enum` of scalars, `properties`, `additionalProperties`, `items`,
`$ref` within the document, `allOf`, the bounds and lengths, `pattern`, the `quantity`
format), and decides `anyOf`, `oneOf` and `not` that pass the same way. Anything else it
declines (`Declined`): a keyword it does not implement, a combinator that fails (jsonschema
picks the best of its branches' errors), a `$ref` out of the document, a boolean `false`
schema, `uniqueItems` over values that are not all strings. The caller then asks jsonschema,
as before. `tests/test_schema_errors.py` compares the two on every object of the fixtures and
the corpus that the fast checker sends here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ailint.core.model import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    _Sized = type[str] | type[list[Any]] | type[dict[str, Any]]

# Draft 2020-12's validating keywords (jsonschema's `Draft202012Validator.VALIDATORS`); any
# other key of a schema is an annotation jsonschema ignores, and so is it here
VALIDATING = frozenset(
    {
        "$dynamicRef",
        "$ref",
        "additionalProperties",
        "allOf",
        "anyOf",
        "const",
        "contains",
        "dependentRequired",
        "dependentSchemas",
        "enum",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "format",
        "if",
        "items",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "multipleOf",
        "not",
        "oneOf",
        "pattern",
        "patternProperties",
        "prefixItems",
        "properties",
        "propertyNames",
        "required",
        "type",
        "unevaluatedItems",
        "unevaluatedProperties",
        "uniqueItems",
    }
)
# keys that move where a `$ref` resolves (a new base or anchor): declined, as refs are
# resolved in the one document here
_RESOLUTION = frozenset({"$id", "$anchor", "$dynamicAnchor"})


class Declined(Exception):
    """The object meets a schema this module does not judge exactly: ask jsonschema."""


@dataclass(slots=True)
class SchemaError:
    """What `ailint.schema.findings` reads of a jsonschema `ValidationError`."""

    validator: str
    validator_value: Any
    instance: Any
    absolute_path: Path
    schema: dict[str, Any]
    context: tuple[Any, ...] = ()
    relative_path: Path = ()


JSON_TYPES = frozenset({"string", "object", "array", "boolean", "integer", "number", "null"})


def is_type(x: Any, t: str) -> bool:
    """jsonschema's Draft 2020-12 type checker on parsed YAML values (False for a type name it
    does not know); the fast checker's too (`validate.Compiler`)."""
    if t == "string":
        return isinstance(x, str)
    if t == "object":
        return isinstance(x, dict)
    if t == "array":
        return isinstance(x, list)
    if t == "boolean":
        return isinstance(x, bool)
    if t == "integer":
        return (isinstance(x, int) and not isinstance(x, bool)) or (isinstance(x, float) and x.is_integer())
    if t == "number":
        return isinstance(x, int | float) and not isinstance(x, bool)
    if t == "null":
        return x is None
    return False


def _is_type(x: Any, t: str) -> bool:
    if t not in JSON_TYPES:
        raise Declined(f"unknown type {t!r}")  # jsonschema raises UnknownType
    return is_type(x, t)


def _equal(a: Any, b: Any) -> bool:
    """jsonschema's `equal` for a scalar: `True` is not `1`, `False` is not `0`."""
    if a is b:
        return True
    if isinstance(a, bool) or isinstance(b, bool):
        return False  # (two equal bools are the same object)
    return bool(a == b)


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_BOUNDS: dict[str, Callable[[Any, Any], bool]] = {  # keyword -> (instance, bound) is an error
    "minimum": lambda x, b: x < b,
    "maximum": lambda x, b: x > b,
    "exclusiveMinimum": lambda x, b: x <= b,
    "exclusiveMaximum": lambda x, b: x >= b,
}
_SIZES: dict[str, tuple[_Sized, bool]] = {  # keyword -> (instance type, is a minimum)
    "minLength": (str, True),
    "maxLength": (str, False),
    "minItems": (list, True),
    "maxItems": (list, False),
    "minProperties": (dict, True),
    "maxProperties": (dict, False),
}


def schema_errors(
    root: Any,
    instance: Any,
    resolve: Callable[[str], Any],
    is_quantity: Callable[[Any], bool],
) -> list[SchemaError]:
    """The errors jsonschema yields for `instance` against `root` (in no particular order;
    `_report` sorts its findings), or `Declined`. `resolve` maps a `#...` reference to its
    node; `is_quantity` is the `quantity` format's check (the only format checked)."""
    out: list[SchemaError] = []
    _Walk(root, resolve, is_quantity).errors(root, instance, (), out)
    return out


class _Walk:
    """One object's walk of its schema (jsonschema's `iter_errors`, keyword by keyword)."""

    __slots__ = ("is_quantity", "resolve", "root")

    def __init__(self, root: Any, resolve: Callable[[str], Any], is_quantity: Callable[[Any], bool]) -> None:
        self.root, self.resolve, self.is_quantity = root, resolve, is_quantity

    def passes(self, node: Any, x: Any, path: Path) -> bool:
        found: list[SchemaError] = []
        self.errors(node, x, path, found)
        return not found

    def errors(self, node: Any, x: Any, path: Path, out: list[SchemaError]) -> None:
        if node is True:
            return
        if not isinstance(node, dict):
            raise Declined("a boolean false schema")
        for k, v in node.items():
            if k not in VALIDATING:
                if k in _RESOLUTION and node is not self.root:  # (the root's `$id` is the document's)
                    raise Declined(k)
                continue
            self.keyword(k, v, node, x, path, out)

    def keyword(self, k: str, v: Any, node: dict[str, Any], x: Any, path: Path, out: list[SchemaError]) -> None:
        if k == "$ref":
            if not isinstance(v, str) or not v.startswith("#"):
                raise Declined("a reference out of the document")
            try:
                target = self.resolve(v)
            except (KeyError, TypeError, IndexError) as exc:
                raise Declined("an unresolvable reference") from exc
            self.errors(target, x, path, out)
        elif k == "type":
            types = v if isinstance(v, list) else [v]
            if not any(_is_type(x, t) for t in types):
                out.append(SchemaError(k, v, x, path, node))
        elif k == "required":
            if isinstance(x, dict):
                if not isinstance(v, list):
                    raise Declined("required is not a list")
                out.extend(SchemaError(k, v, x, path, node) for name in v if name not in x)
        elif k == "properties":
            if isinstance(x, dict):
                if not isinstance(v, dict):
                    raise Declined("properties is not a mapping")
                for name, sub in v.items():
                    if name in x:
                        self.errors(sub, x[name], path + (name,), out)
        elif k == "additionalProperties":
            if isinstance(x, dict):
                props = node.get("properties") or {}
                extras = [p for p in x if p not in props]
                if isinstance(v, dict):
                    for p in extras:
                        self.errors(v, x[p], path + (p,), out)
                elif v is False:
                    if extras:
                        out.append(SchemaError(k, v, x, path, node))
                elif v is not True:
                    raise Declined("additionalProperties of another kind")
        elif k == "items":
            if isinstance(x, list):
                if v is False:
                    raise Declined("items: false")
                for i, item in enumerate(x):
                    self.errors(v, item, path + (i,), out)
        elif k == "enum":
            if isinstance(x, dict | list) or not isinstance(v, list):
                raise Declined("an enum of structures")
            if all(not _equal(e, x) for e in v):
                out.append(SchemaError(k, v, x, path, node))
        elif k in _BOUNDS:
            try:
                if _is_type(x, "number") and _BOUNDS[k](x, v):
                    out.append(SchemaError(k, v, x, path, node))
            except TypeError as exc:  # a bound that is not a number
                raise Declined(k) from exc
        elif k in _SIZES:
            cls, at_least = _SIZES[k]
            try:
                if isinstance(x, cls) and (len(x) < v if at_least else len(x) > v):
                    out.append(SchemaError(k, v, x, path, node))
            except TypeError as exc:
                raise Declined(k) from exc
        elif k == "pattern":
            try:
                rx = _regex(v)
            except (re.error, TypeError) as exc:
                raise Declined("a pattern Python cannot compile") from exc
            if isinstance(x, str) and not rx.search(x):
                out.append(SchemaError(k, v, x, path, node))
        elif k == "format":
            if v == "quantity" and not self.is_quantity(x):
                out.append(SchemaError(k, v, x, path, node))
        elif k == "allOf":
            for sub in v:
                self.errors(sub, x, path, out)
        elif k in ("anyOf", "oneOf"):
            passing = sum(1 for sub in v if self.passes(sub, x, path))
            if passing == 0 or (k == "oneOf" and passing > 1):
                raise Declined(f"a failing {k}")  # jsonschema's best match among the branches
        elif k == "not":
            if self.passes(v, x, path):
                raise Declined("a failing not")
        elif k == "uniqueItems":
            if v and isinstance(x, list) and len(x) > 1:
                if not all(isinstance(i, str) for i in x):
                    raise Declined("uniqueItems over values that are not all strings")
                if len(set(x)) != len(x):
                    out.append(SchemaError(k, v, x, path, node))
        else:
            raise Declined(k)
