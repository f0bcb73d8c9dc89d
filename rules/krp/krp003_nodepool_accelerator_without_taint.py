"""
## What it does
Finds Karpenter NodePools that can launch accelerator instances but whose
`spec.template.spec.taints` has no `NoSchedule` (or `NoExecute`) taint. `startupTaints` do
not count: they are removed once the node is ready.

## Why is this bad?
Without a taint, the scheduler places any pod on the GPU nodes: system pods, batch jobs,
CPU-only services. They take the CPU and memory the GPU pods need, keep otherwise empty GPU
nodes alive (consolidation cannot remove a node with pods), and can make Karpenter launch
GPU instances for CPU work when the pool is the only fit.

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
          values: ["g5", "g6"]
  limits:
    nvidia.com/gpu: 32
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
          values: ["g5", "g6"]
      taints:
        - key: nvidia.com/gpu
          value: "true"
          effect: NoSchedule
  limits:
    nvidia.com/gpu: 32
```

## Options
None.

## Fix
Adds the taint `{key: nvidia.com/gpu, value: "true", effect: NoSchedule}`
(`aws.amazon.com/neuron` for Inferentia/Trainium pools). Safe for NVIDIA-only pools when the
profile's `extendedResourceToleration` is on (EKS: pods that request `nvidia.com/gpu` get the
matching toleration automatically); unsafe otherwise, and for pools that also allow CPU types
(split those instead). Pods that target the pool without requesting the resource (Ray heads,
DaemonSets) need a toleration: see `gpu-taint-not-tolerated` (GPU001).

## References
- https://karpenter.sh/docs/concepts/scheduling/#taints-and-tolerations
- https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/#example-use-cases
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity
from ailint.core.rule import Options, Rule, make_fix
from ailint.domain import karpenter
from ailint.domain.context import Context
from ailint.fix import edits

RULE = Rule(
    code="KRP003",
    name="nodepool-accelerator-without-taint",
    severity=Severity.WARNING,
    summary="An accelerator NodePool has no NoSchedule taint, so CPU-only pods land on GPU nodes",
    kinds=("karpenter.sh/NodePool",),
    fix=FixAvailability.SOMETIMES,
    tags=("karpenter", "cost", "gpu"),
)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    info = karpenter.accelerator_info(obj)
    if info is None or karpenter.scheduling_taints(obj):
        return
    key = info.resource
    taint = {"key": key, "value": "true", "effect": "NoSchedule"}
    tpath = ("spec", "template", "spec", "taints")
    current = obj.get(*tpath)
    if isinstance(current, list) and current and not edits.is_flow(obj, tpath):
        edit = edits.append_item(obj, tpath, taint)
    elif isinstance(current, list):
        edit = edits.replace_value(obj, tpath, edits.inline([*current, taint]))
    elif obj.has(tpath) or not isinstance(obj.get("spec", "template", "spec"), dict):
        edit = None
    else:
        edit = edits.insert_value(obj, ("spec", "template", "spec"), "taints", [taint])
    ert = ctx.profile.flag("extendedResourceToleration") if ctx is not None else True
    safe = ert and info.only_accelerators and info.vendors <= {"nvidia", "amd"} and bool(info.vendors)
    msg = (
        f"NodePool {obj.name!r} can launch accelerator nodes ({info.reason}) but has no NoSchedule taint: "
        "CPU-only pods land there and block consolidation"
    )
    if not info.only_accelerators:
        msg += "; it also allows CPU types: split it into a CPU and an accelerator pool"
    where = tpath if obj.has(tpath) else ("spec", "template", "spec")
    yield RULE.finding(obj, where, msg, fix=make_fix(f"add taint {key}=true:NoSchedule", [edit], unsafe=not safe))
