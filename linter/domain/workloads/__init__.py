"""Workload adapters: one module per custom-resource family declares the kinds it understands
(by API group and kind) and turns each object into the pod templates its controller runs and
the facts of the workload. Rules call `pod_templates(obj)`; kind groups (`rule_kinds()`) and
the dispatch table (`kinds()`) come from the families, so a new family is one module here
(a `FAMILY = Family(...)`) plus fixtures.

A kind declared with a group is chosen by that group (`InferenceService` of ome.io is OME's,
of serving.kserve.io KServe's; `Service` of inference.llmaz.io is llmaz's, never core v1); a
kind declared with group None matches any group not claimed by another family.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Iterable, Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, Foreign, K8sObject
from ailint.core.pkgdata import submodules
from ailint.domain.extract import TEMPLATES_MEMO, PodTemplate, take_carried_facts
from ailint.domain.quantities import parse_quantity
from ailint.domain.workloads.base import Catalog, Facts, Family, Kind, written

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Catalog",
    "Facts",
    "Family",
    "Foreign",
    "bind",
    "catalogue",
    "catalogue_kinds",
    "catalogue_reads",
    "families",
    "family_for",
    "is_catalogue",
    "is_inventory_workload",
    "is_workload",
    "kinds",
    "pod_templates",
    "relocate",
    "rule_kinds",
    "workload_kinds",
]

_DECLARED: list[_Declared] | None = None
_LOADED: dict[str, Family] = {}  # module -> its FAMILY, imported when first needed
_BY_KIND: dict[str, list[tuple[str | None, str]]] = {}  # kind -> (group, family module)
_CATALOGUE: dict[str, list[tuple[str | None, str]]] = {}
_INDEX_VERSION = 1


@dataclasses.dataclass(frozen=True)
class _Declared:
    """What a family module declares, known without importing it (the family index)."""

    module: str
    kinds: tuple[Kind, ...]
    template_kinds: tuple[Kind, ...]
    catalogue: tuple[Kind, ...]
    serving: tuple[Kind, ...]
    reads: bool  # has `reads` (`catalogue_reads` asks it of every workload...)
    reads_own: bool  # (... or of the family's own kinds only: `Family.reads_only_own`)
    binds: bool  # has `bind_pod` (`bind` lets it complete every family's pods)


def families() -> list[Family]:
    """Every family module's FAMILY, core first, then by module name (imported once)."""
    return [_family(d.module) for d in _declarations()]


def _declarations() -> list[_Declared]:
    """The families' declarations, core first, then by module name: from the family index
    in the cache folder (keyed by the installed code, `ailint.core.sourcekey`, like the rule
    index), else by importing every family module (and keeping the index). A Deployment's
    run then imports its own family and the one whose `reads` asks every workload (DRA), not
    all 17 (2 ms of a one-file run), nor those whose `reads` asks their own kinds only."""
    global _DECLARED
    if _DECLARED is None:
        path = _index_path()
        found = _read_index(path) if path is not None else None
        if found is None:
            found = _declared_by_import()
            if path is not None:
                _write_index(path, found)
        _index_kinds(found)
        _DECLARED = found
    return _DECLARED


def _declared_by_import() -> list[_Declared]:
    found: list[_Declared] = []
    for name in sorted(submodules(__path__), key=lambda m: (m != "core", m)):
        if name.startswith("_") or name == "base":
            continue
        module = f"{__name__}.{name}"
        fam = getattr(importlib.import_module(module), "FAMILY", None)
        if isinstance(fam, Family):
            _LOADED[module] = fam
            found.append(
                _Declared(
                    module,
                    fam.kinds,
                    fam.template_kinds,
                    fam.catalogue,
                    fam.serving,
                    fam.reads is not None,
                    fam.reads_only_own,
                    fam.bind_pod is not None,
                )
            )
    return found


def _index_kinds(found: list[_Declared]) -> None:
    _BY_KIND.clear()
    _CATALOGUE.clear()
    for d in found:
        for group, kind in (*d.kinds, *d.template_kinds):
            _BY_KIND.setdefault(kind, []).append((group, d.module))
        for group, kind in d.catalogue:
            _CATALOGUE.setdefault(kind, []).append((group, d.module))


def _family(module: str) -> Family:
    fam = _LOADED.get(module)
    if fam is None:
        got = getattr(importlib.import_module(module), "FAMILY", None)
        if not isinstance(got, Family):  # the index names modules of this code only (its key)
            raise LookupError(f"{module} declares no FAMILY")
        fam = _LOADED[module] = got
    return fam


def _index_path() -> str | None:
    from ailint.core.sourcekey import code_index_file

    return code_index_file("families", _INDEX_VERSION)


