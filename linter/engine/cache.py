"""The results cache: a rerun over unchanged files does not parse or check them again (ruff's model).

Three kinds of entry, all under one directory (`AILINT_CACHE_DIR`, `cache-dir` in the
config, else `$XDG_CACHE_HOME/ailint` or `~/.cache/ailint`):

- a **file entry** per input file: its parse (object data, packed position tables, document
  count, its text's CRC and its head's: `bounded.head_length`) and its single-object
  findings, keyed by the file's bytes, its display path and the run key. Only a run that
  parses at most `FILE_ENTRIES_UP_TO` files writes one per file (an edit, pre-commit's few
  files); one that parses more (a first run) keeps them in its pack alone, without position
  tables, which a rerun parses again for the few files it needs them of: making a file costs
  far more than writing its bytes;
- a **state entry** per set of command-line paths: the bundle rules' findings per (object,
  rule) with the kinds of other objects each call read (`TrackingContext`; kept compact,
  `ailint.engine.callstate`), and the schema findings per file. After an edit, a bundle rule
  runs again only on the changed files' objects (not when an edit after the last content
  line kept them: `ailint.engine.tracking`) and on the objects whose earlier call read a
  kind the edit touched;
- a **run entry** per set of command-line paths, holding the finished result with the
  digest of its exact input (every file's key, in order), so a rerun with nothing changed
  only stats the files (each run overwrites it: edits leave no stale results behind);
- a **pack** per set of command-line paths: the file entries of its files in one entry
  (without their position tables; each file's objects' data in one marshalled blob, read
  when first asked for: `ailint.engine.stored`), so an edit run reads one entry and the few
  files changed since (it is written again once more than 5% of the files have changed). A
  bounded run (over 32 MB, `ailint.engine.bounded`) keeps its pack in **segments** of
  `SEGMENT_FILES` files, with an index naming each file's segment: no entry holds a large
  run whole, one segment or a few are read at a time, and a run that parses many files adds
  segments for them beside those that still stand; the objects' data that files of several
  of its new segments hold is written once, in a **pool** the segments name;
- a **stat entry** per set of command-line paths: each file's key with the stat signature
  (size, mtime, ctime, inode, device) it was read under, so an unchanged file is not read
  or hashed again (git's index; a file changed in the last two seconds is always hashed).

The run key covers ailint's version, the size and mtime of every file of the installed
package (an edit to an editable install changes it; the CRD schemas are package data),
Python's version (marshal's format), the settings (config, profile, options, limits, kube
version, schema on/off) and the selected rules.

Entries are `marshal` data (no code, no pickle) behind a keyed BLAKE2b MAC: the key is a
random secret in the cache folder (0600; the folder is 0700), so an entry another user or a
truncated write produced is never read. A bad, foreign or unreadable entry is a miss,
never an error. Writes go to a temporary file and `os.replace`, so concurrent runs
(pre-commit beside an editor) see a whole entry or none; readers take no lock. The folder
is pruned to `MAX_BYTES`, oldest first (a hit refreshes an entry's mtime now and then).
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Iterable, Iterator, Sequence

from ailint.core.cachedir import opened, sealed, write_private
from ailint.core.cachedir import private_dir as _private_dir
from ailint.core.cachedir import secret as _secret
from ailint.core.cachedir import unlink as _unlink
from ailint.core.digest import blake2b
from ailint.core.model import (
    Applicability,
    Edit,
    FileResult,
    Finding,
    Fix,
    K8sObject,
    ObjectRef,
    Severity,
    SourceFile,
    Span,
)
from ailint.core.tables import LazyPositions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FORMAT = 2  # 2: a file's position tables in its entry, not in a side entry of their own
MAGIC = b"AILC1\n"
MAX_BYTES = 256 * 1024 * 1024
TOUCH_AFTER = 3600.0  # seconds: refresh the mtime of an entry read this long after it was written


def default_dir() -> str:
    """The user's cache folder (one definition: `ailint.core.paths.user_cache_dir`)."""
    from ailint.core.paths import user_cache_dir

    return user_cache_dir()


# -- the store: MAC'd marshal entries ----------------------------------------------------
class Store:
    """Entries in `<dir>/results-v<FORMAT>/<2 hex>/<hex>`, each `MAGIC + MAC + payload`."""

    def __init__(self, directory: str, max_bytes: int = MAX_BYTES) -> None:
        self.root = directory
        self.dir = os.path.join(directory, f"results-v{FORMAT}")
        self.max_bytes = max_bytes
        self.written = 0
        self.grown = 0  # bytes of entries that were not there before
        self._made: set[str] = set()  # entry folders known to exist (a mkdir per entry was a tenth of a fill)
        _private_dir(directory)
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.secret = _secret(directory)

    def _path(self, key: bytes) -> str:
        h = key.hex()
        return os.path.join(self.dir, h[:2], h[2:])

    def has(self, key: bytes) -> bool:
        """Whether an entry is stored under `key` (it may still prove unreadable)."""
        return os.path.exists(self._path(key))

    def get(self, key: bytes) -> Any:
        """The value stored under `key`, or None (missing, unreadable, truncated, foreign)."""
        path = self._path(key)
        try:
            with open(path, "rb") as fh:
                blob = fh.read()
                st = os.fstat(fh.fileno())
        except OSError:
            return None
        payload = opened(MAGIC, self.secret, blob, context=key)  # the MAC covers the key too
        if payload is None:
            return None
        try:
            value = _unmarshal(payload)
        except (ValueError, EOFError, TypeError):
            return None
        if st.st_mtime < _now() - TOUCH_AFTER:
            try:
                os.utime(path)
            except OSError:
                pass
        return value

    def put(self, key: bytes, value: Any) -> None:
        try:
            payload = marshal.dumps(value)
        except ValueError:  # a value marshal cannot carry: not cached
            return
        path = self._path(key)
        new = not os.path.exists(path)  # an entry written over (the state, the run) does not grow the folder
        folder = os.path.dirname(path)
        try:
            if folder not in self._made:
                os.makedirs(folder, mode=0o700, exist_ok=True)
                self._made.add(folder)
            write_private(path, sealed(MAGIC, self.secret, payload, context=key))
        except OSError:
            self._made.discard(folder)  # (removed meanwhile, by `ailint clean` or a prune)
            return
        self.written += len(payload)
        if new:
            self.grown += len(payload)

    def prune_if_due(self) -> None:
        """`prune` once the runs since the last one added a tenth of `max_bytes` in new
        entries: a scan of the folder costs a stat per entry, too much for every rerun. The
        count is kept in `written` beside the entries (a lost update between two concurrent
        runs only delays a prune)."""
        mark = os.path.join(self.dir, "written")
        try:
            with open(mark, encoding="ascii") as fh:
                since = int(fh.read().strip() or 0)
        except (OSError, ValueError):
            since = 0
        since += self.grown
        if since >= self.max_bytes // 10:
            self.prune()
            since = 0
        try:
            write_private(mark, [str(since).encode("ascii")])
        except OSError:
            pass

    def prune(self) -> None:
        """Delete the oldest entries until the folder holds at most 80% of `max_bytes`."""
        entries: list[tuple[float, int, str]] = []
        total = 0
        try:
            subdirs = list(os.scandir(self.dir))
        except OSError:
            return
        for sub in subdirs:
            try:
                if not sub.is_dir():
                    continue  # `written`
                for e in os.scandir(sub.path):
                    st = e.stat()
                    if e.name.endswith(".tmp") and st.st_mtime < _now() - 3600:
                        _unlink(e.path)  # left by a run that was killed
                        continue
                    entries.append((st.st_mtime, st.st_size, e.path))
                    total += st.st_size
            except OSError:
                continue
        if total <= self.max_bytes:
            return
        entries.sort()
        goal = self.max_bytes * 0.8
        for _, size, path in entries:
            if total <= goal:
                break
            _unlink(path)
            total -= size


