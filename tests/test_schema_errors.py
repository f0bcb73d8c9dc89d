"""`ailint.schema.errors` against jsonschema: for every object it judges, the errors
jsonschema's Draft 2020-12 validator yields (keyword, value, instance, path and schema node:
what `ailint.schema.findings` reads), and for anything else it declines."""

from __future__ import annotations

import collections
import pathlib
from typing import Any

import jsonschema
import pytest
from ailint.engine.config import Settings
from ailint.engine.run import lint
from ailint.schema import errors as E
from ailint.schema import validate as sch
from conftest import CORPUS, ROOT, needs_shared


def _key(e: Any) -> tuple[Any, ...]:
    return (e.validator, tuple(e.absolute_path), id(e.schema), repr(e.validator_value), repr(e.instance))


def _theirs(schema: Any, instance: Any) -> collections.Counter[tuple[Any, ...]]:
    v = jsonschema.Draft202012Validator(schema, format_checker=sch._format_checker())
    return collections.Counter(_key(e) for e in v.iter_errors(instance))


def _ours(schema: Any, instance: Any) -> collections.Counter[tuple[Any, ...]]:
    compiler = sch.Compiler(schema)
    return collections.Counter(_key(e) for e in E.schema_errors(schema, instance, compiler.resolve, sch._is_quantity))


def test_the_validating_keywords_are_jsonschemas():
    assert set(jsonschema.Draft202012Validator.VALIDATORS) == E.VALIDATING


_PORT = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
_SCHEMA = {
    "$id": "urn:test",
    "type": "object",
    "required": ["kind", "spec"],
    "additionalProperties": False,
    "properties": {
        "kind": {"type": "string", "enum": ["A", "B", True, 1]},
        "count": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10},
        "ratio": {"type": ["number", "null"], "maximum": 1},
        "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
        "size": {"type": "string", "format": "quantity"},
        "port": _PORT,
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3, "uniqueItems": True},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 2},
        "spec": {"$ref": "#/$defs/spec"},
        "both": {"allOf": [{"type": "object", "required": ["a"]}, {"properties": {"a": {"type": "boolean"}}}]},
        "either": {"anyOf": [{"type": "string"}, {"type": "object", "required": ["x"]}]},
        "notnull": {"not": {"type": "null"}},
        "flag": {"enum": [True, "on"]},
        "one": {"enum": [1, 2.5]},
        "$patch": {"type": "string"},
    },
    "$defs": {
        "spec": {
            "type": "object",
            "properties": {"replicas": {"type": "integer"}, "child": {"$ref": "#/$defs/spec"}},
            "required": ["replicas"],
            "additionalProperties": False,
            "description": "annotations are ignored",
            "x-kubernetes-preserve-unknown-fields": False,
        }
    },
}
_JUDGED = [
    {},
    {"kind": "A", "spec": {"replicas": 1}},
    {"kind": "C", "spec": {"replicas": "two", "child": {"child": {}}}, "extra": 1, "other": None},
    {"kind": 1, "spec": {"replicas": 1}},  # `1` is in the enum
    {"kind": True, "spec": {"replicas": 1.0}},  # a float with an integer value is an integer
    {"kind": 0, "count": 0, "ratio": 2, "spec": {"replicas": 1}},  # 0 is not 1, nor True
    {"kind": False, "count": 10, "ratio": None, "spec": None},
    {"kind": None, "count": True, "ratio": 1.5, "spec": []},
    {"kind": "A", "name": "a", "spec": {"replicas": 1}},
    {"kind": "A", "name": "Abcdefg", "size": "2Gi", "spec": {"replicas": 1}},
    {"kind": "A", "name": "${NAME}", "size": "2 GiB", "port": "${PORT}", "spec": {"replicas": "$N"}},
    {"kind": "A", "size": 3, "port": 8080, "spec": {"replicas": 1}},
    {"kind": "A", "tags": [], "labels": {"a": "1", "b": 2, "c": "3"}, "spec": {"replicas": 1}},
    {"kind": "A", "tags": ["a", "b", "a", "c"], "spec": {"replicas": 1}},
    {"kind": "A", "tags": "a", "labels": [], "spec": {"replicas": 1}},
    {"kind": "A", "both": {"a": "yes"}, "either": "s", "notnull": 1, "spec": {"replicas": 1}},
    {"kind": "A", "both": {}, "either": {"x": 1}, "spec": {"replicas": 1}},
    {"kind": "A", "$patch": "delete", "spec": {"replicas": 1}},
    {"kind": "A", "flag": 1, "one": True, "spec": {"replicas": 1}},  # True is not 1, 1 is not True
    {"kind": "A", "flag": True, "one": 1.0, "spec": {"replicas": 1}},
    ["not", "an", "object"],
    None,
]