def _read_index(path: str) -> list[_Declared] | None:
    import json

    def kinds(v: Any) -> tuple[Kind, ...]:
        if not isinstance(v, list) or not all(
            isinstance(k, list) and len(k) == 2 and isinstance(k[0], str | None) and isinstance(k[1], str) for k in v
        ):
            raise ValueError("not a list of kinds")
        return tuple((k[0], k[1]) for k in v)

    try:
        with open(path, encoding="utf-8") as fh:
            entries = json.load(fh)
        found = [
            _Declared(
                e["module"],
                kinds(e["kinds"]),
                kinds(e["template_kinds"]),
                kinds(e["catalogue"]),
                kinds(e["serving"]),
                e["reads"] is True,
                e["reads_own"] is True,
                e["binds"] is True,
            )
            for e in entries
        ]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    present = {f"{__name__}.{name}" for name in submodules(__path__)}
    return found if found and all(d.module in present for d in found) else None


def _write_index(path: str, found: list[_Declared]) -> None:
    import json

    from ailint.core.cachedir import keep
    from ailint.core.sourcekey import KEPT_INDEXES

    keep(path, [json.dumps([dataclasses.asdict(d) for d in found]).encode("utf-8")], older=KEPT_INDEXES)


def kinds() -> list[Kind]:
    """(group, kind) of every kind with pod templates: workloads, and the catalogue kinds
    whose templates rules judge (group None: any group). The dispatch table by kind."""
    return [k for d in _declarations() for k in (*d.kinds, *d.template_kinds)]


def workload_kinds() -> list[Kind]:
    """(group, kind) of the workload kinds (`inventory` lists their objects)."""
    return [k for d in _declarations() for k in d.kinds]


def catalogue_kinds() -> list[Kind]:
    """(group, kind) of the kinds that run no pods but feed workload facts."""
    return [k for d in _declarations() for k in d.catalogue]


def rule_kinds() -> tuple[str, ...]:
    """Every workload kind in a rule's `kinds=` notation ("Kind" or "group/Kind")."""
    return tuple(dict.fromkeys(kind if group is None else f"{group}/{kind}" for group, kind in kinds()))


def serving_rule_kinds() -> tuple[str, ...]:
    """The custom-resource kinds whose pods are long-running model servers, in `kinds=`
    notation (rules about servers add them to the core kinds they list)."""
    return tuple(dict.fromkeys(k if g is None else f"{g}/{k}" for d in _declarations() for g, k in d.serving))


def _pick(table: dict[str, list[tuple[str | None, str]]], obj: K8sObject) -> Family | None:
    entries = table.get(obj.kind)
    if not entries:
        return None
    group = obj.group
    wildcard = None
    for g, module in entries:
        if g == group:
            return _family(module)
        if g is None:
            wildcard = module
    return _family(wildcard) if wildcard is not None else None


def family_for(obj: K8sObject) -> Family | None:
    """The family whose workload kinds include `obj` (None: not a workload ailint reads)."""
    _declarations()
    return _pick(_BY_KIND, obj)


def own_scaling(obj: K8sObject) -> tuple[int, int | None] | None:
    """The replica range `obj`'s own controller autoscales it within (min, max; None: no
    upper limit), or None when its family scales nothing itself (`Family.scaling`)."""
    fam = family_for(obj)
    return fam.scaling(obj) if fam is not None and fam.scaling is not None else None


def controller_pod_labels(pod: PodTemplate) -> tuple[dict[str, str], tuple[str, ...]]:
    """The labels the controller of `pod`'s family sets on its pods over the template's own,
    and the keys it sets with a value the manifest does not fix (`Family.pod_labels`); empty
    for a family that declares none."""
    fam = family_for(pod.obj)
    return fam.pod_labels(pod) if fam is not None and fam.pod_labels is not None else ({}, ())


def is_workload(obj: K8sObject) -> bool:
    return family_for(obj) is not None


def is_catalogue(obj: K8sObject) -> bool:
    """A runtime, model catalogue entry, autoscaler or claim that feeds workload facts."""
    _declarations()
    if _pick(_CATALOGUE, obj) is not None:
        return True
    fam = family_for(obj)
    return fam is not None and any(k == obj.kind and g in (None, obj.group) for g, k in fam.template_kinds)


def is_inventory_workload(obj: K8sObject) -> bool:
    """A workload object (`inventory` lists it), not a catalogue entry with templates."""
    return is_workload(obj) and not is_catalogue(obj)


def _templates(obj: K8sObject, catalog: Catalog | None) -> Iterator[PodTemplate]:
    fam = family_for(obj)
    if fam is None:
        return iter(())
    if catalog is not None:
        return iter(_bound(obj, fam, catalog))
    if fam.takes_catalog:
        return iter(fam.templates(obj, None))
    return iter(fam.templates(obj))


