"""
## What it does
Checks that a RayCluster, RayJob or RayService with worker groups keeps work off its head:
the head's `rayStartParams` (or its group-level `resources` map) must set `num-cpus: "0"`,
and `num-gpus: "0"` when the head container requests GPUs. An explicit non-zero
`num-cpus` is taken as a deliberate choice and not reported. The RayCluster template of an
AIBrix `RayClusterFleet` (or `RayClusterReplicaSet`) is checked the same way.

A head whose own container runs a model server (`vllm serve`, SGLang, ... with Ray as the
engine's executor) is not reported: the head is then a rank of the engine and must keep
its GPUs (vLLM refuses to start when Ray allocates no GPU on the driver node).

Severity: warning for a RayService (a head restart interrupts serving); info for a
RayCluster, RayJob or fleet.

## Why is this bad?
Without `num-cpus`, KubeRay passes the head container's CPU limit (or request) to
`ray start`, or Ray counts the node's CPUs; the same goes for GPUs. Ray then schedules
tasks, actors, Train workers and Serve replicas on the head. The head also runs the GCS,
the dashboard and the autoscaler: an OOM or restart caused by a workload takes the whole
cluster's control plane down with it, and on RayService drops traffic.

## Example
```yaml
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: train
spec:
  headGroupSpec:
    rayStartParams:
      dashboard-host: 0.0.0.0
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
kind: RayCluster
metadata:
  name: train
spec:
  headGroupSpec:
    rayStartParams:
      dashboard-host: 0.0.0.0
      num-cpus: "0"
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
None.

## Fix
Safe: adds `num-cpus: "0"` (and `num-gpus: "0"` when the head has GPUs) to the head's
`rayStartParams`, or `CPU: "0"` / `GPU: "0"` to the head's `resources` map when that map
is used (KubeRay rejects a group that sets both).

## References
- https://github.com/ray-project/kuberay/blob/master/docs/guidance/rayStartParams.md
- https://docs.ray.io/en/latest/cluster/vms/user-guides/large-cluster-best-practices.html#configuring-the-head-node
- https://github.com/vllm-project/vllm/blob/main/vllm/executor/ray_distributed_executor.py
- https://github.com/vllm-project/aibrix/blob/main/api/orchestration/v1alpha1/rayclusterfleet_types.go
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity
from ailint.core.rule import Options, Rule, make_fix
from ailint.domain import ray
from ailint.domain.context import Context
from ailint.domain.extract import flag_value
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="TRN004",
    name="raycluster-head-accepts-workloads",
    severity=Severity.INFO,
    summary='A Ray head with worker groups does not set num-cpus: "0", so workloads land on the head',
    kinds=("RayCluster", "RayJob", "RayService", *ray.TEMPLATE_RULE_KINDS),
    fix=FixAvailability.SOMETIMES,
    tags=("ray", "reliability"),
)


def _fix(obj: Any, head: ray.RayGroup, missing: dict[str, str]) -> Fix | None:
    if head.ray_resources:
        where = head.path + ("resources",)
        keys = {"num-cpus": "CPU", "num-gpus": "GPU"}
        add = {keys[k]: v for k, v in missing.items()}
        current = head.ray_resources
    else:
        where = head.path + ("rayStartParams",)
        add = dict(missing)
        current = head.ray_start_params
    title = "add " + ", ".join(f'{k}: "{v}"' for k, v in add.items()) + f" to the head's {where[-1]}"
    present = obj.get(*where)
    if isinstance(present, dict) and present and not edits.is_flow(obj, where):
        es = [edits.insert_key(obj, where, k, edits.scalar(v)) for k, v in add.items()]
        if len(es) == 2 and es[0] is not None and es[1] is not None:
            from ailint.core.model import Edit

            es = [Edit(es[0].start, es[0].end, es[0].content + es[1].content)]
        return make_fix(title, es if all(es) else [])
    if isinstance(present, dict):  # flow style or empty: rewrite inline
        merged = {**{str(k): v for k, v in current.items()}, **add}
        return make_fix(title, [edits.replace_value(obj, where, edits.inline(merged))])
    if obj.has(where):
        return None  # null or a scalar: leave it to a human
    return make_fix(title, [edits.insert_value(obj, head.path, where[-1], add)])


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    head = ray.head_group(obj)
    workers = ray.worker_groups(obj)
    if head is None or not workers or ray.head_model_server(head):
        return
    missing: dict[str, str] = {}
    cpus = ray.ray_param(head, "num-cpus")
    rc = head.ray_container()
    if cpus is None and rc is not None:  # a hand-written `ray start` (ray.io/overwrite-container-cmd)
        cpus = flag_value(rc.tokens, "--num-cpus")
    if cpus is None:
        missing["num-cpus"] = "0"
    head_gpus = head.gpus_per_pod()
    gpus = ray.ray_param(head, "num-gpus")
    if head_gpus > 0 and gpus is None:
        missing["num-gpus"] = "0"
    if not missing:
        return
    where = head.path + ("rayStartParams",)
    if head.ray_resources:
        where = head.path + ("resources",)
    elif not obj.has(where):
        where = head.path
    what = " and ".join(f'{k}: "0"' for k in missing)
    on = "Serve replicas" if obj.kind == "RayService" else "tasks, actors and Train workers"
    gpu_note = f" (the head has {head_gpus:g} GPU{'s' if head_gpus != 1 else ''})" if "num-gpus" in missing else ""
    sev = Severity.WARNING if obj.kind == "RayService" else Severity.INFO
    yield RULE.finding(
        obj,
        where,
        f"the head does not set {what}{gpu_note}: {on} can be scheduled on it, and a head "
        f"OOM or restart takes the GCS down with {len(workers)} worker group"
        f"{'s' if len(workers) != 1 else ''}",
        severity=sev,
        fix=_fix(obj, head, missing),
    )
