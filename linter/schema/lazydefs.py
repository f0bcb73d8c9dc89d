"""The Kubernetes definitions file, decoded one definition at a time.

A version's `_definitions.json` (kubernetes-validate) holds some 800 definitions in 1.5 MB;
a run checks the kinds it meets, which reach a few dozen of them. Decoding the whole file
took a tenth of a one-file run and several MiB for the rest of it. The file is indented
JSON with each definition's name on a line of its own at four spaces, inside the top-level
`$defs`: the names and where their values start are found by one scan, each value is decoded
when it is first read (`json.JSONDecoder.raw_decode` at that offset), and the
group/version/kind entries are decoded alone, where they stand at six spaces.

A file of any other layout is decoded whole, as before (`load_definitions` falls back);
`tests/test_schema.py` compares both readings on every shipped version.

The scan itself (3 ms, and 0.7 ms for the group/version/kind entries) is kept in the cache
folder, keyed by the file's path, size and mtime, like the rule index: a later run reads the
file as bytes and takes the names, offsets and entries from there, after checking that every
name still stands where the index says (a file changed in place is scanned again), and
decodes only the definitions it reads (the file is ASCII, so the offsets are the same in the
bytes). A one-file run reads the definitions in 0.6 ms instead of 5. `AILINT_NO_CACHE=1`
turns it off.
"""

from __future__ import annotations

import bisect
import json
import os
from collections.abc import Iterator, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_HEAD = '{\n  "$defs": {\n'
_NAME_LINE = '\n    "'  # a definition's name, and nothing else, starts a line at four spaces
_GVK = '\n      "x-kubernetes-group-version-kind": '
_TOP = '\n  "'  # the keys after `$defs` ($schema, $id)
_DECODER = json.JSONDecoder()
_KEPT_MAGIC = b"AILS3\n"  # the kept scan of a definitions file (`_kept_index`); 3: no heads kept


class LazyDefinitions(Mapping[str, "Any"]):
    """`$defs` of a definitions file: names known at once, each value decoded on first read."""

    __slots__ = ("_decoded", "_ends", "_gvk", "_starts", "_text")

    def __init__(
        self, text: str | bytes | Any, starts: dict[str, int], gvk: list[tuple[str, list[Any]]] | None = None
    ) -> None:
        self._text = text  # bytes (a mapped file): an ASCII file with a kept scan, never decoded whole
        self._starts = starts
        self._decoded: dict[str, Any] = {}
        self._gvk = gvk  # the entries, when a kept scan had them
        self._ends: list[int] | None = None

    def __getitem__(self, name: str) -> Any:
        try:
            return self._decoded[name]
        except KeyError:
            start = self._starts[name]  # KeyError: not there
            text = self._text
            if not isinstance(text, str):  # its value ends before the next definition starts
                if self._ends is None:
                    self._ends = sorted(self._starts.values())
                after = bisect.bisect_right(self._ends, start)
                end = self._ends[after] if after < len(self._ends) else len(text)
                value, _ = _DECODER.raw_decode(text[start:end].decode("utf-8"))
            else:
                value, _ = _DECODER.raw_decode(text, start)
            self._decoded[name] = value
            return value

    def __contains__(self, name: object) -> bool:
        return name in self._starts

    def __iter__(self) -> Iterator[str]:
        return iter(self._starts)

    def __len__(self) -> int:
        return len(self._starts)

    def name_of(self, value: Any) -> str | None:
        """The name of the definition that is `value` (the object itself), among those
        decoded so far: a schema node a validator reached was decoded to get there."""
        for name, decoded in self._decoded.items():
            if decoded is value:
                return name
        return None

    def gvk_entries(self) -> Iterator[tuple[str, list[Any]]]:
        """(definition name, its `x-kubernetes-group-version-kind` list), without decoding
        the definitions."""
        kept = getattr(self, "_gvk", None)
        if kept is not None:
            yield from kept
            return
        yield from self._scan_gvk()

    def _scan_gvk(self) -> Iterator[tuple[str, list[Any]]]:
        text = self._text
        assert isinstance(text, str), "a kept scan has its entries"
        names = list(self._starts)
        starts = list(self._starts.values())
        at = text.find(_GVK)
        while at >= 0:
            value, end = _DECODER.raw_decode(text, at + len(_GVK))
            owner = bisect.bisect_right(starts, at) - 1
            if owner >= 0 and isinstance(value, list):
                yield names[owner], value
            at = text.find(_GVK, end)


