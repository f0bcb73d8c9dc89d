"""The data every layer shares: source files, objects with spans, findings and fixes.

Nothing here imports a parser, a reporter or click: rules, reporters and the engine all
speak these types, so they are deliberately small, immutable where they can be, and cheap
to pickle for `--jobs` worker processes.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from itertools import accumulate, repeat
from operator import add

from ailint.core.lazyre import lazy_re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Path = tuple["Any", ...]  # ("spec", "template", "spec", "containers", 0, "image")


class Severity(str, Enum):
    """Finding severities, ordered: `info` < `warning` < `error`."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _RANK[self]

    @classmethod
    def parse(cls, value: str) -> Severity:
        return cls(str(value).lower())


_RANK = {Severity.INFO: 1, Severity.WARNING: 2, Severity.ERROR: 3}


class Applicability(str, Enum):
    """How much a fix can be trusted: `safe` is applied by `--fix`, `unsafe` needs `--unsafe-fixes`."""

    SAFE = "safe"
    UNSAFE = "unsafe"


class FixAvailability(str, Enum):
    ALWAYS = "always"
    SOMETIMES = "sometimes"
    NEVER = "never"


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a file: 1-based line and column, `end_*` exclusive."""

    line: int
    col: int
    end_line: int
    end_col: int

    @classmethod
    def point(cls, line: int, col: int) -> Span:
        return cls(line, col, line, col + 1)


def helm_sources(text: str) -> list[tuple[int, str]]:
    """(line, template) of each `# Source: <template>` marker that `helm template` writes above
    the documents it renders; [] for a file that is not Helm's output."""
    if "# Source: " not in text:  # most files: far cheaper than a multi-line scan
        return []
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _HELM_SOURCE.finditer(text)]


def is_helm_output(text: str) -> bool:
    """Is this text the output of `helm template`? `--fix` never rewrites it (the fixes belong
    in the chart), and the summary does not count its fixes as ones `--fix` applies."""
    return "# Source: " in text and _HELM_SOURCE.search(text) is not None


_HELM_SOURCE = lazy_re(r"^# Source: (\S.*?)\s*$", re.M)


class FileChangedError(RuntimeError):
    """A file read again during a run (spilled, or its cached entry) is no longer the text
    that was parsed: the run stops rather than point a finding at the wrong place."""


class SourceFile:
    """One input file's decoded text and a line-start table for offset <-> position."""

    __slots__ = ("_line_starts", "display", "path", "template_paths", "text")

    def __init__(self, path: str, display: str, text: str) -> None:
        self.path = path  # filesystem path, or "-" for stdin
        self.display = display  # what reports call it (relative path or --stdin-filename)
        self.text = text
        self._line_starts: list[int] | None = None
        self.template_paths: dict[int, str] = {}

    @property
    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            # each line's length and its newline, summed by C iterators over one split: a
            # fifth less time than a `find` per line (the corpus has 276,000 lines, and a
            # results cache entry keeps every file's table)
            lines = self.text.split("\n")
            lines.pop()  # (the last line's length: no line starts after it)
            starts = [0]
            starts += accumulate(map(add, map(len, lines), repeat(1)))
            self._line_starts = starts
        return self._line_starts

    def offset(self, line: int, col: int) -> int:
        """Text offset of a 1-based (line, col)."""
        starts = self.line_starts
        if line - 1 >= len(starts):
            return len(self.text)
        return min(starts[line - 1] + col - 1, len(self.text))

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, col) of a text offset."""
        starts = self.line_starts
        idx = bisect.bisect_right(starts, offset) - 1
        return idx + 1, offset - starts[idx] + 1

    def line_text(self, line: int) -> str:
        starts = self.line_starts
        if not 1 <= line <= len(starts):
            return ""
        start = starts[line - 1]
        end = starts[line] - 1 if line < len(starts) else len(self.text)
        return self.text[start:end].rstrip("\r")

    @property
    def is_stdin(self) -> bool:
        return self.path == "-"

    def not_rewritten(self) -> str | None:
        """Why `--fix` never rewrites this file: "stdin" (standard input cannot be written
        back; `--diff` shows the fixes) or "helm" (the output of `helm template`: its fixes
        belong in the chart); None when it may be rewritten."""
        if self.is_stdin:
            return "stdin"
        if is_helm_output(self.text):
            return "helm"
        return None


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace text[start:end] of the original file with `content`."""

    start: int
    end: int
    content: str


