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
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator, Mapping
from typing import Any

_HEAD = '{\n  "$defs": {\n'
_NAME_LINE = '\n    "'  # a definition's name, and nothing else, starts a line at four spaces
_GVK = '\n      "x-kubernetes-group-version-kind": '
_TOP = '\n  "'  # the keys after `$defs` ($schema, $id)
_DECODER = json.JSONDecoder()


class LazyDefinitions(Mapping[str, Any]):
    """`$defs` of a definitions file: names known at once, each value decoded on first read."""

    __slots__ = ("_decoded", "_starts", "_text")

    def __init__(self, text: str, starts: dict[str, int]) -> None:
        self._text = text
        self._starts = starts
        self._decoded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        try:
            return self._decoded[name]
        except KeyError:
            value, _ = _DECODER.raw_decode(self._text, self._starts[name])  # KeyError: not there
            self._decoded[name] = value
            return value

    def __contains__(self, name: object) -> bool:
        return name in self._starts

    def __iter__(self) -> Iterator[str]:
        return iter(self._starts)

    def __len__(self) -> int:
        return len(self._starts)

    def gvk_entries(self) -> Iterator[tuple[str, list[Any]]]:
        """(definition name, its `x-kubernetes-group-version-kind` list), without decoding
        the definitions."""
        text = self._text
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
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    lazy = _index(text)
    return lazy if lazy is not None else json.loads(text)


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
