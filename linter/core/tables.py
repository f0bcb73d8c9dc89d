"""Position tables held back until a span is first asked of them (`LazyPositions`).

A run reads the position tables of few objects (those it reports a finding on, about one in
seven of the corpus's), so a table that can be made later is kept in a compact form until
then: the C reader's packed numbers (`yamldata.PackedTable`), a `--jobs` worker's marshalled
copy, a results cache entry's, or a bounded run's re-parse of its file. Apart from the
bounded runs' spilling (`ailint.engine.bounded`, with zlib) so that every run can hold one.
"""

from __future__ import annotations

import marshal
from collections.abc import ItemsView, Iterator, KeysView, ValuesView

from ailint.core.model import Path, Pos

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class LazyPositions(dict):  # type: ignore[type-arg]
    """An object's position table, read back when it is first needed.

    `file` is where it comes from: the C reader's packed numbers (anything with `unpack()`,
    `yamldata.PackedTable`) or a marshalled copy (`bytes`, a `--jobs` worker's result,
    `bounded.pack`), both unpacked into this dict on first read; a results cache entry's
    promise (anything with `fetch()`, `cache.TableRef`), fetched first; or a spilled file's
    re-parse (anything with `table(index)`, `bounded._FileTables`), through whose small cache of
    re-parsed files every read goes, so that tables come and go and memory stays bounded.
    The objects of one document (a `List`'s items) share theirs.
    """

    __slots__ = ("_file", "_index")

    def __init__(self, file: Any, index: int) -> None:
        super().__init__()
        self._file: Any = file
        self._index = index

    def _t(self) -> dict[Path, Pos]:
        f = self._file
        if f is None:
            return self
        fetch = getattr(f, "fetch", None)  # a table in a results cache entry (`cache.TableRef`)
        if fetch is not None:
            f = self._file = fetch()
        if f.__class__ is bytes:
            dict.update(self, marshal.loads(f))
            self._file = None
            return self
        unpack = getattr(f, "unpack", None)  # a table the C reader packed (`yamldata.PackedTable`)
        if unpack is not None:
            dict.update(self, unpack())
            self._file = None
            return self
        return f.table(self._index)  # type: ignore[no-any-return]

    def get(self, key: Any, default: Any = None) -> Any:
        return dict.get(self._t(), key, default)

    def __getitem__(self, key: Any) -> Any:
        return dict.__getitem__(self._t(), key)

    def __contains__(self, key: Any) -> bool:
        return dict.__contains__(self._t(), key)

    def __iter__(self) -> Iterator[Any]:
        return dict.__iter__(self._t())

    def __len__(self) -> int:
        return dict.__len__(self._t())

    # dict's own views of the loaded table: typeshed names them dict_keys etc., a private type
    def keys(self) -> KeysView[Any]:  # type: ignore[override]
        return dict.keys(self._t())

    def values(self) -> ValuesView[Any]:  # type: ignore[override]
        return dict.values(self._t())

    def items(self) -> ItemsView[Any, Any]:  # type: ignore[override]
        return dict.items(self._t())

    def copy(self) -> dict[Path, Pos]:
        return dict(dict.items(self._t()))

    def __reduce__(self) -> Any:  # a worker sends the promise, not the table
        if self._file is not None:
            return (LazyPositions, (self._file, self._index))
        return (dict, (dict(dict.items(self)),))
