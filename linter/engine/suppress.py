"""Suppressions: comments, object annotations and config per-file ignores; unused ones.

- `# ailint: ignore[GPU001,SRV004] reason` after code on a line covers that line; alone on
  its line it covers the node that follows (the next line of code and every line under
  it: a list item with its fields, a key with its block). No list means every rule.
- `# ailint: ignore-file[CODES]` anywhere covers the whole file.
- `metadata.annotations["ailint.io/ignore"]: "GPU001,SRV004: reason"` covers that object.
- Suppressions that matched nothing (for rules that ran) become `AIL001`; codes that name
  no rule become `AIL002`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ailint.core.model import Finding, K8sObject, SourceFile, Span, annotations_of
from ailint.engine.registry import engine_rule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_COMMENT_RE = re.compile(r"#\s*ailint:\s*(ignore-file|ignore)(?:\[([^\]]*)\])?")
IGNORE_ANNOTATION = "ailint.io/ignore"


@dataclass(eq=False)
class Suppression:
    """One suppression directive: where it is written, which codes and lines it covers, and whether it was used."""

    file: str
    span: Span  # where the directive is written
    codes: tuple[str, ...]  # empty: every rule
    lines: tuple[int, ...] | None  # lines covered; None: the whole file / object
    object_key: tuple[str, int] | None = None  # (file, document) for annotations
    used: bool = False
    kind: str = "comment"

    def covers(self, finding: Finding, matches: Callable[[str, Finding], bool]) -> bool:
        if finding.file != self.file:
            return False
        if self.object_key is not None:
            if finding.object_ref is None or (finding.file, finding.object_ref.document) != self.object_key:
                return False
        elif self.lines is not None and finding.span.line not in self.lines:
            return False
        return not self.codes or any(matches(c, finding) for c in self.codes)


def _split_codes(s: str | None) -> tuple[str, ...]:
    if not s:
        return ()
    return tuple(c.strip() for c in re.split(r"[,\s]+", s) if c.strip())


def comment_suppressions(source: SourceFile) -> list[Suppression]:
    text = source.text
    if "ailint:" not in text:
        return []
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "ailint:" not in line:
            continue
        for m in _COMMENT_RE.finditer(line):
            before = line[: m.start()]
            if "#" in before and not before.rstrip().endswith(("'", '"')):
                # the directive sits inside an earlier comment: still a directive
                pass
            lineno = i + 1
            span = Span(lineno, m.start() + 1, lineno, m.end() + 1)
            codes = _split_codes(m.group(2))
            if m.group(1) == "ignore-file":
                out.append(Suppression(source.display, span, codes, None))
                continue
            if before.strip():
                covered: tuple[int, ...] = (lineno,)
            else:
                j = i + 1
                while j < len(lines) and (not lines[j].strip() or lines[j].lstrip().startswith("#")):
                    j += 1
                covered = (lineno, *_node_lines(lines, j))
            out.append(Suppression(source.display, span, codes, covered))
    return out


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _node_lines(lines: list[str], j: int) -> range:
    """1-based lines of the YAML node that starts on line index `j`: that line and every
    line under it (deeper indented; for a `key:` with a block value, also the `- ` items
    written at the key's own indent). A list item `- name: x` covers its whole item."""
    if j >= len(lines):
        return range(j + 1, j + 2)
    first = lines[j]
    ind = _indent(first)
    body = first.strip()
    is_item = body.startswith("-") and (body == "-" or body[1:2] == " ")
    opens_block = not is_item and body.rstrip().endswith(":")
    end = j + 1
    k = j + 1
    while k < len(lines):
        line = lines[k]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            k += 1
            continue
        if stripped in ("---", "...") and _indent(line) == 0:
            break
        d = _indent(line)
        if d > ind or (opens_block and d == ind and stripped.startswith("- ")):
            end = k + 1
            k += 1
            continue
        break
    return range(j + 1, end + 1)


def _ignore_value(data: dict[str, Any]) -> str | None:
    """An object's `ailint.io/ignore` annotation, when it is a string not blank."""
    value = annotations_of(data).get(IGNORE_ANNOTATION)
    return value if isinstance(value, str) and value.strip() else None


def carries_ignore(data: dict[str, Any]) -> bool:
    """Whether an object's data has an `ailint.io/ignore` annotation (a string not blank)."""
    return _ignore_value(data) is not None


def annotation_suppressions(obj: K8sObject) -> list[Suppression]:
    value = _ignore_value(obj.data)
    if value is None:
        return []
    codes_part = value.split(":", 1)[0] if ":" in value else value
    codes = _split_codes(codes_part)
    span = obj.span(("metadata", "annotations", IGNORE_ANNOTATION))
    return [Suppression(obj.file, span, codes, None, (obj.file, obj.doc_index), kind="annotation")]


@dataclass
class SuppressionResult:
    """The findings kept and suppressed, and the AIL findings about the directives themselves."""

    kept: list[Finding] = field(default_factory=list)
    suppressed: list[Finding] = field(default_factory=list)
    meta: list[Finding] = field(default_factory=list)  # AIL findings


def apply(
    findings: Iterable[Finding],
    suppressions: list[Suppression],
    matches: Callable[[str, Finding], bool],
    is_known: Callable[[str], bool],
    ran: Callable[[str], bool],
) -> SuppressionResult:
    """Split findings into kept and suppressed; report unused and unknown suppressions.

    `matches(selector, finding)` says whether a selector names the finding's rule;
    `is_known(selector)` whether it names any rule; `ran(selector)` whether every rule it
    names ran in this run (only then can "unused" be judged).
    """
    res = SuppressionResult()
    by_file: dict[str, list[Suppression]] = {}
    for s in suppressions:
        by_file.setdefault(s.file, []).append(s)
    for f in findings:
        hit = False
        if not f.code.startswith("AIL"):
            for s in by_file.get(f.file, ()):
                if s.covers(f, matches):
                    s.used = True
                    hit = True
        (res.suppressed if hit else res.kept).append(f)
    for s in suppressions:
        unknown = [c for c in s.codes if not is_known(c)]
        if unknown:
            r = engine_rule("AIL002")
            res.meta.append(
                Finding(
                    r.code,
                    r.name,
                    r.severity,
                    f"suppression names unknown code(s): {', '.join(unknown)}",
                    s.file,
                    s.span,
                )
            )
            continue
        if not s.used and all(ran(c) for c in s.codes) and s.codes:
            r = engine_rule("AIL001")
            res.meta.append(
                Finding(
                    r.code,
                    r.name,
                    r.severity,
                    f"unused suppression for {', '.join(s.codes)}: nothing was reported here",
                    s.file,
                    s.span,
                )
            )
    return res
