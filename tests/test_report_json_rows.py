"""The JSON report writes each row of its top-level lists with one C encoder made once
(`ailint.report.json._C_ROW`), not with `JSONEncoder.encode`, which makes one per row: the
text must be the same either way, for any row a finding or a file can make."""

from __future__ import annotations

import json

from ailint.report import json as report_json
from hypothesis import given, settings
from hypothesis import strategies as st

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),  # (a report holds no NaN; the encoder's `allow_nan` is the same)
    st.text(),  # non-ASCII, control characters, quotes, backslashes, lone surrogates
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20,
)
rows = st.lists(st.dictionaries(st.text(max_size=10), values, max_size=6), max_size=8)


def document(found: list, files: list) -> dict:
    return {
        "tool": {"name": "ailint", "version": "0"},
        "files": report_json.Rows(files, lambda x: x),
        "findings": report_json.Rows(found, lambda x: x),
        "summary": {"files": len(files), "findings": len(found)},
    }


@settings(max_examples=300, deadline=None)
@given(rows, rows)
def test_rows_as_the_python_encoder_writes_them(found, files):
    assert report_json._C_ROW is not None  # (CPython: the C encoder is there to be used)
    fast = "".join(report_json.dumps_chunks(document(found, files)))
    saved = report_json._C_ROW
    report_json._C_ROW = None  # the fallback: `JSONEncoder.encode`, row by row
    try:
        slow = "".join(report_json.dumps_chunks(document(found, files)))
    finally:
        report_json._C_ROW = saved
    assert fast == slow
    back = json.loads(fast)
    assert back["findings"] == json.loads(json.dumps(found))
    assert back["files"] == json.loads(json.dumps(files))


def test_each_row_on_a_line_of_its_own():
    found = [{"code": "GPU002", "message": 'ä "q" \\ \n'}, {"code": "SEC007", "n": [1, 2.5, None, True]}]
    text = report_json.dumps(document(found, []))
    lines = text.splitlines()
    assert '    {"code": "GPU002", "message": "ä \\"q\\" \\\\ \\n"},' in lines
    assert '    {"code": "SEC007", "n": [1, 2.5, null, true]}' in lines
