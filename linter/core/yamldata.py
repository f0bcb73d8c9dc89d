"""Plain data and a position table from libyaml's composed nodes: the object model's input.

`Converter` turns one composed document into plain dicts, lists and scalars (YAML 1.1, as
the API server reads them) plus a side table `path -> Pos` (see `ailint.core.model`). It is
the loader's hot loop, and the one converter of the project: the engine's loader, the fixer's
re-parse and rules that read YAML embedded in a string (a ConfigMap's policy) all use it. No
tag is ever executed: unknown tags keep their plain value. `FastLoader` is the composer that
tags plain scalars lazily (`resolve_plain` resolves them during conversion), and makes nodes
of this module's classes (`_Node`: built in C), which `Converter` reads as tuples. Every other
use of PyYAML's C loaders in ailint goes through this module too (`load_data` and the
functions beside it), under the lock the composer holds (`PYYAML_C`).
"""

from __future__ import annotations

import _thread
import operator
import os
import sys
from dataclasses import dataclass

import yaml._yaml
import yaml.constructor
import yaml.nodes
import yaml.resolver
from ailint.core.limits import Limits
from ailint.core.model import Path, Pos, Span
from yaml._yaml import CParser

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

_INT, _FLOAT, _BOOL, _NULL = (
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
)
_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"
_CONSTRUCTED = frozenset((_INT, _FLOAT, _BOOL, _NULL))  # the tags whose scalars become other than their text

_constructor = yaml.constructor.SafeConstructor()
_BOOL_VALUES: dict[str, bool] = yaml.constructor.SafeConstructor.bool_values
_IMPLICIT = yaml.resolver.Resolver.yaml_implicit_resolvers
_PLAIN = "?"  # a plain scalar whose type is resolved lazily, only when it is read


