"""LeaderWorkerSet (leaderworkerset.x-k8s.io): `replicas` groups of `size` pods, a leader
template (optional) and a worker template."""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import K8sObject, as_dict
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import Family, as_int, template


def group_templates(obj: K8sObject, base: tuple[str, ...], replicas: int | None) -> Iterator[PodTemplate]:
    """The leader and worker templates of a LeaderWorkerTemplate at `base`."""
    lwt = as_dict(obj.get(*base))
    size = as_int(lwt.get("size"))
    size = 1 if size is None and "size" not in lwt else size
    if isinstance(lwt.get("leaderTemplate"), dict):
        t = template(obj, base + ("leaderTemplate",), "leader", replicas, base)
        if t:
            yield t
        workers = None if size is None or replicas is None else replicas * (size - 1)
    else:
        workers = None if size is None or replicas is None else replicas * size
    t = template(obj, base + ("workerTemplate",), "worker", workers, base)
    if t:
        yield t


def templates(obj: K8sObject) -> Iterator[PodTemplate]:
    spec = as_dict(obj.data.get("spec"))
    groups = as_int(spec.get("replicas")) if "replicas" in spec else 1
    yield from group_templates(obj, ("spec", "leaderWorkerTemplate"), groups)


FAMILY = Family("lws", ((None, "LeaderWorkerSet"),), templates)
