"""A source's line table: where each line starts, and the positions read from it.

Every finding's line and column, every code frame and every fix's offsets come from
`SourceFile.line_starts`; only `\\n` ends a line there, as in libyaml's marks (a lone `\\r`,
`\\x85` or `\\u2028` is text), whatever the table is computed by."""

from __future__ import annotations

from ailint.core.model import SourceFile
from hypothesis import given
from hypothesis import strategies as st

# the line ends Python's `splitlines` knows besides `\n`, each of which must stay text here
TEXTS = st.text(alphabet=st.sampled_from(["a", "é", " ", "\n", "\r", "\x85", "\u2028", "\x0c", "\x1e"]))


def _reference(text: str) -> list[int]:
    return [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]


@given(TEXTS)
def test_each_line_starts_after_a_newline_and_nowhere_else(text: str) -> None:
    assert SourceFile("f.yaml", "f.yaml", text).line_starts == _reference(text)


@given(TEXTS, st.data())
def test_a_position_and_its_offset_are_each_others_inverse(text: str, data: st.DataObject) -> None:
    src = SourceFile("f.yaml", "f.yaml", text)
    offset = data.draw(st.integers(min_value=0, max_value=len(text)))
    line, col = src.position(offset)
    assert text.count("\n", 0, offset) + 1 == line
    assert src.offset(line, col) == offset
    assert src.line_text(line) == text.split("\n")[line - 1].rstrip("\r")


def test_the_table_is_worked_out_once() -> None:
    src = SourceFile("f.yaml", "f.yaml", "a: 1\nb: 2\n")
    assert src.line_starts is src.line_starts
    assert src.line_starts == [0, 5, 10]
