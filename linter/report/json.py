"""`--format json`: the machine-readable contract of `spec/cli.md`."""

from __future__ import annotations

import json
from typing import Any

from ailint import __version__
from ailint.core.model import Finding, Severity
from ailint.report.common import edit_region, json_pointer, redact_result


def finding_dict(f: Finding, sources: dict) -> dict[str, Any]:
    from ailint.report.explain import severity_reason

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
    result = redact_result(result)  # no secret value in any output
    by_sev = {s.value: 0 for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)}
    for f in result.findings:
        by_sev[f.severity.value] += 1
    doc = {
        "tool": {"name": "ailint", "version": __version__},
        "files": [{"path": fs.path, "documents": fs.documents, "objects": fs.objects} for fs in result.files],
        "findings": [finding_dict(f, result.sources) for f in result.findings],
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
    return dumps(doc)


_ROW = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))


def dumps(doc: dict[str, Any]) -> str:
    """`doc` as indented JSON with each element of its top-level lists (files, findings) on
    one line: readable and grep-able per finding, and written by the C encoder (an indented
    `json.dumps` runs the pure-Python one, a third of a rerun's time on a large report)."""
    parts = []
    for key, value in doc.items():
        head = f"  {_ROW.encode(key)}: "
        if isinstance(value, list) and value:
            rows = ",\n".join("    " + _ROW.encode(v) for v in value)
            parts.append(f"{head}[\n{rows}\n  ]")
        else:
            parts.append(head + json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n  "))
    return "{\n" + ",\n".join(parts) + "\n}\n"
