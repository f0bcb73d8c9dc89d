"""`--format text`: grouped by file, the offending line with a caret, why and how to fix.

Plain text when the output is not a terminal or `NO_COLOR` is set (no rich import on that
path: pre-commit runs stay fast); rich markup and colour on a terminal.
"""

from __future__ import annotations

from itertools import groupby

from ailint.core.model import Finding
from ailint.report.common import frame_source, redact_result

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SEV_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _frame(f: Finding, result: Any) -> list[str]:
    src = frame_source(result, f.file)  # masked; None for a file that is not a manifest
    if src is None:
        return []
    line = src.line_text(f.span.line)
    if not line and f.span.line > len(src.line_starts):
        return []
    width = len(str(f.span.line))
    end = f.span.end_col if f.span.end_line == f.span.line else len(line) + 1
    carets = "^" * max(1, min(end, len(line) + 1) - f.span.col)
    return [f"  {f.span.line:>{width}} | {line.expandtabs(1)}", f"  {'':>{width}} | {' ' * (f.span.col - 1)}{carets}"]


def _fix_lines(f: Finding, result: Any) -> list[str]:
    """`--show-fixes`: each edit of the finding's fix as removed (-) and added (+) lines."""
    if f.fix is None:
        return []
    src = result.sources.get(f.file)
    out: list[str] = []
    for e in f.fix.edits:
        if src is not None and e.end > e.start:
            line, _ = src.position(e.start)
            end_line, _ = src.position(max(e.start, e.end - 1))
            out.extend(f"      - {src.line_text(n)}" for n in range(line, end_line + 1))
        out.extend(f"      + {x}" for x in e.content.rstrip("\n").split("\n") if e.content)
    return out


def render(
    result: Any,
    color: bool = False,
    show_fixes: bool = True,
    verbose: bool = False,
    show_fix_edits: bool = False,
    quiet: bool = False,
    **_: Any,
) -> str:
    """The text report; `verbose` gives each finding its rule's whole "why", `show_fix_edits`
    (`--show-fixes`) the lines each fix removes and adds; `quiet` leaves the summary out."""
    from ailint.report.explain import explanation, severity_reason

    result = redact_result(result)  # no secret value in any output (ailint.report.common)
    out: list[str] = []
    for file, group in groupby(result.findings, key=lambda f: f.file):
        findings = list(group)
        out.append(f"[bold]{_esc(file)}[/bold]" if color else file)
        for f in findings:
            sev = f.severity.value
            reason = severity_reason(f)  # a severity other than the documented one says why
            label = f"{sev} ({reason})" if reason else sev
            head = f"{f.file}:{f.span.line}:{f.span.col}: {f.code} [{label}] {f.message}"
            if color:
                head = (
                    f"{_esc(f.file)}:{f.span.line}:{f.span.col}: [{_SEV_STYLE[sev]}]{f.code}[/] "
                    f"[{_SEV_STYLE[sev]}]\\[{_esc(label)}][/] {_esc(f.message)}"
                )
            out.append(head)
            if f.object_ref is not None:
                tpl = f" (from {f.object_ref.template})" if f.object_ref.template else ""
                out.append(
                    ("    [dim]in " + _esc(f.object_ref.label()) + tpl + "[/dim]")
                    if color
                    else f"    in {f.object_ref.label()}{tpl}"
                )
            for r in f.related:
                rel = f"    related: {r.file}:{r.span.line}:{r.span.col}" + (f": {r.message}" if r.message else "")
                out.append(_esc(rel) if color else rel)
            for line in _frame(f, result):
                out.append(_esc(line) if color else line)
            why = explanation(f, verbose)  # whole sentences, the condition that fired
            if why:
                out.append(f"    why: {_esc(why) if color else why}")
            if f.fix is not None and show_fixes:
                kind = "fix" if f.fix.applicability.value == "safe" else "fix (unsafe)"
                out.append(f"    {kind}: {_esc(f.fix.title) if color else f.fix.title}")
                if show_fix_edits:
                    out.extend(_esc(x) if color else x for x in _fix_lines(f, result))
            if not f.code.startswith(("YML", "AIL")):
                out.append(f"    docs: ailint rule {f.code}")
            out.append("")
    if not quiet:
        out.append(summary_line(result))
    return "\n".join(out) + "\n" if out else ""


def summary_line(result: Any) -> str:
    n = len(result.findings)
    counts = {"error": 0, "warning": 0, "info": 0}
    for f in result.findings:
        counts[f.severity.value] += 1
    files = len(result.files)
    if files == 0:
        return "Nothing linted: no files found."
    if n == 0:
        return f"All clear: {files} file{'s' if files != 1 else ''}, {result.object_count} objects, no findings."
    parts = ", ".join(f"{v} {k}{'s' if v != 1 and k != 'info' else ''}" for k, v in counts.items() if v)
    fixable = [f for f in result.findings if f.fix is not None]
    stdin, helm = _not_rewritten(result, {f.file for f in fixable})
    writable = [f for f in fixable if f.file not in stdin and f.file not in helm]
    safe = sum(1 for f in writable if f.fix is not None and f.fix.applicability.value == "safe")
    extra = fixable_note(safe, len(writable) - safe)
    # --fix leaves these files alone: the note says where their fixes go
    if n_helm := sum(1 for f in fixable if f.file in helm):
        extra += f"; {n_helm} fixable in Helm's output, which --fix does not rewrite (fix the chart)"
    if n_stdin := sum(1 for f in fixable if f.file in stdin):
        extra += f"; {n_stdin} fixable with --diff (standard input is not rewritten)"
    sup = f"; {len(result.suppressed)} suppressed" if result.suppressed else ""
    return f"Found {n} finding{'s' if n != 1 else ''} ({parts}) in {files} file{'s' if files != 1 else ''}{extra}{sup}."


def _not_rewritten(result: Any, files: set[str]) -> tuple[set[str], set[str]]:
    """Of `files`, those `--fix` never rewrites (`SourceFile.not_rewritten`): standard input,
    and the output of `helm template`, whose fixes belong in the chart."""
    by_reason: dict[str, set[str]] = {"stdin": set(), "helm": set()}
    for name in files:
        src = result.sources.get(name)
        why = src.not_rewritten() if src is not None else None
        if why is not None:
            by_reason[why].add(name)
    return by_reason["stdin"], by_reason["helm"]


def fixable_note(safe: int, unsafe: int) -> str:
    """`; 9 fixable with --fix`, `; 12 fixable with --unsafe-fixes`, or both."""
    if safe and unsafe:
        return f"; {safe + unsafe} fixable ({safe} with --fix, {unsafe} more with --unsafe-fixes)"
    if safe:
        return f"; {safe} fixable with --fix"
    if unsafe:
        return f"; {unsafe} fixable with --unsafe-fixes"
    return ""


def _esc(s: str) -> str:
    return s.replace("[", "\\[")


def print_rich(text: str) -> None:
    from rich.console import Console

    # colour was decided by the caller (a terminal, or --color): render it either way
    Console(highlight=False, soft_wrap=True, force_terminal=True).print(text, end="")
