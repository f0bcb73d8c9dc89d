"""From a line of rendered output back to the line a person edits.

Charts: helm's `# Source:` marker names the template; the object's key path is then
matched through the template's indentation, line by line, skipping template directives:
a template line matches when it holds the same key at the same column and its parents
(found upwards by indentation) hold the parent keys at their columns, up to the document
root. A key that no template line holds was written by a directive (`toYaml`, `include`,
`tpl`): the location is that directive's line inside the deepest matching parent block,
and when the directive prints `.Values` (directly, through `with`/`range`, `toYaml`,
`default`), the values file line of the key is a related location. Values files are tried
last-given first, and a values key counts only when its value is the one rendered.

Overlays: `config.kubernetes.io/origin` names each object's resource file (or generator);
a patch that sets the field wins, then an `images:`/`replicas:`/`namespace:` entry of a
kustomization that rewrote it, then the resource file itself.

When nothing matches, the location is the template (or resource) file at line 1 and the
note says so: never a wrong line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache

from ailint.engine.render import yamlpos
from ailint.engine.render.yamlpos import MISSING

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.S)
_KEY = re.compile(r"""^((?:"[^"]*"|'[^']*'|[^\s#'"{\-][^:#{]*?|-[^\s:#{][^:#{]*?)):(?:[ \t]|$)""")
EMITS = re.compile(r"\b(?:toYaml|toJson|toPrettyJson|include|tpl|template|fromYaml)\b|\.Files\.")
_REF = re.compile(r"(\$[A-Za-z_]\w*|\$|(?<![\w)\]])\.)((?:Values)?(?:\.[A-Za-z_][\w-]*)*)")


@dataclass(frozen=True)
class Related:
    """A related place in a chart's sources that a rendered finding also points at."""

    file: str  # absolute
    line: int
    col: int
    end_col: int
    message: str


@dataclass(frozen=True)
class Located:
    """Where in a chart's sources a rendered line comes from: the file to edit, and whether fixes may apply."""

    file: str  # absolute path of the file to edit
    line: int
    col: int
    end_col: int
    note: str = ""
    related: tuple[Related, ...] = ()
    plain: bool = False  # the line is plain YAML (no template action): text fixes may apply
    values_file: str | None = None  # a values key rendered verbatim at this path
    values_path: tuple[Any, ...] | None = None
    values_prefix: tuple[Any, ...] = ()  # object path where the values subtree starts
    direct: bool = False  # the value is exactly `{{ .Values.x }}` (possibly quoted/defaulted)


# -- templates --------------------------------------------------------------------------
@dataclass
class Line:
    """One line of a Helm template, read for what it prints."""

    text: str
    content: bool  # a YAML line (not blank, comment or a directive alone)
    start: int  # column of the first character (1-based)
    dashes: tuple[int, ...]  # columns of list-item dashes
    key: str | None
    key_col: int
    actions: tuple[str, ...]  # template actions on the line
    directive_only: bool


@dataclass
class Template:
    """A Helm template file read line by line, with the documents it holds."""

    path: str
    lines: list[Line]
    docs: list[tuple[int, int]]  # [start, end) line indexes


@lru_cache(maxsize=512)
def template(path: str) -> Template | None:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(4 << 20)
    except (OSError, UnicodeDecodeError):
        return None
    raw = text.split("\n")
    lines: list[Line] = []
    in_action = False
    for t in raw:
        t = t.rstrip("\r")
        stripped = t.strip()
        if in_action:
            lines.append(Line(t, False, 1, (), None, 0, (t,), True))
            if "}}" in t and t.rfind("}}") > t.rfind("{{"):
                in_action = False
            continue
        if t.count("{{") > t.count("}}"):
            in_action = True
        actions = tuple(m.group(1) for m in _ACTION.finditer(t))
        rest = _ACTION.sub("", t).strip()
        if not stripped or stripped.startswith("#"):
            lines.append(Line(t, False, 1, (), None, 0, actions, False))
            continue
        if not rest:
            lines.append(Line(t, False, len(t) - len(t.lstrip()) + 1, (), None, 0, actions, True))
            continue
        i = len(t) - len(t.lstrip(" "))
        start = i + 1
        dashes: list[int] = []
        while t[i : i + 2] == "- " or t[i:] == "-":
            dashes.append(i + 1)
            i += 2
            while i < len(t) and t[i] == " ":
                i += 1
        m = _KEY.match(t[i:])
        key = None
        if m:
            key = m.group(1).strip()
            if key[:1] in "\"'" and key[-1:] == key[:1]:
                key = key[1:-1]
        lines.append(Line(t, True, start, tuple(dashes), key, i + 1, actions, False))
    docs: list[tuple[int, int]] = []
    s = 0
    for i, ln in enumerate(lines):
        if re.match(r"^---\s*$", ln.text):
            docs.append((s, i))
            s = i + 1
    docs.append((s, len(lines)))
    return Template(path, lines, docs)


def _parent(tpl: Template, idx: int, col: int, lo: int) -> tuple[int, int] | None:
    """The line index and key column of the mapping key that holds the key at (`idx`, `col`)."""
    lines = tpl.lines
    first = lines[idx]
    item = False
    if first.dashes and first.key_col == col:
        col, item = first.dashes[-1], True
    j = idx - 1
    while j >= lo:
        ln = lines[j]
        j -= 1
        if not ln.content:
            continue
        if item:
            if ln.start >= col and (ln.start > col or ln.dashes):
                continue  # a sibling item, or lines inside one
            if ln.key is not None and not ln.dashes and ln.key_col <= col:
                return (j + 1, ln.key_col)
            if ln.key is not None and ln.dashes and ln.key_col < col:
                return (j + 1, ln.key_col)
            return None
        if ln.start >= col:
            continue
        if ln.dashes and (ln.key_col == col or ln.key is None):
            col, item = ln.dashes[-1], True  # a sibling key of the same list item
            continue
        if ln.key is not None and ln.key_col < col:
            return (j + 1, ln.key_col)
        return None
    return None


def _doc_range(tpl: Template, idx: int) -> tuple[int, int]:
    for a, b in tpl.docs:
        if a <= idx < b:
            return a, b
    return 0, len(tpl.lines)


def _chain_ok(tpl: Template, idx: int, chain: list[tuple[str, int]]) -> bool:
    """Whether the parents of line `idx` hold `chain` (outermost first, the last is `idx` itself)."""
    lo, _ = _doc_range(tpl, idx)
    cur = idx
    col = chain[-1][1]
    for key, kcol in reversed(chain[:-1]):
        p = _parent(tpl, cur, col, lo)
        if p is None:
            return False
        cur, pcol = p
        if tpl.lines[cur].key != key or pcol != kcol:
            return False
        col = pcol
    return _parent(tpl, cur, col, lo) is None


def _kind_ok(tpl: Template, a: int, b: int, kind: str) -> bool:
    for ln in tpl.lines[a:b]:
        if ln.content and ln.key == "kind" and ln.key_col == 1:
            value = ln.text.split(":", 1)[1].strip().strip("\"'")
            return "{{" in value or value == kind
    return True


def match_key(tpl: Template, chain: list[tuple[str, int]], kind: str) -> list[int]:
    """Template lines that hold the last key of `chain` with all its parents."""
    key, col = chain[-1]
    out = []
    for a, b in tpl.docs:
        if not _kind_ok(tpl, a, b, kind):
            continue
        for i in range(a, b):
            ln = tpl.lines[i]
            if ln.content and ln.key == key and ln.key_col == col and _chain_ok(tpl, i, chain):
                out.append(i)
    return out


def block_end(tpl: Template, idx: int, item: bool = False) -> int:
    """The line index after the block of the key on line `idx` (its deeper lines; list
    items may sit at the key's own column); `item`: the block of the list item there."""
    ln = tpl.lines[idx]
    kc = ln.key_col if ln.key is not None or not ln.dashes else ln.dashes[-1] + 2
    _, hi = _doc_range(tpl, idx)
    j = idx + 1
    while j < hi:
        x = tpl.lines[j]
        if item:
            if x.content and (x.start < kc):
                break
        elif x.content and (x.start < kc or (x.start == kc and not x.dashes)):
            break
        j += 1
    return j


def _item_line(
    tpl: Template, idx: int, rendered: Any, index: int, files: list[tuple[str, tuple[Any, ...]]]
) -> int | None:
    """The template line of item `index` of the list under the key on line `idx`: the one
    literal item whose first key renders to the item's value, else by position when every
    item is literal."""
    if not isinstance(rendered, list) or not 0 <= index < len(rendered):
        return None
    items = _items(tpl, idx)
    if len(items) == len(rendered):
        return items[index]
    item = rendered[index]
    end = block_end(tpl, idx)
    col = None
    scored = []
    for j in range(idx + 1, end):
        x = tpl.lines[j]
        if not x.content or not x.dashes:
            continue
        if col is None:
            col = x.start
        if x.start != col or x.key is None or not isinstance(item, dict) or x.key not in item:
            continue
        fit = _value_fits(tpl, j, files, item[x.key])
        if fit is not None and fit > 0:
            scored.append((fit, j))
    if scored:
        best = max(f for f, _ in scored)
        top = [j for f, j in scored if f == best]
        if len(top) == 1:
            return top[0]
    return None


def _items(tpl: Template, idx: int) -> list[int]:
    """The list-item lines of the block under the key on line `idx`, when all are literal
    (no directive line among them that could add or drop items)."""
    end = block_end(tpl, idx)
    col = None
    out = []
    directives = []
    for j in range(idx + 1, end):
        x = tpl.lines[j]
        if x.directive_only and any(
            re.match(r"\s*(if|range|with|else|end|include|toYaml|tpl)\b", a) for a in x.actions
        ):
            directives.append(x.start)
        if not x.content:
            continue
        if col is None and x.dashes:
            col = x.start
        if x.dashes and x.start == col:
            out.append(j)
    if col is not None and any(d <= col for d in directives):
        return []  # a directive at the items' level may add or drop items
    return out


# -- the dot and values references ---------------------------------------------------------
def scopes(tpl: Template, upto: int) -> tuple[tuple[Any, ...] | None, dict[str, tuple[Any, ...] | None]]:
    """What `.` and `$vars` stand for at line `upto` (values paths; `*` is a range item)."""
    stack: list[tuple[tuple[Any, ...] | None, dict[str, tuple[Any, ...] | None]]] = [((), {})]
    for ln in tpl.lines[0:upto]:
        for act in ln.actions:
            act = act.strip()
            word = act.split(None, 1)[0] if act else ""
            dot, vars_ = stack[-1]
            if word in ("with", "range"):
                expr = act.split(None, 1)[1] if " " in act else ""
                m = re.match(r"^(\$\w+)\s*,\s*(\$\w+)\s*:=\s*(.+)$", expr) or re.match(r"^(\$\w+)\s*:=\s*(.+)$", expr)
                names: list[str] = []
                if m:
                    names = [g for g in m.groups()[:-1]]
                    expr = m.groups()[-1]
                path = ref_path(expr.split("|")[0].strip(), dot, vars_)
                if word == "range" and path is not None:
                    path = (*path, "*")
                nv = dict(vars_)
                if names:
                    nv[names[-1]] = path
                stack.append((path if word == "with" or not names else dot, nv) if word == "with" else (path, nv))
            elif word in ("if", "define", "block"):
                stack.append((dot if word == "if" else None, dict(vars_)))
            elif word == "end" and len(stack) > 1:
                stack.pop()
            elif word.startswith("$") and ":=" in act:
                name, expr = act.split(":=", 1)
                stack[-1][1][name.strip()] = ref_path(expr.strip().split("|")[0].strip(), dot, vars_)
    return stack[-1]


def ref_path(
    expr: str, dot: tuple[Any, ...] | None, vars_: dict[str, tuple[Any, ...] | None]
) -> tuple[Any, ...] | None:
    """The values path of one reference (`.Values.a.b`, `$.Values.a`, `.a` under a `with`)."""
    expr = expr.strip().strip("()")
    m = re.match(r"^(?:index\s+)?(\$[A-Za-z_]\w*|\$)?(\.[\w.-]*)?((?:\s+\"[^\"]+\")*)\s*$", expr)
    if not m:
        return None
    var, chain, idx = m.group(1), m.group(2) or "", m.group(3) or ""
    steps = [s for s in chain.split(".") if s]
    steps += re.findall(r"\"([^\"]+)\"", idx)
    if var == "$" or (var is None and steps[:1] == ["Values"]):
        return tuple(steps[1:]) if steps[:1] == ["Values"] else None
    if var is not None:
        base = vars_.get(var)
        return None if base is None else (*base, *steps)
    if not chain and not idx:
        return None
    if dot is None or dot == ():
        return None
    return (*dot, *steps)


def action_refs(
    action: str, dot: tuple[Any, ...] | None, vars_: dict[str, tuple[Any, ...] | None]
) -> list[tuple[Any, ...]]:
    out = []
    body = re.sub(r"\"[^\"]*\"", '""', action)
    for m in re.finditer(r"(\$[A-Za-z_]\w*|\$)?(\.[A-Za-z_][\w.-]*|(?<![\w\"])\.(?=[\s|)]|$))", body):
        ref = (m.group(1) or "") + m.group(2)
        if ref.strip() == ".":
            if dot:
                out.append(dot)
            continue
        p = ref_path(ref, dot, vars_)
        if p is not None:
            out.append(p)
    return out


# -- values files ---------------------------------------------------------------------------
@lru_cache(maxsize=256)
def values_doc(path: str) -> yamlpos.Doc | None:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(8 << 20)
    except (OSError, UnicodeDecodeError):
        return None
    docs = yamlpos.documents(text)
    return docs[0] if docs else yamlpos.Doc({})


def _same_scalar(a: Any, b: Any) -> bool:
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return type(a) is type(b)
    if a is None or b is None:
        return a is b or str(a or "") == str(b or "")
    return str(a).lower() == str(b).lower() if isinstance(a, bool) or isinstance(b, bool) else str(a) == str(b)


def find_values(
    files: list[tuple[str, tuple[Any, ...]]], vpath: tuple[Any, ...], rendered: Any
) -> tuple[str, tuple[Any, ...], yamlpos.KeyPos] | None:
    """The values file (last given first) holding `vpath` with the rendered value."""
    for path, prefix in reversed(files):
        doc = values_doc(path)
        if doc is None:
            continue
        for full in _expand(doc.data, (*prefix, *vpath), rendered):
            if full in doc.positions:
                got = yamlpos.get(doc.data, full)
                if rendered is MISSING or _same_scalar(got, rendered):
                    return path, full, doc.positions[full]
    return None


def _expand(data: Any, path: tuple[Any, ...], rendered: Any) -> list[tuple[Any, ...]]:
    """`path` with each `*` (a range item) replaced by the list indexes or map keys that fit."""
    if "*" not in path:
        return [path]
    i = path.index("*")
    coll = yamlpos.get(data, path[:i])
    keys: list[Any] = list(range(len(coll))) if isinstance(coll, list) else list(coll) if isinstance(coll, dict) else []
    out: list[tuple[Any, ...]] = []
    for k in keys:
        out.extend(_expand(data, (*path[:i], k, *path[i + 1 :]), rendered))
    if rendered is not MISSING and not isinstance(rendered, (dict, list)):
        fits = [p for p in out if _same_scalar(yamlpos.get(data, p), rendered)]
        return fits if len(fits) == 1 else []
    return out if len(out) == 1 else []


# -- charts ---------------------------------------------------------------------------------
@dataclass
class ChartMap:
    """What maps a chart's rendered output back to its templates and values files."""

    root: str  # chart folder
    chart_name: str
    values: list[str]  # the unit's extra values files, absolute
    cache: dict[Any, Any] = field(default_factory=dict)

    def template_file(self, source: str) -> str | None:
        rel = source.split("/", 1)[1] if "/" in source else source
        p = os.path.normpath(os.path.join(self.root, rel))
        return p if os.path.isfile(p) else None

    def values_files(self, template_file: str) -> list[tuple[str, tuple[Any, ...]]]:
        rel = os.path.relpath(template_file, self.root).split(os.sep)
        out: list[tuple[str, tuple[Any, ...]]] = []
        if len(rel) > 2 and rel[0] == "charts":
            sub = rel[1]
            out.append((os.path.join(self.root, "charts", sub, "values.yaml"), ()))
            out.append((os.path.join(self.root, "values.yaml"), (sub,)))
            out.extend((v, (sub,)) for v in self.values)
        else:
            out.append((os.path.join(self.root, "values.yaml"), ()))
            out.extend((v, ()) for v in self.values)
        return [o for o in out if os.path.isfile(o[0])]


def rendered_chain(positions: dict[tuple[Any, ...], Any], path: tuple[Any, ...]) -> list[tuple[str, int]]:
    chain = []
    for i, step in enumerate(path):
        if isinstance(step, str):
            p = positions.get(path[: i + 1])
            if p is None:
                break
            chain.append((step, p[1]))
    return chain


def locate_chart(
    cm: ChartMap, source: str, kind: str, data: Any, positions: dict[tuple[Any, ...], Any], path: tuple[Any, ...]
) -> Located | None:
    """The template (and values) location of `path` in an object rendered from `source`."""
    tfile = cm.template_file(source)
    if tfile is None:
        return None
    tpl = template(tfile)
    if tpl is None:
        return None
    rendered_value = yamlpos.get(data, path) if path else MISSING
    # the deepest prefix of `path` (ending in a key) that a template line holds literally
    str_ends = [i + 1 for i, s in enumerate(path) if isinstance(s, str)]
    for n in reversed(str_ends):
        pre = path[:n]
        chain = rendered_chain(positions, pre)
        if len(chain) != sum(1 for s in pre if isinstance(s, str)):
            continue
        hits = match_key(tpl, chain, kind)
        if len(hits) > 1:
            hits = _disambiguate(tpl, hits, cm, tfile, yamlpos.get(data, pre), data, pre)
        if len(hits) != 1:
            if hits:
                return Located(tfile, 1, 1, 2, note=_ambiguous(hits, chain[-1][0]))
            continue
        idx = hits[0]
        ln = tpl.lines[idx]
        if n == len(path):
            return _at_key(cm, tpl, tfile, idx, ln, rendered_value, pre)
        if isinstance(path[n], int):
            got = yamlpos.get(data, pre)
            item = _item_line(tpl, idx, got, path[n], cm.values_files(tfile))
            if item is not None:
                if n + 1 == len(path):
                    return _at_key(cm, tpl, tfile, item, tpl.lines[item], rendered_value, path)
                return _in_block(cm, tpl, tfile, item, path, n + 1, rendered_value, item=True)
        return _in_block(cm, tpl, tfile, idx, path, n, rendered_value)
    # nothing literal: a directive writes the whole object (doc level)
    emitters = [i for i, ln in enumerate(tpl.lines) if ln.directive_only and any(EMITS.search(a) for a in ln.actions)]
    docs_level = [i for i in emitters if tpl.lines[i].start <= 3]
    if len(docs_level) == 1 or len(emitters) == 1:
        i = docs_level[0] if len(docs_level) == 1 else emitters[0]
        return _emitter(cm, tpl, tfile, i, path, 0, rendered_value)
    return None


def _ambiguous(hits: list[int], key: str) -> str:
    shown = ", ".join(str(h + 1) for h in hits[:4])
    return f"`{key}` is written on several template lines ({shown}); which one rendered this object is not known"


def _disambiguate(
    tpl: Template, hits: list[int], cm: ChartMap, tfile: str, value: Any, data: Any, pre: tuple[Any, ...]
) -> list[int]:
    """Keep the candidate lines whose value, and whose enclosing list items' first keys,
    render to the object's values (simple actions only); the most exact ones win."""
    files = cm.values_files(tfile)
    scored: list[tuple[int, int]] = []
    for i in hits:
        total = 0
        ok = True
        checks = [(i, value)] if not isinstance(value, (dict, list)) and value is not MISSING else []
        checks += _item_checks(tpl, i, data, pre)
        for line, val in checks:
            fit = _value_fits(tpl, line, files, val)
            if fit is None:
                ok = False
                break
            total += fit
        if ok:
            scored.append((total, i))
    if not scored:
        return []
    best = max(t for t, _ in scored)
    return [i for t, i in scored if t == best]


def _item_checks(tpl: Template, idx: int, data: Any, pre: tuple[Any, ...]) -> list[tuple[int, Any]]:
    """(item line, rendered value of its key) for each list item above line `idx`."""
    out: list[tuple[int, Any]] = []
    lo, _ = _doc_range(tpl, idx)
    cur, col = idx, tpl.lines[idx].key_col
    ints = [k for k, s in enumerate(pre) if isinstance(s, int)]
    while True:
        p = _parent(tpl, cur, col, lo)
        # item lines between: the nearest line above `cur` with dashes at a smaller column
        j = cur
        while j > (p[0] if p else lo - 1):
            ln = tpl.lines[j]
            if ln.content and ln.dashes and ln.key is not None and ln.start < col and j != idx:
                if ints:
                    k = ints.pop()
                    v = yamlpos.get(data, (*pre[: k + 1], ln.key))
                    if v is not MISSING and not isinstance(v, (dict, list)):
                        out.append((j, v))
                break
            j -= 1
        if p is None:
            return out
        cur, col = p
        ints = [k for k in ints if k < len(pre)]


def _value_fits(tpl: Template, i: int, files: list[tuple[str, tuple[Any, ...]]], value: Any) -> int | None:
    """None when the value written on line `i` cannot render to `value`; else how many of
    its actions were evaluated exactly (values lookups)."""
    ln = tpl.lines[i]
    text = ln.text[ln.key_col - 1 + len(ln.key or "") :].split(":", 1)[-1].strip()
    dot, vars_ = scopes(tpl, i)
    pattern = ""
    pos = 0
    exact = 0
    for m in _ACTION.finditer(text):
        pattern += re.escape(text[pos : m.start()])
        refs = action_refs(m.group(1), dot, vars_)
        val = None
        if len(refs) == 1 and re.fullmatch(r"[\s\w.$|\"-]*", m.group(1)) and "default" not in m.group(1):
            for path, prefix in reversed(files):
                doc = values_doc(path)
                got = yamlpos.get(doc.data, (*prefix, *refs[0])) if doc else MISSING
                if got is not MISSING and not isinstance(got, (dict, list)):
                    val = str(got).lower() if isinstance(got, bool) else str(got)
                    break
        if val is not None:
            exact += 1
        pattern += re.escape(val) if val is not None else ".*"
        pos = m.end()
    pattern += re.escape(text[pos:])
    pattern = pattern.strip()
    if len(pattern) >= 2 and pattern[0] == pattern[-1] and pattern[0] in "\"'":
        pattern = pattern[1:-1]
    rendered = str(value).lower() if isinstance(value, bool) else str(value)
    if not re.fullmatch(pattern or ".*", rendered, re.S):
        return None
    return exact + (1 if "{{" not in text else 0)


def _at_key(
    cm: ChartMap, tpl: Template, tfile: str, idx: int, ln: Line, rendered: Any, path: tuple[Any, ...]
) -> Located:
    related: list[Related] = []
    vfile = vpath = None
    direct = False
    value_text = ln.text[ln.key_col - 1 :].split(":", 1)[1].strip() if ":" in ln.text[ln.key_col - 1 :] else ""
    if ln.actions:
        dot, vars_ = scopes(tpl, idx)
        refs: list[tuple[Any, ...]] = []
        for a in ln.actions:
            refs.extend(action_refs(a, dot, vars_))
        files = cm.values_files(tfile)
        single = len(ln.actions) == 1 and re.fullmatch(r"[\"']?\{\{-?[^{}]*-?\}\}[\"']?", value_text) is not None
        for r in dict.fromkeys(refs):
            got = find_values(files, r, rendered if (single and len(refs) == 1) else MISSING)
            if got is not None:
                f, full, kp = got
                related.append(Related(f, kp[0], kp[1], kp[2], f"values key `{'.'.join(map(str, full))}`"))
                if single and len(refs) == 1:
                    vfile, vpath, direct = f, full, True
    if not ln.actions and not value_text:
        # a block filled by one directive that prints values: that values key is related
        end_b = block_end(tpl, idx, item=bool(ln.dashes) and ln.key is None)
        emitters = [
            i
            for i in range(idx + 1, end_b)
            if tpl.lines[i].directive_only and any(EMITS.search(a) for a in tpl.lines[i].actions)
        ]
        literal = [i for i in range(idx + 1, end_b) if tpl.lines[i].content]
        if len(emitters) == 1 and not literal:
            em = _emitter(cm, tpl, tfile, emitters[0], path, len(path), MISSING)
            if em.related:
                related.extend(em.related)
                vfile, vpath = em.values_file, em.values_path
    end = len(ln.text) + 1
    return Located(
        tfile,
        idx + 1,
        ln.key_col,
        max(end, ln.key_col + 1),
        related=tuple(related),
        plain=not ln.actions and "{{" not in ln.text,
        values_file=vfile,
        values_path=vpath,
        values_prefix=path,
        direct=direct,
    )


def _in_block(
    cm: ChartMap, tpl: Template, tfile: str, idx: int, path: tuple[Any, ...], n: int, rendered: Any, item: bool = False
) -> Located | None:
    """`path[n:]` is not written literally under the key on line `idx`: find the directive."""
    ln = tpl.lines[idx]
    end = block_end(tpl, idx, item)
    emitters = [
        i
        for i in range(idx, end)
        if any(EMITS.search(a) or re.search(r"\.Values\b|^\s*\.\s*$|\$\w", a) for a in tpl.lines[i].actions)
        and (tpl.lines[i].directive_only or i == idx)
    ]
    if not emitters:
        return None
    if len(emitters) > 1:
        # keep those whose values hold the rest of the path
        good = []
        for i in emitters:
            loc = _emitter(cm, tpl, tfile, i, path, n, rendered)
            if loc is not None and loc.related:
                good.append(loc)
        if len(good) == 1:
            return good[0]
        shown = ", ".join(str(i + 1) for i in emitters[:4])
        return Located(
            tfile, 1, 1, 2, note=f"`{ln.key}` (line {idx + 1}) is filled by several directives (lines {shown})"
        )
    return _emitter(cm, tpl, tfile, emitters[0], path, n, rendered)


def _emitter(cm: ChartMap, tpl: Template, tfile: str, i: int, path: tuple[Any, ...], n: int, rendered: Any) -> Located:
    ln = tpl.lines[i]
    dot, vars_ = scopes(tpl, i)
    refs: list[tuple[Any, ...]] = []
    for a in ln.actions:
        if EMITS.search(a) and re.search(r"\binclude\b|\btemplate\b", a) and not re.search(r"toYaml|\.Values", a):
            continue
        refs.extend(action_refs(a, dot, vars_))
    related: list[Related] = []
    vfile = vpath = None
    files = cm.values_files(tfile)
    rest = tuple(path[n:])
    for r in dict.fromkeys(refs):
        got = find_values(files, (*r, *rest), rendered)
        if got is not None:
            f, full, kp = got
            related.append(Related(f, kp[0], kp[1], kp[2], f"values key `{'.'.join(map(str, full))}`"))
            vfile, vpath = f, full
            break
    col = ln.start
    what = " ".join(a.strip() for a in ln.actions)[:80]
    note = "" if related else f"written by `{{{{ {what} }}}}` on this line"
    return Located(
        tfile,
        i + 1,
        col,
        len(ln.text) + 1,
        note=note,
        related=tuple(related),
        values_file=vfile,
        values_path=vpath,
        values_prefix=tuple(path[:n]),
    )


# -- overlays -------------------------------------------------------------------------------
_MERGE_KEYS = ("name", "mountPath", "containerPort", "devicePath", "key", "ip", "topologyKey")


def _translate(src_data: Any, rendered_data: Any, path: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """`path` of the rendered object as a path of `src_data` (list items by merge key)."""
    out: list[Any] = []
    cur_r, cur_s = rendered_data, src_data
    for step in path:
        if isinstance(step, int):
            if not isinstance(cur_r, list) or not isinstance(cur_s, list) or not 0 <= step < len(cur_r):
                return None
            item = cur_r[step]
            j = None
            if isinstance(item, dict):
                for mk in _MERGE_KEYS:
                    if mk in item:
                        js = [k for k, x in enumerate(cur_s) if isinstance(x, dict) and x.get(mk) == item[mk]]
                        if len(js) == 1:
                            j = js[0]
                        break
            if j is None and len(cur_s) == len(cur_r):
                j = step
            if j is None:
                return None
            out.append(j)
            cur_r, cur_s = item, cur_s[j]
        else:
            if not isinstance(cur_r, dict) or not isinstance(cur_s, dict) or step not in cur_s:
                return None
            out.append(step)
            cur_r, cur_s = cur_r.get(step), cur_s[step]
    return tuple(out)


@lru_cache(maxsize=256)
def file_docs(path: str) -> tuple[yamlpos.Doc, ...]:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(8 << 20)
    except (OSError, UnicodeDecodeError):
        return ()
    return tuple(yamlpos.documents(text))


def _pick_doc(docs: tuple[yamlpos.Doc, ...] | list[yamlpos.Doc], kind: str, name: str | None) -> yamlpos.Doc | None:
    same = [d for d in docs if isinstance(d.data, dict) and d.data.get("kind") == kind]
    if name is not None:
        named = [d for d in same if _name_fits((d.data.get("metadata") or {}).get("name"), name)]
        if len(named) == 1:
            return named[0]
        exact = [d for d in named if (d.data.get("metadata") or {}).get("name") == name]
        if len(exact) == 1:
            return exact[0]
    return same[0] if len(same) == 1 else None


def _name_fits(original: Any, rendered: str) -> bool:
    return isinstance(original, str) and bool(original) and original in rendered


def _target_fits(target: dict[str, Any] | None, kind: str, name: str | None, labels: dict[str, Any]) -> bool:
    if target is None:
        return False
    if target.get("kind") and target["kind"] != kind:
        return False
    tname = target.get("name")
    if tname and name is not None and not (_name_fits(tname, name) or re.fullmatch(str(tname), name or "")):
        return False
    sel = target.get("labelSelector")
    if isinstance(sel, str):
        for part in sel.split(","):
            if "=" in part:
                k, v = part.split("=", 1)
                if str(labels.get(k.strip().rstrip("!"))) != v.strip():
                    return False
    return True


def _pointer(p: str) -> tuple[Any, ...]:
    out: list[Any] = []
    for s in p.strip("/").split("/"):
        s = s.replace("~1", "/").replace("~0", "~")
        out.append(int(s) if s.isdigit() else s)
    return tuple(out)


def locate_overlay(
    scan: Any, origin: dict[str, Any] | None, kind: str, data: dict[str, Any], path: tuple[Any, ...]
) -> Located | None:
    """Patch, then kustomization entry (images/replicas/namespace), then resource file."""
    name = (data.get("metadata") or {}).get("name") if isinstance(data, dict) else None
    labels = ((data.get("metadata") or {}).get("labels") or {}) if isinstance(data, dict) else {}
    if not path:
        path = ("kind",)
    names = {name}  # a patch names its target as it was before later patches renamed it
    src0 = origin.get("path") if origin else None
    if isinstance(src0, str) and os.path.isfile(src0):
        base_doc = _pick_doc(file_docs(src0), kind, name)
        if base_doc is not None and isinstance(base_doc.data, dict):
            names.add((base_doc.data.get("metadata") or {}).get("name"))
    for patch in reversed(scan.patches):
        loc = None
        for n in names:
            loc = loc or _in_patch(patch, kind, n, labels, data, path)
        if loc is not None:
            return loc
    loc = _in_kustomization(scan, kind, name, data, path, origin)
    if loc is not None:
        return loc
    src = origin.get("path") if origin else None
    if isinstance(src, str) and os.path.isfile(src):
        doc = _pick_doc(file_docs(src), kind, name)
        if doc is not None:
            sp = _translate(doc.data, data, path)
            q = path
            while sp is None and q:
                q = q[:-1]
                sp = _translate(doc.data, data, q)
            if sp is not None and sp in doc.positions:
                kp = doc.positions[sp]
                note = "" if q == path else f"`{_dotted(path)}` is not in this file; the nearest key is"
                return Located(src, kp[0], kp[1], kp[2], note=note.rstrip(" is") if note else "", plain=True)
        return Located(src, 1, 1, 2, note="the field was not found in this resource file")
    if origin and isinstance(origin.get("configuredIn"), str):
        k = origin["configuredIn"]
        by = origin.get("configuredBy") or {}
        gen = {"ConfigMapGenerator": "configMapGenerator", "SecretGenerator": "secretGenerator"}.get(by.get("kind", ""))
        kdata = scan.data.get(k)
        if gen and isinstance(kdata, dict):
            for i, g in enumerate(kdata.get(gen) or []):
                if isinstance(g, dict) and isinstance(name, str) and g.get("name") and g["name"] in name:
                    from ailint.engine.render.overlays import node_at

                    n = node_at(scan.nodes[k], gen, i)
                    if n is not None:
                        return Located(k, n.start_mark.line + 1, n.start_mark.column + 1, n.start_mark.column + 2)
        return Located(k, 1, 1, 2, note=f"generated by {by.get('kind', 'a generator')} in this kustomization")
    return None


def _dotted(path: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in path)


def _in_patch(
    patch: Any, kind: str, name: Any, labels: dict[str, Any], data: Any, path: tuple[Any, ...]
) -> Located | None:
    if patch.file:
        docs = list(file_docs(patch.file))
        where = patch.file
    else:
        docs = yamlpos.documents(patch.text or "", first_line=patch.text_line, col_offset=_inline_indent(patch))
        where = patch.kustomization
    if not docs:
        return None
    first = docs[0].data
    is_json = patch.json6902 if patch.json6902 is not None else isinstance(first, list)
    if is_json:
        if not _target_fits(patch.target, kind, name, labels) or not isinstance(first, list):
            return None
        best = None
        for i, op in enumerate(first):
            if (
                not isinstance(op, dict)
                or op.get("op") not in ("add", "replace")
                or not isinstance(op.get("path"), str)
            ):
                continue
            p = _pointer(op["path"])
            if p and p[-1] == "-":
                parent = yamlpos.get(data, p[:-1])
                p = (*p[:-1], len(parent) - 1) if isinstance(parent, list) else p
            if path[: len(p)] == p:
                rest = path[len(p) :]
                sub = _translate(op.get("value"), yamlpos.get(data, p), rest) if rest else ()
                vp = (i, "value", *(sub or ()))
                kp = docs[0].positions.get(vp) or docs[0].positions.get((i, "value")) or docs[0].positions.get((i,))
                if kp and (best is None or len(p) > best[0]):
                    best = (len(p), kp)
        if best:
            kp = best[1]
            return Located(where, kp[0], kp[1], kp[2], plain=patch.file is not None)
        return None
    for d in docs:
        if not isinstance(d.data, dict):
            continue
        if patch.target is not None:
            if not _target_fits(patch.target, kind, name, labels):
                continue
        elif d.data.get("kind") != kind or not _name_fits((d.data.get("metadata") or {}).get("name"), str(name)):
            continue
        if path[:1] in (("apiVersion",), ("kind",), ("metadata",)) and path[:2] != ("metadata", "annotations"):
            continue  # a patch names its target there; it does not set it
        sp = _translate(d.data, data, path)
        if sp is not None and sp in d.positions:
            kp = d.positions[sp]
            return Located(where, kp[0], kp[1], kp[2], plain=patch.file is not None)
    return None


def _inline_indent(patch: Any) -> int:
    try:
        with open(patch.kustomization, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        ln = lines[patch.text_line - 1]
        return len(ln) - len(ln.lstrip(" "))
    except (OSError, IndexError):
        return 0


def _in_kustomization(
    scan: Any, kind: str, name: Any, data: Any, path: tuple[Any, ...], origin: dict[str, Any] | None
) -> Located | None:
    from ailint.engine.render.overlays import node_at

    for k in scan.kustomizations:
        kd = scan.data.get(k)
        node = scan.nodes.get(k)
        if not isinstance(kd, dict):
            continue
        if path and path[-1] == "image" and isinstance(yamlpos.get(data, path), str):
            image = yamlpos.get(data, path)
            for i, e in enumerate(kd.get("images") or []):
                if not isinstance(e, dict):
                    continue
                new = e.get("newName") or e.get("name")
                if new and str(image).split("@")[0].rsplit(":", 1)[0] == str(new):
                    for key in ("newTag", "digest", "newName", "name"):
                        if key in e:
                            n = node_at(node, "images", i, key)
                            if n is not None:
                                return _kloc(k, n, scan, "images", i, key)
        if path == ("spec", "replicas"):
            for i, e in enumerate(kd.get("replicas") or []):
                if isinstance(e, dict) and isinstance(name, str) and e.get("name") and e["name"] in name:
                    return _kloc(k, node_at(node, "replicas", i, "count"), scan, "replicas", i, "count")
        if path == ("metadata", "namespace") and "namespace" in kd:
            return _kloc(k, node_at(node, "namespace"), scan, "namespace")
        if len(path) >= 3 and path[:2] == ("metadata", "labels"):
            for key in ("commonLabels",):
                if isinstance(kd.get(key), dict) and path[2] in kd[key]:
                    return _kloc(k, node_at(node, key, path[2]), scan, key, path[2])
            for i, e in enumerate(kd.get("labels") or []):
                if isinstance(e, dict) and isinstance(e.get("pairs"), dict) and path[2] in e["pairs"]:
                    return _kloc(k, node_at(node, "labels", i, "pairs", path[2]), scan, "labels")
    return None


def _kloc(k: str, n: Any, scan: Any, *keys: Any) -> Located | None:
    if n is None:
        return None
    from ailint.engine.render.overlays import node_at

    parent = node_at(scan.nodes[k], *keys[:-1]) if len(keys) > 1 else scan.nodes[k]
    line, col = n.start_mark.line + 1, n.start_mark.column + 1
    # point at the key of the entry when it is on the value's line
    import yaml

    if isinstance(parent, yaml.MappingNode):
        for kn, vn in parent.value:
            if vn is n:
                line, col = kn.start_mark.line + 1, kn.start_mark.column + 1
                end = kn.end_mark.column + 1
                return Located(k, line, col, end, plain=True)
    return Located(k, line, col, col + 1, plain=True)
