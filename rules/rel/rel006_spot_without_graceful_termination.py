"""
## What it does
Checks serving, training and accelerator pods that can run on Spot capacity: a NodePool in the files that could host them
allows `karpenter.sh/capacity-type: spot`, or the pod selects or prefers Spot itself
(`karpenter.sh/capacity-type` or the managed node group label
`eks.amazonaws.com/capacityType`). On such pods it flags:
- serving pods without a `preStop` hook on the serving container, or with
  `terminationGracePeriodSeconds` of 30 or less (30 is the default), which cut long
  generations off mid-stream;
- any of them with `terminationGracePeriodSeconds` above 120: the Spot notice is two minutes,
  so the grace period is never honoured;
- training pods that rely on `karpenter.sh/do-not-disrupt`, which Spot interruptions
  ignore.
It also flags a Karpenter controller Deployment in the files that has no interruption
queue (`INTERRUPTION_QUEUE` or `--interruption-queue`) while a NodePool allows Spot.

## Why is this bad?
A Spot reclaim gives two minutes' notice; Karpenter (with its interruption queue) cordons
and drains the node when the notice arrives. A model server that gets SIGTERM at once
drops streaming responses, and the load balancer still routes to it for a few seconds.
A preStop pause lets endpoints deregister, and a grace period of 90 to 110 s lets running
generations finish inside the notice. Without the interruption queue, Karpenter learns
about the reclaim only when the node disappears, so nothing drains at all.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu-spot
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["spot", "on-demand"]
---
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
```

## Use instead
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu-spot
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["spot", "on-demand"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      terminationGracePeriodSeconds: 110
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          lifecycle:
            preStop:
              sleep:
                seconds: 15
          resources:
            limits:
              nvidia.com/gpu: 1
```

## Options
None.

## Fix
Unsafe: sets `terminationGracePeriodSeconds: 110` (when it is 30 or less, unset, or above
120) and adds a `preStop` `sleep` of 15 s (the `sleep` action needs Kubernetes 1.30+) to
serving containers. Review both against your longest request. Training pods relying on
`do-not-disrupt` need checkpointing instead; no fix.

## References
- https://karpenter.sh/docs/concepts/disruption/#interruption
- https://aws.amazon.com/ec2/spot/instance-advisor/
- https://kubernetes.io/docs/concepts/containers/container-lifecycle-hooks/
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, as_list, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import instances
from ailint.domain.context import Context
from ailint.domain.extract import (
    POD_KINDS,
    is_accelerator_pod,
    is_serving_pod,
    is_training_pod,
    pod_node_requirements,
    pod_templates,
    requirements_from_terms,
    serving_containers,
)
from ailint.domain.kserve import preset_supplies
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="REL006",
    name="spot-without-graceful-termination",
    severity=Severity.WARNING,
    summary="A pod that can run on Spot cannot finish its work within the two-minute interruption notice",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("reliability", "spot", "karpenter"),
    precision="medium",
)

CAPACITY_KEYS = ("karpenter.sh/capacity-type", "eks.amazonaws.com/capacityType")
GRACE = 110
DEFAULT_TGP = 30


def _term_spot(term: list) -> bool | None:
    """True: the term requires Spot; False: it excludes Spot; None: it does not say."""
    verdict = None
    for r in term:
        if r.key not in CAPACITY_KEYS:
            continue
        vals = {v.lower() for v in r.values}
        if r.operator == "In":
            if "spot" not in vals:
                return False
            verdict = True if vals == {"spot"} else verdict
        elif (r.operator == "NotIn" and "spot" in vals) or r.operator == "DoesNotExist":
            return False
    return verdict


def pool_allows_spot(pool: Any) -> bool:
    for r in pool.requirements:
        if r.key == "karpenter.sh/capacity-type":
            vals = {v.lower() for v in r.values}
            if r.operator == "In":
                return "spot" in vals
            if r.operator == "NotIn":
                return "spot" not in vals
            if r.operator == "Exists":
                return True
    return False  # Karpenter launches on-demand when the pool does not say


def _may_host_accel(pool: Any) -> bool:
    """Could the pool launch an accelerator instance? (an unconstrained pool can)."""
    if pool.can_launch_accelerators:
        return True
    if pool.allowed_types is not None:
        return False  # a known set of types, none with accelerators
    for r in pool.requirements:
        vals = [v.lower() for v in r.values]
        if (
            r.operator == "In"
            and r.key.endswith("instance-category")
            and not set(vals) & instances.ACCELERATOR_CATEGORIES
        ):
            return False
        if (
            r.operator == "In"
            and r.key.endswith("instance-family")
            and not any(instances.is_accelerator_family(v) for v in vals)
        ):
            return False
        if r.operator == "DoesNotExist" and r.key.endswith(("instance-gpu-count", "instance-accelerator-count")):
            return False
    return True


def _prefers_spot(pod: Any) -> bool:
    prefs = as_list(
        as_dict(as_dict(pod.spec.get("affinity")).get("nodeAffinity")).get(
            "preferredDuringSchedulingIgnoredDuringExecution"
        )
    )
    for _, p in iter_dicts(prefs):
        for r in requirements_from_terms(as_dict(p.get("preference")).get("matchExpressions")):
            if r.key in CAPACITY_KEYS and r.operator == "In" and "spot" in {v.lower() for v in r.values}:
                return True
    return False


def _spot_pools(ctx: Any, pools: list[Any], accel: bool) -> list[str]:
    """The names of `pools` that can launch Spot capacity (for an accelerator pod, Spot
    accelerators); once per run for each set of pools (pods with the same node requirements
    share theirs: `Context.pools_for`). The pools live as long as the context, so their ids
    stay theirs."""

    def names() -> list[str]:
        return [p.name for p in pools if pool_allows_spot(p) and (not accel or _may_host_accel(p))]

    memo = getattr(ctx, "memo", None)
    if memo is None:
        return names()
    got: list[str] = memo(("REL006.spot_pools", accel, *map(id, pools)), names)
    return got


def spot_source(pod: Any, ctx: Any) -> str | None:
    """Why the pod can land on Spot (None when it cannot, or the files do not say)."""
    terms = pod_node_requirements(pod)
    verdicts = [_term_spot(t) for t in terms]
    if all(v is False for v in verdicts):
        return None
    if any(v is True for v in verdicts):
        return "it selects Spot capacity"
    if _prefers_spot(pod):
        return "it prefers Spot capacity"
    spot_pools = _spot_pools(ctx, ctx.pools_for(pod), is_accelerator_pod(pod))
    if spot_pools:
        shown = sorted(spot_pools)[:2]
        return f"NodePool{'s' if len(shown) > 1 else ''} {', '.join(shown)} allow{'' if len(shown) > 1 else 's'} Spot"
    return None


def _tgp(pod: Any) -> int | None:
    v = pod.spec.get("terminationGracePeriodSeconds")
    if v is None:
        return DEFAULT_TGP
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return None


def _tgp_edit(obj: Any, pod: Any) -> Any:
    path = pod.path("terminationGracePeriodSeconds")
    if obj.has(path):
        return edits.replace_value(obj, path, str(GRACE))
    return edits.insert_value(obj, pod.spec_path, "terminationGracePeriodSeconds", GRACE)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    yield from _karpenter_controller(obj, ctx)
    for pod in pod_templates(obj):
        serving, training = is_serving_pod(pod), is_training_pod(pod)
        if not (serving or training or is_accelerator_pod(pod)):
            continue  # the rule is about AI work: ingress controllers and the like are out of scope
        why = spot_source(pod, ctx)
        if why is None:
            continue
        tgp = _tgp(pod)
        if "terminationGracePeriodSeconds" not in pod.spec and preset_supplies(pod, "terminationGracePeriodSeconds"):
            tgp = None  # a controller preset sets it (KServe LLMInferenceService: 60 s)
        tgp_path = pod.path("terminationGracePeriodSeconds")
        if tgp is not None and tgp > 120:
            yield RULE.finding(
                obj,
                tgp_path,
                f"terminationGracePeriodSeconds {tgp} exceeds the 2-minute Spot notice "
                f"({why}); the node is reclaimed first: use 90 to 110",
                fix=make_fix(f"set terminationGracePeriodSeconds: {GRACE}", [_tgp_edit(obj, pod)], unsafe=True),
            )
        elif serving and tgp is not None and tgp <= DEFAULT_TGP:
            shown = f"{tgp}" if "terminationGracePeriodSeconds" in pod.spec else f"unset ({DEFAULT_TGP} s)"
            yield RULE.finding(
                obj,
                tgp_path,
                f"serving pod on Spot ({why}): terminationGracePeriodSeconds "
                f"{shown} cuts long generations at interruption; use 90 to 110",
                fix=make_fix(f"set terminationGracePeriodSeconds: {GRACE}", [_tgp_edit(obj, pod)], unsafe=True),
            )
        if serving:
            for c, _engine in serving_containers(pod) or [(c, "") for c in pod.containers(include_init=False)][:1]:
                if as_dict(c.data.get("lifecycle")).get("preStop") or preset_supplies(c, "preStop"):
                    continue
                yield RULE.finding(
                    obj,
                    c.path_of("lifecycle", "preStop"),
                    f"serving container {c.name} on Spot ({why}) has no preStop hook: it gets "
                    "traffic while shutting down; add a preStop pause",
                    fix=make_fix("add a 15 s preStop sleep", [_prestop_edit(obj, c)], unsafe=True),
                )
        if training and str(pod.annotation("karpenter.sh/do-not-disrupt", "")).lower() == "true":
            path = (pod.meta_path or ("metadata",)) + ("annotations", "karpenter.sh/do-not-disrupt")
            if not obj.has(path):
                path = ("metadata", "annotations", "karpenter.sh/do-not-disrupt")
            yield RULE.finding(
                obj,
                path,
                f"training pod on Spot ({why}) relies on karpenter.sh/do-not-disrupt, "
                "which Spot interruptions ignore; checkpoint often or use on-demand",
            )


def _prestop_edit(obj: Any, c: Any) -> Any:
    lc = c.data.get("lifecycle")
    if isinstance(lc, dict) and lc:
        return edits.insert_value(obj, c.path_of("lifecycle"), "preStop", {"sleep": {"seconds": 15}})
    if "lifecycle" in c.data:
        return None
    return edits.insert_value(obj, c.path, "lifecycle", {"preStop": {"sleep": {"seconds": 15}}})


def _karpenter_controller(obj: Any, ctx: Any) -> Iterator[Finding]:
    if obj.kind != "Deployment":
        return
    for pod in pod_templates(obj):
        for c in pod.containers(include_init=False):
            if "karpenter/controller" not in c.image and "karpenter-controller" not in c.image:
                continue
            queue = c.env_value("INTERRUPTION_QUEUE") or c.env_value("INTERRUPTION_QUEUE_NAME")
            if queue or any(t.startswith("--interruption-queue") for t in c.tokens):
                return
            if c.has_env("INTERRUPTION_QUEUE") and c.env_value("INTERRUPTION_QUEUE") is None:
                return  # from a ConfigMap or Secret: cannot tell
            spot = [ctx.describe(p.obj) for p in ctx.nodepools if pool_allows_spot(p)]
            if spot:
                yield RULE.finding(
                    obj,
                    c.path_of("env"),
                    f"Karpenter runs without an interruption queue while "
                    f"{spot[0]} allows spot: Spot notices are missed "
                    "and nothing drains; set INTERRUPTION_QUEUE",
                )
            return
