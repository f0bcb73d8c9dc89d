"""Bounded memory: what a file keeps after its single-object rules have run.

A run keeps every object until the cross-resource (bundle) rules have seen them all. The
data of an object is what those rules read, but two other parts are only needed for the
few objects and files that get a finding:

- the position table (path -> span, about twice the size of the data), and
- the source text (kept for fixes, suppressions and the reporters).

`spill(fr)` drops both once a file's object rules are done: the position table becomes a
`LazyPositions` that re-parses the file the first time a span or an edit needs it, and the
text is re-read from disk on first use (checked against a CRC of the text that was parsed,
so a file changed during the run is an error, never a wrong span or fix). Re-parsed tables
and re-read texts live in small LRU caches, so memory stays bounded however many files the
run has. Standard input is never spilled (it cannot be read twice).

Spilling never changes a result: the re-parse is the same deterministic parse of the same
text, and the tables it yields are identical (tests/test_bounded.py compares full runs).
"""

from __future__ import annotations

import marshal
import zlib
from array import array
from collections import OrderedDict
from types import MemberDescriptorType

# (FileChangedError is the model's, where a run that spills nothing finds it without this module)
from ailint.core.model import FileChangedError as FileChangedError
from ailint.core.model import FileResult, Path, Pos, SourceFile
from ailint.core.tables import LazyPositions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# How many re-read texts and re-parsed files stay in memory at once. Bundle rules and the
# reporters work through findings file by file, so a small window has a high hit rate.
TEXT_CACHE = 32
TABLE_CACHE = 16

# the `text` slot of SourceFile (a member descriptor; holds a str or, spilled, a _TextRef)
_TEXT_SLOT: MemberDescriptorType = vars(SourceFile)["text"]


class _TextRef:
    """Stands in the `text` slot of a spilled SourceFile: how to get the text back."""

    __slots__ = ("crc", "length", "starts")

    def __init__(self, text: str) -> None:
        self.crc = _crc(text)
        self.length = len(text)
        self.starts: bytes | None = None  # the line-start table, when the cache kept it


