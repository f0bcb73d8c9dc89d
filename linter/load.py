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
import re
from dataclasses import dataclass
from typing import Any

import yaml

from .engine_rules import ENGINE
from .model import FileResult, Finding, K8sObject, Path, Pos, SourceFile, Span


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on the work any input can cause; each has a `YML` finding when exceeded."""

    max_file_bytes: int = 10 * 1024 * 1024
    max_documents: int = 5000
    max_depth: int = 200
    max_alias_expansion: int = 100_000
    max_scalar_chars: int = 1024 * 1024


def yml_finding(code: str, source_display: str, span: Span, message: str) -> Finding:
    rule = ENGINE[code]
    return Finding(code, rule.name, rule.severity, message, source_display, span)


_SOURCE_RE = re.compile(r"^# Source: (\S.*?)\s*$", re.M)
_TEMPLATE_RE = re.compile(r"\{\{|\{%")

_INT, _FLOAT, _BOOL, _NULL = (
    "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null",
)
_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"

_constructor = yaml.constructor.SafeConstructor()


class _Abort(Exception):
    """A bound was exceeded: stop converting this document."""

    def __init__(self, code: str, mark: Any, message: str) -> None:
        super().__init__(message)
        self.code, self.mark, self.message = code, mark, message


class _Converter:
    """Turns one composed document into plain data and fills the position table."""

    __slots__ = ("positions", "findings", "limits", "display", "expanded", "memo", "complex_keys")

    def __init__(self, limits: Limits, display: str) -> None:
        self.positions: dict[Path, Pos] = {}
        self.findings: list[Finding] = []
        self.limits = limits
        self.display = display
        self.expanded = 0
        self.memo: dict[int, tuple[Any, int]] = {}  # id(node) -> (value, logical size)
        self.complex_keys = 0

    def convert(self, node: Any, path: Path, key_pos: tuple[int, int, int, int] | None,
                depth: int) -> tuple[Any, int]:
        sm, em = node.start_mark, node.end_mark
        line, col = sm.line + 1, sm.column + 1
        kp = key_pos or (line, col, line, col)
        self.positions[path] = (kp[0], kp[1], kp[2], kp[3], line, col, em.line + 1, em.column + 1)
        nid = id(node)
        seen = self.memo.get(nid)
        if seen is not None:
            # An alias: share the value, but count what a naive consumer would expand.
            self.expanded += seen[1]
            if self.expanded > self.limits.max_alias_expansion:
                raise _Abort("YML004", sm, f"aliases expand to more than {self.limits.max_alias_expansion} "
                             "nodes (a 'billion laughs' document?); document skipped")
            return seen
        if depth > self.limits.max_depth:
            raise _Abort("YML005", sm, f"nesting deeper than {self.limits.max_depth} levels; document skipped")
        tag = node.tag
        if isinstance(node, yaml.ScalarNode):
            value = self.scalar(node, tag)
            result = (value, 1)
        elif isinstance(node, yaml.MappingNode):
            result = self.mapping(node, path, depth)
        else:
            items: list[Any] = []
            size = 1
            for i, child in enumerate(node.value):
                v, s = self.convert(child, path + (i,), None, depth + 1)
                items.append(v)
                size += s
            result = (items, size)
        self.memo[nid] = result
        return result

    def scalar(self, node: Any, tag: str) -> Any:
        value = node.value
        if len(value) > self.limits.max_scalar_chars:
            raise _Abort("YML011", node.start_mark,
                         f"a scalar of {len(value)} characters exceeds the limit of {self.limits.max_scalar_chars}")
        if tag == _STR or node.style:
            return value
        try:
            if tag == _INT:
                return _constructor.construct_yaml_int(node)
            if tag == _FLOAT:
                return _constructor.construct_yaml_float(node)
            if tag == _BOOL:
                return _constructor.construct_yaml_bool(node)
            if tag == _NULL:
                return None
        except Exception:  # noqa: BLE001 - an odd scalar stays a string
            return value
        return value  # timestamps, binary, unknown tags: the plain text, never executed

    def mapping(self, node: Any, path: Path, depth: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        size = 1
        merges: list[Any] = []
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode):
                self.complex_keys += 1
                self.findings.append(yml_finding(
                    "YML012", self.display, _mark_span(knode.start_mark, knode.end_mark),
                    "a mapping or list used as a key; Kubernetes objects only have string keys"))
                continue
            if knode.tag == _MERGE:
                merges.append(vnode)
                continue
            key = knode.value
            ksm, kem = knode.start_mark, knode.end_mark
            if key in out:
                self.findings.append(yml_finding(
                    "YML003", self.display, _mark_span(ksm, kem),
                    f"duplicate key `{key}`: the API server rejects the object "
                    f"(first at line {self.positions[path + (key,)][0]})"))
                continue
            kpos = (ksm.line + 1, ksm.column + 1, kem.line + 1, kem.column + 1)
            v, s = self.convert(vnode, path + (key,), kpos, depth + 1)
            out[key] = v
            size += s
        for mnode in merges:  # `<<: *base` fills keys the mapping does not set itself
            sources = mnode.value if isinstance(mnode, yaml.SequenceNode) else [mnode]
            for src in sources:
                if not isinstance(src, yaml.MappingNode):
                    continue
                v, s = self.convert(src, path + ("<<",), None, depth + 1)
                size += s
                for k, val in v.items():
                    if k not in out:
                        out[k] = val
                        sub = self.positions.get(path + ("<<", k))
                        if sub:
                            self.positions[path + (k,)] = sub
        return out, size


def _mark_span(sm: Any, em: Any) -> Span:
    line, col = sm.line + 1, sm.column + 1
    end_line, end_col = em.line + 1, em.column + 1
    if (end_line, end_col) <= (line, col):
        end_line, end_col = line, col + 1
    return Span(line, col, end_line, end_col)


def decode(raw: bytes, display: str) -> tuple[str | None, Finding | None]:
    """UTF-8 text (BOM dropped), or a YML007 finding naming where decoding failed."""
    head = raw[:8192]
    if b"\x00" in head:
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            return None, yml_finding("YML007", display, Span(1, 1, 1, 2),
                                     "the file is UTF-16; Kubernetes manifests must be UTF-8")
        return None, yml_finding("YML007", display, Span(1, 1, 1, 2),
                                 "binary content (NUL bytes); not a YAML or JSON manifest")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = len(before) - (before.rfind(b"\n") + 1) + 1
        return None, yml_finding("YML007", display, Span(line, col, line, col + 1),
                                 f"invalid UTF-8 (byte 0x{raw[exc.start]:02x}); manifests must be UTF-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text, None


def load_text(source: SourceFile, limits: Limits = Limits()) -> FileResult:
    """Parse a decoded file into objects and YML findings. Never raises on bad input."""
    result = FileResult(path=source.display, source=source)
    text = source.text
    display = source.display
    has_template = _TEMPLATE_RE.search(text) is not None
    sources = [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _SOURCE_RE.finditer(text)]
    source_lines = [s[0] for s in sources]

    parse_text = text
    if display.endswith(".json") and "\t" in text:
        parse_text = text.replace("\t", " ")  # JSON allows tab whitespace; YAML does not

    docs = yaml.compose_all(parse_text, Loader=yaml.CSafeLoader)
    doc_index = -1
    while True:
        try:
            node = next(docs)
        except StopIteration:
            break
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            span = _mark_span(mark, mark) if mark else Span(1, 1, 1, 2)
            if has_template:
                m = _TEMPLATE_RE.search(text)
                assert m is not None
                line, col = source.position(m.start())
                result.findings.append(yml_finding(
                    "YML002", display, Span(line, col, line, col + 2),
                    "unrendered Helm/Go template: lint the output of `helm template` instead "
                    f"(YAML parse stopped at line {span.line}: {exc.problem or exc.context})"))
            else:
                result.findings.append(yml_finding("YML001", display, span, _syntax_message(exc, parse_text)))
            break
        except yaml.YAMLError as exc:  # reader errors: control characters and the like
            result.findings.append(yml_finding("YML001", display, Span(1, 1, 1, 2), f"cannot parse: {exc}"))
            break
        except RecursionError:
            result.findings.append(yml_finding("YML005", display, Span(1, 1, 1, 2),
                                               "nesting too deep to parse"))
            break
        doc_index += 1
        if doc_index >= limits.max_documents:
            line = node.start_mark.line + 1 if node is not None else 1
            result.findings.append(yml_finding(
                "YML010", display, Span(line, 1, line, 2),
                f"more than {limits.max_documents} documents; the rest of the file is skipped"))
            break
        if node is None:
            continue
        result.documents += 1
        conv = _Converter(limits, display)
        try:
            data, _ = conv.convert(node, (), None, 0)
        except _Abort as exc:
            result.findings.extend(conv.findings)
            result.findings.append(yml_finding(exc.code, display, _mark_span(exc.mark, exc.mark), exc.message))
            continue
        except RecursionError:
            result.findings.append(yml_finding("YML005", display, _mark_span(node.start_mark, node.start_mark),
                                               "nesting too deep; document skipped"))
            continue
        if conv.complex_keys and has_template:
            # `image: {{ .Values.image }}` parses as a flow mapping used as a key.
            m = _TEMPLATE_RE.search(text)
            assert m is not None
            line, col = source.position(m.start())
            result.findings.append(yml_finding(
                "YML002", display, Span(line, col, line, col + 2),
                "unrendered Helm/Go template: lint the output of `helm template` instead"))
            return result
        result.findings.extend(conv.findings)
        start_line = node.start_mark.line + 1
        template = None
        if sources:
            i = bisect.bisect_right(source_lines, start_line) - 1
            if i >= 0:
                template = sources[i][1]
        _add_objects(result, source, doc_index, data, conv.positions, template, node)
    return result


def _add_objects(result: FileResult, source: SourceFile, doc_index: int, data: Any,
                 positions: dict[Path, Pos], template: str | None, node: Any) -> None:
    display = source.display
    if not isinstance(data, dict):
        span = _mark_span(node.start_mark, node.start_mark)
        result.findings.append(yml_finding(
            "YML008", display, span,
            f"document {doc_index + 1} is a {type(data).__name__ if data is not None else 'null'}, "
            "not a Kubernetes object; skipped"))
        return
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not api_version or not kind:
        missing = [k for k, v in (("apiVersion", api_version), ("kind", kind))
                   if not isinstance(v, str) or not v]
        p = positions.get(())
        span = Span(p[4], p[5], p[4], p[5] + 1) if p else Span(1, 1, 1, 2)
        result.findings.append(yml_finding(
            "YML008", display, span,
            f"document {doc_index + 1} has no {' or '.join(missing)}; not a Kubernetes object, skipped"))
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