def _without_nulls(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _without_nulls(v) for k, v in x.items() if v is not None}
    return [_without_nulls(v) for v in x] if isinstance(x, list) else x


def _valid(schema: Any, instance: Any) -> bool:
    """What jsonschema says of `instance` read as the API server reads it: a null value is a
    field not set (the compiled checker passes null everywhere)."""
    validator = jsonschema.Draft202012Validator(schema, format_checker=sch._format_checker())
    return not any(validator.iter_errors(_without_nulls(instance)))


@pytest.mark.parametrize("instance", _JUDGED[:-1], ids=[str(i) for i in range(len(_JUDGED) - 1)])
def test_the_fast_checker_never_passes_what_jsonschema_fails(instance):
    """The compiled pre-check (`validate.Compiler`) may send a valid object on to jsonschema,
    never let an invalid one through."""
    if sch.Compiler(_SCHEMA).compile(_SCHEMA)(instance):
        assert _valid(_SCHEMA, instance)


# The shapes the compiled checker folds together (a node that is only a `$ref`; `type: object`
# with properties and `type: array` with items as one check; `type` by exact class; `required`
# and an enum of strings by a set): on these keywords it judges exactly as jsonschema does.
_FOLDED = {
    "type": "object",
    "required": ["kind"],
    "properties": {
        "kind": {"type": "string", "enum": ["Pod", "Job"], "description": "a pure reference's target"},
        "spec": {"$ref": "#/$defs/spec", "description": "only a reference"},
        "ports": {"type": "array", "items": {"$ref": "#/$defs/port"}},
        "loose": {"items": {"type": "integer"}, "properties": {"a": {"type": "boolean"}}},
        "either": {"type": ["integer", "string"]},
        "number": {"type": "number"},
        "nullable": {"type": ["object", "null"], "properties": {"a": {"type": "string"}}},
    },
    "$defs": {
        "spec": {"$ref": "#/$defs/spec2", "x-kubernetes-preserve-unknown-fields": True},
        "spec2": {"type": "object", "required": ["a", "b"], "additionalProperties": {"type": "string"}},
        "port": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    },
}
_FOLDED_INSTANCES = [
    {"kind": "Pod"},
    {"kind": "Job", "spec": {"a": "1", "b": "2"}, "ports": [{"n": 1}, {"n": 2.0}]},
    {"kind": "Deployment"},
    {"kind": ["Pod"]},
    {"kind": "Pod", "spec": {"a": "1"}},
    {"kind": "Pod", "spec": {"a": "1", "b": 2}},
    {"kind": "Pod", "spec": ["a"]},
    {"kind": "Pod", "spec": None, "ports": None, "either": None, "number": None, "nullable": None},
    {"kind": "Pod", "ports": [{"n": 1}, {"n": "1"}]},
    {"kind": "Pod", "ports": [{}]},
    {"kind": "Pod", "ports": {"n": 1}},
    {"kind": "Pod", "ports": "8080"},
    {"kind": "Pod", "ports": []},
    {"kind": "Pod", "loose": "not a list nor a mapping"},
    {"kind": "Pod", "loose": [1, "2"]},
    {"kind": "Pod", "loose": {"a": 1}},
    {"kind": "Pod", "either": True, "number": True},
    {"kind": "Pod", "either": 1.0, "number": 1.5},
    {"kind": "Pod", "either": 1.5},
    {"kind": "Pod", "nullable": {"a": 1}},
    {"kind": "Pod", "nullable": []},
    {},
    "Pod",
]


