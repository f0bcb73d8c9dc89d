"""
## What it does
Flags a RayCluster, RayJob or RayService (or the RayCluster template of an AIBrix
RayClusterFleet) whose head dashboard and Jobs API (port 8265) is reachable from outside
the pod network while Ray token authentication is off. Exposure
means `headGroupSpec.serviceType: LoadBalancer` or `NodePort`, a `headService` of those
types, `headGroupSpec.enableIngress: true`, or a Service (LoadBalancer/NodePort), Ingress
or HTTPRoute in the files that targets the head's port 8265 (`dashboard`). Authentication
is on when `spec.authOptions.mode` is `token` (KubeRay 1.5.1+) or the head container sets
`RAY_AUTH_MODE=token` itself; without `authOptions`, or with `mode: disabled`, it is off.
Where a repository keeps alternatives of one Ray object (two blueprints that define the same
namespace and name), a Service or route reaches the copy in its own file, else in its own
folder.

## Why is this bad?
The Ray Jobs API accepts arbitrary entrypoints: whoever reaches port 8265 can submit a
job and run code on your GPU nodes with the Ray pods' service account and cloud
credentials. Scanners look for exposed Ray dashboards; clusters found this way have been
used for cryptomining and credential theft. Keep the head service `ClusterIP`, reach the
dashboard with `kubectl port-forward`, and turn on token authentication.

## Example
```yaml
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: raycluster
spec:
  rayVersion: "2.52.0"
  headGroupSpec:
    serviceType: LoadBalancer
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
```

## Use instead
```yaml
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: raycluster
spec:
  rayVersion: "2.52.0"
  authOptions:
    mode: token
  headGroupSpec:
    serviceType: ClusterIP
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
```

## Options
None.

## Fix
Unsafe, on the Ray object's own exposure: adds `authOptions: {mode: token}` (or turns
`mode: disabled` into `token`) and sets `serviceType: ClusterIP`. Token auth needs KubeRay
1.5.1+ and `spec.rayVersion` 2.52+, so there is no fix when `rayVersion` is unset or older;
every client then needs the token; closing the LoadBalancer changes how people reach the dashboard. Exposure through a
separate Service, Ingress or HTTPRoute has no fix: turn on auth in the Ray object, or
remove the route and use `kubectl port-forward`.

## References
- https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/kuberay-auth.html
- https://docs.ray.io/en/latest/ray-security/index.html
- https://github.com/ray-project/kuberay/blob/master/ray-operator/apis/ray/v1/raycluster_types.go
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import ray as ray_domain
from ailint.domain.agents import version_at_least
from ailint.domain.context import Context, nearest, selector_matches
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SEC008",
    name="ray-dashboard-unauthenticated",
    severity=Severity.ERROR,
    summary="The Ray dashboard and Jobs API are exposed beyond the pod network without token authentication",
    kinds=("RayCluster", "RayJob", "RayService", *ray_domain.TEMPLATE_RULE_KINDS, "Service", "Ingress", "HTTPRoute"),
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("security", "ray", "network"),
    precision="high",
    security_severity=9.0,
)

_RAY_KINDS = (*ray_domain.RAY_KINDS, *ray_domain.TEMPLATE_KINDS)
_EXTERNAL_TYPES = ("LoadBalancer", "NodePort")
DASHBOARD_PORT = 8265


def cluster_base(obj: Any) -> tuple | None:
    """Path of the RayClusterSpec inside a Ray object (None for a RayJob on an existing cluster)."""
    return ray_domain.cluster_spec_path(obj)


def auth_enabled(obj: Any, base: tuple) -> bool:
    if as_dict(obj.get(*base, "authOptions")).get("mode") == "token":
        return True
    for _, c in iter_dicts(obj.get(*base, "headGroupSpec", "template", "spec", "containers")):
        for _, e in iter_dicts(c.get("env")):
            if e.get("name") == "RAY_AUTH_MODE" and str(e.get("value", "")).strip().lower() == "token":
                return True
    return False


def head_service_names(obj: Any) -> set[str]:
    names = set()
    if obj.name and not ray_domain.holds_cluster_template(obj):  # a fleet's RayClusters get generated names
        names.add(f"{obj.name}-head-svc")
    svc = obj.get(*(cluster_base(obj) or ("spec",)), "headGroupSpec", "headService", "metadata", "name")
    if isinstance(svc, str):
        names.add(svc)
    return names


def head_labels(obj: Any, base: tuple) -> dict[str, str]:
    labels = {
        str(k): str(v) for k, v in as_dict(obj.get(*base, "headGroupSpec", "template", "metadata", "labels")).items()
    }
    labels.update({"ray.io/node-type": "head", "ray.io/is-ray-node": "yes"})
    if obj.kind == "RayCluster" and obj.name:
        labels["ray.io/cluster"] = obj.name
    return labels


def _ns(o: Any) -> str:
    return o.namespace_or_default


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind in _RAY_KINDS:
        yield from _ray_object(obj)
    elif obj.kind == "Service" and obj.group == "":
        yield from _service(obj, ctx)
    elif obj.kind == "Ingress" and obj.group.startswith("networking.k8s.io"):
        for path, svc, port in _ingress_backends(obj):
            yield from _route(obj, ctx, path, svc, port, "Ingress")
    elif obj.kind == "HTTPRoute" and obj.group.startswith("gateway.networking.k8s.io"):
        for i, rule in iter_dicts(obj.get("spec", "rules")):
            for j, ref in iter_dicts(rule.get("backendRefs")):
                if ref.get("kind", "Service") == "Service":
                    yield from _route(
                        obj, ctx, ("spec", "rules", i, "backendRefs", j), ref.get("name"), ref.get("port"), "HTTPRoute"
                    )


def _ray_object(obj: Any) -> Iterator[Finding]:
    base = cluster_base(obj)
    if base is None or auth_enabled(obj, base):
        return
    head = base + ("headGroupSpec",)
    exposures: list[tuple[tuple, str]] = []
    st = obj.get(*head, "serviceType")
    if st in _EXTERNAL_TYPES:
        exposures.append((head + ("serviceType",), f"serviceType {st}"))
    hst = obj.get(*head, "headService", "spec", "type")
    if hst in _EXTERNAL_TYPES:
        exposures.append((head + ("headService", "spec", "type"), f"headService type {hst}"))
    if obj.get(*head, "enableIngress") is True:
        exposures.append((head + ("enableIngress",), "enableIngress: true"))
    if not exposures:
        return
    mode = as_dict(obj.get(*base, "authOptions")).get("mode")
    auth = "authOptions.mode: disabled" if mode == "disabled" else "no authOptions"
    ray_version = obj.get(*base, "rayVersion")
    new_enough = version_at_least(ray_version, "2.52")
    if new_enough is False:
        tail = (
            f"rayVersion {ray_version} predates token auth (2.52): make the head service ClusterIP and use "
            "kubectl port-forward"
        )
        fix = None
    elif new_enough is None:
        tail = "set rayVersion 2.52+ and authOptions.mode: token, and use a ClusterIP head service"
        fix = None
    else:
        tail = "set authOptions.mode: token and use a ClusterIP head service"
        fix = _fix(obj, base, exposures)
    what = ", ".join(e[1] for e in exposures)
    yield RULE.finding(
        obj,
        exposures[0][0],
        f"{obj.kind} {obj.name} exposes the Ray dashboard/Jobs API (8265) via {what} with {auth}; {tail}",
        fix=fix,
    )


def _fix(obj: Any, base: tuple, exposures: list) -> Any:
    ed = []
    mode_path = base + ("authOptions", "mode")
    if obj.has(mode_path):
        ed.append(edits.replace_scalar(obj, mode_path, "token"))
    elif isinstance(obj.get(*base, "authOptions"), dict) and obj.get(*base, "authOptions"):
        ed.append(edits.insert_value(obj, base + ("authOptions",), "mode", "token"))
    elif obj.has(base + ("authOptions",)):
        ed.append(edits.replace_value(obj, base + ("authOptions",), "{mode: token}"))
    else:
        ed.append(edits.insert_value(obj, base, "authOptions", {"mode": "token"}))
    for path, _ in exposures:
        if path[-1] in ("serviceType", "type"):
            ed.append(edits.replace_scalar(obj, path, "ClusterIP"))
    if any(e is None for e in ed):
        return None
    return make_fix("enable Ray token authentication and make the head service ClusterIP", ed, unsafe=True)


@dataclass(frozen=True, slots=True)  # (not a NamedTuple: `typing` is no run-time import)
class _Ray:
    """What a Service, an Ingress or a route asks of a Ray object of its namespace."""

    obj: Any
    labels: dict[str, str]  # of its head pod
    services: set[str]  # the names of its head Service
    auth: bool


def _rays(ctx: Any, ns: str) -> list[_Ray]:
    """The Ray objects of `ns` with a cluster spec, read once per namespace and run (every
    Service and route of the namespace asks)."""

    def read() -> list[_Ray]:
        out = []
        for o in ctx.of_kind(*_RAY_KINDS, namespace=ns):
            base = cluster_base(o)
            if base is not None:
                out.append(_Ray(o, head_labels(o, base), head_service_names(o), auth_enabled(o, base)))
        return out

    got: list[_Ray] = ctx.memo(("SEC008.rays", ns), read)
    return got


def _service_targets_dashboard(svc: Any, port_ref: Any = None) -> bool:
    """Does the Service map a port (the referenced one, or any) to the dashboard?"""
    for _, p in iter_dicts(svc.get("spec", "ports")):
        if port_ref is not None and port_ref not in (p.get("port"), p.get("name")):
            continue
        target = p.get("targetPort", p.get("port"))
        if target in (DASHBOARD_PORT, str(DASHBOARD_PORT), "dashboard"):
            return True
    return False


def _rays_selected(ctx: Any, svc: Any) -> list[_Ray]:
    sel = svc.get("spec", "selector")
    if not isinstance(sel, dict) or not sel:
        return []
    return [r for r in _rays(ctx, _ns(svc)) if selector_matches(sel, r.labels)]


def _service(obj: Any, ctx: Any) -> Iterator[Finding]:
    st = obj.get("spec", "type")
    if st not in _EXTERNAL_TYPES or not _service_targets_dashboard(obj):
        return
    for ray in nearest(obj, _rays_selected(ctx, obj), lambda r: r.obj):
        if not ray.auth:
            yield RULE.finding(
                obj,
                ("spec", "type"),
                f"Service {obj.name} ({st}) exposes the dashboard/Jobs API (8265) of "
                f"{ctx.describe(ray.obj)}, which has no token auth; use ClusterIP and port-forward, or set "
                "authOptions.mode: token",
            )
            return


def _ingress_backends(obj: Any) -> Iterator[tuple[tuple, Any, Any]]:
    spec = as_dict(obj.data.get("spec"))
    default = as_dict(as_dict(spec.get("defaultBackend")).get("service"))
    if default:
        port = as_dict(default.get("port"))
        yield ("spec", "defaultBackend"), default.get("name"), port.get("number", port.get("name"))
    for i, rule in iter_dicts(spec.get("rules")):
        for j, p in iter_dicts(as_dict(rule.get("http")).get("paths")):
            svc = as_dict(as_dict(p.get("backend")).get("service"))
            if svc:
                port = as_dict(svc.get("port"))
                yield (
                    ("spec", "rules", i, "http", "paths", j, "backend"),
                    svc.get("name"),
                    port.get("number", port.get("name")),
                )


def _route(obj: Any, ctx: Any, path: tuple, svc_name: Any, port: Any, what: str) -> Iterator[Finding]:
    if not isinstance(svc_name, str):
        return
    ns = _ns(obj)
    targets = []
    if port in (DASHBOARD_PORT, str(DASHBOARD_PORT), "dashboard"):
        targets = [r for r in _rays(ctx, ns) if svc_name in r.services]
    if not targets:
        for svc in ctx.of_kind("Service", namespace=ns):
            if svc.name == svc_name and svc.group == "" and _service_targets_dashboard(svc, port):
                targets = _rays_selected(ctx, svc)
                break
    for ray in nearest(obj, targets, lambda r: r.obj):  # (a blueprint's own, not another's copy)
        if not ray.auth:
            via = "" if svc_name.startswith(str(ray.obj.name)) else f" (Service {svc_name})"
            yield RULE.finding(
                obj,
                path,
                f"{what} {obj.name} routes to the dashboard/Jobs API (8265) of "
                f"{ctx.describe(ray.obj)}{via}, which has no token auth; set authOptions.mode: token "
                "or drop the route",
            )
            return
