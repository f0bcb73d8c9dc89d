"""Indentation-aware text edits for fixes: untouched bytes stay untouched.

Each helper returns an `Edit` against the original text, or None when the file's layout
makes a safe text edit impossible (flow style, an anchor, a missing parent); the rule then
offers no fix and says what to change in its message.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from .model import Edit, K8sObject

_PLAIN_SAFE = re.compile(r"^[A-Za-z0-9_./@:+-]+$")
_RESERVED = {"y", "yes", "n", "no", "true", "false", "on", "off", "null", "~", ""}


def scalar(value: Any) -> str:
    """A YAML scalar for `value` that reads back as the same type (strings quoted when needed)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return str(value)
    s = str(value)
    if (_PLAIN_SAFE.match(s) and s.lower() not in _RESERVED and not re.match(r"^[-+.]?\d", s)
            and not s.startswith(("-", ":", "@")) and ": " not in s):
        return s
    return json.dumps(s)


def quoted(value: str) -> str:
    return json.dumps(str(value))


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _pos(obj: K8sObject, path: Sequence[Any]):
    return obj.positions.get(obj.base + tuple(path))


def is_flow(obj: K8sObject, path: Sequence[Any]) -> bool:
    p = _pos(obj, path)
    if p is None:
        return False
    text = obj.source.text
    off = obj.source.offset(p[4], p[5])
    return off < len(text) and text[off] in "{["


def replace_value(obj: K8sObject, path: Sequence[Any], new_text: str) -> Edit | None:
    """Replace the value at `path` (a scalar, or a flow collection) with `new_text`."""
    p = _pos(obj, path)
    if p is None:
        return None
    src = obj.source
    start, end = src.offset(p[4], p[5]), src.offset(p[6], p[7])
    if src.text[start:start + 1] in ("&", "*", "!"):
        return None  # anchors, aliases and tags: leave them to a human
    if p[6] != p[4] and src.text[start:start + 1] not in "\"'{[":
        return None  # a block value; replacing it textually is not a one-line edit
    return Edit(start, end, new_text)


def child_indent(obj: K8sObject, path: Sequence[Any]) -> int | None:
    """The column (0-based) of the keys of the block mapping at `path`."""
    value = obj.get(*path)
    if isinstance(value, dict) and value:
        for k in value:
            p = _pos(obj, tuple(path) + (k,))
            if p:
                return p[1] - 1
    return None


def _indent_unit(obj: K8sObject) -> int:
    """The file's indentation step (2 unless the file says otherwise)."""
    text = obj.source.text
    widths = set()
    for m in re.finditer(r"^( +)[A-Za-z_\"'-]", text[:20000], re.M):
        widths.add(len(m.group(1)))
    for w in (2, 4, 3):
        if w in widths:
            return w
    return 2


def _end_of_block(obj: K8sObject, path: Sequence[Any]) -> int | None:
    """Offset just after the last line of the block value at `path` (before trailing
    blank lines and comments at a lower indentation)."""
    p = _pos(obj, path)
    if p is None:
        return None
    src = obj.source
    text = src.text
    end = src.offset(p[6], p[7])
    # libyaml ends a block at the next token; step back over blank and comment lines.
    ls = _line_start(text, end)
    if ls == end or not text[ls:end].strip():
        end = ls
    else:
        nl = text.find("\n", end)
        end = len(text) if nl == -1 else nl + 1
        return end
    while end > 0:
        prev_start = _line_start(text, end - 1)
        line = text[prev_start:end].strip()
        if line == "" or line.startswith("#"):
            if prev_start == 0:
                break
            end = prev_start
            continue
        break
    return end


def insert_key(obj: K8sObject, mapping_path: Sequence[Any], key: str, value_lines: str | list[str]) -> Edit | None:
    """Add `key: value` at the end of the block mapping at `mapping_path`.

    `value_lines` is either a scalar's text (`"true"`) or a list of lines of a nested block,
    indented relative to the new key (the helper adds the mapping's indentation).
    The mapping must exist; to create missing parents, insert at the nearest parent with a
    nested block.
    """
    mapping = obj.get(*mapping_path)
    if not isinstance(mapping, dict) or is_flow(obj, mapping_path):
        return None
    text = obj.source.text
    nl = _newline(text)
    indent = child_indent(obj, mapping_path)
    if indent is None:
        return None
    if not mapping_path and obj.base:
        return None
    pad = " " * indent
    if isinstance(value_lines, str):
        body = f"{pad}{key}: {value_lines}{nl}"
    else:
        body = f"{pad}{key}:{nl}" + "".join(f"{pad}{line}{nl}" if line else nl for line in value_lines)
    end = _end_of_block(obj, mapping_path)
    if end is None:
        return None
    if end > 0 and text[end - 1] != "\n":
        body = nl + body
    return Edit(end, end, body)


