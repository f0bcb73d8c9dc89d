"""Indentation-aware text edits for fixes: untouched bytes stay untouched.

Each helper returns an `Edit` against the original text, or None when the file's layout
makes a safe text edit impossible (an anchor, alias, tag or merge key on the way, a block
value where a one-line edit is needed, comments an edit would drop); the rule then offers
no fix and says what to change in its message. No helper raises on odd input.

What every helper guarantees (tests/test_edits.py):
- bytes outside the edit stay untouched; insertions add whole lines at a line boundary
  (or text inside a flow collection), so neighbouring lines stay byte-identical;
- new lines use the file's line ending (CRLF stays CRLF) and a missing final newline stays
  missing; new keys sit at the column of their sibling keys; nested blocks use the
  indentation step of the surrounding mapping (2, 4, ...) and sequences follow the file's
  choice of `key:\\n  - item` or `key:\\n- item`;
- comments survive: an insertion goes right after the last content line of its block
  (comments that follow stay attached to the next key), a replacement keeps the inline
  comment, a deletion declines when comment lines sit inside the deleted block;
- flow collections (`{a: 1}`, `[a]`, JSON) get flow edits (`, key: value`, JSON quoting
  when the keys are double-quoted); anchors, aliases, tags and merge keys give None.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ailint.core.lazyre import lazy_re
from ailint.core.model import Edit, K8sObject, Pos

_PLAIN_SAFE = lazy_re(r"^[A-Za-z0-9_./@:+-]+$")
_RESERVED = {"y", "yes", "n", "no", "true", "false", "on", "off", "null", "~", ""}
_STR_TAG = "tag:yaml.org,2002:str"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    _F = TypeVar("_F", bound=Callable[..., Any])


def _never_raise(fn: _F) -> _F:
    """Edit helpers run inside rules: an odd shape gives None (no fix), never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception:
            return None

    return wrapper  # type: ignore[return-value]


def scalar(value: Any) -> str:
    """A YAML scalar for `value` that reads back as the same type (strings quoted when needed)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_text(value)
    s = str(value)
    if (
        _PLAIN_SAFE.match(s)
        and s.lower() not in _RESERVED
        and not re.match(r"^[-+.]?\d", s)
        and not s.startswith(("-", ":", "@"))
        and ": " not in s
        and not s.endswith(":")
        and _resolves_to_str(s)
    ):
        return s
    return json.dumps(s)


@functools.cache
def _resolver() -> Any:
    """PyYAML's implicit resolver, built on the first fix that writes a plain string: a
    rerun whose rules offer no such fix (most edit reruns) never imports the parser."""
    import yaml.resolver

    return yaml.resolver.Resolver()


def _resolves_to_str(s: str) -> bool:
    """Whether YAML 1.1 reads the plain scalar `s` back as a string (not a bool, number, null...)."""
    import yaml.nodes

    return bool(_resolver().resolve(yaml.nodes.ScalarNode, s, (True, False)) == _STR_TAG)


def _float_text(value: float) -> str:
    """A YAML 1.1 float (libyaml needs a `.` in the mantissa and a signed exponent)."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    r = repr(value)
    mant, _, exp = r.partition("e")
    if "." not in mant:
        mant += ".0"
    if exp:
        return f"{mant}e{exp if exp[0] in '+-' else '+' + exp}"
    return mant


def quoted(value: str) -> str:
    return json.dumps(str(value))


def single_quoted(value: str) -> str:
    """A single-quoted YAML scalar (a `'` is doubled); double quotes for line breaks."""
    s = str(value)
    if any(c in s for c in "\n\r\x85\u2028\u2029") or not s.isprintable():
        return json.dumps(s)
    return "'" + s.replace("'", "''") + "'"