@dataclass(frozen=True, slots=True)
class Fix:
    """A fix for a finding: its title, the edits it makes, and how safe it is to apply."""

    title: str
    edits: tuple[Edit, ...]
    applicability: Applicability = Applicability.SAFE


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """Which object a finding is about, as reports name it (apiVersion, kind, namespace, name, document)."""

    api_version: str
    kind: str
    namespace: str | None
    name: str | None
    document: int
    template: str | None = None  # Helm `# Source:` template path, when known

    def label(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {ns}{self.name or '<unnamed>'}"


@dataclass(frozen=True, slots=True)
class RelatedLocation:
    """A second place a finding concerns (SARIF `relatedLocations`): for a finding mapped
    back from rendered Helm output, the values-file key the template line prints."""

    file: str
    span: Span
    message: str = ""


@dataclass(frozen=True, slots=True)
class Anchor:
    """A path step standing for what a controller builds from fewer fields than it writes
    (a KubeAI Model's `server` container, a KAITO preset pod, a NIMService's container).

    The steps after it name fields of the built object that have no place in the file:
    `resolve` maps them to the field the user wrote, by the longest matching prefix in
    `fields` (`(steps, written path, keep the remaining steps)`), else to `at`. Spans and
    finding paths resolve it, and no edit finds a position under it, so no fix is offered."""

    at: Path
    fields: tuple[tuple[Path, Path, bool], ...] = ()

    def resolve(self, rest: Path) -> Path:
        best: tuple[Path, Path, bool] | None = None
        for entry in self.fields:
            pre = entry[0]
            if rest[: len(pre)] == pre and (best is None or len(pre) > len(best[0])):
                best = entry
        if best is None:
            return self.at
        pre, real, keep = best
        return real + rest[len(pre) :] if keep else real


@dataclass(frozen=True, eq=False)
class Foreign:
    """A path step: what follows is a path in another object of the run. A merged pod maps
    the fields it took from another object (a runtime) to it (`Anchor` fields ending in a
    Foreign step): the spans of such a path are that object's (`K8sObject.span` and friends
    resolve them there, so a finding keeps the key or value anchor its rule asked for), and
    the engine moves the finding to that object's file (`ailint.domain.workloads.relocate`)."""

    obj: K8sObject
    path: Path
    home: Path = ()  # the workload's own field that merges it in (where a finding falls back to)


def real_path(path: Sequence[Any]) -> Path:
    """`path` with its last `Anchor` step resolved to the written field (else unchanged)."""
    path = tuple(path)
    for i in range(len(path) - 1, -1, -1):
        step = path[i]
        if type(step) is Anchor:
            return step.resolve(path[i + 1 :])
    return path


@dataclass(frozen=True, slots=True)
class Finding:
    """One reported pitfall: the rule, the severity, the message, and where it is (file, span, object, path)."""

    code: str
    name: str
    severity: Severity
    message: str
    file: str
    span: Span
    object_ref: ObjectRef | None = None
    path: Path = ()
    fix: Fix | None = None
    related: tuple[RelatedLocation, ...] = ()  # e.g. the values-file line a template line prints
    severity_reason: str | None = None  # why the severity differs from the rule's documented one

    def __post_init__(self) -> None:
        if any(type(step) is Anchor for step in self.path):
            # a finding on a synthesized field names the written one; a fix cannot edit it
            object.__setattr__(self, "path", real_path(self.path))
            object.__setattr__(self, "fix", None)

    def sort_key(self) -> tuple:
        return (self.file, self.span.line, self.span.col, self.code, self.message)


# Position table entries: (key_line, key_col, key_end_line, key_end_col,
#                          line, col, end_line, end_col), 1-based, ends exclusive.
# For list items and document roots the key fields repeat the value's start.
Pos = tuple[int, int, int, int, int, int, int, int]


@dataclass(frozen=True, slots=True)
class Location:
    """Where a path sits in its file: the spans of its key and value, and their offsets in the
    source text (ends exclusive). List items and document roots have no key: `key` is then
    the start of the value."""

    key: Span
    value: Span
    key_start: int
    key_end: int
    value_start: int
    value_end: int


def identity_of(data: dict[str, Any]) -> tuple[str, str, str]:
    """An object's `apiVersion`, `kind` and API group as the run reads them ("" where the
    field is missing or not a string; the core group is "")."""
    av = data.get("apiVersion")
    kind = data.get("kind")
    av = av if isinstance(av, str) else ""
    return av, kind if isinstance(kind, str) else "", av.rsplit("/", 1)[0] if "/" in av else ""


def annotations_of(data: dict[str, Any]) -> dict[str, Any]:
    """An object's `metadata.annotations` ({} where missing or not a mapping)."""
    m = data.get("metadata")
    v = m.get("annotations") if isinstance(m, dict) else None
    return v if isinstance(v, dict) else {}


@dataclass(slots=True, eq=False)
class K8sObject:
    """One Kubernetes object (a YAML document, or an item of a `kind: List`).

    `data` is plain dicts, lists and scalars as the API server would read them (YAML 1.1),
    `positions` maps tuple paths to spans, and `source` is the file it came from (the
    text is needed by fixes and suppressions).
    """

    source: SourceFile
    doc_index: int
    data: dict[str, Any]
    positions: dict[Path, Pos]
    base: Path = ()  # where this object sits in its document (for `kind: List` items)
    template: str | None = None
    # facts derived from the object (its pod templates, its layout), computed once and owned
    # by the object: they die with it and never travel with it (see __getstate__)
    memo: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    # plain data (strings, numbers, lists, dicts) that the process that parsed the object derived
    # from it for the process that joins the run, which travels with it (`--jobs`: the facts
    # of its pods, `ailint.domain.extract.carry_facts`); None almost always
    carried: Any = field(default=None, repr=False, compare=False)
    # `apiVersion`, `kind` and the group (from `data`, which is never mutated), read once: the
    # dispatch, the indexes and the rules ask them 155,000 times a corpus run
    api_version: str = field(init=False, repr=False, compare=False)
    kind: str = field(init=False, repr=False, compare=False)
    group: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._read_identity()

    def _read_identity(self) -> None:
        self.api_version, self.kind, self.group = identity_of(self.data)

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.source, self.doc_index, self.data, self.positions, self.base, self.template, self.carried)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.source, self.doc_index, self.data, self.positions, self.base, self.template, self.carried = state
        self.memo = None
        self._read_identity()

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        """`compute()`, once per object and key (objects are never mutated during a run)."""
        memo = self.memo
        if memo is None:
            memo = self.memo = {}
        try:
            return memo[key]
        except KeyError:
            value = memo[key] = compute()
            return value

    # -- identity ---------------------------------------------------------------------
    @property
    def file(self) -> str:
        return self.source.display

    @property
    def metadata(self) -> dict[str, Any]:
        m = self.data.get("metadata")
        return m if isinstance(m, dict) else {}

    @property
    def name(self) -> str | None:
        n = self.metadata.get("name")
        return str(n) if n is not None else None

    @property
    def namespace(self) -> str | None:
        n = self.metadata.get("namespace")
        return str(n) if n is not None else None

    @property
    def namespace_or_default(self) -> str:
        """The namespace the object lands in: its own, else `default` (what `kubectl apply`
        without `-n` does in a default context). Every namespace comparison of a rule uses it."""
        n = self.metadata.get("namespace")
        return str(n) if n is not None and n != "" else "default"

    @property
    def labels(self) -> dict[str, Any]:
        v = self.metadata.get("labels")
        return v if isinstance(v, dict) else {}

    @property
    def annotations(self) -> dict[str, Any]:
        return annotations_of(self.data)

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(self.api_version, self.kind, self.namespace, self.name, self.doc_index, self.template)

    # -- data access ------------------------------------------------------------------
    def get(self, *path: Any, default: Any = None) -> Any:
        """The value at `path`, or `default` when any step is missing or of the wrong type."""
        return get_in(self.data, path, default)

    # -- spans --------------------------------------------------------------------------
    def _pos(self, path: Sequence[Any]) -> Pos | None:
        return self.positions.get(self.base + tuple(path))

    def has(self, path: Sequence[Any]) -> bool:
        return self._pos(path) is not None

    def location(self, path: Sequence[Any]) -> Location | None:
        """The key and value of `path` as spans and source offsets; None when it is missing."""
        p = self._pos(path)
        if p is None:
            return None
        src = self.source
        return Location(
            Span(p[0], p[1], p[2], p[3]),
            Span(p[4], p[5], p[6], p[7]),
            src.offset(p[0], p[1]),
            src.offset(p[2], p[3]),
            src.offset(p[4], p[5]),
            src.offset(p[6], p[7]),
        )

    def value_span(self, path: Sequence[Any]) -> Span:
        """The span of the value at `path` (for a missing path, its nearest ancestor's key)."""
        path = real_path(path)
        if path and type(path[0]) is Foreign:
            return path[0].obj.value_span(path[0].path + path[1:])
        p = self._pos(path)
        if p is None:
            return self.key_span(path)
        return Span(p[4], p[5], p[6], p[7])

    def key_span(self, path: Sequence[Any]) -> Span:
        """The key of `path`: for a missing path, the key of its nearest existing ancestor.

        That is "where the missing field belongs": a finding about an absent
        `spec.backoffLimit` points at `spec:`. List items and the document root have no
        key; their span is the first line of the value.
        """
        path = real_path(path)
        if path and type(path[0]) is Foreign:
            return path[0].obj.key_span(path[0].path + path[1:])
        while True:
            p = self._pos(path)
            if p is not None:
                if path and isinstance(path[-1], str):
                    return Span(p[0], p[1], p[2], p[3])
                return _first_line(p, self.source)
            if not path:
                return Span(1, 1, 1, 2)
            path = path[:-1]

    def span(self, path: Sequence[Any]) -> Span:
        """Default anchor of a finding on `path`.

        A scalar on its key's line gives `key: value` whole; a block value gives the key;
        a missing field gives the key of its nearest existing parent.
        """
        path = real_path(path)
        if path and type(path[0]) is Foreign:
            return path[0].obj.span(path[0].path + path[1:])
        p = self._pos(path)
        if p is not None and path and isinstance(path[-1], str) and p[4] == p[0] and p[6] == p[4]:
            return Span(p[0], p[1], p[6], p[7])
        return self.key_span(path)

    def existing_prefix(self, path: Sequence[Any]) -> Path:
        path = tuple(path)
        while path and self._pos(path) is None:
            path = path[:-1]
        return path


