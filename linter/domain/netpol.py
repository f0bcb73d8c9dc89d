"""NetworkPolicy helpers shared by the NET and SEC rules.

Everything here reads `networking.k8s.io/v1` NetworkPolicy objects as the API server
defaults them, and answers the questions rules ask:

- which policies select a pod template (`policies_selecting`, with the labels its controller
  adds: `pod_labels.may_select`), and whether the pod's egress or ingress is isolated at all
  (`isolates`);
- what an egress rule allows: ports (`rule_ports`, `rule_allows_port`), peers
  (`rule_peers`, `peer_is_cluster_internal`), and whether some selecting policy lets the
  pod reach an external address on a port (`egress_allows_external`);
- DNS rules (`is_dns_rule`, `dns_protocols`);
- how broad an `ipBlock` is (`ipblock_prefix`, `is_broad_cidr`, `is_private_cidr`).

Semantics follow the Kubernetes API: a policy selects pods in its own namespace by
`spec.podSelector` (empty selects all); `policyTypes` defaults to `["Ingress"]` plus
`"Egress"` when the policy has an `egress` section; a rule with no `to`/`from` matches
every peer, a rule with no `ports` matches every port; a port without `protocol` is TCP;
allowances of all policies selecting a pod add up (a union), and a pod selected by no
policy of a type is not isolated for that type.

Functions take the rule's `K8sObject`s and `PodTemplate`s and never raise on odd shapes.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ailint.core.model import K8sObject, Path, as_dict, iter_dicts
from ailint.domain.extract import PodTemplate
from ailint.domain.pod_labels import may_select
from ailint.domain.selectors import selected

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NETPOL_KIND = "NetworkPolicy"
CILIUM_KINDS = ("CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy")
DNS_PORT = 53

_PRIVATE_CIDRS = (
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "169.254.0.0/16",
    "127.0.0.0/8",
    "fc00::/7",
    "fe80::/10",
    "::1/128",
)


@functools.cache
def _private_nets() -> tuple[Any, ...]:
    """The private, CGNAT, link-local and loopback networks, parsed on first use: `ipaddress`
    is a fiftieth of a one-file run, and only an ipBlock needs it."""
    import ipaddress

    return tuple(ipaddress.ip_network(n) for n in _PRIVATE_CIDRS)


def is_network_policy(obj: K8sObject) -> bool:
    return obj.kind == NETPOL_KIND and obj.group.startswith("networking.k8s.io")


# ---------------------------------------------------------------------------------------
# Policy types and selection
# ---------------------------------------------------------------------------------------
def policy_types(np: K8sObject) -> set[str]:
    """`spec.policyTypes`, or the API server's default when it is absent."""
    spec = as_dict(np.data.get("spec"))
    declared = spec.get("policyTypes")
    if isinstance(declared, list) and declared:
        return {str(t) for t in declared}
    out = {"Ingress"}
    if "egress" in spec:
        out.add("Egress")
    return out


def selects_pod(np: K8sObject, pod: PodTemplate) -> bool:
    """Does the policy's `podSelector` select this pod template (same namespace), counting the
    labels the pod's controller adds (`pod_labels.may_select`)?"""
    if np.namespace_or_default != pod.obj.namespace_or_default:
        return False
    sel = as_dict(np.data.get("spec")).get("podSelector")
    if sel is None:
        sel = {}
    return may_select(sel, pod)


def policies_selecting(ctx: Any, pod: PodTemplate, policy_type: str | None = None) -> list[K8sObject]:
    """NetworkPolicies of the run that select the pod (of the given type, when asked)."""
    out = []
    for np in ctx.of_kind(NETPOL_KIND):
        if not is_network_policy(np) or not selects_pod(np, pod):
            continue
        if policy_type is not None and policy_type not in policy_types(np):
            continue
        out.append(np)
    return out


def isolates(ctx: Any, pod: PodTemplate, policy_type: str = "Egress") -> bool:
    """Is the pod isolated for this direction (some policy of that type selects it)?"""
    return bool(policies_selecting(ctx, pod, policy_type))


