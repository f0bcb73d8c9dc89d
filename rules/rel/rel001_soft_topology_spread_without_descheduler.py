"""
## What it does
Finds steady-size workloads (no HPA or KEDA ScaledObject, or one whose min equals its max)
of two or more pods that spread over zones or hosts with
`topologySpreadConstraints[].whenUnsatisfiable: ScheduleAnyway`, where nothing will ever
rebalance them: no DeschedulerPolicy in the run enables
`RemovePodsViolatingTopologySpreadConstraint` under `plugins.balance` with
`args.constraints` containing `ScheduleAnyway` for the workload's namespace and labels, or
one does but its DefaultEvictor protects these pods (an `emptyDir`/`hostPath` volume under
the default `PodsWithLocalStorage` protection, a PVC under `PodsWithPVC`, system-critical
priority, a bare Pod).

Policies count as top-level `descheduler/v1alpha2` documents or as YAML embedded in a
ConfigMap data value (the Helm chart's form). A plugin's or evictor's `labelSelector` is
matched against the pod's labels and those its controller adds (`leaderworkerset.sigs.k8s.io/name`,
`ray.io/cluster`, `pod-template-hash`...). With no policy in the run, the rule stays
silent when the profile says `deschedulerInstalled: true`. Preferred pod anti-affinity alone
does not fire it: no descheduler plugin rebalances it.

## Why is this bad?
A soft constraint is only honoured when a pod is scheduled. After an AZ outage or a capacity
shortage, replacement pods pile into the surviving zones and stay there: a steady-size
workload never reschedules, so the skew persists until someone intervenes (one reported
case stayed at a skew of 227 for about 17 hours). The descheduler's topology plugin only
looks at hard (`DoNotSchedule`) constraints unless `constraints` lists `ScheduleAnyway`,
and its DefaultEvictor never evicts pods with local storage unless told to; nearly every
model server has an `emptyDir`.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm-inference
  namespace: inference
spec:
  replicas: 6
  selector:
    matchLabels: {app: llm-inference}
  template:
    metadata:
      labels: {app: llm-inference}
    spec:
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels: {app: llm-inference}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm-inference
  namespace: inference
spec:
  replicas: 6
  selector:
    matchLabels: {app: llm-inference}
  template:
    metadata:
      labels: {app: llm-inference}
    spec:
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels: {app: llm-inference}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
---
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: rebalance
    pluginConfig:
      - name: RemovePodsViolatingTopologySpreadConstraint
        args:
          constraints: [DoNotSchedule, ScheduleAnyway]
    plugins:
      balance:
        enabled: [RemovePodsViolatingTopologySpreadConstraint]
```

## Options
None.

## Fix
Unsafe, one of two: when a DeschedulerPolicy in the same file configures the plugin without
`ScheduleAnyway`, add it to `args.constraints` (the descheduler then evicts pods of every
soft-spread workload in its scope); otherwise switch the constraint to `DoNotSchedule`
(pods may then stay Pending when a zone is short of capacity; consider `minDomains`).
When the pods are only protected by the DefaultEvictor, see `descheduler-skips-ai-pods`.
No fix appends a new DeschedulerPolicy: it is not an API object (`kubectl apply` rejects a
`descheduler/v1alpha2` document) but the descheduler's own configuration, read from its
ConfigMap or Helm values (`deschedulerPolicy`), so it belongs with the descheduler's
installation, not next to the workload.

## References
- https://github.com/kubernetes-sigs/descheduler#removepodsviolatingtopologyspreadconstraint
- https://github.com/kubernetes-sigs/descheduler#defaultevictor
- https://kubernetes.io/docs/concepts/scheduling-eviction/topology-spread-constraints/
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.descheduler import policies
from ailint.domain.extract import pod_templates
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ailint.domain.descheduler.model import Policy

RULE = Rule(
    code="REL001",
    name="soft-topology-spread-without-descheduler",
    severity=Severity.WARNING,
    summary="A steady-size workload spreads with ScheduleAnyway but no descheduler rebalances it",
    kinds=("Deployment", "StatefulSet", "ReplicaSet", "LeaderWorkerSet"),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("reliability", "scheduling", "descheduler"),
    precision="high",
)

SPREAD_KEYS = (
    "topology.kubernetes.io/zone",
    "kubernetes.io/hostname",
    "failure-domain.beta.kubernetes.io/zone",
    "topology.k8s.aws/zone-id",
)


def _autoscaled(obj: Any, ctx: Any) -> bool:
    """An HPA or KEDA ScaledObject can change the size (min < max)."""
    ns = obj.namespace_or_default
    for hpa in ctx.of_kind("HorizontalPodAutoscaler"):
        ref = as_dict(hpa.get("spec", "scaleTargetRef"))
        if (hpa.namespace_or_default) == ns and ref.get("kind") == obj.kind and ref.get("name") == obj.name:
            lo, hi = hpa.get("spec", "minReplicas", default=1), hpa.get("spec", "maxReplicas")
            if lo != hi:
                return True
    for so in ctx.of_kind("ScaledObject"):
        ref = as_dict(so.get("spec", "scaleTargetRef"))
        if (
            (so.namespace_or_default) == ns
            and ref.get("name") == obj.name
            and ref.get("kind", "Deployment") == obj.kind
        ):
            lo, hi = so.get("spec", "minReplicaCount", default=0), so.get("spec", "maxReplicaCount", default=100)
            if lo != hi:
                return True
    return False


def _policy_fix(pol: Policy, obj: Any, profile: Any) -> Any:
    """Add ScheduleAnyway to the plugin's constraints of a policy in the same file."""
    from ailint.domain.descheduler.model import TSC_PLUGIN  # (with a policy in the files)

    if pol.obj.source is not obj.source:
        return None
    idx, args = profile.plugin_config(TSC_PLUGIN)
    if idx is None:
        return None
    base = profile.path + ("pluginConfig", idx)
    view = pol.edit_view
    cons = args.get("constraints")
    if isinstance(cons, list) and cons:
        if edits.is_flow(view, base + ("args", "constraints")):
            new = edits.inline([*cons, "ScheduleAnyway"])
            edit = edits.replace_value(view, base + ("args", "constraints"), new)
        else:
            edit = edits.append_item(view, base + ("args", "constraints"), "ScheduleAnyway")
    elif cons is None and isinstance(view.get(*base, "args"), dict) and view.get(*base, "args"):
        edit = edits.insert_value(view, base + ("args",), "constraints", ["DoNotSchedule", "ScheduleAnyway"])
    elif "args" not in as_dict(view.get(*base)):
        edit = edits.insert_value(view, base, "args", {"constraints": ["DoNotSchedule", "ScheduleAnyway"]})
    else:
        return None
    return make_fix(
        f"add ScheduleAnyway to the topology plugin's constraints (profile {profile.name})",
        [pol.translate(edit)],
        unsafe=True,
    )


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    pols = policies(ctx)
    if not pols and ctx.profile.flag("deschedulerInstalled"):
        return
    ns = obj.namespace_or_default
    for pod in pod_templates(obj):
        soft = [
            (i, t)
            for i, t in iter_dicts(pod.spec.get("topologySpreadConstraints"))
            if t.get("whenUnsatisfiable") == "ScheduleAnyway" and t.get("topologyKey") in SPREAD_KEYS
        ]
        if not soft:
            continue
        if pod.replicas is None or pod.replicas < 2 or _autoscaled(obj, ctx):
            continue
        reason, fix = _why_not_rebalanced(obj, pod, ns, pols, ctx)
        if reason is None:
            continue
        for i, t in soft:
            path = pod.path("topologySpreadConstraints", i, "whenUnsatisfiable")
            f = fix
            if f is None:
                f = make_fix(
                    "switch to whenUnsatisfiable: DoNotSchedule",
                    [edits.replace_value(obj, path, "DoNotSchedule")],
                    unsafe=True,
                )
            yield RULE.finding(
                obj,
                path,
                f"{pod.replicas} pods spread on {t.get('topologyKey')} with "
                f"ScheduleAnyway, but {reason}; skew persists after a "
                f"{'zone' if 'zone' in str(t.get('topologyKey')) else 'node'} loss",
                fix=f,
            )