def _bound(obj: K8sObject, fam: Family, catalog: Catalog) -> list[PodTemplate]:
    pods = list(fam.templates(obj, catalog) if fam.takes_catalog else fam.templates(obj))
    for d in _declarations():
        if d.binds:
            other = _family(d.module)
            if other.bind_pod is not None:
                for pod in pods:
                    other.bind_pod(pod, catalog)
    return pods


# -- the run's catalogue: rules on objects whose pods depend on other objects of the run ----
def catalogue_reads(obj: K8sObject) -> tuple[Kind, ...]:
    """The catalogue kinds (group, kind) whose objects in the run change `obj`'s pods (a
    KServe model's runtime, DRA claims): the engine judges such an object once the run's
    catalogue is known (`bind`), not file by file. () for every other object."""
    if family_for(obj) is None:
        return ()
    pods: list[PodTemplate] | None = None
    out: list[Kind] = []
    for d in _declarations():
        if d.reads and (not d.reads_own or _of_kinds(obj, d.kinds)):
            reads = _family(d.module).reads
            if reads is None:
                continue
            if pods is None:
                pods = list(pod_templates(obj))
            out += [k for k in reads(obj, pods) if k not in out]
    return tuple(out)


def _of_kinds(obj: K8sObject, kinds: tuple[Kind, ...]) -> bool:
    """Whether `obj` is of one of `kinds` ((group, kind); group None: any group)."""
    return any(k == obj.kind and (g is None or g == obj.group) for g, k in kinds)


def catalogue(objects: Iterable[K8sObject]) -> Catalog:
    """The catalogue objects of a run (runtimes, base models, resource claims...)."""
    return Catalog(o for o in objects if is_catalogue(o))


def bind(obj: K8sObject, catalog: Catalog) -> None:
    """Make `obj`'s pod templates (for every later `pod_templates(obj)`: the rules, the
    bundle phase) the ones merged with what `catalog` holds for it. Call before any rule
    reads the object; its earlier derived facts are dropped."""
    try:
        pods = list(_templates(obj, catalog))
    except Exception:
        return  # the unmerged templates stay; the rule that reads them reports a crash
    obj.memo = {TEMPLATES_MEMO: pods}


def relocate(f: Finding, obj: K8sObject, hidden: frozenset[str] = frozenset()) -> Finding:
    """A finding on `obj` about a field its merged pod took from another object of the run
    (a runtime's args, probes, image) moved to that object's file (the finding still names
    `obj`, the workload judged). Its span is already that object's, of the kind the rule
    asked for (`K8sObject.span`/`value_span` resolve a `Foreign` step there), so the same
    field judged on the runtime itself and on the workload merged with it gives one span and
    the run keeps one finding (the runtime's own, judged first). When that object is in a
    context-only file (`hidden`), the finding stays on the workload, on the field that
    merges it in. Others are unchanged."""
    path = f.path
    if not path or not isinstance(path[0], Foreign):
        return f
    step = path[0]
    if step.obj.file in hidden:
        return dataclasses.replace(f, span=obj.span(step.home), path=step.home)
    real = step.path + tuple(path[1:])
    return dataclasses.replace(f, file=step.obj.file, path=real)


def pod_templates(obj: K8sObject, catalog: Catalog | None = None) -> Iterator[PodTemplate]:
    """Every pod template of `obj` (none for a kind no family reads). With `catalog`, the
    runtimes and models it names are merged in (not cached). Without, the templates are
    computed once and kept in the object's memo (`K8sObject.cached`): every rule, the bundle
    rules and the context's pod index share them, and they die with the object. Objects are
    never mutated during a run, so they stay valid."""
    if catalog is not None:
        return _templates(obj, catalog)
    memo = obj.memo
    found = memo.get(TEMPLATES_MEMO) if memo is not None else None
    if found is None:
        try:
            if obj.carried is None:
                found = obj.cached(TEMPLATES_MEMO, lambda: list(_templates(obj, None)))
            else:  # with what the process that parsed it knew of them (`extract.carry_facts`)
                found = obj.cached(TEMPLATES_MEMO, lambda: take_carried_facts(obj, list(_templates(obj, None))))
        except Exception:
            return _templates(obj, None)  # the rule that asked reports the crash (AIL003)
    return iter(found)


def preset_tokens(c: Any) -> list[str] | None:
    """The command a controller runs in container `c` when the file states none (else None)."""
    fam = family_for(c.pod.obj)
    if fam is None or fam.preset_tokens is None:
        return None
    return fam.preset_tokens(c)


