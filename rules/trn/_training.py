"""Training-job helpers shared by the TRN rules (not a rule: the registry skips `_` modules).

- torchrun / `python -m torch.distributed.run|launch` flags in a container;
- Kubeflow TrainJob (trainer.kubeflow.org/v1alpha1): `spec.trainer.numNodes`,
  `numProcPerNode`, `resourcesPerNode`, merged with the referenced (Cluster)TrainingRuntime
  (`runtimeRef.kind` defaults to ClusterTrainingRuntime; `spec.mlPolicy.numNodes`,
  `spec.mlPolicy.torch.numProcPerNode`; the trainer runs in the replicated job `node`);
- Kubeflow PyTorchJob (kubeflow.org/v1): `spec.nprocPerNode` (string: auto, cpu, gpu or an
  int; "Defaults to auto"), `pytorchReplicaSpecs.{Master,Worker}.replicas` (default 1);
- gang-scheduling signals (Kueue, Volcano, KAI, scheduler-plugins coscheduling, YuniKorn,
  KubeRay batch-scheduler labels).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ailint.core.lazyre import lazy_re
from ailint.core.model import Edit, K8sObject, Path, as_dict, as_list, iter_dicts
from ailint.domain.extract import GPU_RESOURCES, Container, PodTemplate, command_tokens, flag_value, pod_templates
from ailint.domain.quantities import parse_quantity, to_int

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NPROC_FLAGS = ("--nproc_per_node", "--nproc-per-node")
NNODES_FLAGS = ("--nnodes",)
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def runs_torchrun(c: Container) -> bool:
    toks = c.tokens
    for i, t in enumerate(toks):
        base = t.rsplit("/", 1)[-1]
        if base == "torchrun":
            return True
        if t in ("torch.distributed.run", "torch.distributed.launch") and i > 0 and toks[i - 1] == "-m":
            return True
    return False


@dataclass(slots=True)
class FlagUse:
    """A launcher flag as a container's command gives it: its value and where."""

    value: str
    path: Path  # the list item holding the flag (or its value)
    inline: bool  # `--flag=value` or inside a longer string, versus a separate value item


def find_flag(c: Container, flags: tuple[str, ...]) -> FlagUse | None:
    """The last value of a torchrun flag in the container, with where it is written."""
    value = flag_value(c.tokens, *flags)
    if value is None:
        return None
    for key in ("args", "command"):
        items = as_list(c.data.get(key))
        for i in range(len(items) - 1, -1, -1):
            item = items[i]
            if not isinstance(item, str):
                continue
            if item in flags and i + 1 < len(items):
                return FlagUse(value, c.path_of(key, i + 1), False)
            if any(re.search(rf"(^|\s){re.escape(f)}(=|\s)", item) for f in flags):
                return FlagUse(value, c.path_of(key, i), True)
    return FlagUse(value, c.path, True)


def replace_flag_text(text: str, flags: tuple[str, ...], new: str) -> str | None:
    """`text` with the value of the last occurrence of a flag replaced; None when not found."""
    pattern = re.compile(r"(" + "|".join(re.escape(f) for f in flags) + r")(=|\s+)([^\s\"']+)")
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    m = matches[-1]
    return text[: m.start(3)] + new + text[m.end(3) :]


# the devices one training process drives (torchrun --nproc-per-node counts them): GPUs and NeuronCores
PROCESS_DEVICE_RESOURCES = (*GPU_RESOURCES, "aws.amazon.com/neuroncore")


def container_devices(c: Container) -> tuple[str, int] | None:
    """(resource, count) of the GPUs (or NeuronCores) this container gets; None if none."""
    for res in PROCESS_DEVICE_RESOURCES:
        q = parse_quantity(c.limit(res))
        if q is None:
            q = parse_quantity(c.request(res))
        if q is not None and q > 0 and q == int(q):
            return res, int(q)
    return None


def resources_devices(resources: Any) -> tuple[str, int] | None:
    """Same as `container_devices` for a bare ResourceRequirements mapping."""
    lim, req = as_dict(as_dict(resources).get("limits")), as_dict(as_dict(resources).get("requests"))
    for res in PROCESS_DEVICE_RESOURCES:
        q = parse_quantity(lim.get(res, req.get(res)))
        if q is not None and q > 0 and q == int(q):
            return res, int(q)
    return None