def _crc(text: str, start: int = 0) -> int:
    """The CRC of `text` (its UTF-8 bytes), continued from `start` (the CRC of what precedes it)."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass"), start)


def text_ref(text: str) -> tuple[int, int]:
    """(CRC, length) of a text: what a spilled source checks the text it reads back against."""
    return _crc(text), len(text)


def head_length(text: str) -> int:
    """The length of a text's head: the text up to the end of its last line that holds
    more than blanks or a comment (with that line's newline). An edit that keeps the head
    and the parsed data changed only comments and blank lines after the last content: the
    results cache then keeps the file's own cross-resource calls as they were
    (`ailint.engine.tracking`)."""
    end = len(text)
    while end > 0:
        start = text.rfind("\n", 0, end - 1) + 1  # the last line not yet looked at: text[start:end]
        line = text[start:end].strip()
        if line and not line.startswith("#"):
            break
        end = start
    return end


def text_ref_and_head(text: str) -> tuple[int, int, tuple[int, int]]:
    """`text_ref(text)` with the (length, CRC) of its head (`head_length`), from one encoding
    of the text."""
    n = head_length(text)
    crc = _crc(text[:n])
    return _crc(text[n:], crc) if n < len(text) else crc, len(text), (n, crc)


def spilled_source(path: str, display: str, crc: int, length: int, starts: bytes | None = None) -> SpilledSource:
    """A source not read yet: its text is read on first use and must have this CRC and
    length (`text_ref`), else the run stops with FileChangedError (never a wrong span).
    `starts` (`line_starts_bytes`): offsets turn into lines and columns without the text."""
    ref = _TextRef.__new__(_TextRef)
    ref.crc, ref.length, ref.starts = crc, length, starts
    return _restore(path, display, ref, {})


def line_starts_bytes(src: SourceFile) -> bytes:
    """A source's line-start table, packed (4 bytes a line)."""
    return array("I", src.line_starts).tobytes()


# id -> (source, its _TextRef) of spilled sources whose text is loaded right now
_TEXTS: OrderedDict[int, tuple[SpilledSource, _TextRef]] = OrderedDict()


class SpilledSource(SourceFile):
    """A SourceFile whose text is read back from disk when it is needed (same layout)."""

    __slots__ = ()

    @property  # type: ignore[override]
    def text(self) -> str:
        value = _TEXT_SLOT.__get__(self, SourceFile)
        if value.__class__ is str:
            return value
        return _reload(self, value)

    @text.setter
    def text(self, value: str) -> None:
        _TEXT_SLOT.__set__(self, value)

    @property
    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            value = _TEXT_SLOT.__get__(self, SourceFile)
            if value.__class__ is _TextRef and value.starts is not None:
                self._line_starts = array("I", value.starts).tolist()  # no need to read the text
                return self._line_starts
        return SourceFile.line_starts.__get__(self, SourceFile)  # type: ignore[attr-defined,no-any-return]

    def __reduce__(self) -> Any:  # to a worker's parent: the reference, never the text
        value = _TEXT_SLOT.__get__(self, SourceFile)
        hit = _TEXTS.get(id(self))
        ref = hit[1] if hit is not None and hit[0] is self else value
        if ref.__class__ is str:
            ref = _TextRef(ref)
        return (_restore, (self.path, self.display, ref, self.template_paths))


def _restore(path: str, display: str, ref: _TextRef, template_paths: dict[int, str]) -> SpilledSource:
    src = SpilledSource.__new__(SpilledSource)
    src.path, src.display, src.template_paths, src._line_starts = (
        path,
        display,
        template_paths,
        None,
    )
    _TEXT_SLOT.__set__(src, ref)
    return src


def _reload(src: SpilledSource, ref: _TextRef) -> str:
    from ailint.engine.load import decode

    try:
        with open(src.path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise FileChangedError(
            f"{src.display}: cannot read it again ({exc.strerror or exc}); was it removed during the run?"
        ) from exc
    text, problem = decode(raw, src.display)
    if text is None or problem is not None or len(text) != ref.length or _crc(text) != ref.crc:
        raise FileChangedError(f"{src.display} changed while ailint was running; run it again")
    _TEXT_SLOT.__set__(src, text)
    _TEXTS[id(src)] = (src, ref)
    while len(_TEXTS) > TEXT_CACHE:
        _, (old, old_ref) = _TEXTS.popitem(last=False)
        _TEXT_SLOT.__set__(old, old_ref)
        old._line_starts = None
    return text


class _FileTables:
    """Re-parses one spilled file on demand and hands out its objects' position tables."""

    __slots__ = ("count", "limits", "source")

    def __reduce__(self) -> Any:
        return (_FileTables, (self.source, self.limits, self.count))

    def __init__(self, source: SourceFile, limits: Any, count: int) -> None:
        self.source = source
        self.limits = limits
        self.count = count

    def table(self, index: int) -> dict[Path, Pos]:
        key = id(self)
        hit = _TABLES.get(key)
        if hit is None or hit[0] is not self:
            from ailint.engine.load import load_text

            fr = load_text(
                SourceFile(self.source.path, self.source.display, self.source.text),
                self.limits,
            )
            if len(fr.objects) != self.count:
                raise FileChangedError(
                    f"{self.source.display}: re-parsing gave {len(fr.objects)} objects, not {self.count}"
                )
            # (as plain dicts: a table the C reader packed is unpacked here, not at each read)
            hit = _TABLES[key] = (self, [o.positions.copy() for o in fr.objects])
            while len(_TABLES) > TABLE_CACHE:
                _TABLES.popitem(last=False)
        else:
            _TABLES.move_to_end(key)
        return hit[1][index]


_TABLES: OrderedDict[int, tuple[_FileTables, list[dict[Path, Pos]]]] = OrderedDict()


def spill(fr: FileResult, limits: Any) -> None:
    """Drop the position tables and the text of a file whose object rules have run."""
    src = fr.source
    if src is None or src.is_stdin or not fr.objects or src.__class__ is not SourceFile:
        return
    tables = _FileTables(src, limits, len(fr.objects))
    for i, obj in enumerate(fr.objects):
        obj.positions = LazyPositions(tables, i)
    text = _TEXT_SLOT.__get__(src, SourceFile)
    src.__class__ = SpilledSource
    _TEXT_SLOT.__set__(src, _TextRef(text))
    src._line_starts = None


def pack(fr: FileResult) -> None:
    """Marshal the position tables of a worker's file: the parent unpacks only those it reads.

    Pickling and unpickling the tables cost more than the rest of a file's result; marshal
    is several times faster and the parent needs the tables of few objects (their findings).
    """
    for obj in fr.objects:
        if obj.positions.__class__ is dict:
            obj.positions = LazyPositions(marshal.dumps(obj.positions), 0)
