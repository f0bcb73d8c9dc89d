"""
## What it does
Flags workloads in tenant or user namespaces (anything but `kube-system`, `*-system`,
`kube-*` and the usual platform namespaces such as `gpu-operator`, `karpenter`,
`monitoring`) that either tolerate every taint (`operator: Exists` with an empty key) or
tolerate a tenant taint (a NodePool taint whose key names a tenant, team, customer or
org) that belongs to another tenant. It stays silent when the files hold an admission
policy that restricts tolerations (a ValidatingAdmissionPolicy, Kyverno or Gatekeeper
policy that mentions tolerations) or the Namespace carries the PodTolerationRestriction
annotation `scheduler.alpha.kubernetes.io/tolerationsWhitelist`. DaemonSets are skipped:
node agents legitimately tolerate everything.

## Why is this bad?
Taints are how shared GPU clusters keep tenants on their own nodes: a tenant taint plus a
workload-type taint per NodePool. Tolerations are not authorization, though: any pod can
write one. A wildcard toleration lands a tenant's pod on another tenant's GPU nodes (and
on nodes being drained), where it can read their local model cache or starve their jobs.
An admission policy must check that tolerations match the namespace's tenant.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: notebook
  namespace: team-b
spec:
  template:
    spec:
      tolerations:
        - operator: Exists
      containers:
        - name: notebook
          image: jupyter/pytorch-notebook:2024-05-27
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: notebook
  namespace: team-b
spec:
  template:
    spec:
      tolerations:
        - key: tenant
          operator: Equal
          value: team-b
          effect: NoSchedule
      containers:
        - name: notebook
          image: jupyter/pytorch-notebook:2024-05-27
```

## Options
None.

## Fix
None: give the pod only its own tenant's tolerations, and add an admission policy
(ValidatingAdmissionPolicy, Kyverno, Gatekeeper or PodTolerationRestriction) that rejects
tolerations for other tenants' taints.

## References
- https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/
- https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#podtolerationrestriction
- https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, iter_dicts
from ailint.core.rule import Options, Rule, Scope
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, pod_templates, toleration_matches

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SEC009",
    name="tenant-toleration-wildcard",
    severity=Severity.WARNING,
    summary="A tenant workload tolerates every taint, or another tenant's NodePool taint",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    fix=FixAvailability.NEVER,
    tags=("security", "multi-tenancy", "scheduling"),
    precision="medium",
    security_severity=5.0,
)

_SYSTEM_NS = lazy_re(
    r"^(kube-.*|.*-system|default-system|gpu-operator.*|nvidia.*|karpenter|monitoring|logging|observability|"
    r"prometheus|grafana|cert-manager|ingress-nginx|ingress|amazon-.*|aws-.*|calico.*|cilium.*|tigera-operator|"
    r"istio.*|linkerd.*|argocd|argo|flux-system|keda|kuberay.*|ray-system|kueue-system|volcano-.*|descheduler|"
    r"node-feature-discovery|nfd|dcgm.*|neuron.*|openshift-.*)$"
)
_TENANT_KEY = lazy_re(r"(^|[/._-])(tenant|team|customer|org|organization|owner|project)([/._-]|$)")
_POLICY_KINDS = (
    "ValidatingAdmissionPolicy",
    "MutatingAdmissionPolicy",
    "ClusterPolicy",
    "Policy",
    "ConstraintTemplate",
)
WHITELIST = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"


def _restricted(ctx: Any, ns: str) -> bool:
    for o in ctx.of_kind(*_POLICY_KINDS):
        if o.kind == "Policy" and not o.group.startswith("kyverno.io"):
            continue
        if "toleration" in json.dumps(o.data.get("spec"), default=str).lower():
            return True
    for o in ctx.objects:
        if o.group.startswith("constraints.gatekeeper.sh") and "toleration" in o.kind.lower():
            return True
    return any(o.name == ns and WHITELIST in o.annotations for o in ctx.of_kind("Namespace"))


def _tenant_taints(ctx: Any) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for pool in ctx.nodepools:
        for t in pool.taints:
            if _TENANT_KEY.search(str(t.get("key") or "").lower()) and t.get("value"):
                out.append((ctx.describe(pool.obj), t))
    return out


def _owns(ns: str, tenant: str) -> bool:
    ns, tenant = ns.lower(), tenant.lower()
    return tenant in ns or ns in tenant


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "DaemonSet":
        return
    ns = obj.namespace_or_default
    if _SYSTEM_NS.match(ns):
        return
    restricted = None
    for pod in pod_templates(obj):
        for i, tol in iter_dicts(pod.spec.get("tolerations")):
            path = pod.path("tolerations", i)
            wildcard = (tol.get("operator") == "Exists") and not tol.get("key")
            if wildcard:
                if restricted is None:
                    restricted = _restricted(ctx, ns)
                if restricted:
                    return
                effect = tol.get("effect")
                scope = f"every {effect} taint" if effect else "every taint"
                yield RULE.finding(
                    obj,
                    path,
                    f"workload in namespace {ns} tolerates {scope} (operator Exists, no "
                    "key), so it can land on other tenants' and cordoned nodes; tolerate "
                    "only its own taints",
                )
                continue
            for pool_name, taint in _tenant_taints(ctx):
                if toleration_matches(tol, taint) and not _owns(ns, str(taint.get("value"))):
                    if restricted is None:
                        restricted = _restricted(ctx, ns)
                    if restricted:
                        return
                    yield RULE.finding(
                        obj,
                        path,
                        f"workload in namespace {ns} tolerates {taint.get('key')}="
                        f"{taint.get('value')}, the tenant taint of {pool_name}; "
                        "only that tenant should run there",
                    )
                    break
