"""Rule options reach `check` coerced to their declared types (ailint.engine.registry)."""

from __future__ import annotations

import pytest
from ailint.core.model import Severity
from ailint.core.rule import Option, Options, Rule
from ailint.engine.config import ConfigError, load_settings
from ailint.engine.registry import OptionError, all_rules, coerce_option, options_for

RULE = Rule(
    code="TST001",
    name="test-rule",
    severity=Severity.INFO,
    summary="a rule for the option tests",
    options={
        "count": Option(4, "an integer", "integer"),
        "unset": Option(None, "a nullable integer", "integer"),
        "ratio": Option(0.1, "a number", "number"),
        "size": Option("16Gi", "a string", "string"),
        "keys": Option(["a"], "an array", "array"),
        "pins": Option({}, "an object", "object"),
        "on": Option(True, "a boolean", "boolean"),
    },
)


def test_defaults_fill_every_option_with_its_type() -> None:
    opts = options_for(RULE)
    assert isinstance(opts, Options)
    assert dict(opts) == {
        "count": 4,
        "unset": None,
        "ratio": 0.1,
        "size": "16Gi",
        "keys": ["a"],
        "pins": {},
        "on": True,
    }
    assert isinstance(opts.get_float("ratio"), float)
    assert opts.get_optional_int("unset") is None


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("count", "8", 8),
        ("count", 8.0, 8),
        ("ratio", 1, 1.0),
        ("ratio", "0.25", 0.25),
        ("size", 32, "32"),
        ("on", "false", False),
        ("keys", ("x", "y"), ["x", "y"]),
        ("pins", {1: "v"}, {"1": "v"}),
        ("unset", None, None),
        ("unset", "64", 64),
    ],
)
def test_configured_values_are_coerced(name: str, value: object, expected: object) -> None:
    got = options_for(RULE, {name: value, "severity": "error"})[name]
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("count", "eight"),
        ("count", 1.5),
        ("count", True),
        ("count", None),
        ("ratio", "nan"),
        ("ratio", False),
        ("size", ["x"]),
        ("keys", "a,b"),
        ("pins", []),
        ("on", "yes please"),
    ],
)
def test_values_of_the_wrong_type_are_rejected(name: str, value: object) -> None:
    with pytest.raises(OptionError, match=name):
        coerce_option(name, RULE.options[name], value)


def test_an_undeclared_option_is_rejected() -> None:
    with pytest.raises(OptionError, match="no option `other`"):
        options_for(RULE, {"other": 1})


def test_every_declared_default_has_its_declared_type() -> None:
    for reg in all_rules().values():
        options_for(reg.rule)  # raises when a default does not fit its type


def test_a_config_value_of_the_wrong_type_names_the_file_and_key(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = tmp_path / ".ailint.yaml"
    cfg.write_text("rules:\n  KRP001:\n    max_alternatives: 2.5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\.ailint\.yaml: `rules\.KRP001"):
        load_settings(str(cfg), False, str(tmp_path))
