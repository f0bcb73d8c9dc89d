"""Fixable fixtures: fixing `<case>.yaml` gives `<case>.fixed.yaml` byte for byte, and
fixing the twin changes nothing (the fixed point)."""

from __future__ import annotations

import re

import pytest
from ailint.fix.apply import apply_to_text
from fixture_harness import all_cases, run_rule

TWINS = [c for c in all_cases() if not c.is_fixed_twin and c.fixed_twin.exists()]


def fix_until_stable(code, path, tmp_path, passes=5):
    text = path.read_text(encoding="utf-8")
    work = tmp_path / path.name
    work.write_text(text, encoding="utf-8")
    for _ in range(passes):
        result = run_rule(code, work)
        fixes = [f.fix for f in result.findings if f.fix is not None and f.code == code]
        new, _applied = apply_to_text(text, fixes)
        if new == text:
            break
        text = new
        work.write_text(text, encoding="utf-8")
    return text


def strip_markers(text):
    """Marker comments are test annotations, not content: compare without them."""
    return re.sub(r"[ \t]*#\s*expect(-next-line)?:[^\n]*", "", text)


@pytest.mark.parametrize("case", TWINS, ids=[c.id for c in TWINS])
def test_fix_gives_twin(case, tmp_path):
    fixed = fix_until_stable(case.code, case.path, tmp_path)
    assert strip_markers(fixed) == strip_markers(case.fixed_twin.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", TWINS, ids=[c.id for c in TWINS])
def test_twin_is_fixed_point(case, tmp_path):
    twin = case.fixed_twin
    assert fix_until_stable(case.code, twin, tmp_path) == twin.read_text(encoding="utf-8")
