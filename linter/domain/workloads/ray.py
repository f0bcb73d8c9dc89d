"""KubeRay (ray.io): RayCluster head and worker groups, and the clusters embedded in RayJob
(plus its submitter pod) and RayService."""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import K8sObject, as_dict
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import Family, ray_cluster, ray_node_tokens, template


def templates(obj: K8sObject) -> Iterator[PodTemplate]:
    spec = as_dict(obj.data.get("spec"))
    if obj.kind == "RayCluster":
        yield from ray_cluster(obj, ("spec",))
    elif obj.kind == "RayJob":
        if isinstance(spec.get("rayClusterSpec"), dict):
            yield from ray_cluster(obj, ("spec", "rayClusterSpec"))
        t = template(obj, ("spec", "submitterPodTemplate"), "submitter", 1)
        if t:
            yield t
    elif obj.kind == "RayService" and isinstance(spec.get("rayClusterConfig"), dict):
        yield from ray_cluster(obj, ("spec", "rayClusterConfig"))


FAMILY = Family(
    "ray",
    ((None, "RayCluster"), (None, "RayJob"), (None, "RayService")),
    templates,
    preset_tokens=lambda c: None if c.pod.role == "submitter" or c.pod.obj.kind == "RayService" else ray_node_tokens(c),
)
