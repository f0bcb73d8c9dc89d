"""`--format json`: the machine-readable contract of `spec/cli.md`."""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Iterator, Sequence

from ailint import __version__
from ailint.core.model import Finding, Severity
from ailint.report.common import edit_region, json_pointer, redact_result
from ailint.report.explain import severity_reason  # (light: `re` and the model; each row reads it)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# The report is a function of the run's result and nothing else (no time, no terminal): an
# unchanged rerun may print the one kept from the last (`doors.cli._kept_report_key`).
KEPT = True


def finding_dict(f: Finding, sources: dict) -> dict[str, Any]:
    ref = f.object_ref
    obj = None
    if ref is not None:
        obj = {
            "apiVersion": ref.api_version,
            "kind": ref.kind,
            "namespace": ref.namespace,
            "name": ref.name,
            "document": ref.document,
        }
        if ref.template:
            obj["template"] = ref.template
    fix = None
    if f.fix is not None:
        src = sources.get(getattr(f.fix, "target_display", "") or f.file)  # a chart fix may edit values.yaml
        fix = {
            "title": f.fix.title,
            "applicability": f.fix.applicability.value,
            "edits": [{**edit_region(e, src), "content": e.content} for e in f.fix.edits],
        }
    return {
        "code": f.code,
        "name": f.name,
        "severity": f.severity.value,
        "severity_reason": severity_reason(f),
        "message": f.message,
        "file": f.file,
        "line": f.span.line,
        "column": f.span.col,
        "end_line": f.span.end_line,
        "end_column": f.span.end_col,
        "object": obj,
        "path": json_pointer(f.path) if f.path else "",
        "fix": fix,
        "related": [
            {
                "file": r.file,
                "line": r.span.line,
                "column": r.span.col,
                "end_line": r.span.end_line,
                "end_column": r.span.end_col,
                "message": r.message,
            }
            for r in f.related
        ],
    }


def render(result: Any, **_: Any) -> str:
    return "".join(render_chunks(result))


def render_chunks(result: Any, **_: Any) -> Iterator[str]:
    """The report in pieces, each finding encoded only when its turn comes: the CLI writes
    them as they come, so a report of many findings is never held whole (a large run's
    report was a sixth of its peak memory)."""
    result = redact_result(result)  # no secret value in any output
    by_sev = {s.value: 0 for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)}
    for f in result.findings:
        by_sev[f.severity.value] += 1
    sources = result.sources
    doc = {
        "tool": {"name": "ailint", "version": __version__},
        "files": Rows(result.files, lambda fs: {"path": fs.path, "documents": fs.documents, "objects": fs.objects}),
        "findings": Rows(result.findings, lambda f: finding_dict(f, sources)),
        "summary": {
            "files": len(result.files),
            "objects": result.object_count,
            "findings": len(result.findings),
            "by_severity": by_sev,
            "fixable": sum(1 for f in result.findings if f.fix is not None),
            "context_files": getattr(result, "context_files", 0),
            "skipped": {
                "files": sum(getattr(result, "skipped", {}).values()),
                "by_reason": dict(sorted(getattr(result, "skipped", {}).items())),
            },
        },
    }
    return dumps_chunks(doc)


class Rows:
    """A top-level list of the report made item by item (`make(item)` for each of `items`)
    as it is written."""

    __slots__ = ("items", "make")

    def __init__(self, items: Sequence[Any], make: Callable[[Any], Any]) -> None:
        self.items = items
        self.make = make

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Any]:
        make = self.make
        return (make(x) for x in self.items)


_ROW = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))
_BATCH = 256  # rows per piece written: few writes, and no more than this many rows held
# `_ROW`'s C encoder, made once: `_ROW.encode` makes one for every row it encodes (two
# Python frames and the encoder: 13.9 against 9.2 ms for the corpus report's 3,100 rows).
# No check for cycles: a row is a tree of fresh dicts and lists (`finding_dict`)
_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)  # (None without `_json`)
_C_ROW: Callable[[Any, int], Any] | None = (
    _MAKE_ENCODER(None, _ROW.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)
    if _MAKE_ENCODER is not None
    else None
)


def dumps(doc: dict[str, Any]) -> str:
    """`doc` as indented JSON with each element of its top-level lists (files, findings) on
    one line: readable and grep-able per finding, and written by the C encoder (an indented
    `json.dumps` runs the pure-Python one, a third of a rerun's time on a large report)."""
    return "".join(dumps_chunks(doc))


def dumps_chunks(doc: dict[str, Any]) -> Iterator[str]:
    """`dumps(doc)` in pieces; a top-level list may be `Rows`, made as it is written."""
    encode = _ROW.encode
    row = _C_ROW
    yield "{\n"
    for n, (key, value) in enumerate(doc.items()):
        head = (",\n" if n else "") + f"  {encode(key)}: "
        if isinstance(value, (list, Rows)) and len(value):
            yield head + "[\n"
            batch: list[str] = []
            first = True
            for v in value:
                batch.append("    " + ("".join(row(v, 0)) if row is not None else encode(v)))
                if len(batch) == _BATCH:
                    yield ("" if first else ",\n") + ",\n".join(batch)
                    first, batch = False, []
            if batch:
                yield ("" if first else ",\n") + ",\n".join(batch)
            yield "\n  ]"
        else:
            if isinstance(value, Rows):
                value = []
            yield head + json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n  ")
    yield "\n}\n"
