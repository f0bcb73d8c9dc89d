"""
## What it does
Finds pod templates that target accelerator nodes but cannot tolerate the taints those
nodes carry. A pod targets accelerator nodes when it requests an accelerator
(`nvidia.com/gpu`, `aws.amazon.com/neuron*`, `vpc.amazonaws.com/efa`) or when every
required node-selection term picks accelerator labels (`karpenter.k8s.aws/instance-gpu-*`,
`eks.amazonaws.com/instance-accelerator-*`, a GPU `node.kubernetes.io/instance-type` or
instance family, `nvidia.com/gpu.present`, or `karpenter.sh/nodepool` naming a GPU pool).
It fires when every NodePool of the run that could launch such a node has a `NoSchedule`
or `NoExecute` template taint that no toleration matches.

Tolerations are matched as the scheduler does (a missing `operator` is `Equal`, `Exists`
with no key matches every taint, an empty effect matches every effect). With the
`extendedResourceToleration` profile flag (on by default, as on EKS) each requested
extended resource adds the toleration `{key: <resource>, operator: Exists, effect:
NoSchedule}`, so a GPU pod tolerates `nvidia.com/gpu:NoSchedule` by itself. What still
fires: taints with other keys (`dedicated=ml`, tenant taints), `NoExecute` taints, and
pods that select GPU nodes without requesting a GPU (a DCGM exporter DaemonSet, a CPU Ray
head pinned to the GPU pool). `startupTaints` and run-time taints (`node.kubernetes.io/*`,
`karpenter.sh/*`) are ignored.

Without a NodePool in the run that could host the pod, the rule fires (as a warning) only
for taints listed in the profile key `gpuNodeTaints` (`key[=value]:effect`).

## Why is this bad?
The pod stays Pending: Karpenter will not launch a node whose taints the pod does not
tolerate, and the scheduler will not place it on existing GPU nodes. A DaemonSet runs on no
GPU node at all, so GPU metrics or device plugins silently go missing. A `NoExecute` taint
evicts the pod even where it was placed.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["g6e"]
      taints:
        - key: dedicated
          value: ml-inference
          effect: NoSchedule
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
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["g6e"]
      taints:
        - key: dedicated
          value: ml-inference
          effect: NoSchedule
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
      tolerations:
        - key: dedicated
          operator: Exists
          effect: NoSchedule
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          resources:
            limits:
              nvidia.com/gpu: 1
```

## Options
None. The cluster profile keys `extendedResourceToleration` (default true) and
`gpuNodeTaints` (default `[]`) change what the rule knows about the cluster.

## Fix
Adds a toleration for each untolerated taint, appended to `tolerations` or as a new
`tolerations` list in the pod spec: `{key, operator: Exists, effect}` for accelerator taints
and taints without a value; `{key, operator: Equal, value, effect}` for other taints, so a
tenant or dedicated taint is not tolerated for every value of its key. Safe when the
taint is an accelerator taint (its key or value names a GPU or Neuron device) or the pod
pins that NodePool; unsafe otherwise (a tenant or dedicated taint is a decision to review),
and unsafe when several NodePools block the pod with different taints (the fix tolerates
the first one's).

## References
- https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/
- https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#extendedresourcetoleration
- https://karpenter.sh/docs/concepts/scheduling/
- https://docs.aws.amazon.com/eks/latest/userguide/platform-versions.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity, as_list
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import accelerators
from ailint.domain.context import Context
from ailint.domain.extract import (
    POD_KINDS,
    effective_tolerations,
    parse_taint,
    pod_accelerators,
    pod_templates,
    untolerated,
)
from ailint.domain.kserve import preset_supplies

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="GPU001",
    name="gpu-taint-not-tolerated",
    severity=Severity.ERROR,
    summary="A pod targets accelerator nodes whose NodePool taints it does not tolerate",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("gpu", "scheduling", "karpenter"),
    precision="high",
)


def _where(pod: Any) -> str:
    if not pod.role:
        return "pod"
    if pod.obj.kind in ("RayCluster", "RayJob", "RayService") and pod.role not in ("head", "submitter"):
        return f"worker group {pod.role}"
    return f"{pod.role} pod"


def _taints_text(taints: list[dict[str, Any]]) -> str:
    return ", ".join(accelerators.taint_text(t) for t in taints)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    ert = ctx.profile.flag("extendedResourceToleration")
    if not as_list(ctx.profile.get("gpuNodeTaints")) and not any(p.tolerable_taints for p in ctx.nodepools):
        return  # no taint anywhere the rule could know of
    for pod in pod_templates(obj):
        if pod.spec.get("nodeName"):
            continue  # bound by hand: the scheduler and Karpenter are not involved
        if "tolerations" not in pod.spec and preset_supplies(pod, "tolerations"):
            continue  # an LLMInferenceService config the run may not show can add them
        why = accelerators.accelerator_target(pod, ctx)
        if not why:
            continue
        tols = effective_tolerations(pod, ert)
        requested = bool(pod_accelerators(pod))
        pools = accelerators.hosting_pools(ctx, pod, needs_accelerators=requested)
        if pools:
            blocked: list[tuple[Any, list[dict[str, Any]]]] = []
            for pool in pools:
                bad = untolerated(pool.tolerable_taints, tols)
                if not bad:
                    blocked = []
                    break
                blocked.append((pool, bad))
            if blocked:
                yield _pool_finding(obj, pod, why, blocked, ert, ctx)
            continue
        profile_taints = [
            t
            for t in (parse_taint(str(s)) for s in as_list(ctx.profile.get("gpuNodeTaints")))
            if t and t.get("key") and t.get("effect") in ("NoSchedule", "NoExecute")
        ]
        bad = untolerated(profile_taints, tols)
        if bad:
            msg = (
                f"{_where(pod)} {why} but does not tolerate "
                f"{_taints_text(bad)}, which the profile's gpuNodeTaints puts on GPU nodes"
            )
            yield RULE.finding(
                obj,
                pod.path("tolerations"),
                msg,
                severity=Severity.WARNING,
                fix=_fix(obj, pod, bad, unsafe=False, title_pool=None),
            )


def _pool_finding(obj: Any, pod: Any, why: str, blocked: list, ert: bool, ctx: Any) -> Finding:
    first_pool, first_bad = blocked[0]
    if len(blocked) == 1:
        taint = "taint" if len(first_bad) == 1 else "taints"
        where = f"does not tolerate the {taint} {_taints_text(first_bad)} of {ctx.describe(first_pool.obj)}"
    else:
        listed = "; ".join(f"{ctx.describe(p.obj)}: {_taints_text(b)}" for p, b in blocked[:3])
        more = f" and {len(blocked) - 3} more" if len(blocked) > 3 else ""
        where = f"every NodePool that could host it has a taint it does not tolerate: {listed}{more}"
    note = ""
    if ert and any(t.get("key") in _requested(pod) and t.get("effect") == "NoExecute" for t in first_bad):
        note = " (ExtendedResourceToleration only adds NoSchedule tolerations)"
    msg = f"{_where(pod)} {why} but {where}{note}"
    same = all(
        sorted(map(accelerators.taint_text, b)) == sorted(map(accelerators.taint_text, first_bad)) for _, b in blocked
    )
    safe = same and (
        all(accelerators.is_accelerator_taint(t) for t in first_bad)
        or all(accelerators.pins_pool(pod, p) for p, _ in blocked)
    )
    fix = _fix(obj, pod, first_bad, unsafe=not safe, title_pool=None if same else first_pool.name)
    return RULE.finding(obj, pod.path("tolerations"), msg, fix=fix)


def _requested(pod: Any) -> set[str]:
    return set(pod_accelerators(pod))


def _fix(obj: Any, pod: Any, taints: list[dict[str, Any]], *, unsafe: bool, title_pool: str | None) -> Fix | None:
    items, seen = [], set()
    for t in taints:
        item = accelerators.toleration_item(t)
        k = (item["key"], item.get("value"), item["effect"])
        if k not in seen:
            seen.add(k)
            items.append(item)
    if not items:
        return None
    edit = accelerators.add_list_items(obj, pod.spec_path, "tolerations", items)
    what = ", ".join(f"{i['key']}" + (f"={i['value']}" if "value" in i else "") + f":{i['effect']}" for i in items)
    title = f"tolerate {what}" + (f" (NodePool {title_pool})" if title_pool else "")
    return make_fix(title, [edit], unsafe=unsafe)
