"""
## What it does
Checks Ray clusters (RayCluster, the clusters of RayJob and RayService, and the RayCluster
template of an AIBrix RayClusterFleet) that run the in-tree autoscaler
(`enableInTreeAutoscaling: true`). A GPU worker group (its pods request
GPUs, or `rayStartParams.num-gpus` is above 0) fires when `maxReplicas` is unset (the CRD
default is 2147483647) or when `maxReplicas` × GPUs per worker exceeds the `nvidia.com/gpu`
limit of the NodePools in the files that can host it. A missing `idleTimeoutSeconds`
alone does not fire: KubeRay's autoscaler has a default idle timeout. Unbounded groups
are a warning, or info when every NodePool that can host the workers has a GPU limit.

## Why is this bad?
The Ray autoscaler scales on pending tasks and actors, not on budget: a burst of queued
work, a retry loop or a `num_gpus` typo asks for as many GPU workers as it can imagine,
and Karpenter provisions them. Without a bound, one bad job can launch dozens of
p5 instances. A `maxReplicas` above the NodePool limit is the opposite problem: the
autoscaler plans for workers that can never be scheduled.

## Example
```yaml
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: llm
spec:
  enableInTreeAutoscaling: true
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: ray-head
            image: rayproject/ray:2.46.0
  workerGroupSpecs:
    - groupName: gpu
      minReplicas: 0
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray:2.46.0-gpu
              resources:
                limits:
                  nvidia.com/gpu: 1
```

## Use instead
```yaml
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: llm
spec:
  enableInTreeAutoscaling: true
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: ray-head
            image: rayproject/ray:2.46.0
  workerGroupSpecs:
    - groupName: gpu
      minReplicas: 0
      maxReplicas: 8
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray:2.46.0-gpu
              resources:
                limits:
                  nvidia.com/gpu: 1
```

## Options
- `defaultMaxReplicas` (integer, default 4): the bound the fix writes when no NodePool
  GPU limit suggests one (it is never below the group's `replicas`/`minReplicas`).

## Fix
Unsafe, for an unset `maxReplicas`: adds `maxReplicas`, sized to the hosting NodePools'
GPU limit when there is one, else to `defaultMaxReplicas`. Review it against your budget.

## References
- https://github.com/ray-project/kuberay/blob/master/ray-operator/apis/ray/v1/raycluster_types.go
- https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/configuring-autoscaling.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Option, Options, Rule, Scope, make_fix
from ailint.domain import ray
from ailint.domain.context import Context
from ailint.domain.extract import GPU_RESOURCES, pod_accelerators, pod_templates
from ailint.domain.quantities import parse_quantity, to_int
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="OBS006",
    name="raycluster-autoscaling-unbounded",
    severity=Severity.WARNING,
    summary="A Ray autoscaler can grow a GPU worker group without a bound (maxReplicas unset or above the pool limit)",
    kinds=("ray.io/RayCluster", "ray.io/RayJob", "ray.io/RayService", *ray.TEMPLATE_RULE_KINDS),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    options={
        "defaultMaxReplicas": Option(4, "the maxReplicas the fix writes when no NodePool limit suggests one", "integer")
    },
    tags=("cost", "ray", "autoscaling"),
    precision="high",
)

MAX_INT32 = 2147483647


def _base(obj: Any) -> tuple | None:
    return ray.cluster_spec_path(obj)


def _gpus(pod: Any, group: dict[str, Any]) -> float:
    acc = pod_accelerators(pod)
    n = sum(acc.get(r, 0) for r in GPU_RESOURCES)
    if n:
        return n
    q = parse_quantity(as_dict(group.get("rayStartParams")).get("num-gpus"))
    return q or 0


def _pool_limit(pools: list) -> tuple[float | None, list]:
    """(sum of the pools' GPU limits, or None when some pool has none), pools without a limit."""
    total, unlimited = 0.0, []
    for p in pools:
        q = parse_quantity(p.limits.get("nvidia.com/gpu"))
        if q is None:
            unlimited.append(p)
        else:
            total += q
    return (None if unlimited or not pools else total), unlimited


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    base = _base(obj)
    if base is None or obj.get(*base, "enableInTreeAutoscaling") is not True:
        return
    for pod in pod_templates(obj):
        gpath = pod.group_path
        if pod.role in ("head", "submitter") or not gpath or "workerGroupSpecs" not in gpath:
            continue
        group = as_dict(obj.get(*gpath))
        gpus = _gpus(pod, group)
        if gpus <= 0:
            continue
        hosts = to_int(group.get("numOfHosts")) or 1
        per_replica = gpus * hosts
        name = group.get("groupName") or pod.role
        plural = "" if per_replica == 1 else "s"
        pools = ctx.pools_for(pod)
        limit, unlimited = _pool_limit(pools)
        max_r = to_int(group.get("maxReplicas")) if "maxReplicas" in group else None
        if max_r is None or max_r >= MAX_INT32:
            floor = max(to_int(group.get("replicas")) or 0, to_int(group.get("minReplicas")) or 0, 1)
            suggested = int(limit // per_replica) if limit else opts.get_int("defaultMaxReplicas")
            suggested = max(suggested, floor)
            shown = "unset (default 2147483647)" if max_r is None else str(max_r)
            if limit is not None:
                sev, tail = Severity.INFO, f"NodePool limits ({limit:g} GPUs) bound it for now"
            else:
                sev = Severity.WARNING
                tail = (
                    f"{ctx.describe(unlimited[0].obj)} has no nvidia.com/gpu limit"
                    if unlimited
                    else "no NodePool limit in these files bounds it"
                )
            fix = None
            if max_r is None:
                fix = make_fix(
                    f"set maxReplicas: {suggested}",
                    [edits.insert_value(obj, gpath, "maxReplicas", suggested)],
                    unsafe=True,
                )
            else:
                fix = make_fix(
                    f"set maxReplicas: {suggested}",
                    [edits.replace_value(obj, gpath + ("maxReplicas",), str(suggested))],
                    unsafe=True,
                )
            yield RULE.finding(
                obj,
                gpath + ("maxReplicas",),
                f"autoscaled GPU worker group {name} ({per_replica:g} GPU{plural} per worker) has "
                f"maxReplicas "
                f"{shown}; {tail}: set an explicit maxReplicas",
                severity=sev,
                fix=fix,
            )
        elif limit is not None and max_r * per_replica > limit:
            yield RULE.finding(
                obj,
                gpath + ("maxReplicas",),
                f"GPU worker group {name} may scale to {max_r} x {per_replica:g} = "
                f"{max_r * per_replica:g} GPUs, above the {limit:g}-GPU limit of its NodePools; the "
                "extra workers can never start",
                severity=Severity.INFO,
            )