# ---------------------------------------------------------------------------------------
# TrainJob
# ---------------------------------------------------------------------------------------
def trainjob_runtime(obj: K8sObject, ctx: Any) -> K8sObject | None:
    """The (Cluster)TrainingRuntime a TrainJob references, when it is in the run."""
    if ctx is None or not getattr(ctx, "bundle", False):
        return None
    ref = as_dict(obj.get("spec", "runtimeRef"))
    name = ref.get("name")
    kind = ref.get("kind") or "ClusterTrainingRuntime"
    if not isinstance(name, str):
        return None
    for o in ctx.of_kind(str(kind)):
        if o.name != name:
            continue
        if kind == "TrainingRuntime" and (o.namespace_or_default) != (obj.namespace_or_default):
            continue
        return o
    return None


def runtime_trainer_template(runtime: K8sObject | None) -> PodTemplate | None:
    """The pod template of the runtime's trainer job (`node`, else the only replicated job)."""
    if runtime is None:
        return None
    pods = list(pod_templates(runtime))
    for p in pods:
        if p.role == "node":
            return p
    return pods[0] if len(pods) == 1 else None


def trainjob_num_nodes(obj: K8sObject, runtime: K8sObject | None) -> tuple[int | None, Path | None]:
    v = obj.get("spec", "trainer", "numNodes")
    if to_int(v) is not None:
        return to_int(v), ("spec", "trainer", "numNodes")
    if runtime is not None:
        rv = to_int(runtime.get("spec", "mlPolicy", "numNodes"))
        if rv is not None:
            return rv, None
        return 1, None
    return None, None


def trainjob_devices(obj: K8sObject, runtime: K8sObject | None) -> tuple[str, int] | None:
    """GPUs per TrainJob node: `trainer.resourcesPerNode`, else the runtime's trainer container."""
    rpn = obj.get("spec", "trainer", "resourcesPerNode")
    if isinstance(rpn, dict):
        return resources_devices(rpn)
    tpl = runtime_trainer_template(runtime)
    if tpl is None:
        return None
    for c in tpl.containers(include_init=False):
        d = container_devices(c)
        if d:
            return d
    return None


def trainjob_command_tokens(obj: K8sObject) -> list[str]:
    return command_tokens(as_dict(obj.get("spec", "trainer")))


# ---------------------------------------------------------------------------------------
# Gang scheduling
# ---------------------------------------------------------------------------------------
GANG_SCHEDULERS = lazy_re(
    r"volcano|kai-scheduler|scheduler-plugins|coscheduling|yunikorn|"
    r"kube-batch|run-ai|runai|koord|godel",
    re.I,
)
GANG_KEYS = (
    "scheduling.x-k8s.io/pod-group",
    "pod-group.scheduling.sigs.k8s.io",
    "scheduling.k8s.io/group-name",
    "volcano.sh/",
    "yunikorn.apache.org/",
    "ray.io/gang-scheduling-enabled",
    "ray.io/scheduler-name",
    "kai.scheduler/",
    "runai/queue",
    "kueue.x-k8s.io/pod-group-name",
)


def has_queue_label(obj: K8sObject) -> bool:
    if QUEUE_LABEL in obj.labels or QUEUE_LABEL in obj.annotations:
        return True
    return any(QUEUE_LABEL in p.labels for p in pod_templates(obj))


def gang_mechanism(obj: K8sObject) -> str | None:
    """A gang-scheduling mechanism visible on the object: a gang scheduler's schedulerName,
    pod-group labels or annotations, PyTorchJob/MPIJob `runPolicy.schedulingPolicy`, KubeRay's
    batch-scheduler labels, or Kubernetes' own PodGroup of a pod template (`schedulingGroup`
    or, in 1.35, `workloadRef`: the scheduler gangs it when the group's policy is `gang`).
    Returns a short description, or None."""
    if obj.kind in ("PyTorchJob", "MPIJob") and isinstance(obj.get("spec", "runPolicy", "schedulingPolicy"), dict):
        return "runPolicy.schedulingPolicy"
    metas = [obj.labels, obj.annotations]
    for p in pod_templates(obj):
        sched = p.spec.get("schedulerName")
        if isinstance(sched, str) and GANG_SCHEDULERS.search(sched):
            return f"schedulerName {sched}"
        group = as_dict(p.spec.get("schedulingGroup")).get("podGroupName")
        if isinstance(group, str) and group:
            return f"schedulingGroup {group}"
        ref = as_dict(p.spec.get("workloadRef"))
        if ref.get("name") and ref.get("podGroup"):
            return f"workloadRef {ref['name']}/{ref['podGroup']}"
        metas += [p.labels, p.annotations]
    for m in metas:
        for k in m:
            if str(k).startswith(GANG_KEYS):
                return str(k)
    return None


