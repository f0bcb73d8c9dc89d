"""
## What it does
Flags a VerticalPodAutoscaler whose `targetRef` names an accelerator workload in the files
(one that requests `nvidia.com/gpu`, Neuron or EFA) while `updatePolicy.updateMode` lets
it evict pods: `Recreate`, `Auto`, `InPlaceOrRecreate`, or no `updateMode` at all (the
API default is `Recreate`). `Off` and `Initial` never evict. VPAs whose every container
policy has `mode: Off` are skipped.

Severity: info for `InPlaceOrRecreate` (it resizes in place when it can, and evicts only
when it cannot); warning otherwise.

## Why is this bad?
VPA applies a new recommendation by evicting the pod. For a model server that means the
weights reload (minutes to tens of minutes), the KV cache is lost, and Karpenter may have
to provision a fresh GPU node for the replacement, while traffic shifts to fewer
replicas. VPA also only sizes CPU and memory, so nothing about the GPU gets better.
`InPlaceOrRecreate` resizes in place when it can, but still falls back to eviction.
Use `updateMode: "Off"` and apply recommendations in a maintenance window.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          resources:
            limits:
              nvidia.com/gpu: 1
---
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: vllm
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: vllm
  updatePolicy:
    updateMode: Auto
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          resources:
            limits:
              nvidia.com/gpu: 1
---
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: vllm
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: vllm
  updatePolicy:
    updateMode: "Off"
```

## Options
None.

## Fix
Safe: sets `updatePolicy.updateMode: "Off"` (recommendations only), adding `updatePolicy`
when it is missing.

## References
- https://github.com/kubernetes/autoscaler/blob/master/vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1/types.go
- https://kubernetes.io/docs/concepts/workloads/autoscaling/vertical-pod-autoscale/
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Path, Severity, as_dict, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.extract import is_accelerator_pod, pod_templates
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="REL009",
    name="vpa-evicts-gpu-pods",
    severity=Severity.WARNING,
    summary="A VerticalPodAutoscaler may evict accelerator pods to resize them, forcing model reloads",
    kinds=("autoscaling.k8s.io/VerticalPodAutoscaler",),
    scope=Scope.BUNDLE,
    fix=FixAvailability.ALWAYS,
    tags=("reliability", "autoscaling", "gpu"),
    precision="high",
)

_EVICTING = ("Recreate", "Auto", "InPlaceOrRecreate")


def _target(obj: Any, ctx: Any) -> Any:
    ref = as_dict(obj.get("spec", "targetRef"))
    kind, name = ref.get("kind"), ref.get("name")
    if not isinstance(kind, str) or not isinstance(name, str):
        return None
    return ctx.named(kind, name, namespace=obj.namespace_or_default, near=obj)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    policies = [p for _, p in iter_dicts(obj.get("spec", "resourcePolicy", "containerPolicies"))]
    if (
        policies
        and all(p.get("mode") == "Off" for p in policies)
        and any(p.get("containerName") == "*" for p in policies)
    ):
        return
    mode = obj.get("spec", "updatePolicy", "updateMode")
    if mode is not None and mode not in _EVICTING:
        return
    target = _target(obj, ctx)
    if target is None or not any(is_accelerator_pod(p) for p in pod_templates(target)):
        return
    shown = mode or "unset (defaults to Recreate)"
    sev = Severity.INFO if mode == "InPlaceOrRecreate" else Severity.WARNING
    path: Path
    if mode is not None:
        path = ("spec", "updatePolicy", "updateMode")
        edit = edits.replace_scalar(obj, path, "Off")
    elif isinstance(obj.get("spec", "updatePolicy"), dict) and obj.get("spec", "updatePolicy"):
        path = ("spec", "updatePolicy")
        edit = edits.insert_value(obj, path, "updateMode", "Off")
    else:
        path = ("spec", "updatePolicy")
        edit = (
            edits.replace_value(obj, path, '{updateMode: "Off"}')
            if obj.has(path)
            else edits.insert_value(obj, ("spec",), "updatePolicy", {"updateMode": "Off"})
        )
    tail = (
        "it resizes in place when it can but still falls back to eviction"
        if mode == "InPlaceOrRecreate"
        else "each resize evicts the pod and reloads the model"
    )
    yield RULE.finding(
        obj,
        path,
        f"VPA updateMode {shown} on accelerator workload {ctx.describe(target)}: "
        f'{tail}; use updateMode "Off" (recommendations only)',
        severity=sev,
        fix=make_fix('set updateMode: "Off"', [edit]),
    )