def cilium_policies_in(ctx: Any, namespace: str) -> list[K8sObject]:
    """Cilium policies that may add allowances the linter cannot evaluate (FQDN rules)."""
    out = []
    for o in ctx.of_kind(*CILIUM_KINDS):
        if o.kind == "CiliumClusterwideNetworkPolicy" or o.namespace_or_default == namespace:
            out.append(o)
    return out


def selected_pods(ctx: Any, np: K8sObject) -> list[tuple[K8sObject, PodTemplate]]:
    """Pod templates of the run that this policy selects (`selects_pod`: its namespace's pods
    its `podSelector` can select, all of them when it has none)."""
    sel = as_dict(np.data.get("spec")).get("podSelector")
    return selected(ctx, np.namespace_or_default, {} if sel is None else sel)


# ---------------------------------------------------------------------------------------
# Rules, ports and peers
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Port:
    """One `ports[]` entry: protocol (default TCP), port (int, name or None = all), endPort."""

    protocol: str
    port: int | str | None
    end_port: int | None
    index: int

    def covers(self, protocol: str, number: int) -> bool | None:
        """True/False when known; None for a named port (the linter cannot resolve it)."""
        if self.protocol.upper() != protocol.upper():
            return False
        if self.port is None:
            return True
        if isinstance(self.port, str):
            return None
        if self.end_port is not None:
            return self.port <= number <= self.end_port
        return self.port == number


def _port_value(v: Any) -> int | str | None:
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    s = str(v).strip()
    if s.isdigit():
        return int(s)
    return s


def rule_ports(rule: dict[str, Any]) -> list[Port]:
    """The rule's ports; an empty list means the rule allows every port and protocol."""
    out = []
    for i, p in iter_dicts(rule.get("ports")):
        end = p.get("endPort")
        out.append(
            Port(
                str(p.get("protocol") or "TCP"),
                _port_value(p.get("port")),
                end if isinstance(end, int) and not isinstance(end, bool) else None,
                i,
            )
        )
    return out


def rule_allows_port(rule: dict[str, Any], protocol: str, number: int) -> bool | None:
    """Whether the rule's ports admit protocol/number: True, False, or None (named port)."""
    ports = rule_ports(rule)
    if not ports:
        return True
    unknown = False
    for p in ports:
        c = p.covers(protocol, number)
        if c:
            return True
        if c is None:
            unknown = True
    return None if unknown else False


def rule_peers(rule: dict[str, Any], direction: str = "Egress") -> list[dict[str, Any]] | None:
    """`to` (egress) or `from` (ingress) peers; None when absent or empty (every peer)."""
    key = "to" if direction == "Egress" else "from"
    peers = rule.get(key)
    if not isinstance(peers, list) or not peers:
        return None
    return [p for p in peers if isinstance(p, dict)]


def egress_rules(np: K8sObject) -> Iterator[tuple[int, dict[str, Any]]]:
    yield from iter_dicts(as_dict(np.data.get("spec")).get("egress"))


def ingress_rules(np: K8sObject) -> Iterator[tuple[int, dict[str, Any]]]:
    yield from iter_dicts(as_dict(np.data.get("spec")).get("ingress"))


def rules_of(np: K8sObject, direction: str) -> Iterator[tuple[Path, dict[str, Any]]]:
    """(path, rule) for the egress or ingress rules of a policy."""
    key = "egress" if direction == "Egress" else "ingress"
    for i, r in iter_dicts(as_dict(np.data.get("spec")).get(key)):
        yield ("spec", key, i), r


def peer_is_cluster_internal(peer: dict[str, Any]) -> bool:
    """A podSelector/namespaceSelector peer (pods of the cluster), not an ipBlock."""
    return "ipBlock" not in peer and ("podSelector" in peer or "namespaceSelector" in peer)


def peer_cidr(peer: dict[str, Any]) -> str | None:
    cidr = as_dict(peer.get("ipBlock")).get("cidr")
    return cidr if isinstance(cidr, str) else None


