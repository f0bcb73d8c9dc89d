"""
## What it does
Checks every `emptyDir: {medium: Memory}` volume (tmpfs, including `/dev/shm` mounts):
it fires when the volume has no `sizeLimit`, or when its `sizeLimit` is larger than the
sum of the pod's container memory limits.

## Why is this bad?
A memory-backed emptyDir is RAM. Without `sizeLimit` it can grow until the node runs out
of memory (when no container sets a memory limit), or until the pod's memory limit: pages
written to tmpfs are charged to the writing container's memory, so a checkpoint or a
DataLoader spilling into `/dev/shm` gets the container OOM-killed. A `sizeLimit` above the
memory limits promises room the pod can never use; the effective cap is the smaller
number, and the kill comes first.

## Example
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: trainer
spec:
  containers:
    - name: train
      image: pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime
      resources:
        limits:
          memory: 64Gi
      volumeMounts:
        - name: dshm
          mountPath: /dev/shm
  volumes:
    - name: dshm
      emptyDir:
        medium: Memory
```

## Use instead
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: trainer
spec:
  containers:
    - name: train
      image: pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime
      resources:
        limits:
          memory: 64Gi
      volumeMounts:
        - name: dshm
          mountPath: /dev/shm
  volumes:
    - name: dshm
      emptyDir:
        medium: Memory
        sizeLimit: 16Gi
```

## Options
- `maxDefaultSizeLimit` (string, default `16Gi`): the largest `sizeLimit` the fix writes.

## Fix
Safe: adds (or lowers) `sizeLimit` to min(`maxDefaultSizeLimit`, 50% of the pod's memory
limits), or `maxDefaultSizeLimit` when no memory limit is set. On a Ray pod (KubeRay's, or a
container that runs `ray start`), an added `sizeLimit` is the Ray container's memory limit
(its request when it sets no limit), the size KubeRay gives the `/dev/shm` it adds itself:
Ray keeps its object store there, and a smaller tmpfs moves the store to disk. Raise it afterwards if the
workload needs more shared memory, together with the container memory limit.

## References
- https://kubernetes.io/docs/concepts/storage/volumes/#emptydir
- https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/volume/#local-temporary-directory (`sizeLimit`)
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity, iter_dicts
from ailint.core.rule import Option, Options, Rule, make_fix
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, PodTemplate, pod_templates
from ailint.domain.quantities import parse_quantity
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="STO007",
    name="emptydir-memory-unbounded",
    severity=Severity.WARNING,
    summary="A memory-backed emptyDir has no sizeLimit, or one larger than the pod's memory limits",
    kinds=POD_KINDS,
    fix=FixAvailability.SOMETIMES,
    options={"maxDefaultSizeLimit": Option("16Gi", "largest sizeLimit the fix writes", "string")},
    tags=("storage", "memory", "shm"),
)

GiB, MiB = 2**30, 2**20


def _fmt(n: float) -> str:
    if n >= GiB and n % GiB == 0:
        return f"{int(n // GiB)}Gi"
    return f"{math.ceil(n / MiB)}Mi"


def _memory_limits(pod: PodTemplate) -> tuple[float, bool]:
    """(sum of memory limits of app containers and sidecars, every one of them has a limit)."""
    total, every = 0.0, True
    seen = False
    for c in pod.containers():
        if c.init and not c.sidecar:
            continue
        seen = True
        q = parse_quantity(c.limit("memory"))
        if q is None or q <= 0:
            every = False
        else:
            total += q
    return total, every and seen


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    cap = parse_quantity(opts.get_str("maxDefaultSizeLimit")) or 16 * GiB
    for pod in pod_templates(obj):
        total, limited = _memory_limits(pod)
        default = min(cap, total / 2) if limited and total > 0 else cap
        for i, vol in iter_dicts(pod.spec.get("volumes")):
            ed = vol.get("emptyDir")
            if not isinstance(ed, dict) or str(ed.get("medium") or "") != "Memory":
                continue
            name = vol.get("name") or f"#{i}"
            ed_path = pod.path("volumes", i, "emptyDir")
            size_raw = ed.get("sizeLimit")
            size = parse_quantity(size_raw)
            if size_raw is None:
                why = (
                    f"writes count against the pod's memory limits ({_fmt(total)}) and can OOM-kill it"
                    if limited
                    else "no container sets a memory limit, so it can grow to the node's memory"
                )
                ray_size = _ray_shm_size(obj, pod)
                yield RULE.finding(
                    obj,
                    ed_path,
                    f"memory-backed emptyDir '{name}' has no sizeLimit; {why}",
                    fix=_set_size(obj, ed_path, ed, _fmt(ray_size if ray_size else default)),
                )
            elif limited and size is not None and size > total:
                yield RULE.finding(
                    obj,
                    ed_path + ("sizeLimit",),
                    f"sizeLimit {size_raw} of memory-backed emptyDir '{name}' exceeds the pod's memory "
                    f"limits ({_fmt(total)}); tmpfs pages count against them, so the pod is "
                    "OOM-killed first",
                    fix=make_fix(
                        f"set sizeLimit to {_fmt(default)}",
                        [edits.replace_value(obj, ed_path + ("sizeLimit",), _fmt(default))],
                    ),
                )


def _ray_shm_size(obj: Any, pod: PodTemplate) -> float | None:
    """On a Ray pod, the size KubeRay gives the /dev/shm it adds itself: the Ray container's
    memory limit, else its request (kuberay `makeEmptyDirVolume`, `findMemoryReqOrLimit`).
    Ray keeps its object store in /dev/shm, so a smaller tmpfs moves the store to disk."""
    mains = list(pod.containers(include_init=False))
    if not mains or pod.role == "submitter":  # a RayJob's submitter runs no Ray node
        return None
    if "ray" not in obj.kind.lower() and not any("ray" in " ".join(c.tokens) for c in mains):
        return None  # (no Ray kind, no Ray command: the Ray domain is not even imported)
    from ailint.domain.ray import is_ray_pod_container

    ray = next((c for n, c in enumerate(mains) if is_ray_pod_container(obj, c, n)), None)
    if ray is None:
        return None
    q = parse_quantity(ray.limit("memory")) or parse_quantity(ray.resources("requests").get("memory"))
    return q if q and q > 0 else None


def _set_size(obj: Any, ed_path: tuple, ed: dict[str, Any], value: str) -> Fix | None:
    if ed and not edits.is_flow(obj, ed_path):
        edit = edits.insert_key(obj, ed_path, "sizeLimit", value)
    else:
        edit = None
        span = obj.value_span(ed_path)
        if obj.has(ed_path) and span.line == span.end_line:
            src = obj.source
            old = src.text[src.offset(span.line, span.col) : src.offset(span.end_line, span.end_col)]
            if old.startswith("{") and old.endswith("}"):
                inner = old[1:-1].strip()
                edit = edits.replace_value(
                    obj, ed_path, "{" + (inner + ", " if inner else "") + f"sizeLimit: {value}}}"
                )
    return make_fix(f"add sizeLimit: {value}", [edit])
