"""Parse one file into Kubernetes objects with a span for every key and value.

Analysis uses libyaml's composer (`yaml.compose_all(..., Loader=CSafeLoader)`): about a
hundred times faster than ruamel.yaml's round-trip mode, and its YAML 1.1 resolution is the
one the API server applies (`0755` is an octal int, `on` a bool). Nodes become plain dicts,
lists and scalars plus a side table `path -> position`. No tag is ever executed: unknown
tags keep their plain value.

Every way a file can be bad becomes a `YML` finding on that file with a line and column,
and whatever could still be read is kept: one broken document does not hide the others.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ailint.core.lazyre import lazy_re
from ailint.core.limits import Limits
from ailint.core.model import FileResult, Finding, K8sObject, Path, Pos, SourceFile, Span, helm_sources
from ailint.core.tables import LazyPositions
from ailint.engine.registry import engine_rule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def yml_finding(code: str, source_display: str, span: Span, message: str) -> Finding:
    rule = engine_rule(code)
    return Finding(code, rule.name, rule.severity, message, source_display, span)


def _problems(problems: list[Any], display: str) -> list[Finding]:
    return [yml_finding(p.code, display, p.span, p.message) for p in problems]


_TEMPLATE_RE = lazy_re(r"\{\{|\{%")


def decode(raw: bytes, display: str) -> tuple[str | None, Finding | None]:
    """UTF-8 text (BOM dropped), or a YML007 finding naming where decoding failed."""
    head = raw[:8192]
    if b"\x00" in head:
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            return None, yml_finding(
                "YML007", display, Span(1, 1, 1, 2), "the file is UTF-16; Kubernetes manifests must be UTF-8"
            )
        return None, yml_finding(
            "YML007", display, Span(1, 1, 1, 2), "binary content (NUL bytes); not a YAML or JSON manifest"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = len(before) - (before.rfind(b"\n") + 1) + 1
        return None, yml_finding(
            "YML007",
            display,
            Span(line, col, line, col + 1),
            f"invalid UTF-8 (byte 0x{raw[exc.start]:02x}); manifests must be UTF-8",
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    return text, None


_CRD_KIND_RE = lazy_re(r"^kind:[ \t]*[\"']?CustomResourceDefinition[\"']?[ \t]*(#.*)?$", re.M)
_API_RE = lazy_re(r"^apiVersion:[ \t]*[\"']?([^\s\"'#]+)", re.M)
_NAME_RE = lazy_re(
    r"^metadata:[ \t]*\r?\n(?:[ \t]+.*\r?\n|[ \t]*#.*\r?\n)*?([ \t]+)name:[ \t]*[\"']?([^\s\"'#]+)", re.M
)
_CONTENT_RE = lazy_re(r"^[ \t]*[^\s#]", re.M)


def document_starts(text: str) -> list[int]:
    """Where each `---` line starts (`^---(?=[ \t\r\n]|$)` in multiline mode), found with
    `str.find`: a regular expression tries every line of a CRD's megabytes of schema (25 of
    32 ms on the plain corpus's 132 CRD files)."""
    out = [0] if text.startswith("---") and (len(text) == 3 or text[3] in " \t\r\n") else []
    end = len(text)
    i = text.find("\n---")
    while i != -1:
        after = i + 4
        if after == end or text[after] in " \t\r\n":
            out.append(i + 1)
        i = text.find("\n---", after)
    return out


@dataclass(frozen=True, slots=True)
class _Skipped:
    """A CustomResourceDefinition document, recognised but not parsed.

    CRDs are 58% of the bytes of a typical AI platform repository (generated OpenAPI
    schemas) and no rule reads them, so they are counted as objects with their identity
    read off their top-level lines, and their bodies are never composed.
    """

    api_version: str
    name: str | None
    start_line: int
    kind_line: int
    name_line: int | None
    name_col: int


def _has_crd(text: str) -> bool:
    """Whether `text` holds a CustomResourceDefinition document (one is never composed)."""
    return "CustomResourceDefinition" in text and _CRD_KIND_RE.search(text) is not None


