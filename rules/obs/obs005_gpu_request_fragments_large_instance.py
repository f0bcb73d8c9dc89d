"""
## What it does
Flags a workload that requests k GPUs (or Neuron devices) per pod while every instance
type its pods can land on (the target instance set: its selectors intersected with the
NodePools in the files) has more than k, and nothing else can use the rest: its own
`replicas` × k is below the smallest node's count, no HPA or KEDA object scales it, and no
other workload in the files requests the same accelerator on the same NodePools. Info,
or a warning when 75% or more of the node's accelerators would sit idle.

## Why is this bad?
Karpenter launches whatever type the requirements allow; if a pool offers only
p4d/p5.48xlarge, a 1-GPU pod gets an 8-GPU node and the other seven are billed while
idle, on the most expensive instances in the region. Smaller sizes of the same
accelerator (p5.4xlarge, g6e.xlarge) or a pool shared with other GPU work fix the
waste.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: h100
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: node.kubernetes.io/instance-type
          operator: In
          values: ["p5.48xlarge"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: embedder
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: tei
          image: ghcr.io/huggingface/text-embeddings-inference:1.5
          resources:
            limits:
              nvidia.com/gpu: 1
```

## Use instead
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: h100
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: node.kubernetes.io/instance-type
          operator: In
          values: ["p5.4xlarge", "p5.48xlarge"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: embedder
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: tei
          image: ghcr.io/huggingface/text-embeddings-inference:1.5
          resources:
            limits:
              nvidia.com/gpu: 1
```

## Options
None.

## Fix
None: add smaller sizes of the accelerator to the NodePool (for example p5.4xlarge or
g6e.xlarge), or share the pool with other GPU workloads.

## References
- https://karpenter.sh/docs/reference/instance-types/
- https://aws.amazon.com/ec2/instance-types/p5/
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Options, Rule, Scope
from ailint.domain import instances
from ailint.domain.context import Context
from ailint.domain.extract import GPU_RESOURCES, POD_KINDS, pod_accelerators, pod_templates

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="OBS005",
    name="gpu-request-fragments-large-instance",
    severity=Severity.INFO,
    summary="A small GPU request can only land on large multi-GPU instances, leaving most accelerators idle",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.NEVER,
    tags=("cost", "gpu", "karpenter"),
    precision="medium",
)


def _need(pod: Any) -> tuple[str, float]:
    acc = pod_accelerators(pod)
    gpus = sum(acc.get(r, 0) for r in GPU_RESOURCES)
    if gpus:
        return "gpu", gpus
    return "neuron", acc.get("aws.amazon.com/neuron", 0)


def _capacity(t: Any, kind: str) -> int:
    if kind == "gpu":
        return t.count if t.is_gpu else 0
    return t.count if t.is_neuron else 0


def _autoscaled(obj: Any, ctx: Any) -> bool:
    ns = obj.namespace_or_default
    for h in ctx.of_kind("HorizontalPodAutoscaler", namespace=ns):
        ref = as_dict(h.get("spec", "scaleTargetRef"))
        if ref.get("kind") == obj.kind and ref.get("name") == obj.name:
            return True
    for s in ctx.of_kind("ScaledObject", namespace=ns):
        ref = as_dict(s.get("spec", "scaleTargetRef"))
        if ref.get("name") == obj.name and ref.get("kind", "Deployment") == obj.kind:
            return True
    return False


def _shared(obj: Any, pod: Any, kind: str, pools: set[str], types: set[str], ctx: Any) -> bool:
    """Another workload of the run asks for the same accelerator where this one lands."""
    for o, other in ctx.pods_in(None):
        if o is obj and other.spec_path == pod.spec_path:
            continue
        k2, n2 = _need(other)
        if n2 <= 0 or k2 != kind:
            continue
        other_pools = {p.name for p in ctx.pools_for(other)}
        if pools and other_pools & pools:
            return True
        if not pools:
            t2 = ctx.target_types(other)
            if t2 is None or t2 & types:
                return True
    return False


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "DaemonSet":
        return
    for pod in pod_templates(obj):
        kind, k = _need(pod)
        if k <= 0 or pod.replicas is None:
            continue
        types = ctx.target_types(pod)
        if not types:
            continue
        caps = {t: _capacity(instances.get(t), kind) for t in types if instances.get(t)}
        hostable = {t: c for t, c in caps.items() if c >= k}
        if not hostable or min(hostable.values()) <= k:
            continue
        smallest = min(hostable.values())
        used = pod.replicas * k
        if used >= smallest or _autoscaled(obj, ctx):
            continue
        pools = {p.name for p in ctx.pools_for(pod)}
        if _shared(obj, pod, kind, pools, set(hostable), ctx):
            continue
        idle = smallest - used
        frac = idle / smallest
        unit = "GPU" if kind == "gpu" else "Neuron device"
        names = ", ".join(sorted(hostable)[:3]) + ("…" if len(hostable) > 3 else "")
        yield RULE.finding(
            obj,
            pod.spec_path,
            f"{pod.replicas} pod(s) x {k:g} {unit} can only land on {names} "
            f"({smallest} per node): {idle:g} of {smallest} {unit}s sit idle; add "
            "smaller sizes or share the pool",
            severity=Severity.WARNING if frac >= 0.75 else Severity.INFO,
        )
