"""Guards over the single registry: every rule is well-formed, documented and tested."""

from __future__ import annotations

import re

import pytest
from ailint.core.model import FixAvailability
from ailint.engine.registry import DOC_SECTIONS, FAMILIES, all_rules
from fixture_harness import FIXTURES, all_cases, expected_markers, profile_for

RULES = list(all_rules().values())
# SCH and POL rules are produced by engine passes, not a check function, but have fixtures and examples
CHECKED = [r for r in RULES if not r.rule.engine or r.rule.family in ("SCH", "POL")]
CASES = all_cases()


def test_codes_and_names_unique_and_well_formed():
    codes = [r.rule.code for r in RULES]
    names = [r.rule.name for r in RULES]
    assert len(codes) == len(set(codes))
    assert len(names) == len(set(names))
    for r in RULES:
        assert re.fullmatch(r"[A-Z]{3}\d{3}", r.rule.code), r.rule.code
        assert r.rule.family in FAMILIES, r.rule.code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", r.rule.name), r.rule.name
        assert r.rule.summary and not r.rule.summary.endswith("."), r.rule.code


@pytest.mark.parametrize("reg", RULES, ids=[r.rule.code for r in RULES])
def test_docstring_has_all_sections(reg):
    sections = reg.sections
    missing = [s for s in DOC_SECTIONS if s not in sections]
    assert not missing, f"{reg.rule.code} docstring lacks sections: {missing}"
    for s in DOC_SECTIONS:
        assert sections[s].strip(), f"{reg.rule.code}: empty section {s}"
    for opt in reg.rule.options:
        assert opt in sections["Options"], f"{reg.rule.code}: option {opt} undocumented"


@pytest.mark.parametrize("reg", CHECKED, ids=[r.rule.code for r in CHECKED])
def test_rule_has_failing_and_passing_fixtures(reg):
    mine = [c for c in CASES if c.code == reg.rule.code and not c.is_fixed_twin]
    failing = [
        c
        for c in mine
        if any(code == reg.rule.code for _, code in expected_markers(c.path.read_text(encoding="utf-8")))
    ]
    passing = [c for c in mine if not expected_markers(c.path.read_text(encoding="utf-8"))]
    assert failing, f"{reg.rule.code}: no failing fixture in {FIXTURES / reg.rule.code}"
    assert passing, f"{reg.rule.code}: no passing fixture in {FIXTURES / reg.rule.code}"


@pytest.mark.parametrize("reg", CHECKED, ids=[r.rule.code for r in CHECKED])
def test_fix_availability_matches_fixtures(reg):
    twins = [c for c in CASES if c.code == reg.rule.code and not c.is_fixed_twin and c.fixed_twin.exists()]
    if reg.rule.fix != FixAvailability.NEVER:
        assert twins, f"{reg.rule.code} declares fixes but has no <case>.fixed.yaml twin"
    else:
        assert not twins, f"{reg.rule.code} declares no fix but has a .fixed.yaml twin"


def _yaml_block(section: str) -> str | None:
    m = re.search(r"```ya?ml\n(.*?)```", section, re.S)
    return m.group(1) if m else None


@pytest.mark.parametrize("reg", CHECKED, ids=[r.rule.code for r in CHECKED])
def test_docstring_examples_behave(reg, tmp_path):
    from ailint.engine.config import Settings
    from ailint.engine.run import lint

    sections = reg.sections
    bad, good = _yaml_block(sections.get("Example", "")), _yaml_block(sections.get("Use instead", ""))
    assert bad is not None and good is not None, f"{reg.rule.code}: Example and Use instead need ```yaml blocks"
    for text, should_fire in ((bad, True), (good, False)):
        f = tmp_path / ("bad.yaml" if should_fire else "good.yaml")
        f.write_text(text, encoding="utf-8")
        s = Settings(root=str(tmp_path))
        s.select = [reg.rule.code]
        s.profile = profile_for(text)
        found = [x for x in lint([str(f)], s).findings if x.code == reg.rule.code]
        assert bool(found) == should_fire, (
            f"{reg.rule.code}: the {'Example' if should_fire else 'Use instead'} block "
            f"{'produced no finding' if should_fire else 'produced: ' + '; '.join(x.message for x in found)}"
        )