def same_namespace(a: K8sObject, b: K8sObject) -> bool:
    """Whether two namespaced objects end up in one namespace: both name the same namespace,
    or at least one names none and they sit in the same file (applied together, so into the
    same current namespace). Unrelated manifests without namespaces never match."""
    if a.namespace and b.namespace:
        return a.namespace == b.namespace
    return a.source is b.source or a.source.display == b.source.display


def local_queues(ctx: Any, obj: K8sObject) -> list[K8sObject]:
    """Kueue LocalQueues of the run in the object's namespace (see `same_namespace`)."""
    if ctx is None or not getattr(ctx, "bundle", False):
        return []
    memo = getattr(ctx, "memo", None)
    if memo is None:
        return [o for o in ctx.of_kind("LocalQueue") if o.group.startswith("kueue.x-k8s.io") and same_namespace(o, obj)]
    by_ns, by_file = memo("trn.local_queues", lambda: _local_queue_index(ctx))
    # same_namespace: the same namespace, or the same file when either names none; run order kept
    if obj.namespace:
        hits = by_ns.get(obj.namespace, []) + [x for x in by_file.get(obj.source.display, ()) if not x[1].namespace]
        return [q for _, q in sorted(hits, key=lambda x: x[0])]
    return [q for _, q in by_file.get(obj.source.display, ())]


def _local_queue_index(
    ctx: Any,
) -> tuple[dict[str, list[tuple[int, K8sObject]]], dict[str, list[tuple[int, K8sObject]]]]:
    """Kueue LocalQueues by namespace and by file, each with its run position (built once per run)."""
    by_ns: dict[str, list[tuple[int, K8sObject]]] = {}
    by_file: dict[str, list[tuple[int, K8sObject]]] = {}
    for i, o in enumerate(ctx.of_kind("LocalQueue")):
        if o.group.startswith("kueue.x-k8s.io"):
            if o.namespace:
                by_ns.setdefault(o.namespace, []).append((i, o))
            by_file.setdefault(o.source.display, []).append((i, o))
    return by_ns, by_file


def iter_replica_specs(obj: K8sObject) -> list[tuple[str, dict[str, Any]]]:
    return [(str(k), v) for k, v in as_dict(obj.get("spec", "pytorchReplicaSpecs")).items() if isinstance(v, dict)]


def replica_count(rs: dict[str, Any]) -> int | None:
    if "replicas" not in rs:
        return 1
    return to_int(rs.get("replicas"))


__all__ = ["iter_dicts"]


def add_label_edit(obj: K8sObject, key: str, value: str) -> Edit | None:
    """An edit adding `key: value` to the object's `metadata.labels` (None when the layout
    makes it unsafe)."""
    from ailint.fix import edits

    labels = obj.get("metadata", "labels")
    if isinstance(labels, dict) and labels and not edits.is_flow(obj, ("metadata", "labels")):
        return edits.insert_key(obj, ("metadata", "labels"), edits.scalar(key), edits.scalar(value))
    if isinstance(labels, dict):
        merged = {**{str(k): v for k, v in labels.items()}, key: value}
        return edits.replace_value(obj, ("metadata", "labels"), edits.inline(merged))
    if obj.has(("metadata", "labels")):
        return None
    if isinstance(obj.get("metadata"), dict) and obj.get("metadata"):
        return edits.insert_value(obj, ("metadata",), "labels", {key: value})
    return None


def accelerator_total(obj: K8sObject) -> tuple[int, float]:
    """(pods, accelerator devices) a workload runs at once, from its pod templates (EFA not
    counted). Unknown replica counts count as 0."""
    pods, devs = 0, 0.0
    for p in pod_templates(obj):
        n = p.replicas or 0
        per = 0.0
        for c in p.containers(include_init=False):
            for k, v in c.accelerators().items():
                if k != "vpc.amazonaws.com/efa":
                    per += v
        pods += n
        devs += per * n
    return pods, devs
