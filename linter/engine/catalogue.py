"""The catalogue pass: single-object rules on the objects whose pods depend on other objects
of the run.

Some workloads run pods that only the run as a whole determines: an InferenceService in
the model form runs the container of the ServingRuntime that serves it, a pod with DRA
`resourceClaims` gets the devices of the claim templates it names. The workload adapters
say which catalogue kinds an object's pods read (`ailint.domain.workloads.catalogue_reads`);
the engine knows no kind by name. Such an object is passed over file by file
(`process_file`), and judged here once every file is parsed: its pod templates are merged
with the run's catalogue (`workloads.bind`), then the object rules run on it as on any
object, and the bundle rules after them see the same merged pods.

Caching: a file entry holds only the findings that depend on its own bytes, so the
deferred objects' findings are never in it; they are computed again on every run that is
not an exact rerun (the run entry keys every file's bytes), which costs little (a few
objects). The bundle phase's reuse covers the merged pods through the tokens of
`ailint.engine.tracking.object_tokens` (a catalogue object's change touches the run's pods).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from ailint.core.model import FileResult, Finding, K8sObject
from ailint.domain import workloads
from ailint.domain.context import Context

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def deferred(obj: K8sObject) -> bool:
    """Whether `obj`'s object rules wait for the run's catalogue."""
    try:
        return bool(workloads.catalogue_reads(obj))
    except Exception:
        return False  # the object rules report what is wrong with it, file by file


def settled(fr: FileResult) -> Iterator[tuple[int, K8sObject]]:
    """Each object of a parsed file whose pods depend on no other file (not `deferred`),
    with its position: what the parse may work out of its pods once, for every process
    and every later run (`roles.prime`, `extract.carry_facts`). Read from `fr.deferred`
    where the file's object rules ran; asked per object for a context file (None there)."""
    waiting = fr.deferred
    for n, obj in enumerate(fr.objects):
        if (n not in waiting) if waiting is not None else not deferred(obj):
            yield n, obj


def members_of(objects: Sequence[K8sObject]) -> tuple[int, ...]:
    """The positions of the catalogue members among `objects` (a file's, as parsed)."""
    return tuple(n for n, o in enumerate(objects) if workloads.is_catalogue(o))


def catalogue_pass(
    objects: list[K8sObject],
    settings: Any,
    engine: Any,
    already: Iterable[Finding] = (),
    memo: Any = None,
    waiting: Sequence[bool | None] | None = None,
    member: Sequence[bool | None] | None = None,
) -> list[Finding]:
    """Object-rule findings of the deferred objects (not in context-only files), merged
    with the catalogue of `objects`; a finding identical to one of `already` or of this
    pass (one runtime line judged for many InferenceServices) is left out.

    `waiting` and `member` (per object: whether it waits for the catalogue, whether it is
    a catalogue member, as its file's parse found, or None) spare working either out again
    here, in the serial join: both are facts of the object alone, and come with its file
    (from the cache's file entries too). With the results cache's `memo` (`PassMemo`, whose
    `digest` stands for an object by its file's bytes): a fact not given is kept per
    object, and an object's findings under its digest and those of the run's catalogue
    objects, so a rerun judges again only the objects whose file or catalogue changed
    (their pods are still merged: bundle rules read them)."""
    hidden = engine.context_only
    unknown = [None] * len(objects)
    todo = [
        o
        for o, w in zip(objects, waiting if waiting is not None else unknown, strict=True)
        if o.file not in hidden and (w if w is not None else _flag(o, memo, b"deferred", deferred))
    ]
    if not todo:
        return []
    members = [
        o
        for o, m in zip(objects, member if member is not None else unknown, strict=True)
        if (m if m is not None else _flag(o, memo, b"catalogue", workloads.is_catalogue))
    ]
    catalog = workloads.catalogue(members)
    base = _catalogue_digest(members, memo)
    out: list[Finding] = []
    seen = {(f.code, f.file, f.span, f.message) for f in already}
    for obj in todo:
        workloads.bind(obj, catalog)
        own = memo.digest(obj) if base is not None else None
        key = base + own if base is not None and own is not None else None
        found = _reuse(memo.get(key)) if key is not None else None
        if found is None:
            ctx = Context(profile=settings.profile, bundle=False)
            found = list(engine.check_object(obj, ctx))
            if key is not None:
                from ailint.engine.cache import findings_out

                memo.put(key, findings_out(found))
        for f in found:
            fkey = (f.code, f.file, f.span, f.message)
            if fkey not in seen:
                seen.add(fkey)
                out.append(f)
    return out


def _flag(obj: K8sObject, memo: Any, what: bytes, compute: Any) -> bool:
    """`compute(obj)`, a fact of the object alone, kept in `memo` under its digest."""
    own = memo.digest(obj) if memo is not None else None
    if own is None:
        return bool(compute(obj))
    got = memo.get(what + own)
    if isinstance(got, bool):
        return got
    value = bool(compute(obj))
    memo.put(what + own, value)
    return value


def _catalogue_digest(members: list[K8sObject], memo: Any) -> bytes | None:
    """A digest of the run's catalogue objects (each one's `memo.digest`); None without a
    memo, or when one of them comes from a file without a key."""
    from ailint.core.digest import blake2b

    if memo is None:
        return None
    h = blake2b(digest_size=20)
    for o in members:
        own = memo.digest(o)
        if own is None:
            return None
        h.update(own)
    return h.digest()


def _reuse(stored: Any) -> list[Finding] | None:
    if not isinstance(stored, list):
        return None
    from ailint.engine.cache import findings_in

    try:
        return findings_in(stored)
    except (TypeError, ValueError, KeyError):
        return None


def unique(findings: list[Finding], objects: Sequence[K8sObject] = ()) -> list[Finding]:
    """`findings` without repeats of one (code, file, span, message): a runtime's line that
    a bundle rule judges on the runtime itself and again on the InferenceService merged with
    it is reported once, as the finding of the object whose lines hold it (the runtime's,
    whichever came first) when `objects` are given."""
    where = {(o.file, o.doc_index): o for o in objects}  # spans only on a repeat (spilled tables)

    def owns(f: Finding) -> bool:
        obj = where.get((f.file, f.object_ref.document)) if f.object_ref is not None else None
        if obj is None:
            return False
        whole = obj.value_span(())  # the document, first line to last
        return whole.line <= f.span.line <= whole.end_line

    kept: dict[tuple[Any, ...], int] = {}
    out: list[Finding] = []
    for f in findings:
        key = (f.code, f.file, f.span, f.message)
        at = kept.get(key)
        if at is None:
            kept[key] = len(out)
            out.append(f)
        elif where and not owns(out[at]) and owns(f):
            out[at] = f
    return out
