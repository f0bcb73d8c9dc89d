"""The incremental bundle phase: bundle rules run again only where an edit can change them.

A bundle rule's findings on an object depend on the object and on what the rule read of
the other objects through the context. `TrackingContext` notes that, per call, as tokens
(the kinds it asked for, `@pods` for the run's pod templates, `*` for every object; a read
of one namespace is `Kind/namespace` or `@pods/namespace`). The cache keeps each (object,
rule) call's findings and tokens; after an edit, a call is reused when its object's file is
unchanged and no token of it names what a changed, added or removed file holds (before or
after the edit): its objects' kinds, and those kinds in their namespaces. Everything else
runs again, in the same order as a full run, so the findings are identical. A changed file
whose objects are what they were stops there (no other call sees a change), and its own
calls stand too when the edit kept its text up to the last content line and none of their
findings reaches past it (`_own_calls_stand`: a comment rewritten at the end).

A call reads its own project's objects only (`ailint.engine.scope`), so a change touches the
project of the changed file, with two exceptions where objects reach across projects: a
context file's objects join every project (its change touches them all), and the run's
catalogue is one for every project (a changed runtime or claim touches each project whose
workloads' pods merge with its kind).
"""

from __future__ import annotations

import dataclasses
import marshal
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence

from ailint.core.model import FileResult, Finding, K8sObject, SourceFile
from ailint.domain.context import Context

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ailint.engine.callstate import StoredCalls

ALL = "*"  # read every object (`ctx.objects`)
PODS = "@pods"  # read the pod templates of the run (`ctx.pods_in`)
NODEPOOLS = "NodePool"


ANY_NAMESPACE = "*"  # `Kind/*`: a change that reaches every namespace's reads of the kind
EVERY_PROJECT = "\0every"  # the project of a context file (`--context`): it joins every project


def scoped(token: str, namespace: str) -> str:
    """The token of a read (or a change) of `token` in one namespace."""
    return f"{token}/{namespace}"


def object_tokens(obj: K8sObject, catalogue: bool | None = None) -> tuple[str, ...]:
    """What a change to `obj` invalidates: its kind (in its namespace too), and the run's
    pods if it is a pod kind (those of its namespace) or a catalogue object (a runtime or a
    DRA claim changes the pods merged with it, in any namespace). `catalogue`: whether it
    is one, when its file's parse said (`FileResult.catalogue`)."""
    from ailint.domain.extract import is_pod_kind
    from ailint.domain.workloads import is_catalogue

    ns = obj.namespace_or_default
    own = (obj.kind, scoped(obj.kind, ns))
    if catalogue if catalogue is not None else is_catalogue(obj):
        return (*own, PODS, scoped(PODS, ANY_NAMESPACE))
    if is_pod_kind(obj):
        return (*own, PODS, scoped(PODS, ns))
    return own


def stale(read: Iterable[str], touched: set[str]) -> bool:
    """Whether a call that read `read` must run again after changes that touched `touched`:
    a whole-kind read by any change of the kind, a namespace's read by a change there (or
    one that reaches every namespace)."""
    for token in read:
        if token in touched:
            return True
        kind, sep, _ = token.partition("/")
        if sep and scoped(kind, ANY_NAMESPACE) in touched:
            return True
    return False


def merge_tokens(obj: K8sObject, waiting: bool | None = None) -> frozenset[str]:
    """The kinds whose change alters `obj`'s own pods (merged with the run's catalogue,
    `ailint.engine.catalogue`): a bundle call on `obj` read them, through its pods.
    `waiting`: whether it waits for the catalogue, when its file's parse said
    (`FileResult.deferred`)."""
    from ailint.engine.catalogue import deferred

    if not (waiting if waiting is not None else deferred(obj)):
        return frozenset()
    from ailint.domain.workloads import catalogue_reads

    return frozenset(kind for _, kind in catalogue_reads(obj))


