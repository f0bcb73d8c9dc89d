"""
## What it does
Checks that agent pods have an egress allowlist. It fires when no NetworkPolicy or
CiliumNetworkPolicy with egress rules selects the pod, or when the policies that do allow
`0.0.0.0/0` (`::/0`), every destination (a rule without `to`), every namespace on every
port, or Cilium `toEntities: [world]`, and no FQDN allowlist (Cilium `toFQDNs`) limits
it. A policy selects the pod by the template's labels and those its controller adds
(`ray.io/cluster`, `leaderworkerset.sigs.k8s.io/name`, `jobset.sigs.k8s.io/jobset-name`...).
An `agent-sandbox` SandboxTemplate with `networkPolicyManagement: Managed` (the
default) and no `networkPolicy` gets the controller's default policy, which allows the
public internet, so it fires too. Istio `Sidecar` resources with
`outboundTrafficPolicy.mode: REGISTRY_ONLY` and an EKS Auto Mode `NodeClass` with
`networkPolicy: DefaultDeny` (for pods no policy selects) count as egress control.

Severity: error when the agent pod executes generated code; a warning when it executes code
but no NetworkPolicy in these files selects it, and info when it does not execute code and
none in these files selects it (the cluster may hold one).

## Why is this bad?
A prompt-injected agent can be told to send what it can read (source code, tickets,
tokens, the model's context) to any host. Without an allowlist the data leaves to unlisted
domains or straight to a raw IP, and nothing logs it. Default-deny egress plus DNS plus
the few endpoints the agent needs (the model API, a package mirror) makes exfiltration
fail closed. Plain NetworkPolicies cannot name domains: use Cilium `toFQDNs`, a mesh
egress gateway, or an egress proxy for the domain list.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: support-agent
spec:
  template:
    metadata:
      labels:
        app: support-agent
    spec:
      containers:
        - name: agent
          image: ghcr.io/example/support-agent-langgraph:2.1.0
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: support-agent-egress
spec:
  podSelector:
    matchLabels:
      app: support-agent
  policyTypes: [Egress]
  egress:
    - to:
        - ipBlock:
            cidr: 0.0.0.0/0
      ports:
        - port: 443
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: support-agent
spec:
  template:
    metadata:
      labels:
        app: support-agent
    spec:
      containers:
        - name: agent
          image: ghcr.io/example/support-agent-langgraph:2.1.0
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata:
  name: support-agent-egress
spec:
  endpointSelector:
    matchLabels:
      app: support-agent
  egress:
    - toEndpoints:
        - matchLabels:
            k8s:io.kubernetes.pod.namespace: kube-system
            k8s-app: kube-dns
      toPorts:
        - ports:
            - port: "53"
              protocol: ANY
          rules:
            dns:
              - matchPattern: "*"
    - toFQDNs:
        - matchName: bedrock-runtime.us-west-2.amazonaws.com
        - matchName: pypi.org
      toPorts:
        - ports:
            - port: "443"
              protocol: TCP
```

## Options
None.

## Fix
Unsafe, and only a start: when no policy selects the pod, append a `networking.k8s.io/v1`
NetworkPolicy `<name>-egress` in the pod's namespace that selects it (the workload's
`spec.selector`, else the pod's labels) with `policyTypes: [Egress]` and one egress rule:
DNS (UDP and TCP 53) to the `k8s-app: kube-dns` pods of `kube-system`. Every other
destination is then denied, so the agent loses its model API and tools until you add them
(the allowlist is the agent's own: Cilium `toFQDNs`, an egress proxy, or `ipBlock`s); with
NodeLocal DNSCache, allow its address too. No fix for policies that are too broad (narrow
them), for SandboxTemplates, for kinds with several pod templates, or when the selector
would also select pods of another workload in these files.

## References
- https://docs.cilium.io/en/stable/security/policy/language/#dns-based
- https://kubernetes.io/docs/concepts/services-networking/network-policies/
- https://docs.aws.amazon.com/eks/latest/userguide/create-node-class.html
- https://github.com/kubernetes-sigs/agent-sandbox
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity, as_dict, as_list, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.agents import executes_code
from ailint.domain.context import Context, copyable_selector
from ailint.domain.extract import POD_KINDS, is_agent_pod, pod_templates
from ailint.domain.netpol import (
    CILIUM_KINDS,
    ipblock_prefix,
    is_network_policy,
    policies_selecting,
    rule_peers,
    rule_ports,
)
from ailint.domain.pod_labels import may_select
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SEC005",
    name="agent-egress-not-allowlisted",
    severity=Severity.WARNING,
    summary="An agent pod can send data to any host: no egress allowlist selects it",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("security", "agents", "network"),
    precision="medium",
    security_severity=7.5,
    why_when=(  # the harm of each condition, not the remedy sentence the names match
        (r"no NetworkPolicy or CiliumNetworkPolicy", "A prompt-injected agent can be told"),
        (r"not an allowlist|allows|no egress section", "Without an allowlist the data leaves"),
    ),
)

_LOWER = {Severity.ERROR: Severity.WARNING, Severity.WARNING: Severity.INFO, Severity.INFO: Severity.INFO}


def _ns(o: Any) -> str:
    return o.namespace_or_default


def broad_k8s_rule(rule: dict[str, Any]) -> str | None:
    """Why a NetworkPolicy egress rule is open to the world (None when it is narrow)."""
    peers = rule_peers(rule, "Egress")
    ports = rule_ports(rule)
    if peers is None:
        return "a rule without `to` (every destination" + (")" if ports else ", every port)")
    for p in peers:
        cidr = as_dict(p.get("ipBlock")).get("cidr")
        pref = ipblock_prefix(cidr)
        if pref is not None and pref[1] == 0:
            return f"ipBlock {cidr}"
        if "ipBlock" not in p and p.get("namespaceSelector") == {} and not p.get("podSelector") and not ports:
            return "every namespace on every port"
    return None


def _cilium_selects(cnp: Any, pod: Any) -> list[dict[str, Any]]:
    """The rule specs of a Cilium policy that select the pod."""
    out = []
    specs = [s for _, s in iter_dicts(cnp.data.get("specs"))]
    if isinstance(cnp.data.get("spec"), dict):
        specs.insert(0, cnp.data["spec"])
    for s in specs:
        sel = s.get("endpointSelector")
        if isinstance(sel, dict) and may_select(sel, pod):
            out.append(s)
    return out


def _cilium_state(ctx: Any, pod: Any) -> tuple[bool, bool, str | None]:
    """(selected by an egress CNP, has toFQDNs, why broad)."""
    selected = fqdn = False
    broad = None
    for cnp in ctx.of_kind(*CILIUM_KINDS):
        if cnp.kind == "CiliumNetworkPolicy" and _ns(cnp) != _ns(pod.obj):
            continue
        for s in _cilium_selects(cnp, pod):
            if "egress" not in s and "egressDeny" not in s:
                continue
            selected = True
            for _, r in iter_dicts(s.get("egress")):
                if r.get("toFQDNs"):
                    fqdn = True
                ents = {str(e) for e in as_list(r.get("toEntities"))}
                cidrs = [str(c) for c in as_list(r.get("toCIDR"))] + [
                    str(as_dict(c).get("cidr")) for c in as_list(r.get("toCIDRSet"))
                ]
                if ents & {"world", "all"}:
                    ent = sorted(ents & {"world", "all"})[0]
                    broad = broad or f"{ctx.describe(cnp)} allows toEntities {ent}"
                elif any((ipblock_prefix(c) or (4, 32))[1] == 0 for c in cidrs):
                    broad = broad or f"{ctx.describe(cnp)} allows 0.0.0.0/0"
                elif not r:
                    broad = broad or f"{ctx.describe(cnp)} has an empty egress rule"
    return selected, fqdn, broad


def _mesh_registry_only(ctx: Any, ns: str) -> bool:
    for sc in ctx.of_kind("Sidecar"):
        if (
            sc.group.startswith("networking.istio.io")
            and _ns(sc) in (ns, "istio-system")
            and as_dict(sc.get("spec", "outboundTrafficPolicy")).get("mode") == "REGISTRY_ONLY"
        ):
            return True
    return False


def _auto_mode_default_deny(ctx: Any) -> bool:
    return any(
        nc.group.startswith("eks.amazonaws.com") and nc.get("spec", "networkPolicy") == "DefaultDeny"
        for nc in ctx.of_kind("NodeClass")
    )


def _has_policy_context(ctx: Any) -> bool:
    return (
        any(is_network_policy(o) for o in ctx.of_kind("NetworkPolicy"))
        or any(True for _ in ctx.of_kind(*CILIUM_KINDS))
        or any(True for _ in ctx.of_kind("Sidecar"))
    )


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        if not is_agent_pod(pod):
            continue
        sev = Severity.ERROR if executes_code(pod) else Severity.WARNING
        who = "code-executing agent pod" if sev == Severity.ERROR else "agent pod"
        if pod.role:
            who += f" ({pod.role})"
        if obj.kind == "SandboxTemplate" and obj.get("spec", "networkPolicyManagement") != "Unmanaged":
            msg = _sandbox_template(obj)
            if msg:
                yield RULE.finding(obj, msg[0], f"{who}: {msg[1]}", severity=sev)
            continue
        if _mesh_registry_only(ctx, _ns(obj)):
            continue
        c_selected, c_fqdn, c_broad = _cilium_state(ctx, pod)
        k_policies = policies_selecting(ctx, pod, "Egress")
        k_broad = None
        for np in k_policies:
            for i, r in iter_dicts(np.get("spec", "egress")):
                why = broad_k8s_rule(r)
                if why:
                    k_broad = f"{ctx.describe(np)} egress[{i}] allows {why}"
                    break
            if k_broad:
                break
        where = pod.spec_path
        if not c_selected and not k_policies:
            if _auto_mode_default_deny(ctx):
                continue
            known = _has_policy_context(ctx)
            yield RULE.finding(
                obj,
                where,
                f"{who}: no NetworkPolicy or CiliumNetworkPolicy with egress rules "
                f"selects it{'' if known else ' in these files'}, so it can reach any "
                "host; add default-deny egress plus DNS and an allowlist",
                severity=sev if known else _LOWER[sev],
                fix=_deny_egress_fix(obj, pod, ctx),
            )
            continue
        broad = c_broad or k_broad
        if broad and not c_fqdn:
            yield RULE.finding(
                obj,
                where,
                f"{who} egress is not an allowlist: {broad}; allow DNS and named "
                "endpoints only (Cilium toFQDNs or an egress proxy)",
                severity=sev,
            )


_FIX_KINDS = ("Pod", "Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job", "CronJob", "LeaderWorkerSet")
_SELECTOR_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet")
DNS_EGRESS = {
    "to": [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ],
    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
}


def _pod_selector(obj: Any, pod: Any) -> dict[str, Any] | None:
    """A LabelSelector for exactly this pod template's pods, or None."""
    sel = copyable_selector(obj.get("spec", "selector")) if obj.kind in _SELECTOR_KINDS else None
    if sel is not None:
        return sel
    labels = pod.labels
    if labels and all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        return {"matchLabels": dict(labels)}
    return None


