"""The registry's rule index: every rule's metadata survives its round trip through the index.

When one rule field does not (a new field, or a tuple that comes back as a list), the index is
silently never written and every run imports all rule modules: about 0.2 s of every one-file
run. It broke that way twice while new `Rule` fields were added; this test fails at once.
"""

from __future__ import annotations

import marshal
import sys

import pytest
from ailint.engine import registry


def test_every_rule_round_trips_through_the_index():
    broken = []
    for code, reg in registry.all_rules().items():
        row = registry._rule_to_row(reg.rule)
        if not registry._plain(row) or registry._rule_from_row(marshal.loads(marshal.dumps(row))) != reg.rule:
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


def test_the_index_keeps_what_each_doc_says_of_each_severity(tmp_path, monkeypatch):
    """A report's severity reasons come from the index as the doc says them: the clause kept
    for each rule and severity is the one `clause_in_doc` finds in the doc, and none is kept
    where the doc says nothing of a severity."""
    from ailint.core.model import Severity
    from ailint.report import explain

    monkeypatch.setenv("AILINT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("AILINT_NO_CACHE", raising=False)
    path = registry._index_file()
    found = registry._discover()
    assert all(reg.clauses is None for reg in found.values())  # discovered: found when asked
    registry._write_index(path, found)
    loaded = registry._load_index(path)
    assert loaded is not None
    kept = 0
    for code, reg in loaded.items():
        assert reg.clauses is not None, code
        for sev in Severity:
            said = explain.clause_in_doc(found[code].doc, sev.value)
            assert reg.clauses.get(sev.value) == said, (code, sev)
            kept += said is not None
    assert kept >= 20  # (the docs say "an error when ..." of many rules)
    # a report asks the index, not the doc
    monkeypatch.setattr(registry, "_REGISTRY", loaded)
    monkeypatch.setattr(registry, "_ALL", None)
    explain._doc_clause.cache_clear()
    monkeypatch.setattr(explain, "clause_in_doc", lambda doc, sev: pytest.fail("read the doc"))
    code, reg = next((c, r) for c, r in loaded.items() if r.clauses)
    sev, clause = next(iter(reg.clauses.items()))
    assert explain._doc_clause(code, sev) == clause
    explain._doc_clause.cache_clear()


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


def test_a_damaged_or_foreign_index_is_discovered_again(tmp_path, monkeypatch):
    """A torn index, one whose bytes do not match their CRC, and one whose rows are not of the
    shape the index writes are not loaded: the rules are discovered."""
    import binascii

    monkeypatch.setenv("AILINT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("AILINT_NO_CACHE", raising=False)
    path = registry._index_file()
    assert path is not None
    registry._write_index(path, registry._discover())
    with open(path, "rb") as fh:
        good = fh.read()
    assert registry._load_index(path) is not None

    def framed(value):
        rows = marshal.dumps(value)
        return binascii.crc32(rows).to_bytes(4, "big") + rows

    entries = marshal.loads(good[4:])
    module, check, row, clauses = entries[0]
    damaged = [
        good[: len(good) // 2],  # torn
        good[:100] + bytes([good[100] ^ 1]) + good[101:],  # a flipped bit
        b"",
        framed([list(e) for e in entries]),  # lists, not rows
        framed(((module, check, row[:-1], clauses),)),  # a row one field short
        framed(((module, check, (*row, ()), clauses),)),  # a row one field long
        framed(((module, check, row),)),  # no clauses
        framed(((module, check, row, list(clauses)),)),
        framed((module, check, row, clauses)),  # a row, not rows
    ]
    for data in damaged:
        with open(path, "wb") as fh:
            fh.write(data)
        assert registry._load_index(path) is None, data[:40]