SCHEMA_MEMO_FILES = 64  # at most this many files to validate again: look each up by its bytes (RunCache.schema_key)
SCHEMA_TASK = -1  # the bundle phase's task that validates the changed files (the others are rules)
PASSES_TASK = -2  # the providers' passes (admission policies), when the phase is forked
FORK_CALLS = 2000  # bundle calls (about 0.1 ms each) worth forking for: each process imports its rules
# ...or fewer, in large projects: a rule's first call in a process builds its indexes over
# its project's objects (a value edit in a repository of 3,293 objects ran 148 calls in
# 106 ms, forked in 21 ms less; 30 to 35 calls of 8 to 14 ms lose 8 to 11 ms to a fork)
FORK_CALLS_LARGE, FORK_OBJECTS = 100, 1000


def _same_objects(cache: Any, d: str, before: Any, now: Any, fr: FileResult) -> tuple[bool, bool, int | None]:
    """Whether an edited file parses to the objects it held before: (the same data, the
    same positions too, and the length of its old text's head when the new text starts
    with that head: `bounded.head_length`, the text up to its last content line). With the
    same data, the other objects' calls, which read its objects, see nothing new (a build
    system's early cutoff), unless one of them points at its lines and they moved
    (`callstate.StoredCalls.points_into`): a comment added at the end moves the end of
    every block collection it closes. Its own objects' calls run again (fixes edit text
    offsets, which such an edit can move) unless the edit kept the head
    (`_own_calls_stand`). Compared as marshal version 0 bytes, which tell `true` from `1`
    and `1.0` (Python's == does not); positions unknown (a file entry from the pack, which
    keeps no tables) count as moved."""
    from ailint.engine.bounded import text_ref
    from ailint.engine.cache import entry_tables
    from ailint.engine.stored import unpacked_objects

    no = (False, False, None)
    if not (isinstance(before, tuple) and len(before) == 2 and isinstance(now, tuple) and len(now) == 2):
        return no
    if before[1] != now[1]:
        return no  # another project (or context flag): a change
    old = cache.store.get(before[0])
    if old is None:  # parsed among many files (a first run): its entry is the pack's only
        held = getattr(cache, "pack_read", {}).get(d)
        old = held[1] if isinstance(held, tuple) and len(held) == 2 and held[0] == before[0] else None
    if not isinstance(old, tuple) or len(old) < 14:
        return no
    try:
        objs, tables = unpacked_objects(old[2]), entry_tables(old)
    except (ValueError, TypeError, EOFError):
        return no
    if len(objs) != len(fr.objects):
        return no
    placed = tables is not None
    try:
        for (doc, data, n, base, tpl), o in zip(objs, fr.objects, strict=True):
            if marshal.dumps((doc, data, tuple(base), tpl), 0) != marshal.dumps(
                (o.doc_index, o.data, tuple(o.base), o.template), 0
            ):
                return no
            if placed and tables is not None:
                placed = marshal.dumps(marshal.loads(tables[n]), 0) == marshal.dumps(dict(o.positions.items()), 0)
    except (ValueError, TypeError, IndexError, EOFError):
        return no
    head_kept = None
    head = old[13]
    # (a text held: a spilled one, as a bounded run keeps them, is not read back for this)
    text = fr.source.text if fr.source is not None and fr.source.__class__ is SourceFile else None
    if isinstance(head, tuple) and len(head) == 2 and isinstance(head[0], int) and text is not None:
        length, crc = head
        if 0 < length <= len(text) and text_ref(text[:length]) == (crc, length):
            head_kept = length
    return True, placed, head_kept


def _own_calls_stand(stored: StoredCalls, d: str, source: Any, old_length: int) -> bool:
    """Whether the stored calls on the objects of `d`, whose text starts with its old
    text's head (its first `old_length` characters: `bounded.head_length`) and whose objects
    are what they were, give what they gave: the same data, the text of the head the same
    and each position in it where it was, so a call gives the same findings unless one of
    them reaches past the head, where the marks that close collections moved (and the
    comments after them). Such a finding (its span in `d`, or an edit of its fix) runs its
    call again: the whole file's do."""
    if d not in stored.files or stored.of_file(d) is None:
        return False
    try:
        for per_rule in stored.found(d).values():
            for findings in per_rule.values():
                for f in findings:
                    if f[4] != d:
                        continue  # (about another file's object: its text and places did not move)
                    line, col, end_line, end_col = f[5]
                    if max(source.offset(line, col), source.offset(end_line, end_col)) >= old_length:
                        return False
                    fix = f[8]
                    if fix is not None and any(max(e[0], e[1]) >= old_length for e in fix[1]):
                        return False
    except (TypeError, ValueError, IndexError, KeyError, EOFError):
        return False
    return True


