"""Every fixture: findings match the `# expect:` markers and the `.expected` snapshot;
fixable cases turn into their `.fixed.yaml` twin, and fixing the twin changes nothing."""

from __future__ import annotations

import os

import pytest
from fixture_harness import all_cases, expected_markers, render_snapshot, run_rule

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_markers_and_snapshot(case, update_snapshots):
    text = case.path.read_text(encoding="utf-8")
    result = run_rule(case.code, case.path)
    own = [f for f in result.findings if f.code == case.code]
    got = sorted((f.span.line, f.code) for f in own)
    assert got == expected_markers(text), render_snapshot(own)
    # no crash of any kind while checking the fixture
    assert not [f for f in result.findings if f.code == "AIL003"], render_snapshot(result.findings)
    snap = case.snapshot
    rendered = render_snapshot(own)
    if not snap.exists() and own and os.environ.get("CI"):
        pytest.fail(f"missing snapshot {snap.name}; run pytest --update-snapshots and commit it")
    if update_snapshots or not snap.exists():
        if own:
            snap.write_text(rendered, encoding="utf-8")
        elif snap.exists():
            snap.unlink()
    elif own or snap.exists():
        assert rendered == snap.read_text(encoding="utf-8")