class _LazyResolver:
    """Tags every plain scalar `?` instead of matching YAML 1.1 regexes at parse time.

    libyaml's composer calls the Python resolver once per scalar and twice per collection
    (path resolvers nobody uses here); that was a third of the parse time. Plain scalars are
    resolved by `resolve_plain` during conversion, with the same regexes, only for values
    whose first character can start a non-string.
    """

    # The composer calls these two around every node, for path resolvers nobody uses here.
    # Builtins that take the same arguments and do nothing cost less than a Python method:
    # 5% of the compose time of the corpus (0.180 -> 0.171 s, best of 9, non-CRD files).
    descend_resolver = staticmethod(operator.is_)  # (current_node, current_index) -> ignored
    ascend_resolver = staticmethod(tuple)  # () -> ignored

    def resolve(self, kind: Any, value: str, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode or kind is _PyScalarNode:
            return _PLAIN if implicit[0] else _STR
        if kind is SequenceNode or kind is _PySequenceNode:
            return _SEQ
        return _MAP


class FastLoader(CParser, _LazyResolver):  # type: ignore[misc]
    def __init__(self, stream: str) -> None:
        CParser.__init__(self, stream)


class _Node(BaseException):
    """A composed node that libyaml's composer makes without running a Python `__init__`.

    PyYAML's composer (`yaml._yaml`, Cython) calls the node classes it finds in its module's
    globals, `ScalarNode(tag, value, start_mark, end_mark, style)` and the like, for each of
    the 220,000 nodes of the plain corpus; PyYAML's classes run a Python `__init__` for each,
    a third of the composer's time. An exception class takes the same positional arguments
    and keeps them in `args` in C (0.343 to 0.242 s for the corpus's composing, best of 5),
    and `Converter` reads them there as one tuple. Nothing raises these: the base is chosen
    for its constructor only. Each class also derives from PyYAML's own, so that PyYAML's
    constructors take them (`construct_yaml_int` asks for a `yaml.nodes.ScalarNode`).
    `compose_all` puts these classes in the composer's globals for the span of each
    document (`PYYAML_C`)."""

    __slots__ = ()
    tag = property(lambda self: self.args[0])
    value = property(lambda self: self.args[1])
    start_mark = property(lambda self: self.args[2])


class ScalarNode(_Node, yaml.nodes.ScalarNode):
    """args: (tag, value, start_mark, end_mark, style)."""

    __slots__ = ()
    end_mark = property(lambda self: self.args[3])
    style = property(lambda self: self.args[4])


class SequenceNode(_Node, yaml.nodes.SequenceNode):
    """args: (tag, items, start_mark, None, flow_style); the composer sets `end_mark` once the
    last item is read (an attribute of the instance)."""

    __slots__ = ()


class MappingNode(_Node, yaml.nodes.MappingNode):
    """args: (tag, [(key, value), ...], start_mark, None, flow_style); `end_mark` as for a
    sequence."""

    __slots__ = ()


_PyScalarNode, _PySequenceNode, _PyMappingNode = yaml.nodes.ScalarNode, yaml.nodes.SequenceNode, yaml.nodes.MappingNode
_OURS = (ScalarNode, SequenceNode, MappingNode)
_COMPOSER_GLOBALS: dict[str, Any] = vars(yaml._yaml)

# Held while PyYAML's composer runs with this module's node classes in its globals: every
# PyYAML C loader of the process (`yaml.CSafeLoader` too) would make them meanwhile, and
# PyYAML's own resolver does not know them. ailint's other uses of the C loaders go through
# `load_data` and the functions beside it, which hold it as well, so a thread of the webhook
# that composes never hands another one these nodes. (Reentrant: a holder may compose.)
PYYAML_C = _thread.RLock()


def _after_fork_in_child() -> None:
    """A process forked while another thread was composing: that thread is not in the child,
    so neither is its hold on the lock, nor are the classes it had swapped in."""
    global PYYAML_C
    PYYAML_C = _thread.RLock()
    g = _COMPOSER_GLOBALS
    g["ScalarNode"], g["SequenceNode"], g["MappingNode"] = _PyScalarNode, _PySequenceNode, _PyMappingNode


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _composed(step: Any) -> Any:
    """`step()` (a loader's `get_node` or `get_single_node`) with this module's node classes
    (`_Node`)."""
    g = _COMPOSER_GLOBALS
    with PYYAML_C:
        saved = g["ScalarNode"], g["SequenceNode"], g["MappingNode"]
        g["ScalarNode"], g["SequenceNode"], g["MappingNode"] = _OURS
        try:
            node = step()
        finally:
            g["ScalarNode"], g["SequenceNode"], g["MappingNode"] = saved
    if node is None or isinstance(node, _Node):
        return node
    return _adopted(node, {})  # a PyYAML whose composer finds its classes otherwise


def _adopted(node: Any, memo: dict[int, Any]) -> Any:
    """PyYAML's composed `node` rebuilt with this module's classes (an alias stays one node)."""
    got = memo.get(id(node))
    if got is not None:
        return got
    if isinstance(node, _PyScalarNode):
        new: Any = ScalarNode(node.tag, node.value, node.start_mark, node.end_mark, node.style)
        memo[id(node)] = new
        return new
    items: list[Any] = []
    cls = SequenceNode if isinstance(node, _PySequenceNode) else MappingNode
    new = cls(node.tag, items, node.start_mark, None, node.flow_style)
    new.end_mark = node.end_mark
    memo[id(node)] = new  # (before the children: an anchor may hold an alias of itself)
    if cls is SequenceNode:
        items.extend(_adopted(c, memo) for c in node.value)
    else:
        items.extend((_adopted(k, memo), _adopted(v, memo)) for k, v in node.value)
    return new


# PyYAML's own C loaders, for the code that wants PyYAML's data or nodes (configs, charts,
# embedded documents, fixes): each holds `PYYAML_C`, and no other module names them
# (tests/test_yamlnodes.py), so none runs while a composer holds this module's classes.


def _c_loaded(call: str, stream: Any) -> Any:
    """`yaml.<call>(stream, Loader=yaml.CSafeLoader)` under `PYYAML_C`; a stream of results
    is read out before the lock is let go."""
    import yaml

    with PYYAML_C:
        got = getattr(yaml, call)(stream, Loader=yaml.CSafeLoader)
        return list(got) if call in _STREAMED else got


_STREAMED = frozenset({"load_all", "compose_all", "parse"})


def load_data(stream: Any) -> Any:
    """`yaml.load(stream, Loader=yaml.CSafeLoader)`."""
    return _c_loaded("load", stream)


def load_all_data(stream: Any) -> list[Any]:
    """`list(yaml.load_all(stream, Loader=yaml.CSafeLoader))`."""
    return _c_loaded("load_all", stream)  # type: ignore[no-any-return]


def pyyaml_compose(text: str) -> Any:
    """`yaml.compose(text, Loader=yaml.CSafeLoader)`: PyYAML's node classes and tags."""
    return _c_loaded("compose", text)


def pyyaml_compose_all(text: str) -> list[Any]:
    """`list(yaml.compose_all(text, Loader=yaml.CSafeLoader))`."""
    return _c_loaded("compose_all", text)  # type: ignore[no-any-return]


def pyyaml_events(text: str) -> list[Any]:
    """`list(yaml.parse(text, Loader=yaml.CSafeLoader))`."""
    return _c_loaded("parse", text)  # type: ignore[no-any-return]


def compose_all(text: str) -> Iterator[Any]:
    """The composed documents of `text`, as `yaml.compose_all(text, Loader=FastLoader)`
    yields them but with this module's node classes (`_Node`)."""
    loader = FastLoader(text)
    try:
        while loader.check_node():
            yield _composed(loader.get_node)
    finally:
        loader.dispose()


def compose(text: str) -> Any:
    """The one document of `text` (None for an empty stream), as `yaml.compose` gives it but
    with this module's node classes; raises `yaml.composer.ComposerError` on a second."""
    loader = FastLoader(text)
    try:
        return _composed(loader.get_single_node)
    finally:
        loader.dispose()


def resolve_plain(value: str) -> str:
    """The YAML 1.1 tag of a plain scalar, by PyYAML's implicit resolvers (kept per value: a
    run meets the same few thousand values again and again, `true`, `1`, `nvidia.com/gpu`)."""
    tag = _RESOLVED.get(value)
    if tag is None:
        tag = _STR
        for t, regexp in _IMPLICIT.get(value[:1], ()):
            if regexp.match(value):
                tag = t
                break
        if len(value) <= 16:  # (numbers, booleans, short words: the values that repeat)
            if len(_RESOLVED) >= _RESOLVED_LIMIT:
                _RESOLVED.clear()
            _RESOLVED[value] = tag
    return tag


_RESOLVED: dict[str, str] = {}
_RESOLVED_LIMIT = 1 << 12  # (emptied when full: a run of distinct values pays no more, in time or memory)


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong inside a document that does not stop its conversion (a YML code)."""

    code: str
    span: Span
    message: str


class LimitExceeded(Exception):
    """A bound was exceeded: stop converting this document (`code` is the YML finding)."""

    def __init__(self, code: str, mark: Any, message: str) -> None:
        super().__init__(message)
        self.code, self.mark, self.message = code, mark, message


_ScalarNode, _MappingNode, _SequenceNode = ScalarNode, MappingNode, SequenceNode
INTERNED_CHARS = 64  # a key, or a string value of at most this many characters, is interned
# Keys and short strings repeat across objects (`name`, `image`, `IfNotPresent`): one copy of
# each keeps a run's objects (held until the bundle rules) about 40% smaller.
_intern = sys.intern

# Identical subtrees can be kept once, as strings are: the same `resources`, selector, probe
# or whole pod spec across the containers, documents and overlays of a run. On the plain
# corpus this keeps the objects' data 40% smaller (9.8 -> 5.9 MiB) and costs 7% of the parse
# (1.47 -> 1.58 s in one process), so it is on only where memory is the limit: a bounded run
# (`ailint.engine.bounded`, over 32 MB of input), where it takes the 100 MB tree's peak from
# 212 to 147 MiB. Safe because nothing mutates parsed data (an alias `*x` already shares its
# value the same way; tests/test_load.py holds every rule, fix and pass to it). The table is
# bounded and emptied when full, so a run of distinct content pays no more than SHARED_LIMIT
# entries for it.
SHARED_LIMIT = 1 << 16
_SHARED: dict[tuple[Any, ...], Any] = {}
_sharing = False


def share_subtrees(on: bool) -> None:
    """Keep identical subtrees once from the next parse on (or stop), with an empty table."""
    global _sharing
    _sharing = on
    _SHARED.clear()


def _shared(value: Any, pairs: Any) -> Any:
    """`value` (a dict or a list, its children already shared), or the equal one seen
    before. The key names each scalar's type, so `1`, `1.0` and `true` stay apart, and each
    child container by identity (equal children are the same object by then, and each is
    held alive by the value filed with it, so no id is reused while its key is kept)."""
    key: list[Any] = [value.__class__]
    append = key.append
    for k, v in pairs:
        c = v.__class__
        append(k)
        append(c)
        append(id(v) if c is dict or c is list else v)
    if len(_SHARED) >= SHARED_LIMIT:
        _SHARED.clear()
    return _SHARED.setdefault(tuple(key), value)


def reshared(value: Any) -> Any:
    """Parsed data that another process sent (`--jobs`), made of this process's interned
    strings and shared subtrees, as its own parse makes them while sharing is on; `value`
    as it is otherwise.

    Unpickling keeps one copy of each string and subtree per pickle, so the data of a
    worker's chunks holds a copy of `name`, `image` and of every repeated `resources` per
    chunk: on the 100 MB tree what the parent unpickled of the worker's half took 35 MiB
    (the data of its own half, 8 MiB), and every process forked from it for the bundle
    phase started that large; taken as its own, the parent holds 93 MiB at that fork, not
    113. Equal values come out as they went in (a string is interned only where the
    converter interns it: keys, and values of at most `INTERNED_CHARS` characters)."""
    if not _sharing:
        return value
    if value.__class__ is dict or value.__class__ is list:
        return _reshared(value)
    return value


def _reshared(value: Any) -> Any:
    if value.__class__ is dict:
        out: dict[str, Any] = {}
        for k, v in value.items():
            c = v.__class__
            if c is str:
                out[_intern(k)] = _intern(v) if len(v) <= INTERNED_CHARS else v
            elif c is dict or c is list:
                out[_intern(k)] = _reshared(v)
            else:
                out[_intern(k)] = v
        return _shared(out, out.items())
    items: list[Any] = []
    for v in value:
        c = v.__class__
        if c is str:
            items.append(_intern(v) if len(v) <= INTERNED_CHARS else v)
        elif c is dict or c is list:
            items.append(_reshared(v))
        else:
            items.append(v)
    return _shared(items, enumerate(items))


class Converter:
    """Turns one composed document into plain data and fills the position table.

    This is the hot loop of every run: scalars (most nodes) are converted inline in their
    parent's loop, and the alias memo is only kept when the text can hold anchors.
    """

    __slots__ = ("complex_keys", "expanded", "findings", "limits", "max_scalar", "memo", "positions", "short")

    def __init__(self, limits: Limits, anchors: bool = True) -> None:
        self.positions: dict[Path, Pos] = {}
        self.findings: list[Problem] = []  # YML findings inside the document (the loader reports them)
        self.limits = limits
        self.expanded = 0
        self.memo: dict[int, tuple[Any, int]] | None = {} if anchors else None  # id(node) -> (value, size)
        self.complex_keys = 0
        self.max_scalar = limits.max_scalar_chars
        self.short = min(INTERNED_CHARS, self.max_scalar)  # a string this long is interned, and under the limit

    def convert(self, node: Any, path: Path, key_pos: tuple[int, int, int, int] | None, depth: int) -> tuple[Any, int]:
        cls = node.__class__
        sm = node.args[2]
        em = node.args[3] if cls is _ScalarNode else node.end_mark
        line, col = sm.line + 1, sm.column + 1
        if key_pos is None:
            self.positions[path] = (line, col, line, col, line, col, em.line + 1, em.column + 1)
        else:
            self.positions[path] = (*key_pos, line, col, em.line + 1, em.column + 1)
        memo = self.memo
        if memo is not None:
            seen = memo.get(id(node))
            if seen is not None:
                # An alias: share the value, but count what a naive consumer would expand.
                self.expanded += seen[1]
                if self.expanded > self.limits.max_alias_expansion:
                    raise LimitExceeded(
                        "YML004",
                        sm,
                        f"aliases expand to more than {self.limits.max_alias_expansion} "
                        "nodes (a 'billion laughs' document?); document skipped",
                    )
                return seen
        if depth > self.limits.max_depth:
            raise LimitExceeded("YML005", sm, f"nesting deeper than {self.limits.max_depth} levels; document skipped")
        if cls is _ScalarNode:
            result: tuple[Any, int] = (self.scalar(node), 1)
        elif cls is _MappingNode:
            result = self.mapping(node, path, depth)
        else:
            result = self.sequence(node, path, depth)
        if memo is not None:
            memo[id(node)] = result
        return result

    def sequence(self, node: Any, path: Path, depth: int) -> tuple[list[Any], int]:
        items: list[Any] = []
        size = 1
        positions = self.positions
        memo = self.memo
        short = self.short
        for i, child in enumerate(node.args[1]):
            if child.__class__ is _ScalarNode and (memo is None or id(child) not in memo):
                tag, value, sm, em, style = child.args
                line, col = sm.line + 1, sm.column + 1
                positions[path + (i,)] = (line, col, line, col, line, col, em.line + 1, em.column + 1)
                if len(value) <= short and (
                    _IMPLICIT.get(value[:1]) is None if tag is _PLAIN else (tag == _STR or style)
                ):
                    items.append(_intern(value))  # a short string (`scalar`, inline)
                else:
                    items.append(self.scalar(child))
                size += 1
                continue
            v, s = self.convert(child, path + (i,), None, depth + 1)
            items.append(v)
            size += s
        return (_shared(items, enumerate(items)) if _sharing else items), size

    def scalar(self, node: Any) -> Any:
        tag, value, _, _, style = node.args
        if tag == _STR or style:
            if len(value) > self.max_scalar:
                self._too_long(node)
            return _intern(value) if len(value) <= INTERNED_CHARS else value
        if tag == _PLAIN:
            tag = resolve_plain(value)
            if tag == _STR:
                if len(value) > self.max_scalar:
                    self._too_long(node)
                return _intern(value) if len(value) <= INTERNED_CHARS else value
        if tag not in _CONSTRUCTED and len(value) > self.max_scalar:
            self._too_long(node)
        return _typed(tag, value, node)

    def _too_long(self, node: Any) -> None:
        raise LimitExceeded(
            "YML011",
            node.start_mark,
            f"a scalar of {len(node.value)} characters exceeds the limit of {self.max_scalar}",
        )

    def mapping(self, node: Any, path: Path, depth: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        size = 1
        merges: list[Any] = []
        positions = self.positions
        memo = self.memo
        short = self.short
        for knode, vnode in node.args[1]:
            if knode.__class__ is not _ScalarNode:
                self.complex_keys += 1
                self.findings.append(
                    Problem(
                        "YML012",
                        mark_span(knode.start_mark, knode.end_mark),
                        "a mapping or list used as a key; Kubernetes objects only have string keys",
                    )
                )
                continue
            ktag, key, ksm, kem, _ = knode.args
            key = _intern(key)
            if key == "<<" and ktag in (_PLAIN, _MERGE):
                merges.append(vnode)
                continue
            if key in out:
                self.findings.append(
                    Problem(
                        "YML003",
                        mark_span(ksm, kem),
                        f"duplicate key `{key}`: one value is lost (kubectl keeps the last, silently; "
                        f"strict readers reject the file) (first at line {positions[path + (key,)][0]})",
                    )
                )
                continue
            kl, kc = ksm.line + 1, ksm.column + 1
            if vnode.__class__ is _ScalarNode and (memo is None or id(vnode) not in memo):
                tag, value, sm, em, style = vnode.args
                positions[path + (key,)] = (
                    kl,
                    kc,
                    kem.line + 1,
                    kem.column + 1,
                    sm.line + 1,
                    sm.column + 1,
                    em.line + 1,
                    em.column + 1,
                )
                if len(value) <= short and (
                    _IMPLICIT.get(value[:1]) is None if tag is _PLAIN else (tag == _STR or style)
                ):
                    out[key] = _intern(value)  # a short string: what `scalar` makes of it, inline
                else:
                    out[key] = self.scalar(vnode)
                size += 1
                continue
            v, s = self.convert(vnode, path + (key,), (kl, kc, kem.line + 1, kem.column + 1), depth + 1)
            out[key] = v
            size += s
        for mnode in merges:  # `<<: *base` fills keys the mapping does not set itself
            sources = mnode.value if mnode.__class__ is _SequenceNode else [mnode]
            for src in sources:
                if src.__class__ is not _MappingNode:
                    continue
                v, s = self.convert(src, path + ("<<",), None, depth + 1)
                size += s
                for k, val in v.items():
                    if k not in out:
                        out[k] = val
                        sub = positions.get(path + ("<<", k))
                        if sub:
                            positions[path + (k,)] = sub
        return (_shared(out, out.items()) if _sharing else out), size


def _typed(tag: str, value: str, node: Any) -> Any:
    """The value of scalar `node` (text `value`) under YAML 1.1 tag `tag`: an int, a float, a
    bool or None; the text itself for any other tag (timestamps, binary, unknown tags: never
    executed) or a text its tag's constructor refuses."""
    try:
        if tag == _INT:
            if value.isdigit() and value.isascii() and (value[0] != "0" or len(value) == 1):
                return int(value)  # what construct_yaml_int makes of a plain decimal, inline
            return _constructor.construct_yaml_int(node)
        if tag == _FLOAT:
            return _constructor.construct_yaml_float(node)
        if tag == _BOOL:
            return _BOOL_VALUES[value.lower()]  # (construct_yaml_bool's own lookup)
        if tag == _NULL:
            return None
    except Exception:
        return value
    return value


def typed_plain(value: str) -> Any:
    """The value of an untagged plain scalar, as `Converter` reads it (YAML 1.1): what the C
    reader (`ailint.core.yamlc`) asks of every plain scalar that can start a non-string."""
    tag = resolve_plain(value)
    if tag == _STR:
        return _intern(value) if len(value) <= INTERNED_CHARS else value
    return _typed(tag, value, ScalarNode(tag, value, None, None, None))


# The first characters of a plain scalar that YAML 1.1 may read as other than a string (and
# the empty scalar, a null): the C reader hands only those to `typed_plain`. PyYAML keys its
# implicit resolvers by them; a PyYAML whose keys are not single ASCII characters is not read
# by the C reader at all.
_STARTS = "".join(k for k in _IMPLICIT if k)
_READABLE = all(len(k) <= 1 and k.isascii() for k in _IMPLICIT)


def _c_reader() -> Any:
    """`ailint.core.yamlc` when it was built at install (it needs a C compiler and libyaml's
    headers) and `AILINT_PURE_YAML` is not set; None otherwise."""
    if os.environ.get("AILINT_PURE_YAML") or not _READABLE:
        return None
    try:
        from ailint.core import yamlc  # type: ignore[attr-defined]
    except ImportError:
        return None
    return yamlc


_reader: Any = _c_reader()
_TYPED: dict[str, Any] = {}  # the C reader's memo of `typed_plain` for short values (bounded there)


def read_documents(text: str, limits: Limits) -> list[Any] | None:
    """The documents of `text` read by the C reader: for each, `(data, table)`, the data
    exactly as `Converter` makes it (the same values, types and key order) and its position
    table as a `PackedTable`, or the 1-based line of an empty document; at most
    `limits.max_documents` + 1 of them.

    None when the reader is not built, when subtrees are shared (`share_subtrees`: the bounded
    run's reading keeps them once), or when the text holds anything the reader leaves to
    `compose_all` and `Converter`: an anchor, an alias, a tag, a merge key, a complex or
    repeated key, a value over the scalar limit, nesting over the depth limit, text that is
    not UTF-8, or a syntax error. The caller then reads the text that way, with every finding
    that reading gives."""
    if _reader is None or _sharing:
        return None
    docs: list[Any] | None = _reader.load(
        text,
        typed_plain,
        _TYPED,
        _STARTS,
        limits.max_documents,
        limits.max_depth,
        limits.max_scalar_chars,
        INTERNED_CHARS,
    )
    if docs is not None:
        for i, doc in enumerate(docs):
            if doc.__class__ is tuple:
                docs[i] = (doc[0], PackedTable(doc[0], doc[1]))
    return docs


class PackedTable:
    """A document's position table as the C reader leaves it: eight 32-bit numbers a node, in
    the order of a walk of the document's data (`ailint.core.yamlc`), 32 bytes a node where
    the table takes about 200. `unpack()` makes the table `Converter` would have made; a run
    asks it of the documents whose spans it reports (`ailint.core.tables.LazyPositions`
    holds it until then, and a `--jobs` worker sends it as it is)."""

    __slots__ = ("data", "packed")

    def __init__(self, data: Any, packed: bytes) -> None:
        self.data, self.packed = data, packed

    def __reduce__(self) -> tuple[Any, ...]:
        return (PackedTable, (self.data, self.packed))

    def root(self) -> tuple[int, int]:
        """The document's line and column (its first node's start: the fifth and sixth of its
        first entry's numbers, native 32-bit integers)."""
        p = self.packed
        return int.from_bytes(p[16:20], _ORDER, signed=True), int.from_bytes(p[20:24], _ORDER, signed=True)

    def unpack(self) -> dict[Path, Pos]:
        from ailint.core import yamlc  # type: ignore[attr-defined]  # (made by it: so it is built)

        table: dict[Path, Pos] = yamlc.table(self.data, self.packed)
        return table


_ORDER = sys.byteorder  # (the C reader writes its numbers in the machine's order)


def mark_span(sm: Any, em: Any) -> Span:
    line, col = sm.line + 1, sm.column + 1
    end_line, end_col = em.line + 1, em.column + 1
    if (end_line, end_col) <= (line, col):
        end_line, end_col = line, col + 1
    return Span(line, col, end_line, end_col)