# ---------------------------------------------------------------------------------------
# ipBlock breadth
# ---------------------------------------------------------------------------------------
def ipblock_prefix(cidr: Any) -> tuple[int, int] | None:
    """(IP version, prefix length) of a CIDR string; None when it does not parse."""
    if not isinstance(cidr, str):
        return None
    import ipaddress

    try:
        net = ipaddress.ip_network(cidr.strip(), strict=False)
    except ValueError:
        return None
    return net.version, net.prefixlen


def is_broad_cidr(cidr: Any, max_prefix: int = 8) -> bool:
    """0.0.0.0/0, ::/0, or any prefix of length <= max_prefix (for example 10.0.0.0/8)."""
    p = ipblock_prefix(cidr)
    return p is not None and p[1] <= max_prefix


def is_private_cidr(cidr: Any) -> bool:
    """The CIDR lies wholly inside private, CGNAT, link-local or loopback space."""
    if not isinstance(cidr, str):
        return False
    import ipaddress

    try:
        net = ipaddress.ip_network(cidr.strip(), strict=False)
    except ValueError:
        return False
    # (subnet_of is only called on networks of one version; mypy cannot narrow the v4/v6 union by `.version`)
    return any(net.version == p.version and net.subnet_of(p) for p in _private_nets())  # type: ignore[arg-type]


def peer_may_be_external(peer: dict[str, Any]) -> bool:
    """Could this egress peer be an address outside the cluster and the VPC's private space?"""
    if peer_is_cluster_internal(peer):
        return False
    cidr = peer_cidr(peer)
    if cidr is None:
        return False
    return not is_private_cidr(cidr)


# ---------------------------------------------------------------------------------------
# Egress questions
# ---------------------------------------------------------------------------------------
def is_dns_rule(rule: dict[str, Any]) -> bool:
    """A rule whose ports are all port 53 (the usual DNS allowance)."""
    ports = rule_ports(rule)
    return bool(ports) and all(p.port == DNS_PORT for p in ports)


def dns_protocols(rule: dict[str, Any]) -> set[str]:
    """Protocols the rule allows on port 53 ({"UDP", "TCP"} for a rule with no ports)."""
    ports = rule_ports(rule)
    if not ports:
        return {"UDP", "TCP"}
    return {p.protocol.upper() for p in ports if p.covers(p.protocol, DNS_PORT)}


def egress_allows_external(policies: Iterable[K8sObject], protocol: str, port: int) -> bool:
    """Do these (selecting, Egress-type) policies together allow protocol/port to an
    external address? A named port counts as allowing (the linter cannot resolve it)."""
    for np in policies:
        for _, rule in egress_rules(np):
            if rule_allows_port(rule, protocol, port) is False:
                continue
            peers = rule_peers(rule, "Egress")
            if peers is None or any(peer_may_be_external(p) for p in peers):
                return True
    return False


def egress_summary(policies: Iterable[K8sObject]) -> str:
    """A short description of what the policies allow, for messages ("only DNS", ...)."""
    rules = [r for np in policies for _, r in egress_rules(np)]
    if not rules:
        return "no egress at all"
    if all(is_dns_rule(r) for r in rules):
        return "only DNS"
    return "no HTTPS out"


__all__ = [
    "CILIUM_KINDS",
    "DNS_PORT",
    "NETPOL_KIND",
    "Port",
    "cilium_policies_in",
    "dns_protocols",
    "egress_allows_external",
    "egress_rules",
    "egress_summary",
    "ingress_rules",
    "ipblock_prefix",
    "is_broad_cidr",
    "is_dns_rule",
    "is_network_policy",
    "is_private_cidr",
    "isolates",
    "peer_cidr",
    "peer_is_cluster_internal",
    "peer_may_be_external",
    "policies_selecting",
    "policy_types",
    "rule_allows_port",
    "rule_peers",
    "rule_ports",
    "rules_of",
    "selected_pods",
    "selects_pod",
]
