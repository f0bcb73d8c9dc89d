"""The workload adapter API: a `Family` declares the kinds it understands (by API group and
kind) and turns each object into the pod templates its controller runs and the facts of
the workload (engine, model, accelerators per replica, replicas, roles).

Adapters read only their object; `Catalog` holds the objects that run no pods but feed the
facts of those that do (runtimes, base models, resource claims), when they are in the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from ailint.core.model import Anchor, Foreign, K8sObject, Path, as_dict, get_in, iter_dicts
from ailint.domain.extract import PodTemplate
from ailint.domain.quantities import to_int as as_int

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Kind = tuple[str | None, str]  # (API group, or None for any group; kind)


@dataclass
class Facts:
    """What a workload object runs, as its manifest states it (None: not stated)."""

    roles: list[str] = field(default_factory=list)
    engine: str | None = None
    model: str | None = None
    accelerators: dict[str, float] | None = None  # per replica (one pod, or one pod group)
    replicas: int | None = None
    parallelism: dict[str, int] = field(default_factory=dict)  # tensor, pipeline, data


@dataclass(frozen=True)
class Family:
    """One custom-resource family: its kinds, and how to read them.

    `templates(obj[, catalog])` yields the pod templates (those the file writes, or
    synthesized ones whose `spec_path` holds an `Anchor`; with a catalog, merged with the
    runtimes and models it names); `facts(obj, pods, catalog)` corrects or completes
    the facts read from the pods (None: nothing to add). `catalogue` names the kinds the
    family reads as inputs that run no pods themselves; `preset_tokens(container)` gives the
    command a controller runs when the container states none."""

    name: str
    kinds: tuple[Kind, ...]
    templates: Callable[..., Iterable[PodTemplate]]  # (obj) or (obj, catalog)
    facts: Callable[[K8sObject, list[PodTemplate], Catalog], Facts | None] | None = None
    catalogue: tuple[Kind, ...] = ()
    preset_tokens: Callable[[Any], list[str] | None] | None = None
    takes_catalog: bool = False  # templates(obj, catalog)
    supplies: Callable[[Any, str], bool | None] | None = None  # (container or pod, field): see workloads.supplies
    # kinds whose pod templates rules judge, though they are catalogue entries, not workloads
    # (an OME runtime: the pods of every InferenceService that selects it)
    template_kinds: tuple[Kind, ...] = ()
    role: Callable[[PodTemplate], str | None] | None = None  # serving, training, batch, infra (None: heuristics)
    # kinds whose pods are long-running model servers (rules for servers apply to them)
    serving: tuple[Kind, ...] = ()
    # the catalogue kinds of the run that `obj`'s pods depend on (any object, not only the
    # family's: DRA claims change the pods of every family); () when none
    reads: Callable[[K8sObject, list[PodTemplate]], tuple[Kind, ...]] | None = None
    # `reads` names inputs only for objects of the family's own `kinds` (an InferenceService's
    # runtime): the engine then asks it, and imports the family, only for those
    reads_only_own: bool = False
    # completes a pod template with what the run's catalogue holds for it (DRA: claimed devices)
    bind_pod: Callable[[PodTemplate, Catalog], None] | None = None
    # the replica range the resource's own controller autoscales it within, (min, max; None:
    # no upper limit), or None when it does not (KubeAI scales a Model's servers itself)
    scaling: Callable[[K8sObject], tuple[int, int | None] | None] | None = None
    # the labels the family's controller puts on a template's pods: (labels it sets, over the
    # template's own; keys it sets with a value the manifest does not fix), for the selectors
    # of Services, monitors and budgets (`ailint.domain.pod_labels`)
    pod_labels: Callable[[PodTemplate], tuple[dict[str, str], tuple[str, ...]]] | None = None


def merged_origins(
    pre: Path, rt_obj: K8sObject, rt_path: Path, runtime: dict[str, Any], mine: dict[str, Any], mine_path: Path
) -> list[tuple[Path, Path, bool]]:
    """Anchor fields for a container merged as `merge_container(runtime, mine)` (at `pre` in
    the built pod): each field the runtime's container at `rt_path` of `rt_obj` supplied maps
    to it; the ones `mine` (at `mine_path`) wrote map there (args appended, env by name)."""
    out: list[tuple[Path, Path, bool]] = []

    def there(*rest: Any) -> Path:
        return (Foreign(rt_obj, rt_path + tuple(rest), mine_path),)

    rt_args: list[Any] = runtime["args"] if isinstance(runtime.get("args"), list) else []
    for i in range(len(rt_args)):
        out.append((pre + ("args", i), there("args", i), True))
    if rt_args and isinstance(mine.get("args"), list):
        for j in range(len(mine["args"])):
            out.append((pre + ("args", len(rt_args) + j), mine_path + ("args", j), True))
    rt_env = (
        [e for e in runtime.get("env") or [] if isinstance(e, dict)] if isinstance(runtime.get("env"), list) else []
    )
    my_env = {e.get("name"): j for j, e in iter_dicts(mine.get("env"))}
    merged: list[Path] = []
    for i, e in enumerate(rt_env):
        at = my_env.pop(e.get("name"), None)  # (`j` is an int index above)
        merged.append(there("env", i) if at is None else mine_path + ("env", at))
    merged += [mine_path + ("env", j) for j in my_env.values()]
    if rt_env:
        for k, real in enumerate(merged):
            out.append((pre + ("env", k), real, True))
    mine_res = as_dict(mine.get("resources"))
    for which, vals in as_dict(runtime.get("resources")).items():
        if not mine_res:
            out.append((pre + ("resources",), there("resources"), True))
            break
        for res in as_dict(vals):
            if res not in as_dict(mine_res.get(which)):
                out.append((pre + ("resources", which, res), there("resources", which, res), True))
    for key in runtime:
        if key not in ("args", "env", "resources") and key not in mine:
            out.append((pre + (key,), there(key), True))
    return out


class Catalog:
    """Objects of catalogue kinds in a run, by (group, kind, name) and (namespace too)."""

    def __init__(self, objects: Iterable[K8sObject] = ()) -> None:
        self._by: dict[tuple[str, str, str], list[K8sObject]] = {}
        for o in objects:
            self.add(o)

    def add(self, obj: K8sObject) -> None:
        self._by.setdefault((obj.group, obj.kind, obj.name or ""), []).append(obj)

    def get(self, group: str, kind: str, name: Any, namespace: str | None = None) -> K8sObject | None:
        """The object named `name`; a namespaced lookup prefers the same namespace."""
        if not isinstance(name, str) or not name:
            return None
        found = self._by.get((group, kind, name)) or []
        for o in found:
            if namespace is None or (o.namespace_or_default) == (namespace or "default"):
                return o
        return found[0] if found and namespace is None else None

    def of_kind(self, group: str, kind: str) -> Iterator[K8sObject]:
        for (g, k, _), objs in self._by.items():
            if g == group and k == kind:
                yield from objs


def template(
    obj: K8sObject, tpl_path: Path, role: str = "", replicas: int | None = None, group_path: Path = ()
) -> PodTemplate | None:
    """A PodTemplateSpec at `tpl_path` (with `metadata` and `spec`)."""
    if not isinstance(obj.get(*tpl_path, "spec"), dict):
        return None
    return PodTemplate(obj, tpl_path + ("spec",), tpl_path + ("metadata",), role, replicas, group_path)


def pod_spec(
    obj: K8sObject, spec_path: Path, role: str = "", replicas: int | None = None, group_path: Path = ()
) -> PodTemplate | None:
    """A bare PodSpec at `spec_path` (metadata: the object's)."""
    if not isinstance(obj.get(*spec_path), dict):
        return None
    return PodTemplate(obj, spec_path, None, role, replicas, group_path or spec_path)


def synthesized(
    obj: K8sObject,
    at: Path,
    spec: dict[str, Any],
    role: str = "",
    replicas: int | None = None,
    fields: Iterable[tuple[Path, Path, bool]] = (),
) -> PodTemplate:
    """A pod the controller builds from fields of `obj` that are no PodSpec. Findings on it
    point at `at`, or at the written field that `fields` maps a synthesized path to
    (`(("containers", 0, "resources"), ("spec", "resourceProfile"), False)`)."""
    anchor = Anchor(tuple(at), tuple((tuple(a), tuple(b), keep) for a, b, keep in fields))
    return PodTemplate(obj, (anchor,), None, role, replicas, tuple(at), synthetic=spec)


def written(pod: PodTemplate, field: str) -> bool:
    """For a synthesized pod: whether the user can set container (or pod) `field` in the
    object (the Anchor maps it to a written field). A field the user cannot set is the
    controller's: a rule must not ask the user to add it."""
    step = pod.spec_path[0] if pod.spec_path else None
    if not isinstance(step, Anchor):
        return True
    for pre, _real, keep in step.fields:
        if keep and len(pre) <= 2 and (not pre or pre[0] == "containers"):
            return True  # a PodSpec or container the user writes whole (a runner, a mainContainer)
        if pre and pre[-1] == field:
            return True
    return False


# ModelSpec/component fields that are not PodSpec fields (KServe, OME components)
COMPONENT_ONLY = frozenset(
    {
        "minReplicas",
        "maxReplicas",
        "scaleTarget",
        "scaleMetric",
        "scaleMetricType",
        "autoScaling",
        "kedaConfig",
        "containerConcurrency",
        "timeout",
        "canaryTrafficPercent",
        "logger",
        "batcher",
        "labels",
        "annotations",
        "deploymentStrategy",
        "acceleratorOverride",
        "workerSpec",
        "storageUris",
        "runner",
        "leader",
        "worker",
    }
)


def runner_pod(
    obj: K8sObject,
    base: Path,
    role: str,
    replicas: int | None,
    component: dict[str, Any] | None = None,
    runner_key: str = "runner",
    origins: Iterable[tuple[Path, Path, bool]] = (),
) -> PodTemplate | None:
    """A PodSpec with its main container as a separate mapping (`runner`, `mainContainer`)
    at `base`: the main container first, then the PodSpec's own containers. `component`
    replaces what the file holds at `base` (a merge with a runtime); `origins` map the
    fields the merge took from another object (they win over the component's own)."""
    comp = component if component is not None else as_dict(obj.get(*base))
    runner = comp.get(runner_key)
    if not isinstance(runner, dict) and not isinstance(comp.get("containers"), list):
        return None
    spec = {k: v for k, v in comp.items() if k not in COMPONENT_ONLY and k not in (runner_key, "containers")}
    containers: list[dict[str, Any]] = []
    fields: list[tuple[Path, Path, bool]] = list(origins)
    if isinstance(runner, dict):
        containers.append(runner)
        fields.append((("containers", 0), base + (runner_key,), True))
    for i, c in iter_dicts(comp.get("containers")):
        fields.append((("containers", len(containers)), base + ("containers", i), True))
        containers.append(c)
    spec["containers"] = containers
    fields.append(((), base, True))
    return synthesized(obj, base, spec, role, replicas, fields)


def ray_cluster(obj: K8sObject, base: Path, multiplier: int | None = 1) -> Iterator[PodTemplate]:
    """The head and worker groups of a RayClusterSpec at `base` (`multiplier` clusters)."""
    head = template(obj, base + ("headGroupSpec", "template"), "head", multiplier, base + ("headGroupSpec",))
    if head:
        yield head
    for i, group in iter_dicts(obj.get(*base, "workerGroupSpecs")):
        gpath = base + ("workerGroupSpecs", i)
        replicas = as_int(group.get("replicas"))
        if replicas is None:
            replicas = as_int(group.get("minReplicas"))
        hosts = as_int(group.get("numOfHosts")) or 1
        pods = None if replicas is None or multiplier is None else replicas * hosts * multiplier
        t = template(obj, gpath + ("template",), str(group.get("groupName") or f"worker{i}"), pods, gpath)
        if t:
            yield t


def ray_node_tokens(c: Any) -> list[str] | None:
    """KubeRay starts the Ray node itself in a head or worker container that sets no command
    (`ray start`, ray-project/kuberay ray-operator/controllers/ray/common/pod.go): such a
    container is a Ray node, not a model server, whatever its image."""
    if c.init or "command" in c.data or "args" in c.data:
        return None
    if not c.pod.group_path or c.path != c.pod.spec_path + ("containers", 0):
        return None
    return ["ray", "start", "--head" if c.pod.role == "head" else "--block"]


def jobset_templates(obj: K8sObject, base: Path) -> Iterator[PodTemplate]:
    for i, rj in iter_dicts(obj.get(*base, "replicatedJobs")):
        jspec = as_dict(get_in(rj, ("template", "spec")))
        reps = as_int(rj.get("replicas")) if "replicas" in rj else 1
        par = as_int(jspec.get("parallelism")) if "parallelism" in jspec else 1
        pods = None if reps is None or par is None else reps * par
        t = template(
            obj,
            base + ("replicatedJobs", i, "template", "spec", "template"),
            str(rj.get("name") or f"job{i}"),
            pods,
            base + ("replicatedJobs", i),
        )
        if t:
            yield t
