"""
## What it does
Finds Karpenter NodePools that can launch accelerator instances (accelerator families,
categories or types, `instance-gpu-*`/`instance-accelerator-*` requirements admitting devices,
or an accelerator taint) with no `spec.limits`, or with limits that do not bound the
accelerators (`nvidia.com/gpu`, `amd.com/gpu`, `aws.amazon.com/neuron`). Static NodePools
(`spec.replicas`) are skipped: their size is fixed and they accept only `limits.nodes`.

## Why is this bad?
Without a limit, a burst of pending pods, a runaway autoscaler or a bad rollout can launch
GPU nodes until the account quota stops it, and GPU hours are the largest line of the bill.
CPU and memory limits alone do not bound GPU spend: one p5.48xlarge has 8 GPUs and only 192
vCPUs.

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
    cpu: "1000"
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
  limits:
    cpu: "1000"
    nvidia.com/gpu: 64
```

## Options
- `gpu_limit` (integer, default unset): the accelerator limit the fix writes. When it is set,
  the fix is safe; when unset, the fix writes 100 and is unsafe (choose the number).

## Fix
Adds `<resource>: N` to `spec.limits` (creating `limits` when missing), with the resource
matching the pool (`nvidia.com/gpu`, or `aws.amazon.com/neuron` for Inferentia/Trainium).
Safe when `gpu_limit` is configured, unsafe otherwise.

## References
- https://karpenter.sh/docs/concepts/nodepools/#speclimits
- https://awslabs.github.io/ai-on-eks/ (EKS AI/ML guide, Spot Instances for Inference: `limits: nvidia.com/gpu: 100`)
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity
from ailint.core.rule import Option, Options, Rule, make_fix
from ailint.domain import karpenter
from ailint.domain.context import Context
from ailint.fix import edits

RULE = Rule(
    code="KRP002",
    name="nodepool-accelerator-without-limits",
    severity=Severity.WARNING,
    summary="An accelerator NodePool has no GPU/Neuron limit, so GPU spend is unbounded",
    kinds=("karpenter.sh/NodePool",),
    fix=FixAvailability.SOMETIMES,
    options={"gpu_limit": Option(None, "accelerator limit written by the fix (unset: 100, unsafe)", "integer")},
    tags=("karpenter", "cost", "gpu"),
)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    info = karpenter.accelerator_info(obj)
    if info is None or karpenter.is_static(obj) or karpenter.accelerator_limit(obj):
        return
    configured = opts.get_optional_int("gpu_limit")
    n = 100 if configured is None else configured
    unsafe = configured is None
    res = info.resource
    limits = obj.get("spec", "limits")
    title = f"add {res}: {n} to spec.limits"
    if isinstance(limits, dict) and limits and not edits.is_flow(obj, ("spec", "limits")):
        edit = edits.insert_key(obj, ("spec", "limits"), res, str(n))
    elif isinstance(limits, dict):
        edit = edits.replace_value(obj, ("spec", "limits"), edits.inline({**limits, res: n}))
    elif obj.has(("spec", "limits")):
        edit = None
    else:
        edit = edits.insert_value(obj, ("spec",), "limits", {res: n})
    have = (
        f"its limits ({', '.join(str(k) for k in limits)}) do not bound {res}"
        if isinstance(limits, dict) and limits
        else "it has no spec.limits"
    )
    where = ("spec", "limits") if obj.has(("spec", "limits")) else ("spec",)
    yield RULE.finding(
        obj,
        where,
        f"NodePool {obj.name!r} can launch accelerator nodes ({info.reason}) but {have}: "
        "nothing caps how many it starts",
        fix=make_fix(title, [edit], unsafe=unsafe),
    )