def _first_line(p: Pos, source: SourceFile) -> Span:
    line, col = p[4], p[5]
    if p[6] == line:
        return Span(line, col, line, p[7])
    end = len(source.line_text(line)) + 1
    return Span(line, col, line, max(end, col + 1))


def get_in(data: Any, path: Sequence[Any], default: Any = None) -> Any:
    cur = data
    for step in path:
        if isinstance(cur, dict):  # the common case first: isinstance(x, Mapping) is slow
            if step not in cur:
                return default
            cur = cur[step]
        elif isinstance(cur, list) and isinstance(step, int):
            if not -len(cur) <= step < len(cur):
                return default
            cur = cur[step]
        elif isinstance(cur, Mapping):
            if step not in cur:
                return default
            cur = cur[step]
        else:
            return default
    return cur


def as_dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def own_copy(value: Any) -> Any:
    """`value` with every dict and list its own, to build a merged pod from parsed data.
    Parsed data may hold one container at two places (an alias `*x`, or equal subtrees kept
    once in a bounded run: `requests` and `limits` of the same values), which `copy.deepcopy`
    keeps shared, so updating the copy's `limits` would change its `requests` too."""
    if isinstance(value, dict):
        return {k: own_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [own_copy(v) for v in value]
    return value


def iter_dicts(v: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, item) for each mapping item of a list; anything else is skipped."""
    if isinstance(v, list):
        for i, item in enumerate(v):
            if isinstance(item, dict):
                yield i, item


@dataclass(slots=True)
class FileResult:
    """What one file contributed to a run: its counts, objects and file-level findings."""

    path: str
    documents: int = 0
    objects: list[K8sObject] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    source: SourceFile | None = None
    suppressions: list[Any] | None = None  # comment suppressions, when read before the text was spilled
    # the positions in `objects` of those whose object rules wait for the run's catalogue
    # (`ailint.engine.catalogue.deferred`), when the file's object rules worked it out: the
    # join does not work it out again (None: not known). A tuple: most files have none, and
    # the empty tuple is one object, even unpickled from a worker (an empty frozenset is 216
    # bytes a file: 4 MiB of the parent's 174 at the bundle fork on the 100 MB tree)
    deferred: tuple[int, ...] | None = None
    # the positions in `objects` of the run's catalogue members among them (runtimes, claims:
    # `ailint.domain.workloads.is_catalogue`), worked out with the parse (in parallel, and
    # kept in the file's cache entry) instead of in the serial join; None: not known
    catalogue: tuple[int, ...] | None = None
    # the positions in `objects` of those that carry an `ailint.io/ignore` annotation, when
    # the results cache's pack said so (`ailint.engine.stored`): the others' data is not read
    # for it; None: not known (every object is looked at)
    annotated: tuple[int, ...] | None = None
    # the results cache's key of the bytes parsed (`RunCache.file_key`), when a cached run
    # parsed them: the bytes may have changed since the run first read the file
    cache_key: bytes | None = None
    # the file's entry for the pack (or a bounded run's segments) when a cached run parses
    # too many files to give each an entry of its own (`RunCache.store_file`)
    pack_entry: tuple[Any, ...] | None = None
