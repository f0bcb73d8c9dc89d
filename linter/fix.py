"""Applying fixes: non-overlapping text edits against the original bytes.

`apply_to_text` is the core every path shares (the CLI's `--fix`/`--diff`, the fixture
twins, the property tests): edits of one fix apply together or not at all, a fix that
overlaps an already accepted one waits for the next pass.
"""

from __future__ import annotations

from typing import Iterable

from .model import Applicability, Edit, Fix


def select_fixes(fixes: Iterable[Fix], unsafe: bool) -> list[Fix]:
    return [f for f in fixes if f.applicability == Applicability.SAFE or unsafe]


def apply_to_text(text: str, fixes: Iterable[Fix]) -> tuple[str, list[Fix]]:
    """Apply every fix whose edits overlap no earlier accepted edit; return (text, applied)."""
    accepted: list[Edit] = []
    applied: list[Fix] = []
    seen: set[tuple[int, int, str]] = set()
    for fix in sorted(fixes, key=lambda f: min(e.start for e in f.edits)):
        edits = [e for e in fix.edits if (e.start, e.end, e.content) not in seen]
        if not edits:
            applied.append(fix)  # identical to edits already accepted
            continue
        if any(_overlaps(e, a) for e in edits for a in accepted):
            continue
        accepted.extend(edits)
        seen.update((e.start, e.end, e.content) for e in edits)
        applied.append(fix)
    out = text
    for e in sorted(accepted, key=lambda e: (e.start, e.end), reverse=True):
        out = out[: e.start] + e.content + out[e.end:]
    return out, applied


def _overlaps(a: Edit, b: Edit) -> bool:
    if a.start == a.end and b.start == b.end:
        return a.start == b.start  # two inserts at one point: order would be ambiguous
    return a.start < b.end and b.start < a.end or (a.start == a.end and b.start < a.start < b.end) \
        or (b.start == b.end and a.start < b.start < a.end)
