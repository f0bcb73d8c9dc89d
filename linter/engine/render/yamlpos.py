"""Plain data and key positions of small YAML files (values files, patches, bases).

Independent of the linter's loader on purpose: these files are read only to point at a
line, so a simple walk over PyYAML's composed nodes is enough.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# path -> (key line, key col, key end col, value line, value col), 1-based; list items and
# the root repeat the value's start as their key
KeyPos = tuple[int, int, int, int, int]


@dataclass
class Doc:
    """A YAML document read with the positions of its nodes."""

    data: Any
    positions: dict[tuple[Any, ...], KeyPos] = field(default_factory=dict)
    text: str = ""  # the whole text the document was read from (lines as in `positions`)


def documents(text: str, first_line: int = 1, col_offset: int = 0) -> list[Doc]:
    """Every document of `text`; lines shifted so that text line 1 is `first_line`."""
    from ailint.core.yamldata import load_all_data, pyyaml_compose_all

    out: list[Doc] = []
    try:
        nodes = pyyaml_compose_all(text)
        datas = load_all_data(text)
    except Exception:
        return out
    for node, data in zip(nodes, datas):
        d = Doc(data, text=text)
        if node is not None:
            _walk(node, (), None, d.positions, first_line - 1, col_offset)
        out.append(d)
    return out


def _walk(node: Any, path: tuple[Any, ...], key: Any, pos: dict[tuple[Any, ...], KeyPos], dl: int, dc: int) -> None:
    import yaml

    vl, vc = node.start_mark.line + 1 + dl, node.start_mark.column + 1 + dc
    if key is None:
        pos[path] = (vl, vc, vc + 1, vl, vc)
    else:
        kl, kc = key.start_mark.line + 1 + dl, key.start_mark.column + 1 + dc
        ke = key.end_mark.column + 1 + dc if key.end_mark.line == key.start_mark.line else kc + 1
        pos[path] = (kl, kc, ke, vl, vc)
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                _walk(v, (*path, k.value), k, pos, dl, dc)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*path, i), None, pos, dl, dc)


def get(data: Any, path: tuple[Any, ...]) -> Any:
    cur = data
    for step in path:
        if (isinstance(cur, dict) and step in cur) or (
            isinstance(cur, list) and isinstance(step, int) and 0 <= step < len(cur)
        ):
            cur = cur[step]
        else:
            return _MISSING
    return cur


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()
MISSING = _MISSING
