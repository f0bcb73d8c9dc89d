"""The registry's rule index: every rule's metadata survives its JSON round trip.

When one rule field does not (a new field, or a tuple that comes back as a list), the index is
silently never written and every run imports all rule modules: about 0.2 s of every one-file
run. It broke that way twice while new `Rule` fields were added; this test fails at once.
"""

from __future__ import annotations

import json
import sys

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


def test_docs_kept_beside_the_index_are_served_without_importing_a_rule(tmp_path, monkeypatch):
    """A SARIF report describes every rule: the docs come from the file written with the
    index (the same code's), not from importing 110 rule modules."""
    monkeypatch.setenv("AILINT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("AILINT_NO_CACHE", raising=False)
    monkeypatch.setattr(registry, "_DOCS", None)
    found = registry._discover()
    registry._write_index(registry._index_file(), found)
    loaded = registry._load_index(registry._index_file())
    assert loaded is not None
    assert registry._kept_docs() == {r.module: r._doc for r in found.values()}

    def no_import(name, *a, **k):
        raise AssertionError(f"{name} imported for its doc")

    monkeypatch.setattr(registry.importlib, "import_module", no_import)
    for reg in loaded.values():  # as in a run that did not import them (a SARIF report)
        monkeypatch.delitem(sys.modules, reg.module, raising=False)
    for code, reg in loaded.items():
        assert reg.doc == found[code].doc and reg.doc, code
    # no docs file (removed, unreadable): each doc is read from its module again
    monkeypatch.undo()
    monkeypatch.setenv("AILINT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(registry, "_DOCS", None)
    docs = registry._docs_file()
    assert docs is not None
    with open(docs, "w") as fh:
        fh.write("{torn")
    reloaded = registry._load_index(registry._index_file())
    assert reloaded is not None and all(reloaded[c].doc == found[c].doc for c in found)
