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

from collections.abc import Iterable, Sequence
from typing import Any

from ailint.core.model import Finding, K8sObject
from ailint.domain import workloads
from ailint.domain.context import Context


def deferred(obj: K8sObject) -> bool:
    """Whether `obj`'s object rules wait for the run's catalogue."""
    try:
        return bool(workloads.catalogue_reads(obj))
    except Exception:
        return False  # the object rules report what is wrong with it, file by file


def catalogue_pass(
    objects: list[K8sObject], settings: Any, engine: Any, already: Iterable[Finding] = ()
) -> list[Finding]:
    """Object-rule findings of the deferred objects (not in context-only files), merged
    with the catalogue of `objects`; a finding identical to one of `already` or of this
    pass (one runtime line judged for many InferenceServices) is left out."""
    hidden = engine.context_only
    todo = [o for o in objects if o.file not in hidden and deferred(o)]
    if not todo:
        return []
    catalog = workloads.catalogue(objects)
    out: list[Finding] = []
    seen = {(f.code, f.file, f.span, f.message) for f in already}
    for obj in todo:
        workloads.bind(obj, catalog)
        ctx = Context(profile=settings.profile, bundle=False)
        for f in engine.check_object(obj, ctx):
            key = (f.code, f.file, f.span, f.message)
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


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