def _pieces(text: str) -> Iterator[_Skipped | tuple[str, bool]]:
    """A stream that holds a CRD cut at its `---` lines: a CRD document's `_Skipped` marker,
    or a piece of text to read, `(text, marked)`, behind blank lines so that every mark keeps
    its line in the file (`marked`: the piece starts at a `---`). A stream with directives is
    not cut past them: its rest is one piece."""
    starts = document_starts(text)
    bounds = ([0] if not starts or starts[0] != 0 else []) + starts + [len(text)]
    first = True
    for a, b in itertools.pairwise(bounds):
        chunk = text[a:b]
        is_marker = chunk.startswith("---")
        if first and not is_marker and not _CONTENT_RE.search(chunk):
            first = False
            continue  # comments before the first `---` are not a document
        first = False
        if chunk.lstrip().startswith("%"):
            # directives: give up on cutting and let libyaml read the whole stream
            yield text[a:], False
            return
        line0 = text.count("\n", 0, a)
        m = _CRD_KIND_RE.search(chunk)
        if m:
            api = _API_RE.search(chunk)
            nm = _NAME_RE.search(chunk)
            start_line = line0 + 1 + (1 if is_marker else 0)
            yield _Skipped(
                api.group(1) if api else "apiextensions.k8s.io/v1",
                nm.group(2) if nm else None,
                start_line,
                line0 + chunk.count("\n", 0, m.start()) + 1,
                line0 + chunk.count("\n", 0, nm.start(2)) + 1 if nm else None,
                len(nm.group(1)) + 1 if nm else 1,
            )
            continue
        yield "\n" * line0 + chunk, is_marker


def _compose_documents(text: str, templated: bool = False) -> Iterator[Any]:
    """Composed documents of a stream, with CRD documents replaced by `_Skipped` markers.

    Files without a CRD take libyaml's stream path unchanged. With one, the stream is cut at
    `---` lines (libyaml ends any block there too, `_pieces`), and each piece that is not a
    CRD is composed; a piece at a `---` that holds no document is an empty one (None).
    """
    from ailint.core.yamldata import compose_all

    if templated or not _has_crd(text):
        yield from compose_all(text)
        return
    for piece in _pieces(text):
        if piece.__class__ is _Skipped:
            yield piece
            continue
        padded, marked = piece  # type: ignore[misc]
        docs = list(compose_all(padded))
        yield from docs if docs or not marked else [None]


def _read_documents(text: str, limits: Limits) -> list[Any] | None:
    """What `_compose_documents` gives, read by the C reader (`yamldata.read_documents`): its
    documents, `_Skipped` markers and None for an empty piece; None when the reader leaves
    any piece to the composer (the whole file is then composed)."""
    from ailint.core.yamldata import read_documents

    if not _has_crd(text):
        return read_documents(text, limits)
    out: list[Any] = []
    for piece in _pieces(text):
        if piece.__class__ is _Skipped:
            out.append(piece)
        else:
            padded, marked = piece  # type: ignore[misc]
            docs = read_documents(padded, limits)
            if docs is None:
                return None
            out.extend(docs if docs or not marked else [None])
        if len(out) > limits.max_documents:
            break
    return out


def _add_skipped(
    result: FileResult,
    source: SourceFile,
    doc_index: int,
    s: _Skipped,
    sources: list[tuple[int, str]],
    source_lines: list[int],
) -> None:
    data: dict[str, Any] = {
        "apiVersion": s.api_version,
        "kind": "CustomResourceDefinition",
        "metadata": {"name": s.name} if s.name else {},
    }
    kl = s.kind_line
    positions: dict[Path, Pos] = {
        (): (s.start_line, 1, s.start_line, 1, s.start_line, 1, s.start_line, 2),
        ("kind",): (kl, 1, kl, 5, kl, 7, kl, 31),
    }
    if s.name_line:
        nl, nc = s.name_line, s.name_col
        positions[("metadata", "name")] = (nl, nc, nl, nc + 4, nl, nc + 6, nl, nc + 6 + len(s.name or ""))
    template = None
    if sources:
        i = bisect.bisect_right(source_lines, s.start_line) - 1
        if i >= 0:
            template = sources[i][1]
    result.objects.append(K8sObject(source, doc_index, data, positions, (), template))