def longest_first(tasks: list[int], seconds: Sequence[Any]) -> list[int]:
    """`tasks` (indexes into `seconds`) with the longest known first; those with no time
    known (not a number: never run here, or a damaged entry) after them, as they came."""

    def known(t: int) -> float:
        s = seconds[t]
        return float(s) if isinstance(s, (int, float)) and not isinstance(s, bool) and s == s else -1.0

    return sorted(tasks, key=lambda t: -known(t))


def _schema_findings(stored: Any) -> list[Any]:
    """A file's schema findings (tuples) as the state keeps them: marshalled, as the bundle
    calls' findings are (`callstate`), so that a rerun holds them as bytes until the report;
    a list in a state written before."""
    if isinstance(stored, bytes):
        got = marshal.loads(stored) if stored else []
        return got if isinstance(got, list) else []
    return stored if isinstance(stored, list) else []


def _touch_merged_projects(
    catalogue_touched: set[str],
    merges: dict[str, list[tuple[str, ...]] | tuple[()]],
    kinds: dict[str, list[tuple[str, ...]]],
    project: dict[str, str],
    touched_in: dict[str, set[str]],
) -> None:
    """A catalogue object changed (or came, or went): every object whose pods merge with
    one of its kinds has other pods now, whichever project the catalogue object is in. In
    that object's project, the calls that read it run again: through its kind, through the
    pods, through every object, as a change of the object itself would touch them."""
    for d, per_object in merges.items():
        proj = project.get(d)
        if proj is None or proj == EVERY_PROJECT:
            continue
        for j, merged_with in enumerate(per_object):
            if catalogue_touched.intersection(merged_with):
                touched = touched_in.setdefault(proj, {ALL})
                touched.update(catalogue_touched)
                touched.update(kinds[d][j])


def _project_of(file_state: Any) -> str | None:
    """The project a file was in at the previous run (its state is `(key, project)`)."""
    if isinstance(file_state, tuple) and len(file_state) == 2 and isinstance(file_state[1], str):
        return file_state[1]
    return None


