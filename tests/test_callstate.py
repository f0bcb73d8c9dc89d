"""The stored bundle calls (`ailint.engine.callstate`): what the next run reads back is what
this run wrote, object by object, across runs that keep some files' entries and rewrite
others, and through the rebuilding of the tables once most of them is stale."""

from __future__ import annotations

import marshal
from array import array

from ailint.engine.callstate import LAYOUT, CallsWriter, StoredCalls
from hypothesis import given, settings
from hypothesis import strategies as st

CODES = ("REL003", "REL005", "SEC001", "SRV008")
READS = st.tuples(*(st.sampled_from(["*", "@pods", "@pods/default", "Service", "NodePool/x"]),) * 2).map(
    lambda t: tuple(sorted(set(t)))
)
# one object's calls: per rule (in rule order) whether it was called, what it read, what it found
CALL = st.tuples(st.booleans(), READS, st.one_of(st.none(), st.just([("X001", "m")])))
OBJECT = st.lists(CALL, min_size=len(CODES), max_size=len(CODES))
FILES = st.dictionaries(st.sampled_from([f"f{n}.yaml" for n in range(12)]), st.lists(OBJECT, max_size=4), max_size=12)


def _write(prev: StoredCalls, files: dict[str, list[list]], keep: set[str]) -> tuple:
    """A run's state: the files of `keep` as `prev` stored them, the others from `files`."""
    w = CallsWriter(prev, CODES)
    for d, objects in files.items():
        if d in keep and d in prev.files:
            got = prev.of_file(d)
            assert got is not None
            w.keep_file(d, prev, got)
            continue
        sigs, found = [], {}
        for j, calls in enumerate(objects):
            rules, reads = array("H"), array("I")
            for t, (called, read, findings) in enumerate(calls):
                if called:
                    rules.append(t)
                    reads.append(w.read_index(read))
                    if findings:
                        found.setdefault(j, {})[t] = findings
            sigs.append(w.signature(rules, reads))
        w.add_file(d, sigs, found)
    return marshal.loads(marshal.dumps(w.part()))  # as the next run reads it


def _decoded(state: StoredCalls, d: str) -> list[list]:
    sigs = state.of_file(d)
    assert sigs is not None
    found = state.found(d)
    out = []
    for j, sig in enumerate(sigs):
        rules, reads = state.calls(sig)
        per_rule = dict(zip(rules, reads, strict=True))
        out.append(
            [
                (t in per_rule, state.reads[per_rule[t]] if t in per_rule else None, found.get(j, {}).get(t))
                for t in range(len(CODES))
            ]
        )
    return out


def _expected(objects: list[list]) -> list[list]:
    return [[(c, r if c else None, f if c else None) for c, r, f in calls] for calls in objects]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(FILES, st.sets(st.sampled_from([f"f{n}.yaml" for n in range(12)]))), min_size=1, max_size=8))
def test_each_run_reads_back_what_the_last_wrote(runs: list[tuple[dict, set]]) -> None:
    state = StoredCalls(None, CODES)
    held: dict[str, list[list]] = {}  # what each file's objects were called for, as last written
    for files, keep in runs:
        part = _write(state, files, keep)
        written = {d: (held[d] if d in keep and d in state.files else _expected(objs)) for d, objs in files.items()}
        state = StoredCalls(part, CODES)
        assert set(state.files) == set(files)
        for d, want in written.items():
            assert _decoded(state, d) == want, d
        held = written


def test_the_tables_are_rebuilt_once_most_of_them_is_stale() -> None:
    """Each run keeps the last one's tables (a kept entry's indexes stand); once they are
    mostly what no entry uses, they are rebuilt from what is, and read back the same."""
    state = StoredCalls(None, CODES)
    for n in range(400):  # a new read and signature each run, the old ones dropped
        files = {"a.yaml": [[(True, (f"Kind{n}",), None), (False, (), None), (True, ("*",), None), (False, (), None)]]}
        state = StoredCalls(_write(state, files, set()), CODES)
        assert _decoded(state, "a.yaml") == _expected(files["a.yaml"])
    assert len(state.sigs) < 300 and len(state.reads) < 300  # (400 would be there without the rebuild)


def test_a_state_of_other_rules_or_another_layout_is_no_state() -> None:
    files = {"a.yaml": [[(True, ("*",), [("X001", "m")])] * len(CODES)]}
    part = _write(StoredCalls(None, CODES), files, set())
    assert StoredCalls(part, CODES).files
    assert not StoredCalls(part, CODES[:-1]).files
    assert not StoredCalls(("calls-0", *part[1:]), CODES).files
    assert part[0] == LAYOUT
    for broken in (None, (), ("x",), {"a": 1}, (LAYOUT, CODES, {}, [], {})):
        assert not StoredCalls(broken, CODES).files
    layout, codes, reads, sigs, stored = part
    rule_past = array("H", [len(CODES)]).tobytes()
    read_past = array("I", [len(reads)]).tobytes()
    for sig in ((rule_past, array("I", [0]).tobytes()), (array("H", [0]).tobytes(), read_past)):
        assert not StoredCalls((layout, codes, reads, [*sigs, sig], stored), CODES).files
    past = {"a.yaml": (array("I", [len(sigs)]).tobytes(), None)}  # a signature the tables lack
    assert StoredCalls((layout, codes, reads, sigs, past), CODES).of_file("a.yaml") is None
    unread = {"a.yaml": (array("I", [0]).tobytes(), {0: {0: []}})}  # findings not as the writer keeps them
    assert StoredCalls((layout, codes, reads, sigs, unread), CODES).of_file("a.yaml") is None