def _now() -> float:
    import time

    return time.time()


def _now_ns() -> int:
    import time

    return time.time_ns()


def _inside_project(directory: str, settings: Any) -> bool:
    root = os.path.realpath(getattr(settings, "root", ".") or ".")
    real = os.path.realpath(directory)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def clean(directory: str | None = None) -> tuple[str, bool]:
    """Remove the cache folder's entries (`ailint clean`): (folder, whether there was one)."""
    import shutil

    from ailint.core import codecache

    codecache.discard()  # or this run's exit would write the compiled-code table back
    directory = directory or default_dir()
    if not os.path.isdir(directory):
        return directory, False
    for name in os.listdir(directory):
        p = os.path.join(directory, name)
        if (
            name.startswith(
                ("results-v", "rules-", "docs-", "families-", "code-", "defs-", "entrypoints-", "dataclass-code-")
            )
            or name == "secret"
        ):
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                _unlink(p)
    return directory, True


def _unmarshal(payload: bytes | memoryview) -> Any:
    """`marshal.loads`, with the cyclic garbage collector held off meanwhile.

    An entry is thousands of dicts and lists, each of which counts toward the collector's
    next pass, which then walks all of them: two thirds of the time of reading a large entry
    (the pack of 2,280 files: 35 ms, 12 ms without). Marshal data holds no reference cycle,
    so there is nothing for the collector to find in it.
    """
    import gc

    if not gc.isenabled():
        return marshal.loads(payload)
    gc.disable()
    try:
        return marshal.loads(payload)
    finally:
        gc.enable()


# -- keys -------------------------------------------------------------------------------
def _h(*parts: bytes) -> blake2b:
    h = blake2b(digest_size=20)
    for p in parts:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h


def package_fingerprint() -> bytes:
    """Size and mtime of every file of the installed package (code, rules, data, CRD schemas)."""
    import ailint
    import ailint.rules
    import ailint.schemas

    h = blake2b(digest_size=20)
    for root in dict.fromkeys([*ailint.__path__, *ailint.rules.__path__, *ailint.schemas.__path__]):
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            for f in sorted(filenames):
                if f.endswith((".pyc", ".tmp")):
                    continue
                try:
                    st = os.stat(os.path.join(dirpath, f))
                except OSError:
                    continue
                h.update(f"{dirpath}/{f}:{st.st_size}:{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.digest()


MAX_CONFIG_INPUTS = 5000  # files a config names (policies, custom rules...); more: no cache


def config_inputs(settings: Any) -> bytes | None:
    """Size and mtime of the files the config names (a provider's policies or rule files):
    any string in the config that names an existing file, folder or glob under its folder.
    None when there are too many to stat on every run (then the cache is off)."""
    extra = getattr(settings, "extra", None)
    root = getattr(settings, "root", ".")
    if not isinstance(extra, dict) or not getattr(settings, "config_path", None):
        return b""
    import glob as globmod

    strings: list[str] = []

    def walk(v: Any, top: str | None = None) -> None:
        if isinstance(v, str):
            strings.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                if top is None and k in ("exclude", "per-file-ignores", "select", "ignore", "extend-select"):
                    continue  # patterns and selectors, not inputs
                walk(x, "")
        elif isinstance(v, list):
            for x in v:
                walk(x, "")

    walk(extra)
    h = blake2b(digest_size=20)
    seen = 0
    for v in dict.fromkeys(strings):
        if not v or "\n" in v or len(v) > 4096:
            continue
        full = os.path.join(root, os.path.expanduser(v))
        paths = sorted(globmod.glob(full, recursive=True)) if globmod.has_magic(v) else [full]
        for p in paths:
            files = [p]
            if os.path.isdir(p):
                files = [os.path.join(d, f) for d, _, fs in os.walk(p) for f in sorted(fs)]
            for f in files:
                try:
                    st = os.stat(f)
                except OSError:
                    continue
                seen += 1
                if seen > MAX_CONFIG_INPUTS:
                    return None
                h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.digest()


def run_key(settings: Any, rule_codes: Iterable[str], only_object_rules: bool = False) -> bytes | None:
    """Everything besides a file's bytes that its results depend on (None: cannot be keyed)."""
    import dataclasses

    from ailint import __version__

    inputs = config_inputs(settings)
    if inputs is None:
        return None
    fields = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings) if f.name != "fail_on"}
    fields.pop("cache_dir", None)
    return _h(
        f"{FORMAT}:{__version__}:{sys.version}:{sys.implementation.cache_tag}".encode(),
        package_fingerprint(),
        repr(sorted(fields.items())).encode("utf-8", "surrogateescape"),
        inputs,
        ",".join(rule_codes).encode(),
        b"objects-only" if only_object_rules else b"all",
    ).digest()


# -- findings <-> marshal tuples ---------------------------------------------------------
def finding_out(f: Finding) -> tuple[Any, ...]:
    s = f.span
    r = f.object_ref
    ref = None if r is None else (r.api_version, r.kind, r.namespace, r.name, r.document, r.template)
    fix = None
    if f.fix is not None:
        fix = (f.fix.title, tuple((e.start, e.end, e.content) for e in f.fix.edits), f.fix.applicability.value)
    return (
        f.code,
        f.name,
        f.severity.value,
        f.message,
        f.file,
        (s.line, s.col, s.end_line, s.end_col),
        ref,
        f.path,
        fix,
        f.severity_reason,
    )


_SEV = {s.value: s for s in Severity}
_APP = {a.value: a for a in Applicability}


def finding_in(t: Sequence[Any]) -> Finding:
    code, name, sev, message, file, s, ref, path, fix, *rest = t
    reason = rest[0] if rest else None  # why the severity differs from the rule's (a rule's own)
    return Finding(
        code,
        name,
        _SEV[sev],
        message,
        file,
        Span(*s),
        None if ref is None else ObjectRef(*ref),
        tuple(path),
        None if fix is None else Fix(fix[0], tuple(Edit(*e) for e in fix[1]), _APP[fix[2]]),
        severity_reason=reason,
    )


def findings_out(fs: Iterable[Finding]) -> list[tuple[Any, ...]]:
    return [finding_out(f) for f in fs]


def findings_in(ts: Iterable[Sequence[Any]]) -> list[Finding]:
    return [finding_in(t) for t in ts]


# -- file entries ---------------------------------------------------------------------------
def file_out(fr: FileResult, tables: bool = True, facts: bool = True) -> tuple[Any, ...]:
    """A parsed and object-checked file as marshal data (positions packed, read on demand);
    `tables` False: without its position tables, as the pack keeps it (`without_tables`);
    `facts` False: without its pods' facts (`_pod_facts`), as a bounded run keeps it."""
    packed, numbers = _position_tables(fr.objects) if tables else (None, _table_numbers(fr.objects))
    objs = [(o.doc_index, o.data, n, o.base, o.template) for o, n in zip(fr.objects, numbers, strict=True)]
    tp = fr.source.template_paths if fr.source is not None else {}
    text = fr.source.text if fr.source is not None else ""
    from ailint.engine.bounded import line_starts_bytes, text_ref_and_head

    crc, length, head = text_ref_and_head(text)
    has_source = fr.source is not None
    starts = line_starts_bytes(fr.source) if fr.source is not None else b""
    # the text's CRC, length and line starts: a hit on an unchanged file reads it only
    # when its text itself is needed (a code frame, a rule run again), not for positions
    return (
        fr.documents,
        findings_out(fr.findings),
        objs,
        packed,
        dict(tp),
        has_source,
        crc,
        length,
        "ailint:" in text,
        starts,
        fr.deferred,
        fr.catalogue,
        _pod_facts(fr) if facts else None,
        head,  # what an edit of the comments after the last content keeps
    )