def _why_not_rebalanced(obj: Any, pod: Any, ns: str, pols: list[Policy], ctx: Any) -> tuple[str | None, Any]:
    if not pols:
        return "no DeschedulerPolicy is in these files and deschedulerInstalled is false", None
    from ailint.domain.descheduler.model import TSC_PLUGIN, protected_by  # (the model: a policy is in the files)

    partial = None
    protected = None
    for pol in pols:
        for prof in pol.profiles():
            if prof.rebalances_soft_spread(ns, pod) and prof.evictor_admits(pod):
                traits = protected_by(prof, pod, ctx)
                if not traits:
                    return None, None
                if protected is None:
                    protected = (pol, prof, traits)
            elif (
                prof.enabled(TSC_PLUGIN, ("balance",))
                and prof.plugin_covers(TSC_PLUGIN, ns, pod)
                and "ScheduleAnyway" not in prof.topology_constraints()
                and partial is None
            ):
                partial = (pol, prof)
    if protected is not None:
        pol, prof, traits = protected
        t = traits[0]
        return f"the DefaultEvictor in {pol.short_label} protects them ({t.detail})", None
    if partial is not None:
        pol, prof = partial
        return (
            f"the topology plugin in {pol.short_label} acts only on {', '.join(sorted(prof.topology_constraints()))}",
            _policy_fix(pol, obj, prof),
        )
    return f"no DeschedulerPolicy profile rebalances soft spreads in namespace {ns}", None


__all__ = ["RULE", "check"]