@pytest.mark.parametrize("instance", _FOLDED_INSTANCES, ids=[str(i) for i in range(len(_FOLDED_INSTANCES))])
def test_the_folded_checks_judge_as_jsonschema(instance):
    assert sch.Compiler(_FOLDED).compile(_FOLDED)(instance) == _valid(_FOLDED, instance)


@pytest.mark.parametrize("instance", _JUDGED, ids=[str(i) for i in range(len(_JUDGED))])
def test_the_same_errors_as_jsonschema(instance):
    assert _ours(_SCHEMA, instance) == _theirs(_SCHEMA, instance)


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        (_SCHEMA, {"kind": "A", "port": 1.5, "spec": {"replicas": 1}}),  # oneOf: no branch
        ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1),  # oneOf: two branches
        ({"anyOf": [{"type": "string"}, {"type": "object", "required": ["x"]}]}, {}),  # anyOf: none
        ({"not": {"type": "null"}}, None),
        ({"type": "array", "uniqueItems": True}, [1, True]),  # not all strings: jsonschema's own equality
        ({"patternProperties": {"^a": {"type": "string"}}}, {"a": 1}),
        ({"const": 1}, 1),
        ({"$ref": "https://example.com/schema"}, {}),
        ({"properties": {"a": False}}, {"a": 1}),  # a boolean false schema
        ({"type": "whatever"}, 1),
        ({"enum": [[1], {"a": 1}]}, [1]),  # structures compare by jsonschema's rules
        ({"properties": {"a": {"$id": "urn:other", "type": "string"}}}, {"a": 1}),  # a new base for refs
    ],
)
def test_what_it_does_not_judge_exactly_is_declined(schema, instance):
    with pytest.raises(E.Declined):
        _ours(schema, instance)


def test_a_passing_combinator_is_judged_like_jsonschema():
    schema = {"properties": {"p": _PORT, "q": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}}
    for instance in ({"p": "x", "q": 1}, {"p": 8080, "q": "y"}, {}):
        assert _ours(schema, instance) == _theirs(schema, instance) == collections.Counter()


def _every_object_through_both(paths: list[pathlib.Path]) -> tuple[int, int]:
    """Every object of `paths` sent past the fast checker, its errors worked out both ways:
    (objects compared, objects declined). Fails on the first object they disagree on."""
    judged: list[tuple[Any, Any]] = []
    saved = sch.Compiler.compile, sch._report
    sch.Compiler.compile = lambda self, node: sch._never_unless_null  # type: ignore[assignment]
    sch._report = lambda obj, judge, out, compiler=None: judged.append((obj, judge))  # type: ignore[assignment]
    sch._CORE.clear()
    sch._CRDS = None
    try:
        settings = Settings(root=str(ROOT))
        settings.select = ["SCH"]
        lint([str(p) for p in paths], settings)
    finally:
        sch.Compiler.compile, sch._report = saved  # type: ignore[method-assign]
        sch._CORE.clear()
        sch._CRDS = None
    compared = declined = 0
    for obj, judge in judged:
        theirs = collections.Counter(_key(e) for e in judge.make().iter_errors(obj.data))
        try:
            got = E.schema_errors(judge.root, obj.data, judge.compiler.resolve, sch._is_quantity)
        except E.Declined:
            declined += 1
            continue
        assert collections.Counter(_key(e) for e in got) == theirs, (obj.file, obj.kind)
        compared += 1
    return compared, declined


def test_every_fixture_object_gets_jsonschemas_errors():
    compared, declined = _every_object_through_both(sorted((ROOT / "fixtures").rglob("*.yaml")))
    assert compared > 500 and declined < compared // 10, (compared, declined)


@needs_shared
def test_every_corpus_object_gets_jsonschemas_errors():
    compared, declined = _every_object_through_both(sorted(CORPUS.glob("*/plain")))
    assert compared > 2000 and declined < compared // 10, (compared, declined)