def with_data(entry: tuple[Any, ...], objects: Sequence[K8sObject]) -> tuple[Any, ...]:
    """A file entry (`file_out`) whose objects' data is that of `objects`, equal values held
    once: the entry a worker made of its file arrives with its own unpickled copy of the
    data, which the parent replaces with its shared one (`yamldata.reshared`)."""
    objs = entry[2]
    if not isinstance(objs, list) or len(objs) != len(objects):
        return entry
    return _with_datas(entry, [o.data for o in objects])


def _with_datas(entry: tuple[Any, ...], datas: Sequence[Any]) -> tuple[Any, ...]:
    """A file entry (`file_out`) whose objects hold `datas`, in order, each a data or, in a
    pack segment, its number in the segments' pool (`_pooled`)."""
    return (*entry[:2], [(o[0], data, *o[2:]) for o, data in zip(entry[2], datas, strict=True)], *entry[3:])


def _pod_facts(fr: FileResult) -> list[Any] | None:
    """What the parse worked out of each object's pods (their roles, what each container
    runs: `extract.carry_facts`), as a `--jobs` child hands it to the parent: a rerun's
    cross-resource calls read it for the pods of the files it did not parse again, instead
    of working it out anew for every pod of the repository (most of the run-wide indexes a
    value edit rebuilds). None for an object waiting for the catalogue, whose pods are made
    again once merged, and for a file none of whose pods was looked at."""
    from ailint.domain.extract import BULKY_FACTS, carry_facts
    from ailint.engine.catalogue import settled

    facts: list[Any] = [None] * len(fr.objects)
    for n, obj in settled(fr):
        facts[n] = carry_facts(obj, BULKY_FACTS)
    return facts if any(f is not None for f in facts) else None


def _table_numbers(objects: Sequence[K8sObject]) -> list[int]:
    """Each object's number among its file's distinct position tables (`_position_tables`)."""
    table_no: dict[int, int] = {}
    return [table_no.setdefault(id(o.positions), len(table_no)) for o in objects]


def _position_tables(objects: Sequence[K8sObject]) -> tuple[list[bytes], list[int]]:
    """The distinct position tables of a file's objects, marshalled (the items of a `List`
    share their document's), and each object's number among them."""
    tables: list[bytes] = []
    table_no: dict[int, int] = {}
    numbers: list[int] = []
    for o in objects:
        pos = o.positions
        n = table_no.get(id(pos))
        if n is None:
            n = table_no[id(pos)] = len(tables)
            tables.append(marshal.dumps(dict(pos.items())))
        numbers.append(n)
    return tables, numbers


def file_in(
    t: Sequence[Any], c: Any, text: str | None, store: Store | None = None, key: bytes | None = None
) -> FileResult:
    """The file's result from its entry; `text` None: the file is not read now (its stat
    matched), its source is read back on first use and checked against the entry's CRC."""
    spilled_source = _spilled_source or _bounded_spilled_source()
    (
        documents,
        findings,
        objs,
        tables,
        template_paths,
        has_source,
        crc,
        length,
        directives,
        starts,
        waits,
        members,
        facts,
        _head,
    ) = t
    packed = isinstance(objs, tuple)  # (from the pack: `ailint.engine.stored`)
    count = len(objs[1]) if packed else len(objs)
    if store is not None and key is not None:
        # read again from the entry where a span is asked for: an entry from the pack holds
        # none, and those of the entry just read would stay in memory for every file
        tables = TableRefs(store, key, count)
    source: SourceFile | None = None
    if has_source:
        source = (
            SourceFile(c.path, c.display, text)
            if text is not None
            else spilled_source(c.path, c.display, crc, length, starts)
        )
    fr = FileResult(
        path=c.display,
        documents=documents,
        findings=findings_in(findings),
        source=source,
        deferred=None if waits is None else tuple(waits),
        catalogue=None if members is None else tuple(members),
    )
    if source is not None:
        source.template_paths = dict(template_paths)
        if packed:
            stored = _stored or _stored_module()
            fr.objects = stored.stored_objects(source, objs, tables)
            fr.annotated = stored.annotated(objs)
        else:
            fr.objects = [
                K8sObject(source, d, data, LazyPositions(tables[n], 0), tuple(base), tpl)
                for d, data, n, base, tpl in objs
            ]
        if isinstance(facts, list) and len(facts) == count:
            for obj, carried in zip(fr.objects, facts, strict=True):
                obj.carried = carried  # (taken when its pods are first made: `extract.take_carried_facts`)
        if isinstance(tables, TableRefs):
            tables.objects = fr.objects  # an entry gone (pruned) or damaged: the file is parsed again
        if not directives:
            fr.suppressions = []  # no `ailint:` comment in it: nothing to read it for
    return fr


_spilled_source: Any = None  # `bounded.spilled_source`, imported by the first `file_in` (with zlib)


def _bounded_spilled_source() -> Any:
    global _spilled_source
    from ailint.engine.bounded import spilled_source

    _spilled_source = spilled_source
    return spilled_source


_stored: Any = None  # `ailint.engine.stored`, imported where a pack entry is first read or made


def _stored_module() -> Any:
    global _stored
    from ailint.engine import stored

    _stored = stored
    return stored


def without_tables(entry: tuple[Any, ...]) -> tuple[Any, ...]:
    """A file entry as the pack keeps it: without its position tables (most of its bytes,
    read from the file's own entry where a finding points); one from the pack as it is."""
    return entry if len(entry) < 4 or entry[3] is None else (*entry[:3], None, *entry[4:])


def entry_tables(entry: Any) -> list[bytes] | None:
    """The position tables of a file entry as stored, or None (not an entry, damaged)."""
    if not isinstance(entry, tuple) or len(entry) < 4:
        return None
    return _tables(entry[3])


class TableRefs:
    """The position tables of a file entry, read from the entry where a span is first asked
    for: `tables[n]` is a promise (`TableRef`) that `LazyPositions` keeps until then."""

    __slots__ = ("_loaded", "count", "key", "objects", "store")

    def __init__(self, store: Store, key: bytes, count: int) -> None:
        self.store = store
        self.key = key
        self.count = count
        self.objects: list[K8sObject] = []
        self._loaded: list[bytes] | None = None

    def __getitem__(self, n: int) -> TableRef:
        return TableRef(self, n)

    def table(self, n: int) -> bytes:
        if self._loaded is None:
            got = entry_tables(self.store.get(self.key))
            if got is None:  # no entry of its own (the pack's only, or pruned): tables kept apart?
                got = _tables(self.store.get(tables_key(self.key)))
            if got is None:  # the same positions from parsing the text again, kept for next time
                got = self._reparse()
                self.store.put(tables_key(self.key), got)
            self._loaded = got
        return self._loaded[n]

    def _reparse(self) -> list[bytes]:
        from ailint.engine.load import load_text

        src = self.objects[0].source if self.objects else None
        if src is None:
            raise OSError("no source to parse the positions from")
        fr = load_text(SourceFile(src.path, src.display, src.text))
        return _position_tables(fr.objects)[0]  # the same numbering as `file_out`