def _deny_egress_fix(obj: Any, pod: Any, ctx: Any) -> Fix | None:
    """Append a default-deny egress NetworkPolicy allowing DNS, when it selects exactly this pod."""
    name, ns = obj.name, obj.namespace
    if obj.kind not in _FIX_KINDS or not name or len(list(pod_templates(obj))) != 1:
        return None
    sel = _pod_selector(obj, pod)
    if sel is None or not may_select(sel, pod):
        return None  # the rule would not see the new policy select the pod
    for o, other in ctx.pods_in(_ns(obj)):
        if o is not obj and may_select(sel, other):
            return None  # it would cut off another workload's egress too
    np_name = f"{name}-egress"
    if len(np_name) > 253 or any(np.name == np_name for np in ctx.of_kind("NetworkPolicy", namespace=_ns(obj))):
        return None
    meta: dict[str, Any] = {"name": np_name}
    if ns:
        meta["namespace"] = ns
    doc = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": meta,
        "spec": {"podSelector": sel, "policyTypes": ["Egress"], "egress": [DNS_EGRESS]},
    }
    return make_fix(
        f"add NetworkPolicy {np_name}: deny egress but DNS (then allow the agent's endpoints)",
        [edits.append_document(obj, doc)],
        unsafe=True,
    )


def _sandbox_template(obj: Any) -> tuple[tuple, str] | None:
    np = obj.get("spec", "networkPolicy")
    if not isinstance(np, dict):
        return (
            ("spec",),
            "the SandboxTemplate has no networkPolicy, and agent-sandbox's managed default policy "
            "allows the public internet; set spec.networkPolicy with egress rules (empty list = deny)",
        )
    types = [str(t) for t in as_list(np.get("policyTypes"))]
    if "Egress" not in types and "egress" not in np:
        return (
            ("spec", "networkPolicy"),
            "the SandboxTemplate networkPolicy has no egress section, so egress "
            "stays at the managed default (public internet allowed)",
        )
    for i, r in iter_dicts(np.get("egress")):
        why = broad_k8s_rule(r)
        if why:
            return (
                ("spec", "networkPolicy", "egress", i),
                f"the SandboxTemplate networkPolicy allows {why}; allow DNS and named endpoints only",
            )
    return None