def supplies(c: Any, field: str) -> bool:
    """True when the controller (a preset, or a runtime or config not in the run) may fill
    `field` into container `c` (or pod `c`) before it runs, so its absence in the file is no
    defect. The family decides first; an `open` pod (its runtime is not in the run) may get
    any field in the pod and its first app container."""
    pod = c if isinstance(c, PodTemplate) else c.pod
    fam = family_for(pod.obj)
    if fam is not None and fam.supplies is not None:
        got = fam.supplies(c, field)
        if got is not None:
            return got
    if pod.synthetic is not None and not written(pod, field):
        return True  # the controller builds this field; the object offers no way to set it
    if not pod.open:
        return False
    if c is pod:
        return True
    return not c.init and c.path == pod.spec_path + ("containers", 0)


def pod_role(pod: PodTemplate) -> str | None:
    """The role the pod's family knows it has (serving, training, batch, infra), or None."""
    fam = family_for(pod.obj)
    if fam is None or fam.role is None:
        return None
    return fam.role(pod)


# Engines as `inventory` names them (ailint.domain.roles names a few more internally)
ENGINE_NAMES = {
    "vllm": "vllm",
    "sglang": "sglang",
    "trtllm": "trtllm",
    "triton": "triton",
    "tgi": "tgi",
    "nim": "nim",
    "ollama": "ollama",
    "llama.cpp": "llamacpp",
}
_BATCH_KINDS = ("Job", "CronJob")
_OTHER_ACCELERATOR = lazy_re(
    r"^(nvidia\.com/(mig-.+|gpu\..+)|google\.com/tpu|huawei\.com/ascend.*|habana\.ai/gaudi|intel\.com/gpu.*|amd\.com/.*gpu.*)$",
    re.I,
)


def pod_facts(pod: PodTemplate, catalog: Catalog | None = None) -> Facts:
    """What one pod template runs: its roles, engine, model and accelerators per pod."""
    from ailint.domain import roles as r
    from ailint.domain.extract import model_id, pod_accelerators

    out = Facts(replicas=pod.replicas)
    declared = r.declared_role(pod)
    if declared:
        out.roles = [declared]
    else:
        if r.is_serving_pod(pod):
            out.roles.append("serving")
        if r.is_training_pod(pod):
            out.roles.append("training")
        if r.is_agent_pod(pod):
            out.roles.append("agent")
        if not out.roles and pod.obj.kind in _BATCH_KINDS:
            out.roles.append("batch")
        if not out.roles and pod.obj.kind == "DaemonSet":
            out.roles.append("infra")
    for c, engine in r.serving_containers(pod):
        out.engine = ENGINE_NAMES.get(engine, "other")
        out.model = model_id(c)
        break
    if out.engine is None and "serving" in out.roles:
        out.engine = "other"
    acc = pod_accelerators(pod)
    for c in pod.containers():  # devices the rules do not size yet (TPU, MIG, Ascend, Gaudi)
        if c.init and not c.sidecar:
            continue
        for res in {**c.resources("requests"), **c.resources("limits")}:
            if res not in acc and _OTHER_ACCELERATOR.match(res):
                q = parse_quantity(c.limit(res) if c.limit(res) is not None else c.request(res))
                if q:
                    acc[res] = acc.get(res, 0) + q
    out.accelerators = acc or None
    return out


def workload_facts(obj: K8sObject, catalog: Catalog | None = None) -> tuple[Facts, list[PodTemplate]]:
    """The facts of a workload object (with `catalog`, merged with the runtimes, models and
    claims it names), and its pod templates."""
    catalog = catalog if catalog is not None else Catalog()
    pods = list(pod_templates(obj, catalog))
    out = Facts()
    main: Facts | None = None
    main_rank = (False, False, False)
    for pod in pods:
        pf = pod_facts(pod, catalog)
        for role in pf.roles:
            if role not in out.roles:
                out.roles.append(role)
        rank = (pf.engine is not None and pf.engine != "other", bool(pf.accelerators), pf.engine is not None)
        if main is None or rank > main_rank:
            main, main_rank = pf, rank
    if main is not None:
        out.engine, out.model, out.accelerators, out.replicas = (
            main.engine,
            main.model,
            main.accelerators,
            main.replicas,
        )
    fam = family_for(obj)
    extra = fam.facts(obj, pods, catalog) if fam is not None and fam.facts is not None else None
    if extra is not None:  # what the family knows beyond its pods wins
        if extra.roles:
            out.roles = list(extra.roles)
        if extra.engine is not None and out.engine in (None, "other"):
            out.engine = ENGINE_NAMES.get(extra.engine, extra.engine if extra.engine == "other" else "other")
        for name in ("model", "accelerators", "replicas"):
            if getattr(extra, name) is not None:
                setattr(out, name, getattr(extra, name))
        out.parallelism.update(extra.parallelism)
    order = ["serving", "training", "agent", "batch", "infra"]
    out.roles = sorted(set(out.roles), key=lambda x: (order.index(x) if x in order else len(order), x))
    return out, pods