def _newline(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


def _newline_at(text: str, offset: int) -> str:
    """The line ending of the line just before `offset` (mixed files keep their local style)."""
    i = text.rfind("\n", 0, offset)
    if i == -1:
        i = text.find("\n", offset)
    if i == -1:
        return _newline(text)
    return "\r\n" if i > 0 and text[i - 1] == "\r" else "\n"


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _pos(obj: K8sObject, path: Sequence[Any]) -> Pos | None:
    return obj.positions.get(obj.base + tuple(path))


def is_flow(obj: K8sObject, path: Sequence[Any]) -> bool:
    p = _pos(obj, path)
    if p is None:
        return False
    text = obj.source.text
    off = obj.source.offset(p[4], p[5])
    return off < len(text) and text[off] in "{["


def _span(obj: K8sObject, path: Sequence[Any]) -> tuple[int, int] | None:
    """Offsets (start, end) of the value at `path`."""
    p = _pos(obj, path)
    if p is None:
        return None
    src = obj.source
    return src.offset(p[4], p[5]), src.offset(p[6], p[7])


def editable(obj: K8sObject, path: Sequence[Any]) -> bool:
    """Whether the value at `path` can be edited as text without side effects.

    False when `path` is missing, or it or an ancestor carries an anchor (`&a`: aliases
    would change too), is an alias (`*a`), has a tag (`!!map`, `!Ref`), or comes from a
    merge key (`<<: *base`), or when the mapping at `path` itself merges one.
    """
    path = tuple(path)
    src = obj.source
    text = src.text
    prev = None
    for i in range(len(path) + 1):
        p = _pos(obj, path[:i])
        if p is None:
            return False
        s = src.offset(p[4], p[5])
        if text[s : s + 1] in ("&", "*", "!"):
            return False
        if prev is not None:
            # an alias or merged key has the span of its anchor, outside this parent
            if (p[4], p[5]) < (prev[4], prev[5]) or (p[6], p[7]) > (prev[6], prev[7]):
                return False
            if i and isinstance(path[i - 1], str) and (p[4], p[5]) < (p[2], p[3]):
                return False
        prev = p
    return _pos(obj, path + ("<<",)) is None


def _flow_has_comment(text: str) -> bool:
    """Whether flow text (several lines) may hold a comment; quoted `#` count too (declining is safe)."""
    return "#" in text and "\n" in text


def _block_scalar_end(text: str, start: int, end: int) -> int:
    """End of a block scalar's last content line (trailing blank lines belong to the layout)."""
    e = end
    while e > start:
        ls = _line_start(text, e - 1)
        if text[ls:e].strip():
            break
        e = ls
    while e > start and text[e - 1] in "\r\n":
        e -= 1
    return e


@_never_raise
def replace_value(obj: K8sObject, path: Sequence[Any], new_text: str) -> Edit | None:
    """Replace the value at `path` (a scalar, or a flow collection) with `new_text`.

    Plain, quoted and block (`|`, `>`) scalars, empty values (`key:`) and flow collections
    can be replaced; block mappings and sequences cannot (None). The inline comment stays.
    When the old scalar was single-quoted and `new_text` is a double-quoted string without
    escapes, the new one is single-quoted too (the file's quote style wins).
    """
    path = tuple(path)
    if not editable(obj, path):
        return None
    sp = _span(obj, path)
    if sp is None:
        return None
    start, end = sp
    text = obj.source.text
    value = obj.get(*path)
    first = text[start : start + 1]
    if isinstance(value, (dict, list)) and first not in "{[":
        return None  # a block value; replacing it textually is not a one-line edit
    if first in "{[" and (_flow_has_comment(text[start:end]) or _has_anchor(text[start:end])):
        return None  # a comment inside a multi-line flow collection would be lost
    if first in "|>":
        end = _block_scalar_end(text, start, end)
    if start == end:
        # an empty value (`key:` or `-`): keep a space after the indicator
        if start > 0 and text[start - 1] not in " \t":
            new_text = " " + new_text
        return Edit(start, end, new_text)
    if (
        first == "'"
        and len(new_text) >= 2
        and new_text[0] == '"'
        and new_text[-1] == '"'
        and "\\" not in new_text[1:-1]
    ):
        new_text = single_quoted(new_text[1:-1])
    return Edit(start, end, new_text)


@_never_raise
def replace_scalar(obj: K8sObject, path: Sequence[Any], value: Any) -> Edit | None:
    """Replace the scalar at `path` with the Python `value`, in the old scalar's quote style.

    A string replacing a `'single'` or `"double"` quoted scalar keeps those quotes; a plain
    scalar gets `scalar(value)` (quoted only when needed). Non-strings use `scalar()`.
    """
    sp = _span(obj, path)
    if sp is None:
        return None
    first = obj.source.text[sp[0] : sp[0] + 1]
    if isinstance(value, str) and first == "'":
        return replace_value(obj, path, single_quoted(value))
    if isinstance(value, str) and first == '"':
        return replace_value(obj, path, quoted(value))
    return replace_value(obj, path, inline(value))


def child_indent(obj: K8sObject, path: Sequence[Any]) -> int | None:
    """The column (0-based) of the keys of the block mapping at `path`."""
    value = obj.get(*path)
    if isinstance(value, dict) and value:
        for k in value:
            p = _pos(obj, tuple(path) + (k,))
            if p:
                return p[1] - 1
    return None


def _step(obj: K8sObject, path: Sequence[Any]) -> int | None:
    """How far the keys of the block mapping at keyed `path` sit right of its key."""
    p = _pos(obj, path)
    if p is None or p[4] <= p[0]:
        return None
    col = child_indent(obj, path)
    return None if col is None or col + 1 <= p[1] else col + 1 - p[1]


def _seq_offset(obj: K8sObject, path: Sequence[Any]) -> int | None:
    """How far the dashes of the block sequence at keyed `path` sit right of its key (0: not indented)."""
    p = _pos(obj, path)
    if p is None or p[4] <= p[0]:
        return None
    s = obj.source.offset(p[4], p[5])
    if obj.source.text[s : s + 1] != "-":
        return None
    return p[5] - p[1]


def _stats(obj: K8sObject) -> tuple[int | None, bool | None, int]:
    """(indentation step, sequences indented?, spaces after `-`) as this object's own layout
    says (None when it does not say; the gap defaults to 1); kept in the object's memo."""
    stats: tuple[int | None, bool | None, int] = obj.cached("edits.layout", lambda: _layout(obj))
    return stats


def _layout(obj: K8sObject) -> tuple[int | None, bool | None, int]:
    units: Counter[int] = Counter()
    seqs: Counter[bool] = Counter()
    gaps: Counter[int] = Counter()
    stack: list[tuple[tuple[Any, ...], Any]] = [((), obj.data)]
    seen = 0
    while stack and seen < 20000:
        path, v = stack.pop()
        seen += 1
        keyed = bool(path) and isinstance(path[-1], str)
        if isinstance(v, dict):
            stack.extend((path + (k,), sub) for k, sub in v.items())
            if keyed and v:
                st = _step(obj, path)
                if st:
                    units[st] += 1
        elif isinstance(v, list):
            stack.extend((path + (i,), sub) for i, sub in enumerate(v))
            if keyed and v:
                off = _seq_offset(obj, path)
                if off is not None:
                    seqs[off > 0] += 1
                    gap = _dash_gap(obj, path)
                    if gap is not None:
                        gaps[gap] += 1
    unit = max(units, key=lambda u: (units[u], u == 2)) if units else None
    seq = max(seqs, key=lambda b: (seqs[b], b)) if seqs else None
    gap = max(gaps, key=lambda g: (gaps[g], g == 1)) if gaps else 1
    return unit, seq, gap


def _dash_gap(obj: K8sObject, seq_path: Sequence[Any]) -> int | None:
    """Spaces between `-` and a mapping item in the block sequence at `seq_path` (`-   name:` is 3)."""
    seq = obj.get(*seq_path)
    p = _pos(obj, seq_path)
    if not isinstance(seq, list) or not seq or not isinstance(seq[0], dict) or p is None:
        return None
    q = _pos(obj, tuple(seq_path) + (0,))
    if q is None or q[4] != p[4]:
        return None
    gap = q[5] - p[5] - 1
    return gap if 1 <= gap <= 8 else None


def _indent_unit(obj: K8sObject) -> int:
    """The file's indentation step (2 unless the file says otherwise)."""
    unit = _stats(obj)[0]
    if unit:
        return unit
    text = obj.source.text
    widths = set()
    for m in re.finditer(r"^( +)[A-Za-z_\"'-]", text[:20000], re.M):
        widths.add(len(m.group(1)))
    for w in (2, 4, 3):
        if w in widths:
            return w
    return 2


def _local_layout(obj: K8sObject, mapping_path: Sequence[Any]) -> tuple[int, bool, int]:
    """(indentation step, sequences indented?, gap after `-`) for new lines inside the
    mapping at `mapping_path`: its sibling blocks first, then the mapping itself, then the
    object, then the file."""
    mapping_path = tuple(mapping_path)
    mapping = obj.get(*mapping_path)
    unit: int | None = None
    seq: bool | None = None
    gap: int | None = None
    if isinstance(mapping, dict):
        for k, v in mapping.items():
            if unit is None and isinstance(v, dict) and v:
                unit = _step(obj, mapping_path + (k,)) or None
            if seq is None and isinstance(v, list) and v:
                off = _seq_offset(obj, mapping_path + (k,))
                if off is not None:
                    seq = off > 0
                    gap = _dash_gap(obj, mapping_path + (k,))
    if unit is None and mapping_path and isinstance(mapping_path[-1], str):
        unit = _step(obj, mapping_path) or None
    if unit is None:
        unit = _indent_unit(obj)
    if seq is None:
        seq = seq_indented(obj)
    return unit, seq, gap or _stats(obj)[2]


def end_of_block(obj: K8sObject, path: Sequence[Any]) -> int | None:
    """Offset just after the last content line of the value at `path`: where a line that
    follows it goes. Comment and blank lines after that line stay after the insertion (they
    belong to what follows); a `|+` block scalar keeps its trailing blank lines."""
    path = tuple(path)
    src = obj.source
    text = src.text
    p = _pos(obj, path)
    if p is None:
        return None
    value = obj.get(*path)
    for _ in range(10000):  # descend to the last child of block collections
        s = src.offset(p[4], p[5])
        if text[s : s + 1] in ("{", "[", "&", "*", "!"):
            break
        if isinstance(value, dict) and value:
            best = None
            for k in value:  # the last key in the text (keys have their own spans, aliases do not)
                cp = _pos(obj, path + (k,))
                if cp is not None and (best is None or (cp[0], cp[1]) > (best[1][0], best[1][1])):
                    best = (k, cp)
            if best is None:
                return None
            k, cp = best
            if (cp[4], cp[5]) < (cp[2], cp[3]):  # `key: *alias`: the value's span is the anchor's
                return _alias_end(text, src.offset(cp[2], cp[3]))
            path, p, value = path + (k,), cp, value[k]
        elif isinstance(value, list) and value:
            cp = _pos(obj, path + (len(value) - 1,))
            if cp is None or (cp[4], cp[5]) < (p[4], p[5]):
                return None  # `- *alias` as the last item: no span of its own
            path, p, value = path + (len(value) - 1,), cp, value[-1]
        else:
            break
    start, end = src.offset(p[4], p[5]), src.offset(p[6], p[7])
    if text[start : start + 1] in "|>":
        if end >= len(text) and not text.endswith("\n"):
            return None  # a line after it would add a line break to the scalar's value
        header = text[start : text.find("\n", start) if "\n" in text[start:] else len(text)]
        if "+" in header.split("#", 1)[0]:
            return end  # keep chomping: the trailing blank lines are content
        end = _block_scalar_end(text, start, end)
    nl = text.find("\n", end)
    return len(text) if nl == -1 else nl + 1


def _alias_end(text: str, key_end: int) -> int | None:
    """Start of the line after `key: *alias` (the alias token located from the key's end)."""
    m = re.compile(r"[ \t]*:[ \t]*(?:#[^\n]*)?(?:\r?\n[ \t]*)*\*[^\s,\[\]{}]+").match(text, key_end)
    if m is None:
        return None
    nl = text.find("\n", m.end())
    return len(text) if nl == -1 else nl + 1


_ANCHOR = lazy_re(r"(?:^|[\s\[{,:-])&[^\s,\[\]{}]+", re.M)


def _has_anchor(text: str) -> bool:
    """Whether `text` defines an anchor (removing it would orphan its aliases)."""
    return _ANCHOR.search(text) is not None


def _join_lines(lines: list[str], nl: str) -> str:
    return "".join((line.rstrip() + nl) if line.strip() else nl for line in lines)


def _insertion(text: str, at: int, lines: list[str]) -> Edit:
    """An edit adding whole lines at line boundary `at`, in the file's line-ending style;
    at the end of a file without a final newline the result has none either."""
    nl = _newline_at(text, at)
    body = _join_lines(lines, nl)
    if at >= len(text) and text and not text.endswith("\n"):
        body = nl + body[: -len(nl)]
    return Edit(at, at, body)


def _key_text(obj: K8sObject, mapping_path: Sequence[Any], key: Any) -> str:
    """The new key as its siblings would write it (JSON-style `"key"` beside quoted keys)."""
    if isinstance(key, str) and key[:1] in ("'", '"') and len(key) > 1 and key[-1] == key[0]:
        return key  # the caller quoted it already
    mapping = obj.get(*mapping_path)
    if isinstance(mapping, dict):
        for k in mapping:
            p = _pos(obj, tuple(mapping_path) + (k,))
            if p is not None:
                q = obj.source.text[obj.source.offset(p[0], p[1]) :][:1]
                if q == '"':
                    return json.dumps(str(key))
                if q == "'":
                    return single_quoted(str(key))
            break
    return scalar(key)


def _flow_insert(obj: K8sObject, path: Sequence[Any], item_text: str) -> Edit | None:
    """Add `item_text` (`key: value` or an item) at the end of the flow collection at `path`."""
    path = tuple(path)
    sp = _span(obj, path)
    if sp is None:
        return None
    start, end = sp
    text = obj.source.text
    close = {"{": "}", "[": "]"}.get(text[start : start + 1])
    if (
        close is None
        or text[end - 1 : end] != close
        or _flow_has_comment(text[start:end])
        or re.search(r"(?:^|[\s\[{,:])\*[^\s,\[\]{}]", text[start:end])
    ):
        return None  # an alias inside: its span is the anchor's, not where it is written
    value = obj.get(*path)
    if not value:
        if text[start + 1 : end - 1].strip():
            return None
        return Edit(start, end, text[start] + item_text + close)
    children = list(value) if isinstance(value, dict) else list(range(len(value)))
    last = None
    for c in children:
        cp = _pos(obj, path + (c,))
        if cp is None:
            return None
        if last is None or (cp[6], cp[7]) > (last[6], last[7]):
            last = cp
    assert last is not None
    src = obj.source
    at = src.offset(last[6], last[7])
    first = _pos(obj, path + (children[0],))
    assert first is not None
    p = _pos(obj, path)
    assert p is not None
    if p[4] != p[6] and last[4] > p[4] and (len(children) == 1 or first[0] != last[0]):
        # one entry per line (pretty JSON): a new line at the last entry's indentation
        line_start = src.offset(last[0], 1)
        lead = text[line_start : src.offset(last[0], last[1])]
        if lead.strip():
            lead = " " * (last[1] - 1)
        return Edit(at, at, "," + _newline_at(text, at) + lead + item_text)
    return Edit(at, at, ", " + item_text)


def _json_style(obj: K8sObject, path: Sequence[Any]) -> bool:
    """Whether the flow collection at `path` is written JSON-style (double-quoted keys or items)."""
    value = obj.get(*path)
    if isinstance(value, dict) and value:
        first = next(iter(value))
        p = _pos(obj, tuple(path) + (first,))
        return p is not None and obj.source.text[obj.source.offset(p[0], p[1])] == '"'
    return obj.source.display.endswith(".json")


def _flow_value(obj: K8sObject, path: Sequence[Any], value: Any) -> str:
    if _json_style(obj, path):
        return json.dumps(value)
    return _inline(value)


@_never_raise
def insert_key(obj: K8sObject, mapping_path: Sequence[Any], key: str, value_lines: str | list[str]) -> Edit | None:
    """Add `key: value` at the end of the mapping at `mapping_path`.

    `value_lines` is either a scalar's text (`"true"`) or a list of lines of a nested block,
    indented relative to the new key (the helper adds the mapping's indentation).
    The mapping must exist (`set_value` creates missing parents). A flow mapping gets
    `, key: value` for a one-line value and None for a block. None when the key exists.
    """
    return _insert_entry(obj, mapping_path, key, value_lines, None)


def _insert_entry(
    obj: K8sObject, mapping_path: Sequence[Any], key: Any, value_lines: str | list[str], after: Sequence[Any] | None
) -> Edit | None:
    mapping_path = tuple(mapping_path)
    mapping = obj.get(*mapping_path)
    if not isinstance(mapping, dict) or key in mapping or not editable(obj, mapping_path):
        return None
    key_text = _key_text(obj, mapping_path, key)
    if is_flow(obj, mapping_path) or not mapping:
        if not isinstance(value_lines, str) or "\n" in value_lines:
            return None
        return _flow_insert(obj, mapping_path, f"{key_text}: {value_lines}")
    indent = child_indent(obj, mapping_path)
    if indent is None:
        return None
    text = obj.source.text
    pad = " " * indent
    if isinstance(value_lines, str):
        lines = [f"{pad}{key_text}: {value_lines}"]
    else:
        lines = [f"{pad}{key_text}:"] + [f"{pad}{line}" if line.strip() else "" for line in value_lines]
    at = None
    for sib in after or ():
        if sib in mapping:
            at = end_of_block(obj, mapping_path + (sib,))
            break
    if at is None:
        at = end_of_block(obj, mapping_path)
    if at is None:
        return None
    return _insertion(text, at, lines)


def block(value: Any, indent_unit: int = 2, seq_indent: bool = True, dash_gap: int = 1) -> list[str]:
    """Lines of a YAML block for a plain value (dicts, lists, scalars), relative indent 0.

    `indent_unit` is the step of nested mappings, `seq_indent` whether a sequence is
    indented under its key, `dash_gap` the spaces after `-` (`-   name:` has 3).
    """
    lines: list[str] = []
    pad = " " * indent_unit
    dash = "-" + " " * dash_gap
    cont = " " * (dash_gap + 1)

    def emit(v: Any, level: int) -> None:
        ind = pad * level
        if isinstance(v, dict):
            for k, sub in v.items():
                if isinstance(sub, (dict, list)) and sub:
                    lines.append(f"{ind}{scalar(k)}:")
                    emit(sub, level + 1 if isinstance(sub, dict) or seq_indent else level)  # noqa: F821 - bound; `del emit` below only breaks the cycle
                else:
                    lines.append(f"{ind}{scalar(k)}: {_inline(sub)}")
        elif isinstance(v, list):
            for item in v:
                if isinstance(item, dict) and item:
                    first = True
                    for k, sub in item.items():
                        lead = f"{ind}{dash}" if first else f"{ind}{cont}"
                        first = False
                        if isinstance(sub, (dict, list)) and sub:
                            lines.append(f"{lead}{scalar(k)}:")
                            sub_lines_start = len(lines)
                            emit(sub, 0)  # noqa: F821 - bound; `del emit` below only breaks the cycle
                            extra = " " * (
                                len(ind) + len(cont) + (indent_unit if isinstance(sub, dict) or seq_indent else 0)
                            )
                            for j in range(sub_lines_start, len(lines)):
                                lines[j] = extra + lines[j]
                        else:
                            lines.append(f"{lead}{scalar(k)}: {_inline(sub)}")
                else:
                    lines.append(f"{ind}{dash}{_inline(item)}")
        else:
            lines.append(f"{ind}{_inline(v)}")

    emit(value, 0)
    del emit  # the recursive closure refers to itself: break the cycle, no garbage for the GC
    return lines


def _inline(v: Any) -> str:
    if isinstance(v, dict):
        return "{}" if not v else "{" + ", ".join(f"{scalar(k)}: {_inline(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_inline(x) for x in v) + "]"
    return scalar(v)


def inline(value: Any) -> str:
    """A one-line YAML text for `value` (flow style for dicts and lists)."""
    return _inline(value)


def indent_unit(obj: K8sObject) -> int:
    return _indent_unit(obj)


def seq_indented(obj: K8sObject) -> bool:
    """Whether the file indents `- item` under its key (`key:\\n  - a`) or not (`key:\\n- a`)."""
    seq = _stats(obj)[1]
    if seq is not None:
        return seq
    m = re.search(r"^( *)[^\s#-][^:\n]*:\s*\n( *)- ", obj.source.text, re.M)
    if not m:
        return True
    return len(m.group(2)) > len(m.group(1))


def _value_lines(obj: K8sObject, mapping_path: Sequence[Any], key: Any, value: Any) -> str | list[str]:
    """The text for `key: <value>` inside the mapping: a flow text, or nested block lines."""
    if is_flow(obj, mapping_path) or not obj.get(*mapping_path):
        return _flow_value(obj, mapping_path, value)
    if isinstance(value, (dict, list)) and value:
        return block({"k": value}, *_local_layout(obj, mapping_path))[1:]
    return _styled(obj, mapping_path, value)


def _styled(obj: K8sObject, coll_path: Sequence[Any], value: Any) -> str:
    """`scalar(value)`, single-quoted instead of double-quoted when the quoted scalars of
    the collection at `coll_path` are single-quoted."""
    out = _inline(value)
    if not isinstance(value, str) or not out.startswith('"') or "\\" in out:
        return out
    coll = obj.get(*coll_path)
    keys = list(coll) if isinstance(coll, dict) else range(len(coll)) if isinstance(coll, list) else []
    votes: Counter[str] = Counter()
    src = obj.source
    for k in keys:
        p = _pos(obj, tuple(coll_path) + (k,))
        if p is not None:
            c = src.text[src.offset(p[4], p[5]) :][:1]
            if c in ("'", '"'):
                votes[c] += 1
    if votes["'"] > votes['"']:
        return single_quoted(value)
    return out


@_never_raise
def insert_value(obj: K8sObject, mapping_path: Sequence[Any], key: str, value: Any) -> Edit | None:
    """Insert `key: <value>` (any plain value) at the end of the mapping at `mapping_path`.

    Nested dicts and lists become a block in the layout of the surrounding mapping (its
    indentation step, its sequence style); a flow mapping gets a flow entry.
    """
    return _insert_entry(obj, mapping_path, key, _value_lines(obj, mapping_path, key, value), None)


@_never_raise
def insert_key_after(
    obj: K8sObject, mapping_path: Sequence[Any], key: str, value: Any, after: str | Sequence[str] = ()
) -> Edit | None:
    """Insert `key: <value>` right after the first of the sibling keys `after` that exists
    (`tolerations` after `nodeSelector`, `limits` after `requests`), else at the end.

    `value` is a plain Python value, as for `insert_value`. Comment lines that follow the
    sibling stay with the key after them. In a flow mapping the entry goes at the end.
    """
    if isinstance(after, str):
        after = (after,)
    return _insert_entry(obj, mapping_path, key, _value_lines(obj, mapping_path, key, value), tuple(after))


@_never_raise
def set_value(obj: K8sObject, path: Sequence[Any], value: Any, after: str | Sequence[str] = ()) -> Edit | None:
    """Make the value at `path` equal `value`, creating missing parent mappings.

    An existing scalar, empty value or flow collection is replaced (quote style kept for
    strings); a missing key is inserted into its nearest existing ancestor mapping with the
    missing parents as a nested block (`after` names siblings to place the first new key
    after). An empty parent (`resources:` or `resources: {}`) is filled in. None when the
    path crosses a list index that does not exist, a block value would have to be replaced,
    or the layout is unsafe (anchors, aliases, tags, merge keys).
    """
    path = tuple(path)
    if not path:
        return None
    if obj.has(path):
        cur = obj.get(*path)
        if cur == value and type(cur) is type(value):
            return None
        sp = _span(obj, path)
        if sp is None:
            return None
        if isinstance(value, (dict, list)) and value and sp[0] == sp[1] and cur is None:
            return _fill_empty(obj, path, value)
        if isinstance(value, (dict, list)):
            if is_flow(obj, path) or cur is None or not isinstance(cur, (dict, list)):
                return replace_value(
                    obj, path, _flow_value(obj, path[:-1], value) if is_flow(obj, path[:-1]) else _inline(value)
                )
            return None
        return replace_scalar(obj, path, value)
    # the nearest existing ancestor, and the nested value to put there
    i = len(path) - 1
    while i > 0 and not obj.has(path[:i]):
        i -= 1
    missing = path[i:]
    if not all(isinstance(k, str) for k in missing):
        return None
    nested: Any = value
    for k in reversed(missing[1:]):
        nested = {k: nested}
    parent = path[:i]
    cur = obj.get(*parent)
    if cur is None and parent:
        return set_value(obj, parent, {missing[0]: nested})
    if not isinstance(cur, dict):
        return None
    if isinstance(after, str):
        after = (after,)
    return _insert_entry(obj, parent, missing[0], _value_lines(obj, parent, missing[0], nested), tuple(after))


def _fill_empty(obj: K8sObject, path: tuple[Any, ...], value: Any) -> Edit | None:
    """`key:` with an empty value becomes `key:` plus a nested block (inline comment kept)."""
    if not editable(obj, path):
        return None
    src = obj.source
    text = src.text
    p = _pos(obj, path)
    assert p is not None
    if not isinstance(path[-1], str) or p[0] != p[4]:
        return None
    pad = " " * (p[1] - 1)
    lines = block({"k": value}, *_local_layout(obj, path[:-1]))[1:]
    nl_at = text.find("\n", src.offset(p[4], p[5]))
    at = len(text) if nl_at == -1 else nl_at + 1
    return _insertion(text, at, [pad + line for line in lines])


@_never_raise
def append_item(obj: K8sObject, seq_path: Sequence[Any], item: Any) -> Edit | None:
    """Append an item to the sequence at `seq_path` (block: same dash column and gap; flow:
    `, item`; an empty `[]` becomes `[item]`)."""
    seq_path = tuple(seq_path)
    seq = obj.get(*seq_path)
    if not isinstance(seq, list) or not editable(obj, seq_path):
        return None
    if is_flow(obj, seq_path) or not seq:
        return _flow_insert(obj, seq_path, _flow_value(obj, seq_path, item))
    p_seq = _pos(obj, seq_path)
    p_first = _pos(obj, seq_path + (0,))
    if p_seq is None or p_first is None:
        return None
    src = obj.source
    text = src.text
    dash = src.offset(p_seq[4], p_seq[5])
    if text[dash : dash + 1] != "-" or p_first[4] != p_seq[4]:
        return None
    dash_col = p_seq[5] - 1
    gap = p_first[5] - p_seq[5] - 1  # spaces between `-` and the item
    if gap < 1:
        return None
    unit, seq_ind, _ = _local_layout(obj, seq_path[:-1]) if seq_path else (_indent_unit(obj), seq_indented(obj), 1)
    lines = block([item], unit, seq_ind, gap)
    if not isinstance(item, (dict, list)):
        lines = ["-" + " " * gap + _styled(obj, seq_path, item)]
    out = [" " * dash_col + line for line in lines]
    at = end_of_block(obj, seq_path)
    if at is None:
        return None
    return _insertion(text, at, out)


@dataclass(frozen=True, slots=True)
class DocumentEdit(Edit):
    """An insertion of whole YAML documents (built by `append_document`).

    `documents` declares how many documents `content` adds. `ailint check --fix` accepts a
    result with more documents than the file had only through such edits, and only when the
    added documents parse to exactly what `content` parses to on its own.
    """

    documents: int = 1


_MARKER_LINE = lazy_re(r"^---[ \t]*(?:#.*)?$")


@_never_raise
def append_document(obj: K8sObject, value: dict[str, Any]) -> DocumentEdit | None:
    """Append `value` (a plain mapping: a whole new object) as a new document at the end of
    the file of `obj`.

    The document follows the file's layout (indentation step, sequence style, gap after `-`,
    line endings) and starts with a `---` line; a missing final newline stays missing; in a
    file that ends with a `---` line (documents terminated, not separated) it goes before
    that line, which stays last. The end of the file (not the spot after `obj`) keeps the
    document numbers of every existing object, so findings keep their identity between fix
    passes; several appends in one pass go in fix order. None for JSON files and when the
    text would not read back as `value`.
    """
    src = obj.source
    text = src.text
    if not isinstance(value, dict) or not value or src.display.endswith(".json") or not text.strip():
        return None
    doc = block(value, _indent_unit(obj), seq_indented(obj), _stats(obj)[2])
    import yaml
    from ailint.core.yamldata import load_all_data

    try:
        back = load_all_data(_join_lines(doc, "\n"))
    except yaml.YAMLError:
        return None
    if repr(back) != repr([value]):
        return None  # a value the block writer cannot round-trip (exotic keys or types)
    at = len(text)
    ls = _line_start(text, len(text.rstrip()))
    if _MARKER_LINE.match(text[ls:].strip()):
        at = ls  # before the closing `---`
    nl = _newline_at(text, at)
    body = _join_lines(["---"] + doc, nl)
    if at >= len(text) and not text.endswith("\n"):
        body = nl + body[: -len(nl)]
    return DocumentEdit(at, at, body, 1)


def _delete_lines(text: str, start: int, end: int) -> Edit:
    """Remove whole lines text[start:end]; at the end of a file without a final newline the
    line break before them goes too, so the file still ends without one."""
    if end >= len(text) and not text.endswith("\n") and start > 0:
        start -= 2 if text[start - 2 : start] == "\r\n" else 1
    return Edit(start, end, "")


def _comment_lines(text: str) -> bool:
    return any(line.lstrip().startswith("#") for line in text.splitlines())


def _emptied(obj: K8sObject, parent: tuple[Any, ...], empty: str, start: int, end: int) -> Edit | None:
    """Remove text[start:end] (the only entry of the block collection at `parent`) and
    leave `parent: {}` / `parent: []`, when nothing but blank lines separates them."""
    src = obj.source
    text = src.text
    if not parent or not isinstance(parent[-1], str):
        return None
    pp = _pos(obj, parent)
    if pp is None:
        return None
    key_end = src.offset(pp[2], pp[3])
    line_end = text.find("\n", key_end)
    line_end = len(text) if line_end == -1 else line_end
    if text[line_end - 1 : line_end] == "\r":
        line_end -= 1
    rest = text[key_end:line_end]
    if rest.strip() != ":" or text[line_end:start].strip() or line_end >= start:
        return None  # an inline comment or comment lines would be lost; leave it to a human
    colon = key_end + rest.index(":") + 1
    brk = ""
    if text[end - 1 : end] == "\n":
        brk = "\r\n" if text[line_end : line_end + 1] == "\r" else "\n"
    return Edit(colon, end, " " + empty + brk)


@_never_raise
def delete_key(obj: K8sObject, path: Sequence[Any]) -> Edit | None:
    """Remove the `key: value` lines of a block mapping entry (comments before and after it
    stay; None when comment lines sit inside the entry's block). Deleting the only key of a
    mapping leaves `parent: {}`."""
    path = tuple(path)
    p = _pos(obj, path)
    if p is None or not path or not isinstance(path[-1], str) or not editable(obj, path):
        return None
    src = obj.source
    text = src.text
    if is_flow(obj, path[:-1]):
        return _flow_delete(obj, path)
    start = src.offset(p[0], p[1])
    ls = _line_start(text, start)
    if text[ls:start].strip():
        return None  # key is not first on its line (`- key:`)
    end = end_of_block(obj, path)
    if end is None or end <= start or _comment_lines(text[ls:end]) or _has_anchor(text[ls:end]):
        return None
    parent = obj.get(*path[:-1])
    if isinstance(parent, dict) and len(parent) == 1:
        return _emptied(obj, path[:-1], "{}", ls, end)
    return _delete_lines(text, ls, end)


@_never_raise
def delete_item(obj: K8sObject, seq_path: Sequence[Any], index: int) -> Edit | None:
    """Remove item `index` of the sequence at `seq_path` (block: its lines, None when comment
    lines sit inside it; flow: the item and its comma). The last item leaves `key: []`."""
    seq_path = tuple(seq_path)
    seq = obj.get(*seq_path)
    if not isinstance(seq, list) or not -len(seq) <= index < len(seq) or not editable(obj, seq_path):
        return None
    index %= len(seq)
    if is_flow(obj, seq_path):
        return _flow_delete(obj, seq_path + (index,))
    p = _pos(obj, seq_path + (index,))
    if p is None:
        return None
    src = obj.source
    text = src.text
    item = src.offset(p[4], p[5])
    ls = _line_start(text, item)
    dash = text[ls:item].rstrip()
    if not dash.endswith("-") or dash[:-1].strip():
        return None  # not `- item` at the start of its line
    end = end_of_block(obj, seq_path + (index,))
    if end is None or end <= item or _comment_lines(text[ls:end]) or _has_anchor(text[ls:end]):
        return None
    if len(seq) == 1:
        return _emptied(obj, seq_path, "[]", ls, end)
    return _delete_lines(text, ls, end)


def _flow_delete(obj: K8sObject, path: tuple[Any, ...]) -> Edit | None:
    """Remove one entry of a flow collection with its separating comma."""
    parent = path[:-1]
    coll = obj.get(*parent)
    src = obj.source
    text = src.text
    sp = _span(obj, parent)
    if sp is None or _flow_has_comment(text[sp[0] : sp[1]]) or _has_anchor(text[sp[0] : sp[1]]):
        return None
    keys = list(coll) if isinstance(coll, dict) else list(range(len(coll)))
    i = keys.index(path[-1])

    def start_of(k: Any) -> int | None:
        q = _pos(obj, parent + (k,))
        return None if q is None else src.offset(q[0], q[1])

    def end_of(k: Any) -> int | None:
        q = _pos(obj, parent + (k,))
        return None if q is None else src.offset(q[6], q[7])

    s, e = start_of(keys[i]), end_of(keys[i])
    if s is None or e is None:
        return None
    if len(keys) == 1:
        return Edit(sp[0] + 1, sp[1] - 1, "")
    if i + 1 < len(keys):
        nxt = start_of(keys[i + 1])
        return None if nxt is None else Edit(s, nxt, "")
    prev = end_of(keys[i - 1])
    return None if prev is None else Edit(prev, e, "")
