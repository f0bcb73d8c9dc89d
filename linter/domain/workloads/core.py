"""Kubernetes' own workloads: Pod, Deployment, StatefulSet, ReplicaSet, ReplicationController,
DaemonSet, PodTemplate, Job and CronJob (any API group, as the API server's aliases)."""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import K8sObject, as_dict
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import Family, as_int, template

_SCALED = ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController")


def templates(obj: K8sObject) -> Iterator[PodTemplate]:
    kind = obj.kind
    spec = as_dict(obj.data.get("spec"))
    t: PodTemplate | None = None
    if kind == "Pod":
        if spec:
            yield PodTemplate(obj, ("spec",), None, "", 1)
        return
    if kind in _SCALED:
        t = template(obj, ("spec", "template"), "", 1 if "replicas" not in spec else as_int(spec.get("replicas")))
    elif kind == "DaemonSet":
        t = template(obj, ("spec", "template"), "", None)
    elif kind == "PodTemplate":
        t = template(obj, ("template",), "", None)
    elif kind == "Job":
        t = template(obj, ("spec", "template"), "", 1 if "parallelism" not in spec else as_int(spec.get("parallelism")))
    elif kind == "CronJob":
        t = template(obj, ("spec", "jobTemplate", "spec", "template"), "", None)
    if t:
        yield t


FAMILY = Family(
    "core",
    tuple((None, k) for k in ("Pod", *_SCALED, "DaemonSet", "Job", "CronJob", "PodTemplate")),
    templates,
)