def load_text(source: SourceFile, limits: Limits = Limits()) -> FileResult:
    """Parse a decoded file into objects and YML findings. Never raises on bad input."""
    import yaml.error  # here, not at import: a cached run reads no YAML
    from ailint.core.yamldata import Converter, LimitExceeded, ScalarNode, mark_span

    result = FileResult(path=source.display, source=source)
    text = source.text
    display = source.display
    has_template = _TEMPLATE_RE.search(text) is not None
    anchors = "&" in text  # without an anchor there is no alias to track
    sources = helm_sources(text)  # `helm template` marks each document's template
    source_lines = [s[0] for s in sources]

    parse_text = text
    if display.endswith(".json") and "\t" in text:
        parse_text = text.replace("\t", " ")  # JSON allows tab whitespace; YAML does not

    if not has_template:
        read = _read_documents(parse_text, limits)
        if read is not None:
            _add_read(result, source, read, sources, source_lines, limits)
            return result
    docs = _compose_documents(parse_text, has_template)
    doc_index = -1
    while True:
        try:
            node = next(docs)
        except StopIteration:
            break
        except yaml.error.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            span = mark_span(mark, mark) if mark else Span(1, 1, 1, 2)
            if has_template:
                result.findings.append(
                    _template_finding(
                        source, display, f" (YAML parse stopped at line {span.line}: {exc.problem or exc.context})"
                    )
                )
            else:
                result.findings.append(yml_finding("YML001", display, span, _syntax_message(exc, parse_text)))
            break
        except yaml.error.YAMLError as exc:  # reader errors: control characters and the like
            result.findings.append(yml_finding("YML001", display, Span(1, 1, 1, 2), f"cannot parse: {exc}"))
            break
        except UnicodeError:
            result.findings.append(
                yml_finding("YML007", display, Span(1, 1, 1, 2), "text that is not valid Unicode (a lone surrogate)")
            )
            break
        except RecursionError:
            result.findings.append(yml_finding("YML005", display, Span(1, 1, 1, 2), "nesting too deep to parse"))
            break
        doc_index += 1
        if doc_index >= limits.max_documents:
            line = 1 if node is None else node.start_line if isinstance(node, _Skipped) else node.start_mark.line + 1
            result.findings.append(_too_many_documents(display, line, limits))
            break
        if node is None or (node.__class__ is ScalarNode and node.value == "" and not node.style):
            continue  # an empty document (`---` twice): kubectl skips it too
        result.documents += 1
        if isinstance(node, _Skipped):
            _add_skipped(result, source, doc_index, node, sources, source_lines)
            continue
        conv = Converter(limits, anchors)
        try:
            data, _ = conv.convert(node, (), None, 0)
        except LimitExceeded as exc:
            result.findings.extend(_problems(conv.findings, display))
            result.findings.append(yml_finding(exc.code, display, mark_span(exc.mark, exc.mark), exc.message))
            continue
        except RecursionError:
            result.findings.append(
                yml_finding(
                    "YML005",
                    display,
                    mark_span(node.start_mark, node.start_mark),
                    "nesting too deep; document skipped",
                )
            )
            continue
        if conv.complex_keys and has_template:
            # `image: {{ .Values.image }}` parses as a flow mapping used as a key.
            result.findings.append(_template_finding(source, display))
            return result
        result.findings.extend(_problems(conv.findings, display))
        start = (node.start_mark.line + 1, node.start_mark.column + 1)
        _add_objects(
            result, source, doc_index, data, conv.positions, _template_of(start[0], sources, source_lines), start
        )
    return result


