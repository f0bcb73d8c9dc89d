"""Authentication in front of a workload: what a mesh enforces at the pod, and what a Gateway
enforces on the routes through it.

Two places can authenticate requests before they reach a model server, and they differ in
what they cover:

- **At the pod, on every request** (`mesh_authentication`): an Istio `AuthorizationPolicy`
  (`security.istio.io`) enforced by the pod's sidecar applies to every request that reaches
  the pod, whatever address it came through (a LoadBalancer, a NodePort, a Gateway). Per the
  Istio reference (istio/api `security/v1/authorization_policy.proto`,
  istio.io/docs/reference/config/security/authorization-policy): CUSTOM policies are
  evaluated first, then DENY, then ALLOW; with any ALLOW policy on the workload a request
  that matches none is denied; a policy without `selector` applies to every workload of its
  namespace, one in the root namespace (`istio-system`) to every namespace. A policy counts
  when it makes an unauthenticated request fail: an ALLOW policy whose every rule requires a
  `from.source` with `requestPrincipals` (a JWT validated by a `RequestAuthentication`) or
  `principals` (a mesh mTLS identity), with no other ALLOW policy on the pod allowing more; a
  DENY policy with a rule `notRequestPrincipals: ["*"]` and no `to`/`when`; a CUSTOM policy
  (external authorization, `provider`) with a rule that has no `to`/`when`. A
  `RequestAuthentication` alone does not count: it rejects invalid tokens but accepts a
  request that carries none (istio.io/docs/reference/config/security/request_authentication).
  Policies with `targetRef(s)` (waypoints, gateways) are not read here, and a pod annotated or
  labelled `sidecar.istio.io/inject: "false"` has no sidecar to enforce anything.
- **At a Gateway, only on its routes** (`gateway_authentication`): a Gateway API `HTTPRoute`
  or `GRPCRoute` (`gateway.networking.k8s.io`) whose `rules[].backendRefs[]` name the Service
  (group `""` and kind `Service` by default, the route's namespace by default), attached by
  `parentRefs[]` to a Gateway (kind `Gateway` and the route's namespace by default), with an
  Envoy Gateway `SecurityPolicy` (`gateway.envoyproxy.io`) in the target's namespace that
  targets the Gateway or the route (`targetRef`, `targetRefs[]` with `kind`/`name`, or
  `targetSelectors[]` with `kind` and `matchLabels`) and configures `basicAuth`,
  `apiKeyAuth`, `jwt`, `oidc` or `extAuth` (envoyproxy/gateway
  `api/v1alpha1/securitypolicy_types.go`; gateway.envoyproxy.io docs, SecurityPolicy). This
  authenticates only the traffic that goes through the Gateway: the Service's own address
  (a LoadBalancer's, a NodePort's) bypasses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ailint.core.model import K8sObject, as_dict, as_list, iter_dicts
from ailint.domain.extract import PodTemplate
from ailint.domain.pod_labels import may_select

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ISTIO_SECURITY = "security.istio.io"
ISTIO_ROOT_NAMESPACE = "istio-system"  # meshConfig.rootNamespace default
GATEWAY_API = "gateway.networking.k8s.io"
ENVOY_GATEWAY = "gateway.envoyproxy.io"
ROUTE_KINDS = ("HTTPRoute", "GRPCRoute")
SECURITY_POLICY_AUTH = ("basicAuth", "apiKeyAuth", "jwt", "oidc", "extAuth")
_INJECT = "sidecar.istio.io/inject"


@dataclass(frozen=True)
class GatewayAuth:
    """A route to a Service through a Gateway whose SecurityPolicy authenticates."""

    route: K8sObject
    gateway_name: str
    policy: K8sObject
    methods: tuple[str, ...]  # basicAuth, jwt, ...


# -- at the pod: Istio --------------------------------------------------------------------
def _sidecar_off(pod: PodTemplate) -> bool:
    vals = [pod.annotation(_INJECT), pod.labels.get(_INJECT)]
    return any(str(v).strip().lower() == "false" for v in vals if v is not None)


def _applies(policy: K8sObject, pod: PodTemplate) -> bool:
    spec = as_dict(policy.data.get("spec"))
    if spec.get("targetRef") is not None or spec.get("targetRefs") is not None:
        return False  # enforced by a waypoint or gateway, not the pod's sidecar
    ns = policy.namespace_or_default
    if ns != pod.obj.namespace_or_default and ns != ISTIO_ROOT_NAMESPACE:
        return False
    sel = spec.get("selector")
    if sel is None:
        return True
    return may_select(as_dict(as_dict(sel).get("matchLabels")), pod)


def _requires_identity(rule: dict[str, Any]) -> bool:
    """Every source the rule admits carries an authenticated identity."""
    froms = [f for _, f in iter_dicts(rule.get("from"))]
    if not froms:
        return False
    for f in froms:
        src = as_dict(f.get("source"))
        if not as_list(src.get("requestPrincipals")) and not as_list(src.get("principals")):
            return False
    return True


def _unrestricted(rule: dict[str, Any]) -> bool:
    return not rule.get("to") and not rule.get("when")


def _denies_anonymous(rule: dict[str, Any]) -> bool:
    if not _unrestricted(rule):
        return False
    for _, f in iter_dicts(rule.get("from")):
        if "*" in [str(x) for x in as_list(as_dict(f.get("source")).get("notRequestPrincipals"))]:
            return True
    return False


def mesh_authentication(ctx: Any, pod: PodTemplate) -> K8sObject | None:
    """The Istio AuthorizationPolicy that makes every unauthenticated request to the pod fail
    (see the module doc), or None."""
    if _sidecar_off(pod):
        return None
    policies = [p for p in ctx.of_kind("AuthorizationPolicy", group=ISTIO_SECURITY) if _applies(p, pod)]
    allow = []
    for p in policies:
        spec = as_dict(p.data.get("spec"))
        action = str(spec.get("action") or "ALLOW").upper()
        rules = [r for _, r in iter_dicts(spec.get("rules"))]
        if action == "CUSTOM" and spec.get("provider") and any(_unrestricted(r) for r in rules):
            return p
        if action == "DENY" and any(_denies_anonymous(r) for r in rules):
            return p
        if action == "ALLOW":
            allow.append((p, rules))
    if allow and all(rules and all(_requires_identity(r) for r in rules) for _, rules in allow):
        return allow[0][0]
    return None


# -- at a Gateway: Gateway API routes and Envoy Gateway SecurityPolicy --------------------
def _backend_is(ref: dict[str, Any], svc: K8sObject, route_ns: str) -> bool:
    return (
        str(ref.get("group") or "") == ""
        and str(ref.get("kind") or "Service") == "Service"
        and ref.get("name") == svc.name
        and str(ref.get("namespace") or route_ns) == svc.namespace_or_default
    )


def routes_to(ctx: Any, svc: K8sObject) -> list[K8sObject]:
    """HTTPRoutes and GRPCRoutes of the run with a backendRef to the Service."""
    out = []
    for r in ctx.of_kind(*ROUTE_KINDS, group=GATEWAY_API):
        ns = r.namespace_or_default
        if any(
            _backend_is(ref, svc, ns)
            for _, rule in iter_dicts(r.get("spec", "rules"))
            for _, ref in iter_dicts(rule.get("backendRefs"))
        ):
            out.append(r)
    return out


def _parent_gateways(route: K8sObject) -> list[tuple[str, str]]:
    """(namespace, name) of the Gateways the route attaches to."""
    ns = route.namespace_or_default
    out = []
    for _, p in iter_dicts(route.get("spec", "parentRefs")):
        gateway = str(p.get("group") or GATEWAY_API) == GATEWAY_API and str(p.get("kind") or "Gateway") == "Gateway"
        if gateway and isinstance(p.get("name"), str):
            out.append((str(p.get("namespace") or ns), p["name"]))
    return out


def _targets(policy: K8sObject, kind: str, name: str, labels: dict[str, Any]) -> bool:
    spec = as_dict(policy.data.get("spec"))
    refs = [as_dict(spec.get("targetRef"))] if isinstance(spec.get("targetRef"), dict) else []
    refs += [r for _, r in iter_dicts(spec.get("targetRefs"))]
    if any(r.get("kind") == kind and r.get("name") == name for r in refs):
        return True
    for _, s in iter_dicts(spec.get("targetSelectors")):
        ml = as_dict(s.get("matchLabels"))
        if s.get("kind") == kind and ml and all(str(labels.get(k)) == str(v) for k, v in ml.items()):
            return True
    return False


def _auth_methods(policy: K8sObject) -> tuple[str, ...]:
    spec = as_dict(policy.data.get("spec"))
    return tuple(m for m in SECURITY_POLICY_AUTH if isinstance(spec.get(m), dict))


def gateway_authentication(ctx: Any, svc: K8sObject) -> GatewayAuth | None:
    """A route to `svc` through a Gateway whose Envoy Gateway SecurityPolicy authenticates
    (on the Gateway or on the route), or None."""
    policies = [p for p in ctx.of_kind("SecurityPolicy", group=ENVOY_GATEWAY) if _auth_methods(p)]
    if not policies:
        return None
    gateways = {(g.namespace_or_default, g.name): g for g in ctx.of_kind("Gateway", group=GATEWAY_API)}
    for route in routes_to(ctx, svc):
        rns = route.namespace_or_default
        for gns, gname in _parent_gateways(route):
            gw = gateways.get((gns, gname))
            glabels = gw.labels if gw is not None else {}
            for p in policies:
                pns = p.namespace_or_default
                if (pns == rns and _targets(p, route.kind, route.name or "", route.labels)) or (
                    pns == gns and _targets(p, "Gateway", gname, glabels)
                ):
                    return GatewayAuth(route, gname, p, _auth_methods(p))
    return None


__all__ = [
    "ENVOY_GATEWAY",
    "GATEWAY_API",
    "ISTIO_ROOT_NAMESPACE",
    "ISTIO_SECURITY",
    "ROUTE_KINDS",
    "SECURITY_POLICY_AUTH",
    "GatewayAuth",
    "gateway_authentication",
    "mesh_authentication",
    "routes_to",
]