def tables_key(key: bytes) -> bytes:
    """Where the position tables of the file entry `key` are kept when a rerun had to parse
    the file again for them (its entry is the pack's, which holds none): a later rerun that
    needs them again (findings of the edited file's namespace that point into it) reads them
    instead of parsing the file once more. Keyed by the file's bytes, as the entry is."""
    return _h(key, b"tables").digest()


def _tables(value: Any) -> list[bytes] | None:
    """`value` when it is a list of position tables (an entry's, or what `tables_key`
    keeps), else None."""
    if isinstance(value, list) and all(isinstance(b, bytes) for b in value):
        return value
    return None


class TableRef:
    """One position table of a file entry, read from the entry on first use."""

    __slots__ = ("n", "refs")

    def __init__(self, refs: TableRefs, n: int) -> None:
        self.refs = refs
        self.n = n

    def fetch(self) -> bytes:
        return self.refs.table(self.n)

    def __reduce__(self) -> Any:  # to a worker's parent: the table itself
        return (bytes, (self.fetch(),))


# -- the run's use of the cache ------------------------------------------------------------
class RunCache:
    """One run's view of the cache: its run key and the store."""

    def __init__(self, store: Store, key: bytes, paths: Sequence[str]) -> None:
        self.store = store
        self.key = key
        given = "\0".join(paths).encode("utf-8", "surrogateescape")
        # the entries kept per set of command-line paths, each overwritten by the next run
        self.state_key = _h(key, b"state", given).digest()
        self.times_key = _h(key, b"task-times", given).digest()  # each bundle rule's last task, seconds
        self.stats_key = _h(key, b"stats", given).digest()
        self.masks_key = _h(key, b"masks", given).digest()
        self.run_slot = _h(key, b"run", given).digest()  # the inputs of the run last stored
        self.run_body = _h(key, b"run-result", given).digest()  # its result
        self.report_slot = _h(key, b"report", given).digest()  # the report of a run restored whole
        self.pack_key = _h(key, b"pack", given).digest()
        self.segments_key = _h(key, b"segments", given).digest()
        self.file_keys: dict[str, bytes] = {}  # display -> key of the bytes this run read
        self.hits = 0
        # whether the files parsed now get an entry each (`store_file`); off for a run that
        # parses many, whose pack (or a bounded run's segments) then holds them: each result
        # carries its entry to `lint_cached` instead
        self.file_entries = True
        self.schema_ahead: Any = None  # the edited files' schema findings, worked out beside
        # the pack as this run read it (display -> (key, entry)): where an edited file's
        # previous objects are when it had no entry of its own (`tracking._same_objects`)
        self.pack_read: dict[str, Any] = {}

    # files
    def file_key(self, display: str, raw: bytes, context: bool) -> bytes:
        return _h(
            self.key, b"file", display.encode("utf-8", "surrogateescape"), b"c" if context else b"j", raw
        ).digest()

    def schema_key(self, display: str, patches: list[str] | None) -> bytes | None:
        """Where the schema findings of the bytes this run read for `display` are kept, under
        the run's kustomize patch names (the version, config and CRD schemas that also decide
        them are in the file's key). An edit back to bytes validated before (an undo, a
        branch switch) finds them instead of importing the validator again."""
        key = self.file_keys.get(display)
        if key is None:
            return None
        return _h(key, b"schema", "\0".join(patches or ()).encode("utf-8", "surrogateescape")).digest()

    def load_file(self, key: bytes, c: Any, text: str) -> FileResult | None:
        got = self.store.get(key)
        if got is None:
            return None
        try:
            return file_in(got, c, text)
        except (TypeError, ValueError, KeyError, IndexError):
            return None

    def store_file(self, key: bytes, fr: FileResult, facts: bool = True) -> None:
        """Keep the file's entry (`file_out`; `facts` False: without its pods' facts)."""
        if not self.file_entries:  # made here, in the worker, while the text is at hand
            try:
                entry = file_out(fr, tables=False, facts=facts)
                if facts:  # (not bounded: the pack's form, its data in a blob, made here too)
                    entry = (_stored or _stored_module()).packed_entry(entry)
                fr.pack_entry = entry
            except (TypeError, ValueError, AttributeError):
                pass  # (not kept: parsed again next time)
            return
        try:
            value = file_out(fr, facts=facts)
        except (TypeError, ValueError, AttributeError):
            return
        # one file per entry, tables and all: a rerun takes the tables only for the files it
        # reports on (`TableRefs`), and the pack keeps the entries without them
        self.store.put(key, value)

    # what each file's stat said when its bytes were hashed (git's index, ruff's mtime key)
    def load_stats(self) -> dict[str, tuple[Any, ...]]:
        got = self.store.get(self.stats_key)
        return got if isinstance(got, dict) else {}

    def store_stats(self, seen: dict[str, tuple[Any, ...]]) -> None:
        self.store.put(self.stats_key, seen)

    # report texts known to hold no secret (`ailint.report.common.redact_text`)
    def recall_clean_texts(self) -> Any:
        from ailint.report.common import learn_clean

        got = self.store.get(self.masks_key)
        learn_clean(got)
        return got

    def remember_clean_texts(self, findings: Sequence[Finding]) -> None:
        """Scan the run's report texts now (the reporter then finds them scanned) and keep
        the clean ones of this run for the next, when they differ from what it had."""
        from ailint.report.common import clean_texts, redact_finding

        had = self.recall_clean_texts()
        texts: set[str] = set()
        for f in findings:
            redact_finding(f)
            texts.add(f.message)
            if f.fix is not None:
                texts.add(f.fix.title)
                texts.update(e.content for e in f.fix.edits)
        keep = sorted(texts & clean_texts())
        files = [t for t in had if isinstance(t, bytes)] if isinstance(had, list) else []
        if keep + files != had:
            self.store.put(self.masks_key, keep + files)

    def remember_clean_sources(self) -> None:
        """After the report: keep the digests of the quoted files found clean (a code frame
        masks its whole file), with the texts kept before."""
        from ailint.report.common import clean_digests

        now = clean_digests()
        if not now:
            return  # no code frame this run (a JSON report): the kept digests stay
        had = self.store.get(self.masks_key)
        had = had if isinstance(had, list) else []
        keep = [t for t in had if isinstance(t, str)] + sorted(now)
        if keep != had:
            self.store.put(self.masks_key, keep)

    # every file entry of these paths in one (the pack): an edit run reads one entry, not
    # one per file; the few files changed since it was written are read one by one
    def load_pack(self) -> dict[str, Any]:
        got = self.store.get(self.pack_key)
        return got if isinstance(got, dict) else {}

    def store_pack(self, entries: dict[str, tuple[bytes, Any]]) -> None:
        """Keep `entries` as the pack, each file's objects' data in a blob of its own, read
        when first asked for (`ailint.engine.stored`)."""
        packed_entry = (_stored or _stored_module()).packed_entry
        self.store.put(self.pack_key, {d: (k, packed_entry(e)) for d, (k, e) in entries.items()})

    # a bounded run's pack: no entry may hold a large run whole, so its entries are kept in
    # segments of SEGMENT_FILES files, and an index says which segment holds which file
    def load_segments(self) -> SegmentedPack:
        got = self.store.get(self.segments_key)
        return SegmentedPack(self.store, got if isinstance(got, dict) else {})

    def store_segments(
        self, kept: dict[str, tuple[bytes, bytes]], groups: Sequence[dict[str, tuple[bytes, Any]]]
    ) -> None:
        """Write each group of (display -> (key, entry)) as a segment, named by its files'
        keys, and the index (display -> (segment, file key)): `kept`, the files whose
        segments stand, and the new ones.

        An object's data that more than one of the new entries hold (a bounded run keeps
        equal data once, `yamldata.share_subtrees`) is written once, in a pool beside the
        segments, and each entry names it by its number there: within a segment marshal
        writes a shared value once, but segments are read apart, and a rerun of the
        benchmark's 100 MB tree (its files' copies in other segments) held 8 copies of most
        objects, 78 MiB of data where the cold run holds 20."""
        groups = [g for g in groups if g]
        pool, groups = _pooled(self.key, groups)
        if pool is not None:
            pool_key, pooled_data = pool
            self.store.put(pool_key, pooled_data)  # (before the segments that name it)
        index = dict(kept)
        for group in groups:
            seg = _h(self.key, b"segment", *(k for d, (k, _) in group.items() if d != POOL)).digest()
            self.store.put(seg, group)
            index.update((d, (seg, k)) for d, (k, _) in group.items() if d != POOL)
        self.store.put(self.segments_key, index)

    # what a pass over the run (a provider's) may reuse
    def pass_memo(self, n: int | str) -> PassMemo:
        key = _h(self.key, b"pass", str(n).encode(), self.state_key).digest()
        return PassMemo(self.store, key, self.file_keys)

    # whole runs
    def load_run(self, digest: bytes) -> Any:
        """The finished result stored for exactly these inputs, if the last run of these
        paths had them. One slot per set of paths, overwritten by each run: edits do not
        pile up whole results (a megabyte each on a large repository) for the pruner. The
        slot's inputs are read first, from a small entry of their own: after an edit the
        result (0.85 MB on the corpus, 3.5 ms to read) is not read only to be dropped."""
        if self.store.get(self.run_slot) != digest:
            return None
        got = self.store.get(self.run_body)
        if isinstance(got, tuple) and len(got) == 2 and got[0] == digest:  # (another run's, in between)
            return got[1]
        return None

    def store_run(self, digest: bytes, value: Any) -> None:
        self.store.put(self.run_body, (digest, value))
        self.store.put(self.run_slot, digest)  # (after the result: a reader never takes a stale one)

    # The report an unchanged rerun printed, kept for the next one: rendering it again from
    # the restored result (each finding's row, the fixes' byte offsets from the files they
    # edit) was a fifth of such a rerun of the corpus. One slot per set of paths, as the run's.
    def load_report(self, key: bytes) -> str | None:
        """The report kept under `key` (`report_key`), if the last one kept was that one."""
        got = self.store.get(self.report_slot)
        if isinstance(got, tuple) and len(got) == 2 and got[0] == key and isinstance(got[1], str):
            return got[1]
        return None

    def store_report(self, key: bytes, text: str) -> None:
        self.store.put(self.report_slot, (key, text))

    def run_entry_key(self, keyed: Sequence[tuple[str, bytes | None]]) -> bytes | None:
        if any(k is None for _, k in keyed):
            return None
        h = _h(self.key, b"run")
        for display, k in keyed:
            h.update(display.encode("utf-8", "surrogateescape") + b"\0" + k)  # type: ignore[operator]
        return h.digest()


