"""Fixes of rendered output, re-expressed as edits of the files a person keeps.

A rule's fix edits the rendered text. Here it is applied to that text, both versions are
parsed, and each data change (a key added, a value changed) is carried back to a source:

- the value comes straight from a values key (`{{ .Values.x }}`, or a block printed by
  `toYaml .Values.x`): the values file, through a ruamel.yaml round trip that keeps every
  comment (a text edit of the one scalar when the round trip would reformat the file);
- the key sits under a plain template line (a literal `key:` or list item) and no directive
  in that block could print the same key: a text edit inserting or replacing that line;
- overlays: the patch or base file that holds the parent key, by the same text edit.

Anything else gets no fix (the rendered fix would be lost on the next render); the message
then names the values key to set. `apply_source_fixes` is `--fix`/`--diff` for these:
each file written atomically, the run linted again, until nothing changes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ailint.core.model import Applicability, Edit, Fix, K8sObject

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True, slots=True)
class SourceFix(Fix):
    """A fix whose edits apply to `target` (absolute path), not to the finding's own file."""

    target: str = ""
    target_display: str = ""  # how reports name `target` (its edits' positions are in that file)


def _apply_text(text: str, edits: tuple[Edit, ...]) -> str:
    out = text
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        out = out[: e.start] + e.content + out[e.end :]
    return out


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def _minimal_edit(old: str, new: str) -> Edit:
    """One edit of whole lines turning `old` into `new` (common leading and trailing lines kept)."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    j = 0
    while j < min(len(a), len(b)) - i and a[len(a) - 1 - j] == b[len(b) - 1 - j]:
        j += 1
    start = sum(len(x) for x in a[:i])
    end = len(old) - sum(len(x) for x in a[len(a) - j :])
    return Edit(start, end, "".join(b[i : len(b) - j]))


def remap_fix(fix: Fix, obj: K8sObject, loc: Any, mapper: Any, rd: Any) -> Fix | None:
    """`fix` (edits of the rendered text) as a `SourceFix` of one source file, or None."""
    try:
        return _remap(fix, obj, mapper, rd)
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        return None


def _remap(fix: Fix, obj: K8sObject, mapper: Any, rd: Any) -> Fix | None:
    from ailint.engine.render import yamlpos
    from ailint.fix.apply import data_changes

    if any(type(e) is not Edit for e in fix.edits):
        return None  # whole documents appended: no source to append them to
    old_text = obj.source.text
    new_text = _apply_text(old_text, fix.edits)
    old_docs = yamlpos.documents(old_text)
    new_docs = yamlpos.documents(new_text)
    if len(old_docs) != len(new_docs):
        return None
    targets: dict[str, str] = {}  # file -> new text
    for a, b in zip(old_docs, new_docs):
        if a.data == b.data:
            continue
        target = _object_at(mapper, rd, a)
        if target is None:
            return None
        for kind, path in data_changes(a.data, b.data):
            if kind == "remove":
                return None
            ok = _carry(kind, path, target, a, b, mapper, rd, targets)
            if not ok:
                return None
    if len(targets) != 1:
        return None
    ((target_file, new),) = targets.items()
    old = _read(target_file)
    if old is None or old == new:
        return None
    shown = mapper.shown(target_file)
    return SourceFix(fix.title, (_minimal_edit(old, new),), fix.applicability, target=target_file, target_display=shown)


def _object_at(mapper: Any, rd: Any, doc: Any) -> K8sObject | None:
    data = doc.data
    if not isinstance(data, dict):
        return None
    meta = data.get("metadata") or {}
    for objs in mapper.by_doc.values():
        for lst in objs.values():
            for o in lst:
                if (
                    o.source.display == f"{rd.unit.title} (rendered)"
                    and o.kind == data.get("kind")
                    and o.name == meta.get("name")
                    and o.namespace == meta.get("namespace")
                ):
                    return o
    return None


def _carry(
    kind: str,
    path: tuple[Any, ...],
    obj: K8sObject,
    old: Any,
    new: Any,
    mapper: Any,
    rd: Any,
    targets: dict[str, str],
) -> bool:
    """Carry one change to a source text in `targets`; False when it cannot be."""
    from ailint.engine.render import yamlpos

    value = yamlpos.get(new.data, path)
    parent = path[:-1]
    if rd.unit.kind == "chart":
        cm = mapper.chart_map(rd)
        if not obj.template:
            return False
        if kind == "change":
            loc = mapper.sm.locate_chart(cm, obj.template, obj.kind, obj.data, obj.positions, path)
            if loc is None or (loc.line == 1 and loc.note):
                return False
            if loc.values_file and loc.values_path is not None and (loc.direct or not loc.plain):
                return _values_set(loc.values_file, loc.values_path, value, targets)
            if loc.plain:
                return _line_value(loc.file, loc.line, value, targets)
            return False
        # an added key or item: under the parent's template line or its values block
        ploc = mapper.sm.locate_chart(cm, obj.template, obj.kind, obj.data, obj.positions, parent)
        if ploc is None or (ploc.line == 1 and ploc.note):
            return False
        if ploc.values_file and ploc.values_path is not None:
            if isinstance(path[-1], int):
                return False  # an item added to a values list: order is the values author's
            return _values_set(ploc.values_file, (*ploc.values_path, path[-1]), value, targets)
        if not ploc.plain or isinstance(path[-1], int):
            return False
        return _insert_under(ploc.file, ploc.line, path, new, targets, template=True)
    # overlays: the patch or base file holding the parent
    origin = rd.origins.get(obj.doc_index)
    if kind == "change":
        loc = mapper.sm.locate_overlay(rd.scan, origin, obj.kind, obj.data, path)
        if loc is None or not loc.plain or loc.note or loc.file.endswith(("kustomization.yaml", "kustomization.yml")):
            return False
        return _line_value(loc.file, loc.line, value, targets)
    if isinstance(path[-1], int):
        return False
    ploc = mapper.sm.locate_overlay(rd.scan, origin, obj.kind, obj.data, parent)
    if ploc is None or not ploc.plain or ploc.note or os.path.basename(ploc.file).lower().startswith("kustomization"):
        return False
    return _insert_under(ploc.file, ploc.line, path, new, targets, template=False)


def _text(path: str, targets: dict[str, str]) -> str | None:
    return targets[path] if path in targets else _read(path)


def _line_value(file: str, line: int, value: Any, targets: dict[str, str]) -> bool:
    """Replace the scalar after `key:` on a plain line."""
    from ailint.fix.edits import scalar

    if isinstance(value, (dict, list)):
        return False
    text = _text(file, targets)
    if text is None:
        return False
    lines = text.split("\n")
    ln = lines[line - 1]
    if "{{" in ln or ":" not in ln:
        return False
    head, _, rest = ln.partition(": ")
    if not rest:
        return False
    comment = ""
    if " #" in rest:
        rest, c = rest.split(" #", 1)
        comment = " #" + c
    lines[line - 1] = f"{head}: {scalar(value)}{comment}"
    targets[file] = "\n".join(lines)
    return True


def _insert_under(
    file: str, line: int, path: tuple[Any, ...], new: Any, targets: dict[str, str], template: bool
) -> bool:
    """Insert the added key (as the rendered fix wrote it) under the key or item on `line`."""
    from ailint.engine.render import sourcemap

    text = _text(file, targets)
    if text is None:
        return False
    kp = new.positions.get(path)
    if kp is None:
        return False
    # the rendered lines of the added key, from its key line to the line before the next sibling
    new_lines = _rendered_block(new, path)
    if not new_lines:
        return False
    key_col = kp[1]
    lines = text.split("\n")
    at = lines[line - 1]
    stripped = at.lstrip(" ")
    own = len(at) - len(stripped)
    is_item = stripped.startswith("- ")
    child_col = own + 3 if is_item else None  # 1-based column of the item's keys
    if not is_item:
        # the first deeper content line gives the children's column
        for nxt in lines[line:]:
            s = nxt.strip()
            if not s or s.startswith("#") or (s.startswith("{{") and s.endswith("}}")):
                continue
            ind = len(nxt) - len(nxt.lstrip(" "))
            child_col = ind + 1 if ind > own else None
            break
    if child_col is None or child_col != key_col:
        return False
    if template:
        # no line of that block may hold the key already (behind a condition), nor print values into it
        tpl = sourcemap.template(file)
        if tpl is None:
            return False
        end = sourcemap.block_end(tpl, line - 1, item=is_item)
        for j in range(line, end):
            x = tpl.lines[j]
            if x.content and x.key == path[-1] and x.key_col == key_col:
                return False
            if x.directive_only and any(sourcemap.EMITS.search(a) for a in x.actions) and x.start <= key_col:
                return False
            if (
                x.directive_only
                and x.start <= key_col
                and any(re.match(r"\s*(if|else|range|with|end)\b", a) for a in x.actions)
            ):
                return False  # the block is conditional at the key's level: another branch may differ
            if x.content and x.key is None and not x.dashes:
                return False  # a flow value (`{}`) in the block: a key beside it would not parse
    lines[line:line] = new_lines
    targets[file] = "\n".join(lines)
    return True


def _rendered_block(doc: Any, path: tuple[Any, ...]) -> list[str]:
    """The text lines of `path` (key and value) in a parsed document's source, re-created
    from positions: the key line through the last line of its value."""
    kp = doc.positions.get(path)
    if kp is None:
        return []
    text = getattr(doc, "text", None)
    if text is None:
        return []
    lines = text.split("\n")
    start = kp[0] - 1
    end = start + 1
    for p, q in doc.positions.items():
        if p[: len(path)] == path and len(p) > len(path):
            end = max(end, q[3])
    return lines[start:end]


def _values_set(file: str, vpath: tuple[Any, ...], value: Any, targets: dict[str, str]) -> bool:
    """Set `vpath` in a values file: ruamel round trip when it keeps the file as written."""
    import io

    from ruamel.yaml import YAML

    text = _text(file, targets)
    if text is None:
        return False
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 1 << 16
    try:
        data = yaml.load(text)
        buf = io.StringIO()
        yaml.dump(data, buf)
        faithful = buf.getvalue() == text
        if not faithful:
            # a common indentation style: sequences indented under their key
            yaml.indent(mapping=2, sequence=4, offset=2)
            buf = io.StringIO()
            yaml.dump(data, buf)
            faithful = buf.getvalue() == text
    except Exception:
        return False
    if faithful:
        cur = data
        for step in vpath[:-1]:
            if isinstance(cur, dict):
                if step not in cur or cur[step] is None:
                    cur[step] = {}
                cur = cur[step]
            elif isinstance(cur, list) and isinstance(step, int) and step < len(cur):
                cur = cur[step]
            else:
                return False
        if not isinstance(cur, (dict, list)):
            return False
        cur[vpath[-1]] = value
        buf = io.StringIO()
        yaml.dump(data, buf)
        targets[file] = buf.getvalue()
        return True
    # the round trip would reformat the file: only a scalar in place, as text
    from ailint.engine.render import yamlpos

    docs = yamlpos.documents(text)
    if not docs or vpath not in docs[0].positions or isinstance(value, (dict, list)):
        return False
    scratch = {file: text}
    if not _line_value(file, docs[0].positions[vpath][0], value, scratch):
        return False
    targets[file] = scratch[file]
    return True


# -- --fix / --diff for the source fixes ------------------------------------------------------
def source_fixes(result: Any, unsafe: bool) -> dict[str, list[tuple[Any, SourceFix]]]:
    out: dict[str, list[tuple[Any, SourceFix]]] = {}
    for f in result.findings:
        fx = f.fix
        if isinstance(fx, SourceFix) and (unsafe or fx.applicability == Applicability.SAFE):
            out.setdefault(fx.target, []).append((f, fx))
    return out


def apply_source_fixes(
    result: Any, unsafe: bool, diff_only: bool, lint_again: Any, max_passes: int = 4
) -> tuple[Any, list[str], bool]:
    """Apply the source fixes of a run (charts and overlays); returns (result, messages, wrote)."""
    from ailint.fix.apply import apply_to_text, file_diff, write_atomic

    messages: list[str] = []
    wrote = False
    originals: dict[str, str] = {}
    current = result
    for _ in range(1 if diff_only else max_passes):
        todo = source_fixes(current, unsafe)
        if not todo:
            break
        changed = False
        for target, pairs in todo.items():
            text = _read(target)
            if text is None:
                continue
            new, applied = apply_to_text(text, [fx for _, fx in pairs])
            if new == text or not applied:
                continue
            why = _check(target, text, new)
            if why:
                messages.append(f"ailint: {os.path.relpath(target)}: not fixed: {why}")
                continue
            originals.setdefault(target, text)
            if diff_only:
                messages.append(file_diff(os.path.relpath(target), text, new))
                continue
            err = write_atomic(target, new, expected=text)
            if err:
                messages.append(f"ailint: {os.path.relpath(target)}: not fixed: {err}")
                continue
            changed = wrote = True
        if not changed:
            break
        current = lint_again()
    if wrote:
        n = len(originals)
        messages.append(f"ailint: fixed chart/overlay sources ({n} file{'s' if n != 1 else ''})")
    return current, messages, wrote


def _check(path: str, old: str, new: str) -> str | None:
    """A values, patch or base file must still parse and keep its comments; a template
    keeps its comments."""
    old_comments = [ln.strip() for ln in old.split("\n") if ln.strip().startswith("#")]
    new_comments = [ln.strip() for ln in new.split("\n") if ln.strip().startswith("#")]
    if any(c not in new_comments for c in old_comments):
        return "the edit would drop a comment"
    if "{{" not in old:
        import yaml

        try:
            list(yaml.safe_load_all(new))
        except yaml.YAMLError as exc:
            return f"the result does not parse ({exc})"
    return None


def strip(result: Any) -> None:
    """Drop the source fixes from a result (the rendered-text fixer must not see them)."""
    import dataclasses

    result.findings = [dataclasses.replace(f, fix=None) if isinstance(f.fix, SourceFix) else f for f in result.findings]