def test_rule_docs_dedent_as_inspect_cleandoc_does():
    """The registry dedents rule docs itself (no `inspect` in a run): the same text as
    `inspect.cleandoc` on every rule's doc and on odd shapes."""
    import importlib
    import inspect

    from ailint.engine.registry import _dedent

    docs = [importlib.import_module(r.module).__doc__ for r in all_rules().values() if r.module]
    docs += [None, "", "x", "  x\n    a\n      b\n\n", "\n\n  a\n  b\n", "first\n\tx\n  y", "a\n   \n  b  \n"]
    assert len(docs) > 80
    for d in docs:
        assert _dedent(d) == inspect.cleandoc(d or "")


def test_kind_index_answers_what_each_rule_says_of_every_kind():
    """The engine dispatches through `KindIndex`; it must pick exactly the rules, in order,
    whose `applies_to` says yes, for every kind a rule names, in its group, in another
    group and in none, and for a kind no rule names."""
    from ailint.core.model import K8sObject
    from ailint.core.rule import KindIndex

    rules = [r.rule for r in RULES]
    index = KindIndex(rules)
    probes: set[tuple[str, str]] = {("NoRuleNamesThis", ""), ("NoRuleNamesThis", "example.com")}
    for rule in rules:
        for target in rule.kinds:
            group, _, kind = target.rpartition("/")
            for g in {group, "", "apps", "other.example.com", f"{group}.x"}:
                probes.add((kind, g))
    assert len(probes) > 100
    for kind, group in sorted(probes):
        api_version = f"{group}/v1" if group else "v1"
        obj = K8sObject(None, 0, {"apiVersion": api_version, "kind": kind}, {})  # type: ignore[arg-type]
        assert obj.group == group
        want = [n for n, rule in enumerate(rules) if rule.applies_to(obj)]
        assert index.matching(kind, group) == want, (kind, group)


def test_a_rule_that_crashes_is_an_ail003_finding_and_the_run_goes_on(tmp_path):
    """A check that raises, and a rule whose module cannot be imported, each become an
    AIL003 finding on the object (the exception, where it was raised), and the other rules
    still run on it: no traceback reaches the user."""
    from ailint.core.model import Severity
    from ailint.core.rule import Rule, Scope
    from ailint.engine.config import Settings
    from ailint.engine.registry import RegisteredRule, _LazyCheck
    from ailint.engine.run import lint

    def boom(obj, ctx, opts):
        raise ZeroDivisionError("the rule divided by zero")
        yield  # a generator, as checks are

    def fine(obj, ctx, opts):
        from ailint.core.model import Finding

        yield Finding("XOK001", "still-runs", Severity.INFO, "ran", obj.file, obj.span(()), obj.ref)

    def declared(code: str, name: str, scope: Scope = Scope.OBJECT) -> Rule:
        return Rule(
            code=code, name=name, severity=Severity.WARNING, summary="a test rule", kinds=("ConfigMap",), scope=scope
        )

    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    rules = [
        RegisteredRule(declared("XCR001", "crashes"), boom, "doc", "tests"),
        RegisteredRule(
            declared("XCR002", "cannot-import", Scope.BUNDLE), _LazyCheck("ailint.rules.no_such_rule"), "doc", "tests"
        ),
        RegisteredRule(declared("XOK001", "still-runs"), fine, "doc", "tests"),
        all_rules()["AIL003"],
    ]
    result = lint([str(manifest)], Settings(root=str(tmp_path)), rules=rules)
    by_code = {}
    for f in result.findings:
        by_code.setdefault(f.code, []).append(f.message)
    assert [m for m in by_code["AIL003"] if m.startswith("XCR001 crashed on this object (ZeroDivisionError")], by_code
    assert [m for m in by_code["AIL003"] if m.startswith("XCR002 crashed on this object (ModuleNotFoundError")], by_code
    assert by_code["XOK001"] == ["ran"]