class TrackingContext(Context):
    """A Context that notes the kinds of other objects each call reads.

    Every way the context hands out other objects notes a token into the current frame:
    `of_kind` the kinds, `nodepools` (and what reads it) NodePool, `pods_in` the pods,
    `objects` everything. `memo` values remember what their computation read and add it
    to every later reader; so do ad-hoc attributes a domain helper sets on the context.
    The run-wide indexes are built untracked first (`build_indexes`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.__dict__["_trk_frames"] = []
        self.__dict__["_trk_memo"] = {}
        self.__dict__["_trk_extra"] = {}
        super().__init__(*args, **kwargs)

    def _note(self, tokens: Iterable[str]) -> None:
        frames = self.__dict__["_trk_frames"]
        if frames:
            frames[-1].update(tokens)

    def track(self) -> set[str]:
        frame: set[str] = set()
        self.__dict__["_trk_frames"].append(frame)
        return frame

    def untrack(self) -> None:
        self.__dict__["_trk_frames"].pop()

    # -- what hands out other objects --
    @property  # type: ignore[override]
    def objects(self) -> list[K8sObject]:
        self._note((ALL,))
        return self.__dict__["_trk_objects"]  # type: ignore[no-any-return]

    @objects.setter
    def objects(self, value: list[K8sObject]) -> None:
        self.__dict__["_trk_objects"] = value

    def of_kind(self, *kinds: str, namespace: str | None = None, group: str | None = None) -> Iterator[K8sObject]:
        self._note(kinds if namespace is None else [scoped(k, namespace) for k in kinds])
        return super().of_kind(*kinds, namespace=namespace, group=group)

    @property  # type: ignore[override]
    def nodepools(self) -> Any:
        self._note((NODEPOOLS,))
        return Context.nodepools.__get__(self, Context)  # type: ignore[attr-defined]

    def pods_in(self, namespace: str | None) -> Any:
        self._note((PODS,) if namespace is None else (scoped(PODS, namespace or "default"),))
        return super().pods_in(namespace)

    def memo(self, key: Any, compute: Any) -> Any:
        deps = self.__dict__["_trk_memo"]
        known = deps.get(key)
        if known is not None:
            self._note(known)
            return super().memo(key, compute)
        frame = self.track()
        try:
            value = super().memo(key, compute)
        finally:
            self.untrack()
        deps[key] = frame
        self._note(frame)
        return value

    def build_indexes(self) -> None:
        frames = self.__dict__["_trk_frames"]
        saved = frames[:]
        frames.clear()
        try:
            objs = self.__dict__["_trk_objects"]
            idx: dict[str, list[K8sObject]] = {}
            for o in objs:
                idx.setdefault(o.kind, []).append(o)
            self.__dict__["_by_kind"] = idx
            super().build_indexes()
        finally:
            frames[:] = saved

    # -- attributes a domain helper sets on the context (a run-wide memo of its own) --
    def __setattr__(self, name: str, value: Any) -> None:
        if name in _CONTEXT_FIELDS or name == "objects":
            object.__setattr__(self, name, value)
            return
        frames = self.__dict__["_trk_frames"]
        self.__dict__["_trk_extra"][name] = (value, frozenset(frames[-1]) if frames else frozenset({ALL}))

    def __getattr__(self, name: str) -> Any:
        extra = self.__dict__.get("_trk_extra")
        if extra is not None and name in extra:
            value, deps = extra[name]
            self._note(deps)
            return value
        raise AttributeError(name)


def _fields() -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(Context))


_CONTEXT_FIELDS = _fields()


# -- the bundle phase over the cache's state -----------------------------------------------
def bundle_phase(
    cache: Any,
    file_results: list[FileResult],
    objects: list[K8sObject],
    settings: Any,
    engine: Any,
    sch: list[Any],
    schema: bool,
    passes: Callable[[list[int]], list[Finding]] | None = None,
) -> tuple[list[list[Finding]], list[int], list[Finding] | None]:
    """The bundle findings (serial order: object, then rule) and the schema findings of the
    run, and per object the index of its project (`project_contexts`), reusing the
    previous state of the same paths where nothing they read changed. `passes(which)`, the
    providers' passes, run as one more task when the phase is shared by forked processes
    (as in the cold run): their findings come third, else None (the caller runs them)."""
    from ailint.engine.cache import findings_in, findings_out
    from ailint.engine.callstate import CallsWriter, StoredCalls, new_calls
    from ailint.engine.run import bundle_root, project_contexts

    prev = cache.store.get(cache.state_key)
    try:
        prev_files, prev_kinds, prev_merges, prev_calls, prev_schema, prev_patches = (
            prev if prev is not None else ({}, {}, {}, None, {}, None)
        )
    except (TypeError, ValueError):
        prev_files, prev_kinds, prev_merges, prev_calls, prev_schema, prev_patches = {}, {}, {}, None, {}, None
    rules = engine.bundle_rules
    rule_codes = [reg.rule.code for reg in rules]
    stored = StoredCalls(prev_calls, rule_codes)  # (nothing, when written for other rules)
    del prev, prev_calls
    hidden = engine.context_only
    root = engine.run_root or bundle_root(settings)
    which, ctxs, names = project_contexts(
        objects,
        settings,
        engine,
        lambda objs: TrackingContext(objects=objs, profile=settings.profile, bundle=True, root=root),
    )
    # a file whose project changed (a `.git` made or removed) is a changed file; a context
    # file's objects join every project (`scope.partition`), and so does its change
    project = {o.file: EVERY_PROJECT if o.file in hidden else names[w] for o, w in zip(objects, which, strict=True)}
    keys = {d: None if k is None else (k, project.get(d, "")) for d, k in cache.file_keys.items()}
    # where each object sits: (display, index in its file)
    where: list[tuple[str, int]] = []
    kinds: dict[str, list[tuple[str, ...]]] = {}  # per object, what a change to it touches
    # per object, the kinds its own pods merge with (`()` for a file whose objects merge with none)
    merges: dict[str, list[tuple[str, ...]] | tuple[()]] = {}
    changed = {
        fr.path for fr in file_results if prev_files.get(fr.path) != keys.get(fr.path) or keys.get(fr.path) is None
    }
    changed |= {d for d in prev_files if d not in keys}
    # one tuple for equal tokens: most objects touch what others of their kind touch, and the
    # state marshals each once (the 100 MB tree's 29,215 objects: 8.9 to 4.7 MiB once read, with the paths)
    one: dict[tuple[str, ...], tuple[str, ...]] = {}
    for fr in file_results:
        d = fr.path
        known, known_merges = prev_kinds.get(d), prev_merges.get(d)
        if d not in changed and known is not None and known_merges is not None and len(known) == len(fr.objects):
            kinds[d], merges[d] = known, known_merges  # the same bytes: the same objects
        else:  # (with what the parse knew of each object, where it knew it: a first run's every file)
            members, waits = fr.catalogue, fr.deferred
            kinds[d] = [
                one.setdefault(toks, toks)
                for toks in (
                    object_tokens(o, None if members is None else n in members) for n, o in enumerate(fr.objects)
                )
            ]
            merged = [
                tuple(sorted(merge_tokens(o, None if waits is None else n in waits))) for n, o in enumerate(fr.objects)
            ]
            merges[d] = merged if any(merged) else ()  # (`()`, one for all: most files merge nothing)
        where.extend((d, j) for j in range(len(fr.objects)))
    changed |= {d for d in kinds if d not in prev_kinds}
    # what the changes touched, per project: a call reads only its own project's objects
    # (`project_contexts`), so an edit in one repository reruns nothing in another
    touched_in: dict[str, set[str]] = {}
    # what changed catalogue objects (runtimes, claims) touch: the run's catalogue is one for
    # every project (`ailint.engine.catalogue`), so their change reaches the merged pods of
    # workloads in other projects too
    catalogue_touched: set[str] = set()
    results_of = {fr.path: fr for fr in file_results}
    pointed_into: set[str] | None = None  # (`StoredCalls.points_into`, worked out when first needed)
    # changed files whose own objects' calls stand as stored (`_own_calls_stand`): comments
    # or blank lines added or changed after the last content
    standing: set[str] = set()
    for d in changed:
        before = prev_files.get(d)
        if d in results_of and d not in hidden:
            fr = results_of[d]
            same_data, same_places, head_kept = _same_objects(cache, d, before, keys.get(d), fr)
            if same_data and head_kept is not None and _own_calls_stand(stored, d, fr.source, head_kept):
                standing.add(d)
            if same_data and not same_places and pointed_into is None:
                pointed_into = stored.points_into()
            if same_data and (same_places or d not in (pointed_into or ())):
                continue  # early cutoff: its objects are what they were, so no other call sees a change
        for proj, toks in ((project.get(d), kinds.get(d, ())), (_project_of(before), prev_kinds.get(d, ()))):
            if proj is None:
                continue
            for each in names if proj == EVERY_PROJECT else (proj,):
                touched = touched_in.setdefault(each, {ALL})
                for tok in toks:
                    touched.update(tok)
            for tok in toks:
                if scoped(PODS, ANY_NAMESPACE) in tok:  # a catalogue object: run-wide
                    catalogue_touched.update(tok)
    if catalogue_touched:
        _touch_merged_projects(catalogue_touched, merges, kinds, project, touched_in)
    nothing: set[str] = set()

    position = {id(reg): t for t, reg in enumerate(rules)}
    # per rule, the calls reused as stored: (object, (read index, findings)); a list per rule,
    # not a dict per call, because a large run has hundreds of thousands of calls
    reused_calls: list[list[tuple[int, tuple[int, Any]]]] = [[] for _ in rules]
    # objects whose every call is reused: their signature index (their findings stay in the
    # stored file's bytes until the report needs them: after the fork, in this process only)
    kept: dict[int, int] = {}
    todo: list[list[int]] = [[] for _ in rules]
    stored_file: tuple[str, tuple[int, ...] | None] = ("", None)
    found_file: tuple[str, dict[int, dict[int, Any]] | None] = ("", None)
    # (signature, a project's stale reads) -> whether each of its calls is stale (None: none is)
    stale_calls: dict[tuple[int, int], tuple[bool, ...] | None] = {}
    for i, obj in enumerate(objects):
        if obj.file in hidden:
            continue
        d, j = where[i]
        if stored_file[0] != d:  # (a file's objects come together)
            stored_file = (d, stored.of_file(d) if d not in changed or d in standing else None)
        old = stored_file[1]
        if old is not None and j < len(old):
            # an unchanged object: the calls it had (the same rules apply to the same data)
            sig = old[j]
            touched = touched_in.get(names[which[i]], nothing)
            if not touched:
                kept[i] = sig
                continue
            called, read_at = stored.calls(sig)
            if merges[d] and touched.intersection(merges[d][j]):
                again: tuple[bool, ...] | None = (True,) * len(called) if called else None
            else:
                # which calls of the signature a project's changes make stale: the same for each
                # object of the signature, and a repository's objects share a few hundred
                stale_now = stored.stale_reads(touched, stale)
                at_sig = (sig, id(stale_now))  # (the project's stale reads live as long as `stored`)
                if at_sig in stale_calls:
                    again = stale_calls[at_sig]
                else:
                    flags = tuple(r in stale_now for r in read_at)
                    again = stale_calls[at_sig] = flags if True in flags else None
            if again is None:
                # every call as stored: its entry is kept whole, as in an untouched project (in a
                # single repository, every object's entry after an edit but the few it reaches)
                kept[i] = sig
                continue
            if found_file[0] != d:
                found_file = (d, stored.found(d))
            found_j = (found_file[1] or {}).get(j)
            for t, r, run_again in zip(called, read_at, again, strict=True):
                if run_again:
                    todo[t].append(i)
                else:
                    reused_calls[t].append((i, (r, found_j.get(t) if found_j else None)))
            continue
        for reg in engine.rules_for(obj, bundle=True):
            todo[position[id(reg)]].append(i)

    # schema: per file, again only where the file or the kustomize patches changed
    sch_parts: list[Finding] = []
    new_schema: dict[str, bytes] = {}  # per file, its schema findings' tuples, marshalled
    patches: list[str] | None = None
    if schema:
        try:
            from ailint.domain.patches import kustomize_patches
            from ailint.schema.validate import validate_objects
        except ImportError:
            schema = False
    redo: list[K8sObject] = []
    done_ahead: dict[str, list[Any]] = {}
    memo_wanted: dict[str, bytes] = {}  # files validated now, to remember by their bytes
    by_file: dict[str, list[K8sObject]] = {}
    same = True
    if schema:
        judged = [o for o in objects if o.file not in hidden]
        patch_set = kustomize_patches(judged)
        patches = sorted(patch_set)
        same = patches == prev_patches
        codes = {r.rule.code for r in sch}
        for o in judged:
            by_file.setdefault(o.file, []).append(o)
        redo = [o for d, objs in by_file.items() if not same or d in changed or d not in prev_schema for o in objs]
        ahead = getattr(cache, "schema_ahead", None)  # validated beside, under the previous patches
        if callable(ahead):
            ahead = cache.schema_ahead = ahead()
        if isinstance(ahead, tuple) and ahead[0] == patches:
            done_ahead = dict(ahead[1])
        redo_files = {o.file for o in redo} - done_ahead.keys()
        if 0 < len(redo_files) <= SCHEMA_MEMO_FILES:  # an edit: maybe bytes validated before
            for d in redo_files:
                memo_key = cache.schema_key(d, patches)
                got = cache.store.get(memo_key) if memo_key is not None else None
                if isinstance(got, list):
                    done_ahead[d] = got
                elif memo_key is not None:
                    memo_wanted[d] = memo_key
        redo = [o for o in redo if o.file not in done_ahead]

    reads: dict[tuple[str, ...], tuple[str, ...]] = {}

    def work(t: int) -> Any:  # the schema task: finding tuples; a rule: (reads, findings, seconds)
        if t == PASSES_TASK and passes is not None:
            return passes(which)
        if t == SCHEMA_TASK:  # the schema findings of the objects to validate again
            return findings_out(validate_objects(redo, settings, codes, patches=patch_set))
        # per call of todo[t], in order, what it read; and the findings of the calls that
        # found any, by their number: a large run has hundreds of thousands of calls, and
        # most find nothing
        reg = rules[t]
        used_by: list[tuple[str, ...]] = []
        found_by: dict[int, list[Any]] = {}
        began = time.perf_counter()
        for n, i in enumerate(todo[t]):
            ctx = ctxs[which[i]]
            frame = ctx.track()
            try:
                found = engine.run_rule(reg, objects[i], ctx)
            finally:
                ctx.untrack()
            used = tuple(sorted(frame))
            # one tuple for equal reads: most calls of a rule read the same tokens, and a
            # task's result pickles (from a worker) and marshals (the state) each once
            used_by.append(reads.setdefault(used, used))
            if found:
                found_by[n] = findings_out(found)
        return used_by, found_by, time.perf_counter() - began

    # the rules' tasks longest first, by how long each rule's task took in the last run here:
    # two processes take them from one queue, and the run waits for whichever ends last (in
    # order of the rules, a repository's value edit took a rule's 11 to 16 ms task, which
    # builds an index of its own, last, and ran it alone after the other process had run out
    # of tasks); a rule with no time known keeps its place in rule order, after the timed ones
    times_key = getattr(cache, "times_key", None)
    last_times = cache.store.get(times_key) if times_key is not None else None
    if not isinstance(last_times, dict):
        last_times = {}
    tasks = ([SCHEMA_TASK] if redo else []) + longest_first(
        [t for t in range(len(rules)) if todo[t]], [last_times.get(code) for code in rule_codes]
    )
    with_calls = sorted({which[i] for t in tasks if t != SCHEMA_TASK for i in todo[t]})
    for w in with_calls:
        ctxs[w].build_indexes()  # only the projects with calls to run
    calls_to_run = sum(len(todo[t]) for t in tasks if t != SCHEMA_TASK)
    much = calls_to_run > FORK_CALLS or (
        calls_to_run >= FORK_CALLS_LARGE and sum(len(ctxs[w].objects) for w in with_calls) >= FORK_OBJECTS
    )
    results: dict[int, Any] | None = None
    if engine.jobs > 1 and much:  # much to run: every task shared out
        from ailint.engine.parallel import run_forked

        # bounded memory: as in the cold run (`run._bundle_forked`), children only
        apart = frozenset({SCHEMA_TASK}) if engine.bounded else None
        if passes is not None:  # (after the schema task: both are long)
            tasks.insert(1 if tasks[:1] == [SCHEMA_TASK] else 0, PASSES_TASK)
            apart = apart | {PASSES_TASK} if apart is not None else None
        results = run_forked(work, tasks, engine.jobs, apart)
    if results is None:
        results = {t: work(t) for t in tasks if t != PASSES_TASK}

    if schema:
        fresh: dict[str, list[Any]] = {d: list(fs) for d, fs in done_ahead.items() if d in by_file}
        for f in results.get(SCHEMA_TASK, ()):
            fresh.setdefault(f[4], []).append(f)  # (code, name, severity, message, file, ...)
        for d in by_file:
            if not same or d in changed or d not in prev_schema:
                got = fresh.get(d, [])
                new_schema[d] = marshal.dumps(got) if got else b""
            else:  # (as stored: marshalled, read for the report once the state is written)
                new_schema[d] = prev_schema[d]
        for d, memo_key in memo_wanted.items():
            cache.store.put(memo_key, fresh.get(d, []))

    # the state for the next run (`ailint.engine.callstate`): each object's calls in rule
    # order, and the findings in the serial order (object, then rule: those of the few calls
    # that found something, sorted)
    writer = CallsWriter(stored, rule_codes)
    # objects not kept: the rule positions they were called for and the read index of each
    # call, in rule order (packed: a first run of the 100 MB tree makes 302,368 calls)
    calls_of: dict[int, tuple[array[int], array[int]]] = {}
    found_of: dict[int, dict[int, Any]] = {}  # their findings, by rule position
    found_at: list[tuple[int, int, Any]] = []  # (object, rule position, findings)
    for t in range(len(rules)):
        for i, (r, found) in reused_calls[t]:
            packed = calls_of.get(i) or calls_of.setdefault(i, new_calls())
            packed[0].append(t)
            packed[1].append(r)
            if found:
                found_of.setdefault(i, {})[t] = found
                found_at.append((i, t, found))
        if t in results:
            used_by, found_by, seconds = results[t]
            if isinstance(seconds, float):
                last_times[rule_codes[t]] = round(seconds, 5)
            for n, i in enumerate(todo[t]):
                packed = calls_of.get(i) or calls_of.setdefault(i, new_calls())
                packed[0].append(t)
                packed[1].append(writer.read_index(used_by[n]))
                found = found_by.get(n)
                if found:
                    found_of.setdefault(i, {})[t] = found
                    found_at.append((i, t, found))
    if times_key is not None and any(t in results for t in range(len(rules))):
        cache.store.put(times_key, last_times)
    no_calls = writer.signature(*new_calls())
    # the findings of files whose entry stays as stored: read from it once the state is
    # written, so that the findings made for the report and the state being marshalled are
    # not held at once (on the 100 MB tree, the rerun's high-water mark)
    later: list[tuple[str, list[tuple[int, int]]]] = []

    def kept_findings(d: str, kept_here: list[tuple[int, int]]) -> dict[int, dict[int, Any]]:
        """The stored findings of the file's kept objects ((object, index in the file)), by
        index, each also put in the serial order (`found_at`)."""
        stored_found = stored.found(d)
        out: dict[int, dict[int, Any]] = {}
        for i, j in kept_here:
            found_j = stored_found.get(j)
            if found_j:
                out[j] = found_j
                found_at.extend((i, t, found) for t, found in found_j.items())
        return out

    # per file, in the run's order (a file's objects come together): its objects'
    # signatures and findings; an entry every call of which is reused stays as it was
    at = 0
    for d, toks in kinds.items():
        sigs = [no_calls] * len(toks)
        found_in: dict[int, dict[int, Any]] = {}
        whole = (d not in changed or d in standing) and d in stored.files
        first = at
        kept_here: list[tuple[int, int]] = []  # (object, its index in the file)
        while at < len(where) and where[at][0] == d:
            i, j = at, where[at][1]
            at += 1
            held = kept.get(i)
            if held is not None:
                sigs[j] = held
                kept_here.append((i, j))
                continue
            whole = False
            calls = calls_of.get(i)
            if calls:
                sigs[j] = writer.signature(*calls)
            if i in found_of:
                found_in[j] = found_of[i]
        if whole and at - first == len(toks):
            writer.keep_file(d, stored, sigs)  # (its findings read for the report once the state is written)
            if kept_here and stored.files[d][1] is not None:
                later.append((d, kept_here))
            continue
        if kept_here:
            found_in.update(kept_findings(d, kept_here))
        writer.add_file(d, sigs, found_in)
    state = (
        {d: keys[d] for d in kinds if keys.get(d) is not None},
        kinds,
        merges,
        writer.part(),
        new_schema,
        patches,
    )
    if at == len(where):  # (each path once, as discovery and the cache make them: else no state)
        cache.store.put(cache.state_key, state)
    del state, writer
    for d, kept_here in later:
        kept_findings(d, kept_here)
    found_at.sort(key=lambda c: c[:2])
    bundle_findings: list[Finding] = [f for _, _, found in found_at for f in findings_in(found)]
    parts = [bundle_findings]
    if schema:
        for d in by_file:
            sch_parts.extend(findings_in(_schema_findings(new_schema[d])))
        parts.append(sch_parts)
    return parts, which, results.get(PASSES_TASK) if passes is not None else None
