"""
## What it does
Finds NetworkPolicy ingress or egress rules with an `ipBlock.cidr` of `0.0.0.0/0`, `::/0`
or any prefix of /8 or shorter (such as `10.0.0.0/8` "for kubelet health checks") in
policies that select serving or agent pods of the run. Egress to the whole internet on
443, justified as "S3 access", is the common case. It is an error for agent pods (see
`agent-egress-not-allowlisted`) and a warning for serving pods.

## Why is this bad?
An `ipBlock` that wide turns the policy into a formality: egress to `0.0.0.0/0:443` lets
a compromised model server or a prompt-injected agent send data to any host on the
internet, and raw-IP egress bypasses every domain allowlist. Ingress from `10.0.0.0/8`
admits every workload in the VPC (and peered VPCs), not just the kubelet or the load
balancer. The S3 traffic it was meant for can go through the S3 gateway endpoint's prefix
list or a VPC endpoint instead.

## Example
```yaml
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: vllm
spec:
  podSelector:
    matchLabels: {app: vllm}
  policyTypes: [Egress]
  egress:
    - to:
        - ipBlock:
            cidr: 0.0.0.0/0
      ports:
        - {protocol: TCP, port: 443}
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
          image: vllm/vllm-openai:v0.10.1
```

## Use instead
```yaml
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: vllm
spec:
  podSelector:
    matchLabels: {app: vllm}
  policyTypes: [Egress]
  egress:
    - to:
        - ipBlock:
            cidr: 52.218.128.0/17
      ports:
        - {protocol: TCP, port: 443}
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
          image: vllm/vllm-openai:v0.10.1
```

## Options
- `maxPrefix` (integer, default 8): CIDRs with this prefix length or shorter count as broad.

## Fix
None: list the real destinations (the S3 prefix list's CIDRs or a VPC endpoint, the node
or load-balancer subnets for ingress), or filter egress by domain with an egress gateway,
a proxy or Cilium `toFQDNs`. Egress that is filtered downstream can suppress the finding.

## References
- https://kubernetes.io/docs/concepts/services-networking/network-policies/#networkpolicy-resource (`ipBlock`)
- https://docs.aws.amazon.com/vpc/latest/privatelink/vpc-endpoints-s3.html
- https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, iter_dicts
from ailint.core.rule import Option, Options, Rule, Scope
from ailint.domain.context import Context
from ailint.domain.extract import is_agent_pod, is_serving_pod
from ailint.domain.netpol import ipblock_prefix, is_network_policy, policy_types, rule_ports, rules_of, selected_pods

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="NET009",
    name="netpol-broad-ipblock",
    severity=Severity.WARNING,
    summary="A NetworkPolicy for serving or agent pods allows a /8-or-wider ipBlock such as 0.0.0.0/0",
    kinds=("networking.k8s.io/NetworkPolicy",),
    scope=Scope.BUNDLE,
    fix=FixAvailability.NEVER,
    options={"maxPrefix": Option(8, "CIDRs with this prefix length or shorter count as broad", "integer")},
    tags=("network", "networkpolicy", "security"),
)


def _ports(rule: dict[str, Any]) -> str:
    ports = rule_ports(rule)
    if not ports:
        return "on all ports"
    shown = []
    for p in ports[:3]:
        shown.append(f"{p.protocol.upper()} {p.port if p.port is not None else 'any'}")
    return "on " + ", ".join(shown)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if not is_network_policy(obj):
        return
    max_prefix = opts.get_int("maxPrefix")
    # the broad blocks first, from the policy alone: most policies have none, and then the
    # pods it selects are never worked out (nor is the call run again after a pod changed)
    broad: list[tuple[str, str, tuple[Any, ...], dict[str, Any], Any, int]] = []
    types = policy_types(obj)
    for direction, peer_key, verb in (("Ingress", "from", "from"), ("Egress", "to", "to")):
        if direction not in types:
            continue
        for path, rule in rules_of(obj, direction):
            for j, peer in iter_dicts(rule.get(peer_key)):
                block = peer.get("ipBlock")
                if not isinstance(block, dict):
                    continue
                cidr = block.get("cidr")
                pref = ipblock_prefix(cidr)
                if pref is None or pref[1] > max_prefix:
                    continue
                broad.append((direction, verb, path + (peer_key, j, "ipBlock", "cidr"), rule, cidr, pref[1]))
    if not broad:
        return
    pods = selected_pods(ctx, obj)
    agents = [o for o, p in pods if is_agent_pod(p)]
    serving = [o for o, p in pods if is_serving_pod(p)]
    if not agents and not serving:
        return
    target = agents[0] if agents else serving[0]
    kind = "agent" if agents else "serving"
    for direction, verb, path, rule, cidr, prefix in broad:
        scope = "any address" if prefix == 0 else f"every address in a /{prefix}"
        yield RULE.finding(
            obj,
            path,
            f"{direction.lower()} {verb} ipBlock {cidr} {_ports(rule)} opens {kind} pods "
            f"({ctx.describe(target)}) to {scope}; list the real destinations",
            severity=Severity.ERROR if agents else None,
        )
