"""The registry's rule index: every rule's metadata survives its JSON round trip.

When one rule field does not (a new field, or a tuple that comes back as a list), the index is
silently never written and every run imports all rule modules: about 0.2 s of every one-file
run. It broke that way twice while new `Rule` fields were added; this test fails at once.
"""

from __future__ import annotations

import json

from ailint.engine import registry


def test_every_rule_round_trips_through_the_index():
    broken = []
    for code, reg in registry.all_rules().items():
        encoded = json.loads(json.dumps(registry._rule_to_json(reg.rule)))
        if registry._rule_from_json(encoded) != reg.rule:
            broken.append(code)
    assert broken == [], f"rule metadata the index cannot carry exactly: {broken}"


def test_discovery_writes_an_index_that_loads_back(tmp_path, monkeypatch):
    monkeypatch.setenv("AILINT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("AILINT_NO_CACHE", raising=False)
    path = registry._index_file()
    assert path is not None and path.startswith(str(tmp_path))
    found = registry._discover()
    registry._write_index(path, found)
    loaded = registry._load_index(path)
    assert loaded is not None, "the index was not written or does not load"
    assert {c: r.rule for c, r in loaded.items()} == {c: r.rule for c, r in found.items()}
