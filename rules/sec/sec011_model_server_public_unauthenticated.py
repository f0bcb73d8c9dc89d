"""
## What it does
Finds `Service`s of type `LoadBalancer` or `NodePort` that select model-server pods (vLLM,
SGLang, TGI, Triton, NIM, Ollama... recognised by what the container runs) when the load
balancer is not internal and nothing in the pod authenticates requests.

Internal means one of: `service.beta.kubernetes.io/aws-load-balancer-scheme: internal` (AWS
Load Balancer Controller), `service.beta.kubernetes.io/aws-load-balancer-internal` set to
anything but `false` (in-tree AWS provider; deprecated in the controller in favour of the
scheme), `networking.gke.io/load-balancer-type: Internal` (or the older
`cloud.google.com/load-balancer-type: Internal`), `spec.loadBalancerClass:
networking.gke.io/l4-regional-internal`, or `service.beta.kubernetes.io/azure-load-balancer-internal:
"true"`. A `loadBalancerSourceRanges` list also counts as a deliberate restriction.
Authentication means: vLLM's `--api-key` or `VLLM_API_KEY`, SGLang's `--api-key`, an auth
proxy container in the pod (oauth2-proxy, kube-rbac-proxy, Pomerium, Envoy with ext_authz...),
or an Istio `AuthorizationPolicy` on the pod that rejects requests without an authenticated
identity (every ALLOW rule requires `requestPrincipals` or `principals`, a DENY rule with
`notRequestPrincipals: ["*"]`, or CUSTOM external authorization; a `RequestAuthentication`
alone accepts requests without a token). The pod's sidecar enforces it on every request,
whichever address it came through.

An authenticating Gateway does not count for this Service: a Gateway API `HTTPRoute` or
`GRPCRoute` that routes to it through a Gateway whose Envoy Gateway `SecurityPolicy`
authenticates (`basicAuth`, `apiKeyAuth`, `jwt`, `oidc`, `extAuth`) checks only the traffic
that goes through the Gateway, while the LoadBalancer or NodePort of this Service reaches the
pods directly and bypasses it. The rule still fires and says so: the fix is to make this
Service `ClusterIP` and let the Gateway reach it. (A Gateway's own data-plane Service, a
LoadBalancer in front of the Envoy or Istio gateway pods, selects no model server and is
never reported.) Pods are matched with the labels their controller adds (`pod_labels`).

## Why is this bad?
An OpenAI-compatible server answers anyone who reaches its port: the whole internet through an
external load balancer, or anyone who reaches a node's port for a `NodePort`. Scanners look for
`/v1/models` and `/api/tags` on public addresses; an open server is free GPU time for others,
leaks what the model was tuned on, and exposes endpoints (LoRA loading, `/v1/load_lora_adapter`,
Ollama's `/api/pull`) that change what it serves.

## Example
```yaml
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
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "Qwen/Qwen2.5-7B-Instruct"]
          resources:
            limits: {nvidia.com/gpu: 1}
---
apiVersion: v1
kind: Service
metadata:
  name: vllm
spec:
  type: LoadBalancer
  selector: {app: vllm}
  ports: [{port: 80, targetPort: 8000}]
```

## Use instead
```yaml
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
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "Qwen/Qwen2.5-7B-Instruct"]
          resources:
            limits: {nvidia.com/gpu: 1}
---
apiVersion: v1
kind: Service
metadata:
  name: vllm
  annotations:
    service.beta.kubernetes.io/aws-load-balancer-scheme: internal
spec:
  type: LoadBalancer
  selector: {app: vllm}
  ports: [{port: 80, targetPort: 8000}]
```
or keep the Service `ClusterIP` behind an authenticating Gateway or Ingress, require an
authenticated identity at the pod (Istio `AuthorizationPolicy`), or start vLLM with
`--api-key` read from a Secret (`VLLM_API_KEY`).

## Options
None.

## Severity
Error for `LoadBalancer`; warning for `NodePort` (node addresses are often private).

## Fix
None: which network should reach the server is the team's decision.

## References
- https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/service/annotations/
- https://cloud.google.com/kubernetes-engine/docs/concepts/service-load-balancer-parameters
- https://learn.microsoft.com/en-us/azure/aks/internal-lb
- https://docs.vllm.ai/en/latest/serving/openai_compatible_server/
- https://istio.io/latest/docs/reference/config/security/authorization-policy/
- https://gateway.envoyproxy.io/docs/concepts/gateway_api_extensions/security-policy/
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, K8sObject, Severity, as_dict
from ailint.core.rule import Options, Rule, Scope
from ailint.domain.context import Context
from ailint.domain.extract import Container, PodTemplate, has_flag
from ailint.domain.ingress_auth import gateway_authentication, mesh_authentication
from ailint.domain.roles import serving_engine
from ailint.domain.selectors import selected

RULE = Rule(
    code="SEC011",
    name="model-server-public-unauthenticated",
    severity=Severity.ERROR,
    summary="A model server is reachable through a public LoadBalancer or NodePort Service without authentication",
    kinds=("Service",),
    scope=Scope.BUNDLE,
    single_object=False,
    tags=("security", "serving", "network"),
    precision="high",
    security_severity=8.0,
)

_AUTH_PROXY = lazy_re(
    r"oauth2-proxy|kube-rbac-proxy|pomerium|authelia|openresty.*auth|envoy.*authz|ext-authz|keycloak-gatekeeper|"
    r"vouch-proxy|caddy-security"
)


def internal(svc: K8sObject) -> bool:
    ann = {str(k).lower(): str(v).strip().lower() for k, v in svc.annotations.items()}
    if ann.get("service.beta.kubernetes.io/aws-load-balancer-scheme") == "internal":
        return True
    v = ann.get("service.beta.kubernetes.io/aws-load-balancer-internal")
    if v is not None and v != "false":
        return True
    if "internal" in (ann.get("networking.gke.io/load-balancer-type"), ann.get("cloud.google.com/load-balancer-type")):
        return True
    if ann.get("service.beta.kubernetes.io/azure-load-balancer-internal") == "true":
        return True
    spec = as_dict(svc.get("spec"))
    if str(spec.get("loadBalancerClass") or "").endswith("-internal"):
        return True
    return bool(spec.get("loadBalancerSourceRanges"))


def _authenticated(pod: PodTemplate, server: Container) -> bool:
    if has_flag(server.tokens, "--api-key") or server.has_env("VLLM_API_KEY") or server.has_env("API_KEY"):
        return True
    return any(_AUTH_PROXY.search(c.image.lower() + " " + c.name.lower()) for c in pod.containers() if c is not server)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    spec = as_dict(obj.get("spec"))
    kind = spec.get("type")
    if obj.group != "" or kind not in ("LoadBalancer", "NodePort") or internal(obj):
        return
    selector = spec.get("selector")
    if not isinstance(selector, dict) or not selector:
        return
    for wl, pod in selected(ctx, obj.namespace_or_default, selector):
        for c in pod.containers(include_init=False):
            engine = serving_engine(c)
            if not engine or _authenticated(pod, c) or mesh_authentication(ctx, pod) is not None:
                continue
            gw = gateway_authentication(ctx, obj)
            if gw is not None:
                remedy = (
                    f"{ctx.describe(gw.route)} reaches it through Gateway {gw.gateway_name}, which "
                    f"{ctx.describe(gw.policy)} authenticates ({', '.join(gw.methods)}), but this Service's own "
                    f"{kind} address bypasses the gateway; make the Service ClusterIP so only the gateway reaches it"
                )
            else:
                remedy = (
                    "make it internal, serve it as a ClusterIP Service behind an authenticating gateway, "
                    "or set --api-key"
                )
            yield RULE.finding(
                obj,
                ("spec", "type"),
                f"{kind} Service {obj.name} exposes {engine} in {ctx.describe(wl)} without an internal-load-balancer "
                f"annotation and nothing in the pod checks credentials: anyone who reaches the address can use "
                f"the model; {remedy}",
                severity=Severity.WARNING if kind == "NodePort" else None,
                severity_reason="a NodePort is reachable only where the nodes are" if kind == "NodePort" else None,
            )
            return