POOL = "\0pool"  # a segment's entry naming the pool its entries' shared data is in (no path starts so)


def _pooled(
    run_key: bytes, groups: list[dict[str, tuple[bytes, Any]]]
) -> tuple[tuple[bytes, list[Any]] | None, list[dict[str, tuple[bytes, Any]]]]:
    """The pool of the objects' data that more than one entry of `groups` holds, with its
    key, and the groups with each such data replaced by its number in the pool (an int: an
    object's data is a mapping); (None, groups) when no data repeats."""
    seen: dict[int, int] = {}  # id(data) -> how many entries hold it
    for group in groups:
        for _, entry in group.values():
            for o in entry[2]:
                seen[id(o[1])] = seen.get(id(o[1]), 0) + 1
    pool: list[Any] = []
    number: dict[int, int] = {}
    out: list[dict[str, tuple[bytes, Any]]] = []
    for group in groups:
        new: dict[str, tuple[bytes, Any]] = {}
        for d, (k, entry) in group.items():
            datas = [o[1] for o in entry[2]]
            if any(seen[id(data)] > 1 for data in datas):
                placed: list[Any] = []
                for data in datas:
                    if seen[id(data)] > 1:
                        at = number.get(id(data))
                        if at is None:
                            at = number[id(data)] = len(pool)
                            pool.append(data)
                        placed.append(at)
                    else:
                        placed.append(data)
                entry = _with_datas(entry, placed)
            new[d] = (k, entry)
        out.append(new)
    if not pool:
        return None, groups
    key = _h(run_key, b"pool", *(k for g in groups for k, _ in g.values())).digest()
    for new in out:
        new[POOL] = (key, None)
    return (key, pool), out


class SegmentedPack:
    """A bounded run's pack as `lint_cached` reads it, each file once, in the run's order:
    the segment holding a file is read when it is first asked for, and a file's entry leaves
    it when it is taken. Segments follow the order of the run that wrote them; after an edit
    of many files the old and the new ones alternate, so the last few read are kept. The
    data that entries of several segments hold is in their pool (`RunCache.store_segments`),
    read once, when a segment first names it."""

    HELD = 4  # segments kept at once

    def __init__(self, store: Store, index: dict[str, Any]) -> None:
        self.store = store
        self.index = index  # display -> (segment key, file key)
        self._held: dict[bytes, dict[str, Any]] = {}  # oldest first
        self._pools: dict[bytes, list[Any] | None] = {}  # None: unreadable

    def holds(self, display: str, key: bytes) -> bool:
        """Whether a segment holds the entry of these bytes of `display` (nothing is read)."""
        where = self.index.get(display)
        return isinstance(where, tuple) and len(where) == 2 and where[1] == key

    def get(self, display: str) -> Any:
        where = self.index.get(display)
        if not (isinstance(where, tuple) and len(where) == 2 and isinstance(where[0], bytes)):
            return None
        seg = where[0]
        entries = self._held.pop(seg, None)
        if entries is None:
            got = self.store.get(seg)
            entries = got if isinstance(got, dict) else {}
            while len(self._held) >= self.HELD:
                del self._held[next(iter(self._held))]
        self._held[seg] = entries  # (the newest)
        held = entries.pop(display, None)
        named = entries.get(POOL)
        if named is None or not isinstance(held, tuple) or len(held) != 2:
            return held
        try:
            datas = [o[1] for o in held[1][2]]
            if not any(type(data) is int for data in datas):
                return held
            pool = self._pool(named[0])
            if pool is None:
                return None  # (its data is gone: the file is parsed again)
            return (held[0], _with_datas(held[1], [pool[x] if type(x) is int else x for x in datas]))
        except (TypeError, IndexError):
            return None

    def _pool(self, key: bytes) -> list[Any] | None:
        if key not in self._pools:
            got = self.store.get(key)
            self._pools[key] = got if isinstance(got, list) else None
        return self._pools[key]


