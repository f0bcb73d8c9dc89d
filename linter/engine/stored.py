"""Objects restored from the results cache's pack, their data read on first use.

An edit rerun makes every object of the run from the pack (the corpus copy: 3,292 of them)
and asks most of them only who they are: their `apiVersion` and `kind` (the dispatch, the
indexes, the admission policies' bindings) and whether they carry an `ailint.io/ignore`
annotation. Unmarshalling every object's data was 17 of the 21 ms of reading the pack. So
the pack keeps each file's objects' data as one marshalled blob, with what each object is
beside it (`packed_objects`), and `StoredObject` unmarshals its file's blob when the data of
any of the file's objects is first asked for: in the corpus copy's comment edit, that of a
few hundred objects.
"""

from __future__ import annotations

import marshal
from collections.abc import Sequence

from ailint.core.model import K8sObject, SourceFile, identity_of
from ailint.core.tables import LazyPositions
from ailint.engine.suppress import carries_ignore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_DATA = K8sObject.__dict__["data"]  # the slot itself, under the property of `StoredObject`


class FileData:
    """The marshalled data of one file's objects, read once for all of them."""

    __slots__ = ("blob", "objects")

    def __init__(self, blob: bytes) -> None:
        self.blob: bytes | None = blob
        self.objects: list[StoredObject] = []

    def load(self) -> None:
        blob, objects = self.blob, self.objects
        if blob is None:
            return
        datas = marshal.loads(blob)
        if not isinstance(datas, list) or len(datas) != len(objects):
            raise ValueError("a pack entry's data does not fit its objects")
        for obj, data in zip(objects, datas, strict=True):
            _DATA.__set__(obj, data)
        self.blob, self.objects = None, []  # (no cycle left between the objects and this)


class StoredObject(K8sObject):
    """A `K8sObject` made from the pack: its identity is set, its `data` is its file's
    `FileData` until first asked for. Anything else (`dataclasses.replace`, pickling) sees
    an ordinary object."""

    __slots__ = ("_file",)
    _file: FileData

    @property  # type: ignore[override]
    def data(self) -> dict[str, Any]:
        try:
            return _DATA.__get__(self, K8sObject)  # type: ignore[no-any-return]
        except AttributeError:
            self._file.load()
            return _DATA.__get__(self, K8sObject)  # type: ignore[no-any-return]

    @data.setter
    def data(self, value: dict[str, Any]) -> None:
        _DATA.__set__(self, value)


def packed_entry(entry: tuple[Any, ...]) -> tuple[Any, ...]:
    """A file entry (`cache.file_out`) as the pack keeps it: its objects packed
    (`packed_objects`)."""
    return (*entry[:2], packed_objects(entry[2]), *entry[3:])


def packed_objects(objs: Any) -> Any:
    """A file entry's objects (`cache.file_out`: (document, data, table, base, template)
    each) as the pack keeps them: `(blob, rows)`, the data of all in one marshalled blob and
    per object (document, table, base, template, apiVersion, kind, group, whether it carries
    an ignore annotation). Already packed: as it is."""
    if not isinstance(objs, list):
        return objs
    datas = [o[1] for o in objs]
    rows = [(doc, n, base, tpl, *identity_of(data), carries_ignore(data)) for doc, data, n, base, tpl in objs]
    return (marshal.dumps(datas), rows)


def unpacked_objects(objs: Any) -> list[tuple[Any, ...]]:
    """A file entry's objects as `cache.file_out` makes them, packed (`packed_objects`) or
    not. ValueError, TypeError: not a packed form."""
    if isinstance(objs, list):
        return objs
    blob, rows = objs
    datas = marshal.loads(blob)
    if not isinstance(datas, list) or len(datas) != len(rows):
        raise ValueError("a pack entry's data does not fit its objects")
    return [(row[0], data, row[1], row[2], row[3]) for row, data in zip(rows, datas, strict=True)]


def stored_objects(source: SourceFile, objs: tuple[bytes, list[Any]], tables: Sequence[Any]) -> list[K8sObject]:
    """The objects of a packed entry (`packed_objects`), their data read on first use."""
    blob, rows = objs
    file_data = FileData(blob)
    new = object.__new__
    out: list[StoredObject] = []
    for doc, n, base, tpl, api_version, kind, group, _ in rows:
        obj = new(StoredObject)
        obj.source = source
        obj.doc_index = doc
        obj.positions = LazyPositions(tables[n], 0)
        obj.base = tuple(base)
        obj.template = tpl
        obj.memo = None
        obj.carried = None
        obj.api_version = api_version
        obj.kind = kind
        obj.group = group
        obj._file = file_data
        out.append(obj)
    file_data.objects = out
    return out  # type: ignore[return-value]


def annotated(objs: tuple[bytes, list[Any]]) -> tuple[int, ...]:
    """The positions of a packed entry's objects that carry an ignore annotation."""
    return tuple(n for n, row in enumerate(objs[1]) if row[7])