def block(value: Any, indent_unit: int = 2, seq_indent: bool = True) -> list[str]:
    """Lines of a YAML block for a plain value (dicts, lists, scalars), relative indent 0."""
    lines: list[str] = []
    pad = " " * indent_unit

    def emit(v: Any, level: int) -> None:
        ind = pad * level
        if isinstance(v, dict):
            for k, sub in v.items():
                if isinstance(sub, (dict, list)) and sub:
                    lines.append(f"{ind}{scalar(k)}:")
                    emit(sub, level + 1 if isinstance(sub, dict) or seq_indent else level)
                else:
                    lines.append(f"{ind}{scalar(k)}: {_inline(sub)}")
        elif isinstance(v, list):
            for item in v:
                if isinstance(item, dict) and item:
                    first = True
                    for k, sub in item.items():
                        lead = f"{ind}- " if first else f"{ind}  "
                        first = False
                        if isinstance(sub, (dict, list)) and sub:
                            lines.append(f"{lead}{scalar(k)}:")
                            sub_lines_start = len(lines)
                            emit(sub, 0)
                            extra = " " * (len(ind) + 2 + (indent_unit if isinstance(sub, dict) or seq_indent else 0))
                            for j in range(sub_lines_start, len(lines)):
                                lines[j] = extra + lines[j]
                        else:
                            lines.append(f"{lead}{scalar(k)}: {_inline(sub)}")
                else:
                    lines.append(f"{ind}- {_inline(item)}")
        else:
            lines.append(f"{ind}{_inline(v)}")

    emit(value, 0)
    return lines


def _inline(v: Any) -> str:
    if isinstance(v, dict):
        return "{}" if not v else "{" + ", ".join(f"{scalar(k)}: {_inline(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_inline(x) for x in v) + "]"
    return scalar(v)


def indent_unit(obj: K8sObject) -> int:
    return _indent_unit(obj)


def seq_indented(obj: K8sObject) -> bool:
    """Whether the file indents `- item` under its key (`key:\\n  - a`) or not (`key:\\n- a`)."""
    m = re.search(r"^( *)[^\s#-][^:\n]*:\s*\n( *)- ", obj.source.text, re.M)
    if not m:
        return True
    return len(m.group(2)) > len(m.group(1))


def insert_value(obj: K8sObject, mapping_path: Sequence[Any], key: str, value: Any) -> Edit | None:
    """Insert `key: <value>` (any plain value) in the block mapping at `mapping_path`."""
    if isinstance(value, (dict, list)) and value:
        lines = block({key: value}, _indent_unit(obj), seq_indented(obj))
        first, rest = lines[0], lines[1:]
        assert first.endswith(":")
        return insert_key(obj, mapping_path, key, rest)
    return insert_key(obj, mapping_path, key, _inline(value))


def append_item(obj: K8sObject, seq_path: Sequence[Any], item: Any) -> Edit | None:
    """Append an item to the block sequence at `seq_path`."""
    seq = obj.get(*seq_path)
    if not isinstance(seq, list) or not seq or is_flow(obj, seq_path):
        return None
    p_first = _pos(obj, tuple(seq_path) + (0,))
    if p_first is None:
        return None
    text = obj.source.text
    nl = _newline(text)
    item_col = p_first[5] - 1  # column of the item's content
    dash_col = item_col - 2
    if dash_col < 0 or text[obj.source.offset(p_first[4], dash_col + 1)] != "-":
        return None
    lines = block([item], _indent_unit(obj), seq_indented(obj))
    body = "".join(" " * dash_col + line + nl for line in lines)
    end = _end_of_block(obj, seq_path)
    if end is None:
        return None
    if end > 0 and text[end - 1] != "\n":
        body = nl + body
    return Edit(end, end, body)


def delete_key(obj: K8sObject, path: Sequence[Any]) -> Edit | None:
    """Remove `key: value` lines of a block mapping entry (keeps neighbouring comments)."""
    p = _pos(obj, path)
    if p is None or not path or not isinstance(path[-1], str):
        return None
    src = obj.source
    text = src.text
    start = src.offset(p[0], p[1])
    ls = _line_start(text, start)
    if text[ls:start].strip():
        return None  # key is not first on its line (flow mapping or `- key:`)
    end = _end_of_block(obj, path)
    if end is None or end <= start:
        return None
    return Edit(ls, end, "")