class PassMemo:
    """A provider's memo across runs of the same paths: `get`/`put` of marshal data under
    keys it digests itself (its inputs). Only what this run read or wrote is kept, so it
    holds one run's worth of entries, written back when it changed."""

    def __init__(self, store: Store, key: bytes, file_keys: dict[str, bytes] | None = None) -> None:
        self._store = store
        self._key = key
        self._files = file_keys or {}
        got = store.get(key)
        self._old: dict[bytes, Any] = got if isinstance(got, dict) else {}
        self._new: dict[bytes, Any] = {}

    def digest(self, obj: K8sObject) -> bytes | None:
        """What stands for `obj` itself: the key of its file's bytes and its place in the
        file (the same bytes parse to the same object), or None for a file without a key."""
        fk = self._files.get(obj.file)
        return None if fk is None else fk + obj.doc_index.to_bytes(4, "little")

    def get(self, key: bytes) -> Any:
        value = self._old.get(key)
        if value is not None:
            self._new[key] = value
        return value

    def put(self, key: bytes, value: Any) -> None:
        self._new[key] = value

    def save(self) -> None:
        if self._new != self._old:
            self._store.put(self._key, self._new)


def open_run_cache(
    settings: Any, rule_codes: Sequence[str], paths: Sequence[str], only_object_rules: bool
) -> RunCache | None:
    """The run's cache, or None when it is off or its folder cannot be used (never an error)."""
    if os.environ.get("AILINT_NO_CACHE"):
        return None
    directory = getattr(settings, "cache_dir", None) or default_dir()
    if getattr(settings, "cache_dir", None) and not _inside_project(directory, settings):
        # `cache-dir` comes from the repository's config, which a pull request can change:
        # it may not make ailint create (or chmod) folders outside the project (issue 19).
        # Elsewhere, the runner chooses with AILINT_CACHE_DIR.
        directory = default_dir()
    try:
        store = Store(directory)
        key = run_key(settings, rule_codes, only_object_rules)
    except OSError:
        return None
    if key is None:
        return None
    return RunCache(store, key, [os.path.abspath(p) if p != "-" else p for p in paths])


# -- a file's stat as a stand-in for its bytes ---------------------------------------------
SETTLE_NS = 2_000_000_000  # a file changed this recently may change again within its mtime tick


def stat_signature(c: Any) -> tuple[int, ...] | None:
    """The candidate's stat signature (`ailint.engine.sources.signature`), taken by discovery
    or now; None: not a plain file to key."""
    if c.problem or c.path == "-":
        return None
    if c.signature is not None:
        return c.signature  # type: ignore[no-any-return]
    from ailint.engine.sources import signature

    try:
        return signature(os.stat(c.path))
    except OSError:
        return None


def settled(sig: tuple[int, ...], now_ns: int) -> bool:
    """Whether a signature can stand for the bytes read after it was taken: the file had not
    changed in the last SETTLE_NS (git's "racily clean" entries: a write in the same clock
    tick as the read would keep the mtime and go unseen), so it is hashed again next time."""
    return now_ns - max(sig[1], sig[2]) > SETTLE_NS


# -- a cached run ----------------------------------------------------------------------------
KEEP_RAW_BYTES = 32 * 1024 * 1024  # above this much input, files are read again on a hit
PACK_SLACK = 8  # files read outside the pack before it is written again (or 5% of the run)
BESIDE_FILES = 64  # edited files parsed in a child while the cache is read (more: the pool)
FILE_ENTRIES_UP_TO = 256  # files parsed in a run that still get an entry each (more: the pack only)
SEGMENT_FILES = 512  # files per segment of a bounded run's pack (`RunCache.store_segments`)


