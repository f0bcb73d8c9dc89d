"""`--format github`: workflow commands that GitHub turns into annotations."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def render(result: Any, **_: Any) -> str:
    from ailint.report.common import redact_result

    result = redact_result(result)  # no secret value in any output (public CI logs)
    lines = []
    for f in result.findings:
        props = (
            f"file={_escape_prop(f.file)},line={f.span.line},col={f.span.col},"
            f"endLine={f.span.end_line},endColumn={f.span.end_col},"
            f"title={_escape_prop(f'{f.code} {f.name}')}"
        )
        text = f"{f.code} {f.message}" + "".join(
            f"\n{r.message or 'related'}: {r.file}:{r.span.line}" for r in f.related
        )
        lines.append(f"::{_LEVEL[f.severity.value]} {props}::{_escape_data(text)}")
    return "\n".join(lines) + ("\n" if lines else "")
