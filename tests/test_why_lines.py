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