def lint_cached(cache: RunCache, candidates: list[Any], settings: Any, engine: Any, result: Any) -> Any:
    """`lint()` with the cache: the whole result when no file changed; else the files whose
    entries match, the others parsed and checked (their entries written), and the bundle
    phase over the previous state (`ailint.engine.tracking`).

    `candidates` is taken over: once the files are looked up, the list is emptied and only
    the candidates of the files parsed now are kept (see `_parsed_now`)."""
    from ailint.engine.load import decode
    from ailint.engine.run import finish, process_file, read_raw

    keys: list[bytes] = []
    raws: list[bytes | None] = []
    early: dict[int, FileResult | None] = {}  # (read_raw gives a result whenever it gives no bytes)
    total = 0
    known = cache.load_stats()
    now_ns = _now_ns()
    seen: dict[str, tuple[Any, ...]] = {}
    unread: set[int] = set()  # files keyed by their stat alone
    # the bytes read now are kept for the entries they may hit; with no stat known (a first
    # run here, the cache emptied) they would hit none, and holding them only grows the run
    keep_raw = KEEP_RAW_BYTES if known else 0
    # nothing stored for these paths (a first run, the cache emptied): no file can be found,
    # so none is read and hashed to look it up; the parse reads and keys each one once, and
    # the keys, stats and run entry are made from its results (`_keyed_by_the_parse`). Not
    # when a pack or a run is stored without stats: a first run whose files were all too new
    # to record a stat for (a fresh clone's) left those for its next run to find.
    fresh = (
        not known
        and not cache.store.has(cache.segments_key if engine.bounded else cache.pack_key)
        and not cache.store.has(cache.run_slot)
    )
    sigs: list[tuple[int, ...] | None] = []  # each file's stat before it was read
    for n, c in enumerate(candidates):
        sig = stat_signature(c)
        sigs.append(sig)
        if fresh:
            continue
        if sig is not None:
            hit = known.get(c.display)
            if hit is not None and hit[0] == sig and hit[1] == c.context:
                unread.add(n)
                keys.append(hit[2])
                raws.append(None)
                cache.file_keys[c.display] = hit[2]
                seen[c.display] = hit
                continue
        raw, fr = read_raw(c, settings)
        if fr is not None or raw is None:
            early[n] = fr
            k = _early_key(fr)
        else:
            k = cache.file_key(c.display, raw, c.context)
            total += len(raw)
            if sig is not None and settled(sig, now_ns):
                seen[c.display] = (sig, c.context, k)
        keys.append(k)
        raws.append(raw if total <= keep_raw else None)
        cache.file_keys[c.display] = k
    if seen != known and not fresh:
        cache.store_stats(seen)
    del known  # (a fresh run records in `seen` the stats of the files it parsed, once checked)
    if not fresh:
        seen = {}
    projects = engine.projects()  # a whole run is reused only with the same projects
    run_entry = None if fresh else _run_entry(cache, candidates, keys, projects)
    got = cache.load_run(run_entry) if run_entry is not None else None
    if got is not None:
        try:
            return _restore_run(got, cache, candidates, result, run_entry)
        except (TypeError, ValueError, KeyError, IndexError):
            pass
    file_results: list[FileResult | None] = [None] * len(candidates)
    misses: list[int] = []
    # (a large run: no entry that big, its pack is in segments)
    pack: dict[str, Any] | SegmentedPack = (
        {} if fresh else cache.load_pack() if not engine.bounded else cache.load_segments()
    )
    if isinstance(pack, dict):
        cache.pack_read = pack
    # the files read now that have no entry, in the pack or of their own (the edited ones),
    # are validated against their schemas in a forked child while this process reads the
    # cache and checks them: the validator's import (a twentieth of a second) overlaps
    # everything up to the bundle phase
    edited = [
        n
        for n in range(len(candidates) if not fresh else 0)
        if n not in early
        and n not in unread
        and not _in_pack(pack, candidates[n].display, keys[n])
        and not cache.store.has(keys[n])
    ]
    ahead = None
    beside: dict[int, FileResult] = {}  # the edited files as the child parsed and checked them
    if engine.jobs > 1 and 0 < len(edited) <= BESIDE_FILES:
        from ailint.engine.parallel import checked_for_parent, run_beside

        checked: list[FileResult] = []  # the first work's results, for the second

        def check_edited() -> list[FileResult]:
            checked[:] = checked_for_parent([candidates[n] for n in edited], settings, engine)
            return checked

        waiters = run_beside(check_edited, lambda: _schema_ahead(cache, checked, settings, engine))
        if waiters is not None:
            take_checked, ahead = waiters
    packed: dict[str, tuple[bytes, Any]] = {}  # this run's entries, for the next pack (not bounded)
    in_segments: dict[str, tuple[bytes, bytes]] = {}  # (bounded) the files whose entry a segment holds
    stale = 0  # entries not found in the pack
    for n, c in enumerate(candidates):
        if fresh:
            misses.append(n)
            stale += 1
            continue
        if n in early:
            file_results[n] = early[n]
            continue
        held = pack.get(c.display)
        if isinstance(held, tuple) and len(held) == 2 and held[0] == keys[n]:
            entry = held[1]
            if isinstance(pack, SegmentedPack):
                in_segments[c.display] = pack.index[c.display]  # (its segment stands)
        else:
            entry = cache.store.get(keys[n])
            stale += 1
        if entry is not None and not engine.bounded:
            packed[c.display] = (keys[n], without_tables(entry) if isinstance(entry, tuple) else entry)
        fr = None
        if entry is not None and n in unread:  # its stat stands for its bytes: not read now
            try:
                fr = file_in(entry, c, None, cache.store, keys[n])
            except (TypeError, ValueError, KeyError, IndexError):
                fr = None
        elif entry is not None:
            raw = raws[n]
            if raw is None:
                raw, _ = read_raw(c, settings)
            if raw is not None and cache.file_key(c.display, raw, c.context) == keys[n]:
                text, problem = decode(raw, c.display)
                if problem is None and text is not None:
                    try:
                        fr = file_in(entry, c, text, cache.store, keys[n])
                    except (TypeError, ValueError, KeyError, IndexError):
                        fr = None
        raws[n] = None
        if fr is None:
            misses.append(n)
            continue
        cache.hits += 1
        if engine.bounded and fr.source is not None:
            from ailint.engine import suppress
            from ailint.engine.bounded import spill

            if fr.suppressions is None:
                fr.suppressions = suppress.comment_suppressions(fr.source)
            spill(fr, settings.limits)
        file_results[n] = fr
    if ahead is not None and any(n in misses for n in edited):
        beside = dict(zip(edited, take_checked(), strict=True))
        checked[:] = list(beside.values())  # (the schema work, if it must be done here)
        for n, fr in beside.items():
            if file_results[n] is None:  # (an entry another run wrote meanwhile stays)
                file_results[n] = fr
    count = len(candidates)
    parsed_now = _parsed_now(candidates, sigs, misses)
    del pack, unread, sigs
    todo_at = [n for n in misses if n not in beside]
    todo = [parsed_now[n][0] for n in todo_at]
    # Many files to parse (a first run, a new branch): their entries go into the pack only,
    # not into a file each. Making a file costs far more than reading one (0.5 to 0.8 ms
    # against 11 µs on the benchmark's disk; a scanner makes it dearer on other machines),
    # and a first run of the corpus wrote 2,280 of them: 2.7 times its cold run. A rerun of these
    # paths reads the pack; a span it needs from one of these files comes from parsing that
    # file again (`TableRefs`: a few files after an edit); a run of other paths (a few files
    # from pre-commit) parses what it does not find and keeps those entries one per file.
    entries_in_pack = len(todo) > FILE_ENTRIES_UP_TO
    cache.file_entries = not entries_in_pack
    tick = getattr(engine, "progress", None)  # a terminal's progress line, when one is shown
    if tick is not None:
        tick(count - len(todo))  # read from the cache
    if engine.jobs > 1 and len(todo) > 1:
        from ailint.engine.parallel import run_parallel

        done = run_parallel(todo, settings, engine, engine.jobs)
    else:
        done = []
        for c in todo:
            done.append(process_file(c, settings, engine))
            if tick is not None:
                tick(1)
    for n, fr in zip(todo_at, done):
        file_results[n] = fr
    del todo, done
    cache.file_entries = True
    if fresh:
        run_entry = _keyed_by_the_parse(cache, [parsed_now[n][0] for n in range(count)], file_results, keys, projects)
    # a file edited between its first read and its parse: every entry about it (the pack, the
    # bundle state, the schema and policy memos) is kept under its parsed bytes' key, and the
    # run, keyed by the first reads, is not kept
    moved = False
    for n in misses:
        parsed = file_results[n]
        if parsed is not None and parsed.cache_key is not None and parsed.cache_key != keys[n]:
            keys[n] = cache.file_keys[parsed_now[n][0].display] = parsed.cache_key
            moved = True
    if entries_in_pack and engine.bounded:  # its new segments, in the run's order, before the joins
        groups: list[dict[str, tuple[bytes, Any]]] = [{}]
        for n in todo_at:
            parsed = file_results[n]
            if parsed is None or parsed.pack_entry is None:
                continue
            if len(groups[-1]) >= SEGMENT_FILES:
                groups.append({})
            groups[-1][parsed_now[n][0].display] = (keys[n], parsed.pack_entry)
            parsed.pack_entry = None
        cache.store_segments(in_segments, groups)
        del groups  # (written: not held through the bundle phase, a fifth of its parent's data)
    del in_segments
    # the run entry is keyed by the first reads: kept only when no file moved before its
    # parse and each parsed file still holds the bytes parsed (a settled stat, else its bytes,
    # says so). Checked here, before the bundle phase, so that its processes do not fork from
    # one that holds every file's candidate (a fresh run parses every file): a file changed
    # after this check has a stat other than the one kept for it, and the next run reads it.
    if fresh:  # (every file a miss, none moved: the parse's read was its first)
        held = [_unchanged(*parsed_now[n], keys[n], now_ns, cache, settings) for n in misses]
        # the stats of the settled files that still have them now (the check above stats
        # each again), as the lookup keeps them: the stat a file had before its bytes were
        # read (`seen`, empty: nothing was looked up)
        for n, still in zip(misses, held, strict=True):
            (c, sig), parsed = parsed_now[n], file_results[n]
            if still and sig is not None and settled(sig, now_ns) and parsed is not None and parsed.cache_key:
                seen[c.display] = (sig, c.context, keys[n])
        if seen:
            cache.store_stats(seen)
        steady = all(held)
        del held, seen
    else:
        steady = not moved and all(_unchanged(*parsed_now[n], keys[n], now_ns, cache, settings) for n in misses)
    del parsed_now
    if ahead is not None:
        cache.schema_ahead = ahead  # a promise: the bundle phase waits for it when it gets there
    out = finish([fr for fr in file_results if fr is not None], settings, engine, result)
    cache.pack_read = {}  # (the bundle phase is over: not held through the report)
    if callable(cache.schema_ahead):  # not taken (no schema pass ran): the child is waited for
        cache.schema_ahead()
    cache.schema_ahead = None
    if not engine.bounded and (entries_in_pack or stale > max(PACK_SLACK, count // 20)):
        if entries_in_pack:
            for n in todo_at:
                fr = file_results[n]
                if fr is not None and fr.pack_entry is not None:
                    packed[fr.path] = (keys[n], fr.pack_entry)  # (a file's result is named as its candidate)
        cache.store_pack(packed)  # the pack has drifted (or there is none): one read next time
    if run_entry is not None and steady:
        out.findings = _with_reasons(out.findings)  # as a rerun restores them (the report reads them once)
        cache.remember_clean_texts(out.findings)
        cache.store_run(
            run_entry,
            (
                [(f.path, f.documents, f.objects) for f in out.files],
                findings_out(out.findings),
                findings_out(out.suppressed),
                [(d, s.path) for d, s in out.sources.items()],
            ),
        )
    if cache.store.written:
        cache.store.prune_if_due()
    out.cache = cache  # the reporter's clean sources are kept after the report (`remember_clean_sources`)
    return out


def _parsed_now(
    candidates: list[Any], sigs: list[tuple[int, ...] | None], misses: list[int]
) -> dict[int, tuple[Any, tuple[int, ...] | None]]:
    """The candidate and the stat of each file a run parses now (`misses`), by its place in
    the run; `candidates` is emptied.

    The rest of the run needs no other: each of these is parsed, then checked to still hold
    the bytes parsed (`_unchanged`), and let go before the bundle phase, whose processes fork
    from this one. What the lookup read for the others goes before the parse: on the 100 MB
    tree, after a changed value, the 20,168 candidates with their paths and stats, the stats
    read from the cache and the segments' index held 27 MiB of that process; a first run
    parses every file, and its candidates held 10 MiB of it (the caller, `lint`, holds the
    list until it returns: it is emptied here, not only dropped)."""
    kept = {n: (candidates[n], sigs[n]) for n in misses}
    candidates.clear()
    return kept


def _run_entry(cache: RunCache, candidates: Sequence[Any], keys: Sequence[bytes], projects: Any) -> bytes | None:
    """The key of the whole run's entry: each file's path, project and key."""
    return cache.run_entry_key(
        [
            (f"{c.display}\0{'' if c.context else projects.key(c.path)}", k)
            for c, k in zip(candidates, keys, strict=True)
        ]
    )


def _early_key(fr: FileResult | None) -> bytes:
    """The key of a file that was not parsed (unreadable, too large...): its findings."""
    return _h(b"early", repr(findings_out(fr.findings if fr else [])).encode("utf-8", "surrogateescape")).digest()


def _keyed_by_the_parse(
    cache: RunCache,
    candidates: Sequence[Any],
    file_results: Sequence[FileResult | None],
    keys: list[bytes],
    projects: Any,
) -> bytes | None:
    """A fresh run's keys (`lint_cached`), as its parse made them (an unread file's from its
    findings, as the lookup would), filled in `keys` and the cache's `file_keys`; the run
    entry's key."""
    keys[:] = []
    for c, fr in zip(candidates, file_results, strict=True):
        k = fr.cache_key if fr is not None and fr.cache_key is not None else _early_key(fr)
        keys.append(k)
        cache.file_keys[c.display] = k
    return _run_entry(cache, candidates, keys, projects)


def _in_pack(pack: dict[str, Any] | SegmentedPack, display: str, key: bytes) -> bool:
    """Whether the pack holds the entry of these bytes of `display`."""
    if isinstance(pack, SegmentedPack):
        return pack.holds(display, key)
    held = pack.get(display)
    return isinstance(held, tuple) and len(held) == 2 and held[0] == key


def _unchanged(c: Any, sig: tuple[int, ...] | None, key: bytes, now_ns: int, cache: RunCache, settings: Any) -> bool:
    """Whether the file still holds the bytes keyed `key`: its stat is the settled one it was
    read under (git's index: no read), else its bytes are read and hashed again."""
    from ailint.engine.run import read_raw
    from ailint.engine.sources import signature

    if sig is not None and settled(sig, now_ns):
        try:
            if signature(os.stat(c.path)) == sig:
                return True
        except OSError:
            return False
    raw = read_raw(c, settings)[0]
    return raw is not None and cache.file_key(c.display, raw, c.context) == key


def _schema_ahead(cache: RunCache, results: list[FileResult], settings: Any, engine: Any) -> Any:
    """The schema findings of the edited files, worked out beside the main process (the
    validator's import with them) under the kustomize patches of the previous run:
    (patches, {file: finding tuples}), which the bundle phase takes when the run's patches
    are the same (`ailint.engine.tracking`), or None."""
    codes = {r.rule.code for r in engine.rules if r.rule.code.startswith("SCH")}
    if not settings.schema or not codes:
        return None
    state = cache.store.get(cache.state_key)
    patches = state[5] if isinstance(state, tuple) and len(state) == 6 else None
    if not isinstance(patches, list):
        return None
    try:
        from ailint.schema.validate import validate_objects
    except ImportError:
        return None
    hidden = engine.context_only
    judged = [o for fr in results if fr.path not in hidden for o in fr.objects]
    per_file: dict[str, list[Any]] = {fr.path: [] for fr in results if fr.path not in hidden}
    for f in validate_objects(judged, settings, codes, patches=set(patches)):
        per_file.setdefault(f.file, []).append(finding_out(f))
    return patches, per_file


def _with_reasons(findings: Sequence[Finding]) -> list[Finding]:
    """`findings` with each severity reason resolved (the rule doc's condition for a severity
    other than the documented one), so a rerun prints it without importing the rules' docs."""
    from dataclasses import replace

    from ailint.report.explain import severity_reason

    out = []
    for f in findings:
        reason = f.severity_reason or severity_reason(f)
        out.append(f if reason == f.severity_reason else replace(f, severity_reason=reason))
    return out


def _restore_run(
    got: Sequence[Any], cache: RunCache, candidates: Sequence[Any], result: Any, digest: bytes | None
) -> Any:
    from ailint.engine.run import FileSummary

    result.cache = cache
    result.restored_from = digest

    files, findings, suppressed, sources = got
    cache.recall_clean_texts()
    result.files = [FileSummary(p, d, o) for p, d, o in files]
    result.findings = findings_in(findings)
    result.suppressed = findings_in(suppressed)
    context = {c.display: c.context for c in candidates}
    result.sources = LazySources({d: (p, cache.file_keys.get(d), context.get(d, False)) for d, p in sources}, cache)
    cache.hits = len(candidates)
    return result


def report_key(result: Any, fmt: str, options: dict[str, Any]) -> bytes | None:
    """What a report of `result` in `fmt` with `options` is kept under, for a run restored
    whole from its entry (`restored_from`: its inputs, which the key of every file and the
    run's settings, version and schemas are part of), with what the walk gave the run
    beside that entry (the files it passed over, the context files); None for any other."""
    digest = getattr(result, "restored_from", None)
    if digest is None:
        return None
    extra = repr((fmt, sorted(options.items()), sorted(result.skipped.items()), result.context_files))
    return _h(digest, b"report", extra.encode("utf-8", "surrogateescape")).digest()


class LazySources(dict):  # type: ignore[type-arg]
    """A restored run's sources: read from disk on first use, only when still the bytes the
    run's findings came from (else None: no code frame rather than a wrong one)."""

    def __init__(self, where: dict[str, tuple[str, bytes | None, bool]], cache: RunCache) -> None:
        super().__init__()
        self._where = where
        self._cache = cache

    def _load(self, display: str) -> SourceFile | None:
        from ailint.engine.load import decode

        w = self._where.get(display)
        if w is None:
            return None
        path, key, context = w
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except OSError:
            return None
        if key is None or self._cache.file_key(display, raw, context) != key:
            return None
        text, problem = decode(raw, display)
        return SourceFile(path, display, text) if problem is None and text is not None else None

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        if not dict.__contains__(self, key):
            dict.__setitem__(self, key, self._load(key))
        got = dict.__getitem__(self, key)
        return default if got is None else got

    def __getitem__(self, key: str) -> SourceFile:
        got = self.get(key)
        if got is None:
            raise KeyError(key)
        return got  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def keys(self) -> Any:
        return self._where.keys()

    def items(self) -> Any:
        return [(k, self[k]) for k in self._where if self.get(k) is not None]

    def values(self) -> Any:
        return [v for _, v in self.items()]
