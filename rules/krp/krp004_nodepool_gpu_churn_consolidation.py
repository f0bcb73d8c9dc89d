"""
## What it does
Finds accelerator NodePools that consolidate busy nodes quickly: `disruption.consolidationPolicy`
is `WhenEmptyOrUnderutilized` (the default) or `Balanced`, `consolidateAfter` is shorter than
5 minutes (the default is `0s`), and no always-active budget restricts the `Underutilized`
reason. Static NodePools (`spec.replicas`) never consolidate and are skipped; so is
`WhenEmpty`, which disrupts no running pod, and `consolidateAfter: Never`.

## Why is this bad?
Underutilized consolidation evicts pods to pack them onto fewer or cheaper nodes. On GPU
nodes those pods are model servers that took minutes (sometimes 30) to pull images and load
multi-GB weights: every consolidation move is a cold start, a capacity dip and often a
fresh GPU launch a few minutes later. A short `consolidateAfter` makes that happen after
every traffic dip.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu-inference
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
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
```

## Use instead
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu-inference
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
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1h
```

## Options
- `min_consolidate_after` (string, default `5m`): shorter values are reported.
- `consolidate_after` (string, default `1h`): the value the fix writes.

## Fix
Safe: sets `disruption.consolidateAfter` to `1h` (the EKS Auto Mode GPU example's value).
For serving pools, `consolidationPolicy: WhenEmpty` is the stronger alternative.

## References
- https://karpenter.sh/docs/concepts/disruption/#consolidation
- https://docs.aws.amazon.com/eks/latest/userguide/auto-accelerated.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Path, Severity
from ailint.core.rule import Option, Options, Rule, make_fix
from ailint.domain import karpenter
from ailint.domain.context import Context
from ailint.domain.durations import parse_duration
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="KRP004",
    name="nodepool-gpu-churn-consolidation",
    severity=Severity.WARNING,
    summary="An accelerator NodePool consolidates underutilized nodes within minutes, churning model servers",
    kinds=("karpenter.sh/NodePool",),
    fix=FixAvailability.SOMETIMES,
    options={
        "min_consolidate_after": Option("5m", "consolidateAfter values below this are reported", "string"),
        "consolidate_after": Option("1h", "consolidateAfter written by the fix", "string"),
    },
    tags=("karpenter", "gpu", "serving"),
)


def _underutilized_restricted(obj: Any) -> bool:
    if karpenter.reason_blocked(obj, "Underutilized"):
        return True
    return any(b.always_active and "Underutilized" in b.reasons for b in karpenter.budgets(obj))


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    info = karpenter.accelerator_info(obj)
    if info is None or not karpenter.consolidates_running_pods(obj) or _underutilized_restricted(obj):
        return
    threshold = parse_duration(opts.get_str("min_consolidate_after"))
    if threshold is None:
        threshold = 300.0
    secs, raw = karpenter.consolidate_after(obj)
    if secs is None or secs >= threshold:
        return
    target = opts.get_str("consolidate_after")
    if parse_duration(target) is None:
        target = "1h"
    policy = karpenter.consolidation_policy(obj)
    policy_src = (
        "consolidationPolicy "
        + policy
        + ("" if obj.has(("spec", "disruption", "consolidationPolicy")) else " (default)")
    )
    after = f"consolidateAfter {raw}" if raw is not None else "consolidateAfter unset (default 0s)"
    dpath = ("spec", "disruption")
    where: Path
    if raw is not None:
        where = dpath + ("consolidateAfter",)
        edit = edits.replace_value(obj, where, target)
    elif isinstance(obj.get(*dpath), dict) and obj.get(*dpath) and not edits.is_flow(obj, dpath):
        where = dpath
        edit = edits.insert_key(obj, dpath, "consolidateAfter", target)
    elif obj.has(dpath):
        where, edit = dpath, None
    else:
        where = ("spec",)
        edit = edits.insert_key(
            obj, ("spec",), "disruption", [" " * edits.indent_unit(obj) + f"consolidateAfter: {target}"]
        )
    yield RULE.finding(
        obj,
        where,
        f"NodePool {obj.name!r} consolidates busy accelerator nodes ({policy_src}, {after}): model "
        f"servers are evicted and reload their weights after every dip; use {target} or WhenEmpty",
        fix=make_fix(f"set consolidateAfter: {target}", [edit]),
    )
