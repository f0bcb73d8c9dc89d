"""
## What it does
Finds an accelerator NodePool that is the only pool of the run able to host both
latency-sensitive GPU serving (Deployment, LeaderWorkerSet, RayService) and batch or
training pods (Job, CronJob, RayJob, PyTorchJob, JobSet, MPIJob), while it has no
`spec.limits`. A pod's eligible pools are the accelerator NodePools its node selectors,
affinity and tolerations allow. Batch workloads queued through Kueue
(`kueue.x-k8s.io/queue-name`) are not counted: quotas already isolate them.

## Why is this bad?
When one pool serves both, a wave of batch or training jobs takes every GPU node the pool
can launch (or every GPU the account quota allows), and the inference Deployment cannot
scale out when traffic rises: batch backfill starves serving. Separate pools per workload
family, with weights and limits, keep capacity for the latency-sensitive side.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["g6e"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          resources:
            limits:
              nvidia.com/gpu: 1
---
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: my/trainer:1.0
          resources:
            limits:
              nvidia.com/gpu: 4
```

## Use instead
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["g6e"]
  limits:
    nvidia.com/gpu: 32
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          resources:
            limits:
              nvidia.com/gpu: 1
---
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune
  labels:
    kueue.x-k8s.io/queue-name: batch
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: my/trainer:1.0
          resources:
            limits:
              nvidia.com/gpu: 4
```

## Options
None.

## Fix
None: split the pool (a serving pool and a batch pool, for example with a higher `weight`
on the serving one and `limits` on the batch one), or queue batch work through Kueue.

## References
- https://karpenter.sh/docs/concepts/nodepools/#specweight
- https://karpenter.sh/docs/concepts/nodepools/#speclimits
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity
from ailint.core.rule import Options, Rule, Scope
from ailint.domain import karpenter
from ailint.domain.context import Context
from ailint.domain.extract import is_accelerator_pod

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="KRP008",
    name="nodepool-shared-by-batch-and-serving",
    severity=Severity.INFO,
    summary="One accelerator NodePool is the only home of both GPU serving and batch work, with no limits",
    kinds=("karpenter.sh/NodePool",),
    scope=Scope.BUNDLE,
    fix=FixAvailability.NEVER,
    tags=("karpenter", "serving", "training"),
)

SERVING_KINDS = ("Deployment", "LeaderWorkerSet", "RayService")
BATCH_KINDS = ("Job", "CronJob", "RayJob", "PyTorchJob", "JobSet", "MPIJob")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def _index(ctx: Any) -> dict[str, tuple[list[str], list[str]]]:
    """Pool name -> (serving workloads, batch workloads) for which it is the only eligible
    accelerator pool. Computed once per run (`ctx.memo`: the results cache notes what it read)."""
    return ctx.memo("KRP008.pool_index", lambda: _build_index(ctx))  # type: ignore[no-any-return]


def _build_index(ctx: Any) -> dict[str, tuple[list[str], list[str]]]:
    accel = {p.name for p in ctx.nodepools if karpenter.is_accelerator_pool(p)}
    out: dict[str, tuple[list[str], list[str]]] = {}
    if not accel:
        return out
    for o, pods in ctx.pod_owners():
        if o.kind not in SERVING_KINDS + BATCH_KINDS:
            continue
        batch = o.kind in BATCH_KINDS
        if batch and (QUEUE_LABEL in o.labels or QUEUE_LABEL in o.annotations):
            continue
        for pod in pods:
            if pod.role == "submitter" or not is_accelerator_pod(pod):
                continue
            eligible = [p.name for p in ctx.pools_for(pod) if p.name in accel]
            if len(eligible) != 1:
                continue
            entry = out.setdefault(eligible[0], ([], []))
            label = ctx.describe(o)
            lst = entry[1] if batch else entry[0]
            if label not in lst:
                lst.append(label)
            break
    return out


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if karpenter.limits(obj) or not karpenter.is_accelerator_pool(obj):
        return
    serving, batch = _index(ctx).get(obj.name or "", ([], []))
    if not serving or not batch:
        return
    yield RULE.finding(
        obj,
        ("metadata", "name"),
        f"NodePool {obj.name!r} is the only pool for GPU serving ({serving[0]}"
        f"{' and more' if len(serving) > 1 else ''}) and batch ({batch[0]}"
        f"{' and more' if len(batch) > 1 else ''}) and has no limits: batch backfill can starve "
        "inference of capacity; split the pool or queue batch through Kueue",
        anchor="value",
    )
