"""
## What it does
Flags a RayService with GPU worker groups whose `spec.upgradeStrategy` is unset or
`type: NewCluster`. Info by default; a warning when the `nvidia.com/gpu` limits of the
NodePools in the files that host its GPU workers are below twice the cluster's GPUs.
Skipped when a KubeRay operator Deployment in the files sets `ENABLE_ZERO_DOWNTIME=false`.

## Why is this bad?
KubeRay upgrades a RayService with zero downtime by default ("If no fields are set, zero
downtime upgrade by default is enabled"): any change to `rayClusterConfig` (an image tag,
a resource, an env var) builds a complete second RayCluster and switches traffic only when
it is healthy. That needs twice the GPUs for the length of the upgrade. Under a NodePool
limit or quota the new cluster stays Pending and the upgrade never finishes; without one,
the GPU bill doubles for the duration. `NewClusterWithIncrementalUpgrade` (KubeRay 1.5+,
feature gate, Gateway API) scales the new cluster up as the old one scales down.

## Example
```yaml
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: llm
spec:
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
        replicas: 4
        rayStartParams: {}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.46.0-gpu
                resources:
                  limits:
                    nvidia.com/gpu: 8
```

## Use instead
```yaml
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: llm
spec:
  upgradeStrategy:
    type: NewClusterWithIncrementalUpgrade
    clusterUpgradeOptions:
      gatewayClassName: istio
      maxSurgePercent: 25
      stepSizePercent: 25
      intervalSeconds: 60
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
        replicas: 4
        rayStartParams: {}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.46.0-gpu
                resources:
                  limits:
                    nvidia.com/gpu: 8
```

## Options
- `minGpus` (integer, default 4): below this many GPUs the cluster is small enough that
  only the NodePool-limit warning is reported.

## Fix
None: the incremental strategy needs a Gateway class and its KubeRay
feature gate, and `type: None` stops cluster upgrades altogether; both are choices to make
with a maintenance plan.

## References
- https://github.com/ray-project/kuberay/blob/master/ray-operator/apis/ray/v1/rayservice_types.go
- https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/rayservice-incremental-upgrade.html
- https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/rayservice.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Option, Options, Rule, Scope
from ailint.domain.context import Context
from ailint.domain.extract import GPU_RESOURCES, pod_accelerators, pod_templates
from ailint.domain.quantities import parse_quantity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="OBS007",
    name="rayservice-upgrade-needs-double-gpus",
    severity=Severity.INFO,
    summary="A GPU RayService upgrades by building a second full cluster, needing twice the GPUs",
    kinds=("ray.io/RayService",),
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.NEVER,
    options={
        "minGpus": Option(
            4, "clusters with fewer GPUs get the info finding only when a NodePool limit blocks the upgrade", "integer"
        )
    },
    tags=("cost", "ray", "serving"),
    precision="high",
)


def _zero_downtime_disabled(ctx: Any) -> bool:
    for d in ctx.of_kind("Deployment"):
        for pod in pod_templates(d):
            for c in pod.containers(include_init=False):
                if "kuberay" in c.image and "operator" in c.image:
                    v = c.env_value("ENABLE_ZERO_DOWNTIME")
                    if v is not None and v.strip().lower() == "false":
                        return True
    return False


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    strategy = as_dict(obj.get("spec", "upgradeStrategy")).get("type")
    if strategy not in (None, "NewCluster"):
        return
    total = 0.0
    pools: dict[str, Any] = {}
    for pod in pod_templates(obj):
        gpus = sum(pod_accelerators(pod).get(r, 0) for r in GPU_RESOURCES)
        if gpus <= 0:
            continue
        n = pod.replicas if pod.replicas is not None else 1
        total += gpus * max(n, 1)
        for p in ctx.pools_for(pod):
            pools[p.name] = p
    if total <= 0 or ctx.memo("OBS007.zero_downtime_disabled", lambda: _zero_downtime_disabled(ctx)):
        return
    path = ("spec", "upgradeStrategy", "type") if strategy else ("spec", "upgradeStrategy")
    limits = [parse_quantity(p.limits.get("nvidia.com/gpu")) for p in pools.values()]
    what = "upgradeStrategy NewCluster" if strategy else "no upgradeStrategy (default NewCluster)"
    known = [q for q in limits if q is not None]
    if pools and len(known) == len(limits) and sum(known) < 2 * total:
        yield RULE.finding(
            obj,
            path,
            f"RayService {obj.name} ({total:g} GPUs) has {what}: an upgrade needs "
            f"{2 * total:g} GPUs but its NodePools allow {sum(known):g} "
            "(nvidia.com/gpu limit), so it stalls; use NewClusterWithIncrementalUpgrade",
            severity=Severity.WARNING,
        )
        return
    if total < opts.get_int("minGpus"):
        return
    yield RULE.finding(
        obj,
        path,
        f"RayService {obj.name} ({total:g} GPUs) has {what}: each cluster change runs "
        f"a second cluster, {2 * total:g} GPUs until the switch; consider "
        "NewClusterWithIncrementalUpgrade",
    )
