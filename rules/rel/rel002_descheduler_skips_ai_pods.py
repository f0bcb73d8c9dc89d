"""
## What it does
Checks every DeschedulerPolicy in the run (a top-level `descheduler/v1alpha2` document, or
YAML embedded in a ConfigMap as the Helm chart ships it) against the AI workloads its
enabled plugins target: accelerator or inference-server pods of Deployments, StatefulSets,
ReplicaSets and LeaderWorkerSets in the plugins' namespaces and `labelSelector`s (matched with
the labels the pods' controller adds, such as `leaderworkerset.sigs.k8s.io/name`; a
PodLifeTime limited to `states` without `Running`, and a RemovePodsViolatingNodeAffinity for
pods that state no node affinity of its `nodeAffinityType`, target none). It fires when the profile's
DefaultEvictor protects those pods, so the descheduler silently evicts none of them:

- `PodsWithLocalStorage` (on by default): any `emptyDir` or `hostPath` volume, including the
  `/dev/shm` emptyDir and model caches;
- `PodsWithPVC` (`podProtections.extraEnabled`, or the deprecated `ignorePvcPods: true`):
  PVC volumes and StatefulSet `volumeClaimTemplates`;
- `SystemCriticalPods` (default): `system-cluster-critical`/`system-node-critical` priority;
- `FailedBarePods` (default): bare Pods.

Pods annotated `descheduler.alpha.kubernetes.io/evict` are never protected. The finding sits
on the profile's DefaultEvictor configuration (or the profile) and names the workloads.

## Why is this bad?
The descheduler looks installed and configured, yet it never touches the pods it was
deployed for: topology skew after a zone outage, nodes left over-packed and pods stranded on
the wrong instance types all persist. The descheduler logs the skip only at verbose levels.

## Example
```yaml
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: rebalance
    pluginConfig:
      - name: DefaultEvictor
        args:
          nodeFit: true
      - name: RemovePodsViolatingTopologySpreadConstraint
        args:
          constraints: [DoNotSchedule, ScheduleAnyway]
    plugins:
      balance:
        enabled: [RemovePodsViolatingTopologySpreadConstraint]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: inference
spec:
  replicas: 4
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
          volumeMounts:
            - name: dshm
              mountPath: /dev/shm
      volumes:
        - name: dshm
          emptyDir:
            medium: Memory
```

## Use instead
```yaml
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: rebalance
    pluginConfig:
      - name: DefaultEvictor
        args:
          nodeFit: true
          podProtections:
            defaultDisabled: [PodsWithLocalStorage]
      - name: RemovePodsViolatingTopologySpreadConstraint
        args:
          constraints: [DoNotSchedule, ScheduleAnyway]
    plugins:
      balance:
        enabled: [RemovePodsViolatingTopologySpreadConstraint]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: inference
spec:
  replicas: 4
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
          volumeMounts:
            - name: dshm
              mountPath: /dev/shm
      volumes:
        - name: dshm
          emptyDir:
            medium: Memory
```

## Options
None.

## Fix
Unsafe, for the local-storage protection only: adds `podProtections: {defaultDisabled:
[PodsWithLocalStorage]}` to the DefaultEvictor args (creating the DefaultEvictor entry when
the profile has none), also inside a ConfigMap's literal block. Because the deprecated
booleans are ignored as soon as `podProtections` has an entry, the fix carries them over
(`evictSystemCriticalPods: true` becomes `defaultDisabled: [SystemCriticalPods]`,
`ignorePvcPods: true` becomes `extraEnabled: [PodsWithPVC]`, and so on). Unsafe because it
makes every pod with an emptyDir or hostPath in the profile's scope evictable, which costs a
cold model cache on each move; scope the profile with `namespaces` or the evictor's
`labelSelector` if that is too wide. PVC, critical-priority and bare-Pod protections have no
fix: they are usually chosen on purpose.

## References
- https://github.com/kubernetes-sigs/descheduler#defaultevictor
- https://github.com/kubernetes-sigs/descheduler/blob/master/pkg/framework/plugins/defaultevictor/types.go
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity, as_dict, as_list
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.descheduler import policies_in
from ailint.domain.descheduler.model import EVICTOR, LEGACY_FLAGS, LegacyProfile, Policy, Profile, protected_by
from ailint.domain.extract import is_accelerator_pod, is_serving_pod, pod_templates
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="REL002",
    name="descheduler-skips-ai-pods",
    severity=Severity.WARNING,
    summary="A descheduler policy's DefaultEvictor protects the AI pods its plugins target, so none is evicted",
    kinds=("DeschedulerPolicy", "ConfigMap"),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("reliability", "descheduler"),
    precision="high",
)

TARGET_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "LeaderWorkerSet")


def _targets(profile: Profile, ctx: Any) -> list[tuple[Any, Any]]:
    plugins = profile.healthy_pod_evictors()
    if not plugins:
        return []
    out = []
    for o, ns, pod in ctx.memo("REL002.ai_pods", lambda: _ai_pods(ctx)):
        if not profile.evictor_admits(pod):
            continue
        if any(profile.plugin_covers(p, ns, pod) for p in plugins):
            out.append((o, pod))
    return out


def _ai_pods(ctx: Any) -> list[tuple[Any, str, Any]]:
    """(object, namespace, pod) of accelerator and serving pods of the target kinds, once per run."""
    out = []
    for o in ctx.of_kind(*TARGET_KINDS):
        ns = o.namespace_or_default
        for pod in pod_templates(o):
            if is_accelerator_pod(pod) or is_serving_pod(pod):
                out.append((o, ns, pod))
    return out


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pol in policies_in(obj):
        for prof in pol.profiles():
            by_protection: dict[str, list[tuple[Any, str]]] = {}
            for o, pod in _targets(prof, ctx):
                for t in protected_by(prof, pod, ctx):
                    by_protection.setdefault(t.protection, []).append((o, t.detail))
            for protection, hits in by_protection.items():
                labels = list(dict.fromkeys(ctx.describe(o) for o, _ in hits))
                who = labels[0] + (f" and {len(labels) - 1} more" if len(labels) > 1 else "")
                detail = hits[0][1]
                path = prof.evictor_path or prof.path
                if (
                    prof.evictor_path is not None
                    and isinstance(as_dict(prof.evictor_args), dict)
                    and "args" in as_dict(pol.edit_view.get(*prof.evictor_path))
                ):
                    path = prof.evictor_path + ("args",)
                elif isinstance(prof, LegacyProfile):
                    path = ("strategies",)
                elif prof.evictor_path is None and "name" in prof.data:
                    path = prof.path + ("name",)
                fix = _fix(pol, prof) if protection == "PodsWithLocalStorage" else None
                msg = (
                    f"profile {prof.name}: DefaultEvictor keeps {protection}, so {who} ({detail}) "
                    f"{'are' if len(labels) > 1 else 'is'} never evicted by its plugins"
                )
                span = pol.span(path)
                yield RULE.finding(pol.obj, pol.obj_path(path), msg, span=span, fix=fix)


def _protections_value(args: dict[str, Any]) -> dict[str, list[str]]:
    """podProtections that replace the deprecated flags and lift PodsWithLocalStorage."""
    pp = as_dict(args.get("podProtections"))
    disabled = [str(x) for x in as_list(pp.get("defaultDisabled"))]
    extra = [str(x) for x in as_list(pp.get("extraEnabled"))]
    if not disabled and not extra:
        for flag, (prot, lifts) in LEGACY_FLAGS.items():
            v = args.get(flag)
            if v is True or (isinstance(v, str) and v.lower() == "true"):
                (disabled if lifts else extra).append(prot)
    if "PodsWithLocalStorage" not in disabled:
        disabled.insert(0, "PodsWithLocalStorage")
    out = {"defaultDisabled": disabled}
    if extra:
        out["extraEnabled"] = extra
    return out


def _fix(pol: Policy, prof: Profile) -> Fix | None:
    if isinstance(prof, LegacyProfile):
        return None
    view = pol.edit_view
    args = prof.evictor_args
    value = _protections_value(args)
    title = "lift the PodsWithLocalStorage protection (podProtections.defaultDisabled)"
    epath = prof.evictor_path
    edit = None
    if epath is None:
        pc = prof.path + ("pluginConfig",)
        entry = {"name": EVICTOR, "args": {"podProtections": value}}
        if isinstance(view.get(*pc), list) and view.get(*pc):
            edit = edits.append_item(view, pc, entry)
        elif "pluginConfig" not in as_dict(view.get(*prof.path)):
            edit = edits.insert_value(view, prof.path, "pluginConfig", [entry])
    else:
        apath = epath + ("args",)
        a = view.get(*apath)
        pp = as_dict(args.get("podProtections"))
        if isinstance(a, dict) and a and "podProtections" in a:
            dd = pp.get("defaultDisabled")
            if isinstance(dd, list) and dd and not edits.is_flow(view, apath + ("podProtections", "defaultDisabled")):
                edit = edits.append_item(view, apath + ("podProtections", "defaultDisabled"), "PodsWithLocalStorage")
            elif isinstance(dd, list) and dd:
                edit = edits.replace_value(
                    view,
                    apath + ("podProtections", "defaultDisabled"),
                    edits.inline(["PodsWithLocalStorage", *[str(x) for x in dd]]),
                )
            elif dd is None and isinstance(view.get(*apath, "podProtections"), dict) and pp:
                edit = edits.insert_value(
                    view, apath + ("podProtections",), "defaultDisabled", ["PodsWithLocalStorage"]
                )
        elif isinstance(a, dict) and a:
            edit = edits.insert_value(view, apath, "podProtections", value)
        elif a is None and "args" not in as_dict(view.get(*epath)):
            edit = edits.insert_value(view, epath, "args", {"podProtections": value})
    return make_fix(title, [pol.translate(edit)], unsafe=True)


__all__ = ["RULE", "check"]
