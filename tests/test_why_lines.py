"""Issue 16 item 3: a rule with several conditions explains the one that fired (its harm),
and the sentences rules pin with `Rule.why_when` exist in their "Why is this bad?"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ailint.doors.cli import cli
from ailint.engine.registry import all_rules
from ailint.report.explain import sentences
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]


def _whys(code: str, fixture: str) -> list[tuple[str, str]]:
    """(finding line, why line) of a fixture's `code` findings in text output."""
    args = ["check", "--no-config", "--no-color", "--select", code, str(ROOT / "fixtures" / code / fixture)]
    out = CliRunner().invoke(cli, args, catch_exceptions=False).output
    lines = out.splitlines()
    return [
        (lines[i], next(x.strip() for x in lines[i:] if x.strip().startswith("why:")))
        for i, line in enumerate(lines)
        if f": {code} [" in line
    ]


@pytest.mark.parametrize(
    ("code", "fixture", "said", "harm"),
    [
        ("SEC005", "cilium_to_world.yaml", "is not an allowlist", "why: Without an allowlist the data leaves"),
        ("SEC005", "cronjob_and_shared_labels.yaml", "no NetworkPolicy", "why: A prompt-injected agent can be told"),
        ("SEC005", "sandbox_template_managed_default.yaml", "SandboxTemplate", "why: Without an allowlist"),
        ("SEC007", "deployment_tokens.yaml", "AWS_SECRET_ACCESS_KEY", "why: Anything in a manifest ends up"),
        ("SEC007", "deployment_tokens.yaml", "Hugging Face token", "why: A Hugging Face or NGC token leaked"),
        ("SEC007", "placeholders_named_values.yaml", "nvapi-XXXX", "why: Anything in a manifest ends up"),
    ],
)
def test_why_is_the_harm_of_the_condition_that_fired(code: str, fixture: str, said: str, harm: str) -> None:
    """SEC005 and SEC007 explain the harm of the condition that fired, never the remedy
    sentence their words happen to match ("Plain NetworkPolicies cannot name domains",
    "Secrets ... keep the value out of the manifest")."""
    hits = [why for line, why in _whys(code, fixture) if said in line]
    assert hits, _whys(code, fixture)
    assert all(w.startswith(harm) for w in hits), hits


def test_why_when_names_sentences_of_the_why_section() -> None:
    """Every (pattern, opening) a rule gives in `why_when` opens a sentence of its own
    "Why is this bad?" section, and every pattern compiles."""
    used = 0
    for code, reg in all_rules().items():
        sents = sentences(reg.sections.get("Why is this bad?", ""))
        for pattern, opening in reg.rule.why_when:
            re.compile(pattern)
            assert any(s.startswith(opening) for s in sents), (code, opening)
            used += 1
    assert used >= 4


@pytest.mark.parametrize(
    "doc",
    [
        "A warning when the pool has no limit, and an error when it has no taint either.",
        "An ERROR when the job has 2 or more workers; INFO otherwise.",  # any case
        "Severity: warning, for a pod that asks for a GPU.",
        "Nothing is said of any level here.",
        "Une erreur. An error when the café's pods (über-large) share one node.",  # not ASCII
        "An \u0130nfo when the \u017fervice has no port.",  # folds to `info` only as a pattern
        "",
    ],
)
def test_the_clauses_of_a_doc_are_those_asked_one_severity_at_a_time(doc: str) -> None:
    """The rule index finds each severity's clause with the doc made plain once, passing over
    a severity an ASCII doc never names; what it finds is what `clause_in_doc` finds."""
    from ailint.report.explain import clause_in_doc, clauses_in_doc

    severities = ["error", "warning", "info"]
    one_at_a_time = {sev: clause_in_doc(doc, sev) for sev in severities}
    assert clauses_in_doc(doc, severities) == {s: c for s, c in one_at_a_time.items() if c is not None}


def _plain_by_patterns(markdown: str) -> str:
    """What `explain._plain` makes of a docstring section, pattern by pattern."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"^\s*[-*]\s+", "", text, flags=re.M)
    return " ".join(text.split())


@pytest.mark.parametrize(
    "markdown",
    [
        "a `b` c `d",  # an odd backtick stays
        "``x`` and `y`",
        "```yaml\nkind: Pod\n```\nthen `z`",
        "[the docs](https://x.y/z) say `c`",
        "`a` [b `c`](u) `",
        "- `x`\n* y\n  - z",
        "no markup at all",
    ],
)
def test_a_doc_made_plain_is_what_the_patterns_make_of_it(markdown: str) -> None:
    from ailint.report.explain import _plain

    assert _plain(markdown) == _plain_by_patterns(markdown)


def test_every_rule_doc_made_plain_is_what_the_patterns_make_of_it() -> None:
    from ailint.report.explain import _plain

    for code, reg in all_rules().items():
        assert _plain(reg.doc) == _plain_by_patterns(reg.doc), code
