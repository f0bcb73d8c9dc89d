"""AIBrix (orchestration.aibrix.ai): StormService and RoleSet role templates, RayClusterFleet
(RayCluster templates, so the Ray rules apply) and KVCache; autoscaling.aibrix.ai
PodAutoscaler and model.aibrix.ai ModelAdapter/ModelClaim are catalogue entries.

StormService `spec.template.spec.roles[*].template` and RoleSet `spec.roles[*].template`
are full PodTemplateSpecs; a role runs `replicas` x (`podGroupSize` or 1) pods, times the
StormService's `replicas`. AIBrix adds no containers, probes or resources to them; the
gateway reads the pod label `model.aibrix.ai/name` for the model id.
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import K8sObject, as_dict, iter_dicts
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import Catalog, Facts, Family, Path, as_int, ray_cluster, ray_node_tokens, template

GROUP = "orchestration.aibrix.ai"
MODEL_LABEL = "model.aibrix.ai/name"
# RayClusterFleet and RayClusterReplicaSet: `spec.template` is a RayClusterTemplateSpec
# (`metadata` plus `spec`, KubeRay's RayClusterSpec) and the fleet keeps `spec.replicas`
# (default 1) such clusters (vllm-project/aibrix api/orchestration/v1alpha1/raycluster_type.go,
# rayclusterfleet_types.go). Each RayCluster is named `<replicaset>-<random>` and takes the
# template's labels and annotations (pkg/controller/rayclusterreplicaset/
# rayclusterreplicaset_utils.go constructRayCluster). The Ray rules read the cluster at this
# path (ailint.domain.ray).
RAY_CLUSTER_TEMPLATES: dict[tuple[str, str], Path] = {
    (GROUP, "RayClusterFleet"): ("spec", "template", "spec"),
    (GROUP, "RayClusterReplicaSet"): ("spec", "template", "spec"),
}


def _roles(obj: K8sObject, base: Path, sets: int | None) -> Iterator[PodTemplate]:
    for i, role in iter_dicts(obj.get(*base, "roles")):
        reps = as_int(role.get("replicas")) if "replicas" in role else 1
        group = as_int(role.get("podGroupSize")) or 1
        pods = None if reps is None or sets is None else reps * group * sets
        t = template(
            obj, base + ("roles", i, "template"), str(role.get("name") or f"role{i}"), pods, base + ("roles", i)
        )
        if t:
            yield t


def templates(obj: K8sObject) -> Iterator[PodTemplate]:
    kind = obj.kind
    spec = as_dict(obj.data.get("spec"))
    if kind == "StormService":
        sets = as_int(spec.get("replicas")) if "replicas" in spec else 1
        yield from _roles(obj, ("spec", "template", "spec"), sets)
    elif kind == "RoleSet":
        yield from _roles(obj, ("spec",), 1)
    elif (obj.group, kind) in RAY_CLUSTER_TEMPLATES:
        fleets = as_int(spec.get("replicas")) if "replicas" in spec else 1
        yield from ray_cluster(obj, RAY_CLUSTER_TEMPLATES[(obj.group, kind)], fleets)
    elif kind == "KVCache":
        for base, role in (
            (("spec", "cache", "template"), "cache"),
            (("spec", "watcher", "template"), "watcher"),
            (("spec", "metadata", "etcd", "runtime", "template"), "etcd"),
            (("spec", "metadata", "redis", "runtime", "template"), "redis"),
        ):
            reps = as_int(obj.get(*base[:-1], "replicas")) if role == "cache" else 1
            t = template(obj, base, role, reps, base[:-1])
            if t:
                yield t


def facts(obj: K8sObject, pods: list[PodTemplate], catalog: Catalog) -> Facts | None:
    out = Facts()
    if obj.kind == "KVCache":
        out.roles = ["infra"]
        return out
    for pod in pods:
        name = pod.labels.get(MODEL_LABEL)
        if isinstance(name, str) and name:
            out.model = name
            out.roles = ["serving"]  # the AIBrix gateway routes this model to these pods
            break
    if obj.kind in ("StormService", "RoleSet"):
        out.replicas = as_int(obj.get("spec", "replicas")) if obj.has(("spec", "replicas")) else 1
    return out if out.model or out.roles or out.replicas is not None else None


def _role(pod: PodTemplate) -> str | None:
    return "infra" if pod.obj.kind == "KVCache" else None


FAMILY = Family(
    "aibrix",
    (
        (GROUP, "StormService"),
        (GROUP, "RoleSet"),
        (GROUP, "RayClusterFleet"),
        (GROUP, "RayClusterReplicaSet"),
        (GROUP, "KVCache"),
    ),
    templates,
    facts,
    catalogue=(
        ("autoscaling.aibrix.ai", "PodAutoscaler"),
        ("model.aibrix.ai", "ModelAdapter"),
        ("model.aibrix.ai", "ModelClaim"),
    ),
    role=_role,
    preset_tokens=lambda c: ray_node_tokens(c) if c.pod.obj.kind.startswith("RayCluster") else None,
    serving=((GROUP, "StormService"), (GROUP, "RoleSet")),
)