def load_definitions(path: str) -> dict[str, Any]:
    """The definitions file at `path`, its `$defs` a `LazyDefinitions` when the layout is
    the one kubernetes-validate writes, else a dict decoded whole."""
    with open(path, "rb") as fh:
        stamp = os.fstat(fh.fileno())
        key = f"{os.path.abspath(path)}\0{stamp.st_size}\0{stamp.st_mtime_ns}".encode("utf-8", "surrogateescape")
        kept = _kept_index(key, fh) if stamp.st_size else None
        if kept is not None:
            return kept  # the file is mapped, not read: only the definitions a run reads are decoded
        data = fh.read()
    text = data.decode("utf-8")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")  # as reading it as text does
    lazy = _index(text)
    if lazy is None:
        return json.loads(text)
    if "\r" not in text and text.isascii():  # offsets in the text are offsets in the bytes
        _keep_index(key, lazy)
    return lazy


def _kept_file(key: bytes) -> str | None:
    from ailint.core.cachedir import kept_file

    return kept_file("defs", key, ".bin")


def _kept_index(key: bytes, definitions: Any) -> dict[str, Any] | None:
    """The scan an earlier run kept for the file open at `definitions` (ASCII with `\n` lines: kept
    only for such), when the names it samples still stand at their offsets; the file mapped.
    None otherwise (no cache, not kept, torn, another file's)."""
    import marshal
    import mmap

    from ailint.core.cachedir import read_sealed

    path = _kept_file(key)
    if path is None:
        return None
    payload = read_sealed(path, _KEPT_MAGIC, key)
    if payload is None:
        return None
    try:
        starts, gvk, top = marshal.loads(payload)
        data = mmap.mmap(definitions.fileno(), 0, access=mmap.ACCESS_READ)
        if not _stands(data, starts):
            return None
    except (OSError, ValueError, EOFError, TypeError, AttributeError):
        return None
    return {"$defs": LazyDefinitions(data, starts, gvk), **top}


_SAMPLED = 16  # every how many names a kept scan is checked at


def _stands(data: Any, starts: dict[str, int]) -> bool:
    """Whether the file (`data`, mapped) still has the names of a kept scan where it says:
    the first name, every 16th, and the last, each followed by its value's `{`.

    The scan is kept under the file's path, size and mtime (what Python trusts a `.pyc` by);
    this catches a file rewritten to the same size within one mtime tick. A change that
    moves a definition moves every one after it, so a sample sees it as well as checking all
    707 names did (0.3 ms of a one-file run, with their 707 heads kept and read back)."""
    names = list(starts)
    sample = [*range(0, len(names), _SAMPLED), len(names) - 1] if names else []
    for n in sample:
        name = names[n]
        head = f'{_NAME_LINE}{name}": '.encode("ascii")
        start = starts[name]
        if data[start - len(head) : start] != head:
            return False
    return True


def _keep_index(key: bytes, lazy: dict[str, Any]) -> None:
    """Keep the scan of `lazy` for the next run (never an error)."""
    import marshal

    from ailint.core.cachedir import write_sealed

    path = _kept_file(key)
    if path is None:
        return
    defs = lazy["$defs"]
    top = {k: v for k, v in lazy.items() if k != "$defs"}
    write_sealed(path, _KEPT_MAGIC, marshal.dumps((defs._starts, list(defs._scan_gvk()), top)), key)


def _index(text: str) -> dict[str, Any] | None:
    if not text.startswith(_HEAD):
        return None
    starts: dict[str, int] = {}
    at = len(_HEAD) - 1  # the newline before the first name
    end_of_defs = text.find("\n  }", at)  # `$defs` closes at two spaces
    if end_of_defs < 0:
        return None
    while True:
        at = text.find(_NAME_LINE, at, end_of_defs)
        if at < 0:
            break
        try:
            name, after = _DECODER.raw_decode(text, at + len(_NAME_LINE) - 1)
        except ValueError:
            return None
        if not isinstance(name, str) or text[after : after + 3] != ": {":
            return None
        starts[name] = after + 2
        at = after
    out: dict[str, Any] = {"$defs": LazyDefinitions(text, starts)}
    at = end_of_defs + 4  # past `\n  }`
    while True:  # the other top-level keys, decoded as they are
        at = text.find(_TOP, at)
        if at < 0:
            break
        try:
            key, after = _DECODER.raw_decode(text, at + len(_TOP) - 1)
            value, at = _DECODER.raw_decode(text, after + 2)
        except ValueError:
            return None
        out[key] = value
    return out
