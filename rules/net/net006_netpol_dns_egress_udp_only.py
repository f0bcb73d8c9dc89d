"""
## What it does
Checks the DNS allowances of NetworkPolicies that restrict egress (`Egress` in
`policyTypes`, or an `egress` section):

- an egress rule allows port 53 over UDP, and no rule allows TCP 53 to the same peers;
- a DNS rule (every port is 53) has a peer with `namespaceSelector: {}` and no
  `podSelector`, which opens port 53 to every pod of every namespace.

## Why is this bad?
DNS falls back to TCP when an answer does not fit in a UDP datagram (truncation, large
record sets, DNSSEC; RFC 7766 makes TCP support mandatory for resolvers). With only UDP 53
open those lookups time out: model downloads from S3 or the Hugging Face CDN, and service
discovery, fail intermittently and only for some names. A DNS peer of "every pod in every
namespace" is an exfiltration channel on port 53 to anything that listens there, not just
CoreDNS.

## Example
```yaml
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: vllm-egress
spec:
  podSelector:
    matchLabels: {app: vllm}
  policyTypes: [Egress]
  egress:
    - to:
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: kube-system
          podSelector:
            matchLabels:
              k8s-app: kube-dns
      ports:
        - protocol: UDP
          port: 53
```

## Use instead
```yaml
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: vllm-egress
spec:
  podSelector:
    matchLabels: {app: vllm}
  policyTypes: [Egress]
  egress:
    - to:
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: kube-system
          podSelector:
            matchLabels:
              k8s-app: kube-dns
      ports:
        - protocol: UDP
          port: 53
        - protocol: TCP
          port: 53
```

## Options
None.

## Fix
Safe: adds `{protocol: TCP, port: 53}` to the rule's ports. For `namespaceSelector: {}`,
an unsafe fix narrows the peer to CoreDNS (`kubernetes.io/metadata.name: kube-system` and
`podSelector` `k8s-app: kube-dns`, the EKS labels); review it if DNS runs elsewhere
(NodeLocal DNSCache on a link-local address needs an `ipBlock` instead).

## References
- https://kubernetes.io/docs/concepts/services-networking/network-policies/
- https://www.rfc-editor.org/rfc/rfc7766 (DNS transport over TCP)
- https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Options, Rule, make_fix
from ailint.domain.context import Context
from ailint.domain.netpol import (
    DNS_PORT,
    is_dns_rule,
    is_network_policy,
    policy_types,
    rule_allows_port,
    rule_peers,
    rule_ports,
    rules_of,
)
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="NET006",
    name="netpol-dns-egress-udp-only",
    severity=Severity.WARNING,
    summary="A NetworkPolicy allows DNS over UDP only, or to every pod of the cluster",
    kinds=("networking.k8s.io/NetworkPolicy",),
    fix=FixAvailability.SOMETIMES,
    tags=("network", "networkpolicy", "dns"),
)


def _covers_peers(wider: list[dict[str, Any]] | None, narrower: list[dict[str, Any]] | None) -> bool:
    if wider is None:
        return True
    if narrower is None:
        return False
    return all(p in wider for p in narrower)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if not is_network_policy(obj) or "Egress" not in policy_types(obj):
        return
    rules = list(rules_of(obj, "Egress"))
    for path, rule in rules:
        ports = rule_ports(rule)
        udp = [p for p in ports if p.protocol.upper() == "UDP" and p.covers("UDP", DNS_PORT)]
        peers = rule_peers(rule)
        if udp:
            tcp_ok = any(
                rule_allows_port(r, "TCP", DNS_PORT) is not False and _covers_peers(rule_peers(r), peers)
                for _, r in rules
            )
            if not tcp_ok:
                first_key = next(iter(as_dict(rule["ports"][udp[0].index])), "protocol")
                item = (
                    {"port": DNS_PORT, "protocol": "TCP"}
                    if first_key == "port"
                    else {"protocol": "TCP", "port": DNS_PORT}
                )
                fix = make_fix("allow TCP 53 as well", [edits.append_item(obj, path + ("ports",), item)])
                yield RULE.finding(
                    obj,
                    path + ("ports", udp[0].index),
                    "egress allows DNS on UDP 53 but not TCP 53; truncated or large DNS answers "
                    "retry over TCP and those lookups fail",
                    fix=fix,
                )
        if is_dns_rule(rule) and peers:
            for j, peer in enumerate(as_dict_list(rule.get("to"))):
                ns = peer.get("namespaceSelector")
                if not isinstance(ns, dict) or "podSelector" in peer or "ipBlock" in peer:
                    continue
                if as_dict(ns.get("matchLabels")) or ns.get("matchExpressions"):
                    continue
                peer_path = path + ("to", j)
                fix = make_fix(
                    "restrict DNS to CoreDNS in kube-system",
                    [
                        edits.replace_value(
                            obj,
                            peer_path + ("namespaceSelector",),
                            "{matchLabels: {kubernetes.io/metadata.name: kube-system}}",
                        )
                        if edits.is_flow(obj, peer_path + ("namespaceSelector",))
                        else None,
                        edits.insert_key(obj, peer_path, "podSelector", "{matchLabels: {k8s-app: kube-dns}}"),
                    ],
                    unsafe=True,
                )
                if fix is not None and len(fix.edits) < 2:
                    fix = None
                yield RULE.finding(
                    obj,
                    peer_path + ("namespaceSelector",),
                    "DNS egress goes to namespaceSelector: {} with no podSelector: port 53 is open to "
                    "every pod in every namespace, not just CoreDNS",
                    fix=fix,
                )


def as_dict_list(v: Any) -> list[dict[str, Any]]:
    return [x if isinstance(x, dict) else {} for x in v] if isinstance(v, list) else []
