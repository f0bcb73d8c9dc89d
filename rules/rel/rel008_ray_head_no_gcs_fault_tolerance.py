"""
## What it does
Flags a RayService, or a RayCluster (or the RayCluster template of an AIBrix
RayClusterFleet) that runs Ray Serve (`serve run`/`serve deploy` in a container, or
`ailint.io/role: serving`), whose cluster has no GCS fault tolerance: no
`gcsFaultToleranceOptions` with a `redisAddress` or with `backend: rocksdb`, and not the
older `ray.io/ft-enabled: "true"` annotation. Info by default; a warning when the object's
namespace is listed in the profile key `productionNamespaces`. A head-only cluster (no worker
group that can run pods) is left alone: every Serve replica runs on the head, so a head
restart takes them all down with or without GCS fault tolerance.

## Why is this bad?
The Global Control Service lives in the head pod. Without an external store, a head
restart (OOM, node drain, Spot reclaim, a Karpenter consolidation) loses the GCS state:
every Serve application and actor is restarted across the whole cluster and requests fail
until the models are loaded again, minutes to tens of minutes for LLMs. With GCS fault
tolerance, workers keep serving while the head comes back and reattaches.

## Example
```yaml
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: llm
spec:
  serveConfigV2: |
    applications:
      - name: llm
        import_path: app:deployment
  rayClusterConfig:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.46.0
    workerGroupSpecs:
      - groupName: gpu
        replicas: 2
        rayStartParams: {}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.46.0-gpu
```

## Use instead
```yaml
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: llm
spec:
  serveConfigV2: |
    applications:
      - name: llm
        import_path: app:deployment
  rayClusterConfig:
    gcsFaultToleranceOptions:
      redisAddress: redis.ray.svc.cluster.local:6379
      redisPassword:
        valueFrom:
          secretKeyRef:
            name: redis-password
            key: password
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.46.0
    workerGroupSpecs:
      - groupName: gpu
        replicas: 2
        rayStartParams: {}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.46.0-gpu
```

## Options
None. The profile key `productionNamespaces` (a list) raises the severity to warning.

## Fix
None: the Redis (or RocksDB volume) is infrastructure the linter cannot choose. Add
`gcsFaultToleranceOptions` with your Redis address and a `redisPassword.valueFrom`
Secret reference, as in the example.

## References
- https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/kuberay-gcs-ft.html
- https://github.com/ray-project/kuberay/blob/master/ray-operator/apis/ray/v1/raycluster_types.go
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, as_list
from ailint.core.rule import Options, Rule
from ailint.domain import ray
from ailint.domain.context import Context
from ailint.domain.extract import pod_templates, role_override, serving_engine

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="REL008",
    name="ray-head-no-gcs-fault-tolerance",
    severity=Severity.INFO,
    summary="A Ray Serve cluster has no GCS fault tolerance, so a head restart restarts every application",
    kinds=("ray.io/RayService", "ray.io/RayCluster", *ray.TEMPLATE_RULE_KINDS),
    fix=FixAvailability.NEVER,
    tags=("reliability", "ray", "serving"),
    precision="high",
)


def _serves(obj: Any) -> bool:
    if obj.kind == "RayService":
        return True
    for pod in pod_templates(obj):
        if role_override(pod) == "serving":
            return True
        if any(serving_engine(c) == "ray-serve" for c in pod.containers(include_init=False)):
            return True
    return False


def _ft_configured(obj: Any, base: tuple) -> bool:
    if str(ray.cluster_annotations(obj).get("ray.io/ft-enabled", "")).lower() == "true":
        return True
    ft = as_dict(obj.get(*base, "gcsFaultToleranceOptions"))
    if isinstance(ft.get("redisAddress"), str) and ft["redisAddress"].strip():
        return True
    return ft.get("backend") == "rocksdb"


def _head_only(obj: Any) -> bool:
    """No worker group can run a pod: the Serve replicas all live on the head, and GCS fault
    tolerance has no worker to keep serving while the head comes back."""
    return not any(g.may_scale_out() for g in ray.worker_groups(obj))


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    base = ray.cluster_spec_path(obj)
    if base is None or not _serves(obj) or _head_only(obj):
        return
    if _ft_configured(obj, base):
        return
    ns = obj.namespace_or_default
    prod = ns in [str(x) for x in as_list(ctx.profile.get("productionNamespaces"))]
    ft_path = base + ("gcsFaultToleranceOptions",)
    detail = (
        "gcsFaultToleranceOptions without redisAddress or backend rocksdb"
        if obj.has(ft_path)
        else "no gcsFaultToleranceOptions"
    )
    yield RULE.finding(
        obj,
        ft_path,
        f"{obj.kind} {obj.name} has {detail}: a head restart loses GCS state and "
        "restarts every Serve application; add gcsFaultToleranceOptions with an "
        f"external Redis{' (production namespace ' + ns + ')' if prod else ''}",
        severity=Severity.WARNING if prod else Severity.INFO,
    )
