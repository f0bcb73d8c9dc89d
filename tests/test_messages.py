"""Issue 16 item 7, kept: a rule names another object through `ctx.describe(obj)` (`Kind
namespace/name (path from the run root)`), never by hand as `{o.kind} {o.name}`."""

from __future__ import annotations

import re

from conftest import ROOT

# `{x.kind} {x.name}` of any object but the one checked (`obj`), which the report locates itself
_BY_HAND = re.compile(r"\{(?!obj\b)([a-z_][a-z0-9_]*(?:\[\d\])?)\.kind\} \{\1\.name")


def test_rules_name_other_objects_with_describe() -> None:
    hits = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in sorted((ROOT / "rules").rglob("*.py"))
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if _BY_HAND.search(line)
    ]
    assert not hits, "name other objects with ctx.describe(o):\n" + "\n".join(hits)


def test_the_pattern_catches_a_hand_made_name() -> None:
    assert _BY_HAND.search('f"mounted by {o.kind} {o.name}"')
    assert _BY_HAND.search('f"{users[0].kind} {users[0].name}"')
    assert not _BY_HAND.search('f"{obj.kind} {obj.name} has no limit"')