def _add_read(
    result: FileResult,
    source: SourceFile,
    docs: list[Any],
    sources: list[tuple[int, str]],
    source_lines: list[int],
    limits: Limits,
) -> None:
    """The documents the C reader read (`_read_documents`), added as the loop of `load_text`
    adds composed ones: an empty document (its line, or None) is skipped and not counted, a
    CRD's marker is counted, and a document past the limit ends the file with YML010. Each
    document's position table stays packed until a span is asked of it (`LazyPositions`)."""
    for doc_index, doc in enumerate(docs):
        cls = doc.__class__
        if doc_index >= limits.max_documents:
            line = 1 if doc is None else doc if cls is int else doc.start_line if cls is _Skipped else doc[1].root()[0]
            result.findings.append(_too_many_documents(source.display, line, limits))
            return
        if doc is None or cls is int:
            continue
        result.documents += 1
        if cls is _Skipped:
            _add_skipped(result, source, doc_index, doc, sources, source_lines)
            continue
        data, table = doc
        start = table.root()
        positions = LazyPositions(table, 0)
        _add_objects(result, source, doc_index, data, positions, _template_of(start[0], sources, source_lines), start)


def _too_many_documents(display: str, line: int, limits: Limits) -> Finding:
    """YML010 at the first document past the limit."""
    return yml_finding(
        "YML010",
        display,
        Span(line, 1, line, 2),
        f"more than {limits.max_documents} documents; the rest of the file is skipped",
    )


def _template_of(start_line: int, sources: list[tuple[int, str]], source_lines: list[int]) -> str | None:
    """The template `helm template` marked the document starting at `start_line` with."""
    if sources:
        i = bisect.bisect_right(source_lines, start_line) - 1
        if i >= 0:
            return sources[i][1]
    return None


def _template_finding(source: SourceFile, display: str, why: str = "") -> Finding:
    """YML002 at the text's first `{{`: a Helm or Go template that was not rendered."""
    m = _TEMPLATE_RE.search(source.text)
    assert m is not None  # (asked only of a text that holds one)
    line, col = source.position(m.start())
    return yml_finding(
        "YML002",
        display,
        Span(line, col, line, col + 2),
        f"unrendered Helm/Go template: lint the output of `helm template` instead{why}",
    )


def _add_objects(
    result: FileResult,
    source: SourceFile,
    doc_index: int,
    data: Any,
    positions: dict[Path, Pos],
    template: str | None,
    start: tuple[int, int],
) -> None:
    display = source.display
    if not isinstance(data, dict):
        span = Span(start[0], start[1], start[0], start[1] + 1)
        result.findings.append(
            yml_finding(
                "YML008",
                display,
                span,
                f"document {doc_index + 1} is a {type(data).__name__ if data is not None else 'null'}, "
                "not a Kubernetes object; skipped",
            )
        )
        return
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not api_version or not kind:
        missing = [k for k, v in (("apiVersion", api_version), ("kind", kind)) if not isinstance(v, str) or not v]
        p = positions.get(())
        span = Span(p[4], p[5], p[4], p[5] + 1) if p else Span(1, 1, 1, 2)
        result.findings.append(
            yml_finding(
                "YML008",
                display,
                span,
                f"document {doc_index + 1} has no {' or '.join(missing)}; not a Kubernetes object, skipped",
            )
        )
        return
    items = data.get("items")
    if kind.endswith("List") and isinstance(items, list):
        for i, item in enumerate(items):
            if isinstance(item, dict) and isinstance(item.get("kind"), str):
                result.objects.append(K8sObject(source, doc_index, item, positions, ("items", i), template))
        return
    result.objects.append(K8sObject(source, doc_index, data, positions, (), template))


def _syntax_message(exc: Any, text: str) -> str:
    problem = exc.problem or exc.context or "invalid YAML"
    mark = exc.problem_mark
    char = ""
    if mark is not None and 0 <= mark.index < len(text):
        char = text[mark.index]
    if "'\\t'" in str(problem) or char == "\t":
        return "tab character used for indentation; YAML allows only spaces"
    ctx = f" ({exc.context})" if exc.context and exc.problem else ""
    return f"YAML syntax error: {problem}{ctx}"
