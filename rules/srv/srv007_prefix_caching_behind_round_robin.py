"""
## What it does
Finds vLLM servers (prefix caching is on by default in vLLM V1 unless
`--no-enable-prefix-caching`) and SGLang servers (radix cache on unless
`--disable-radix-cache`) that run more than one replica (`replicas` > 1, or an HPA or
KEDA ScaledObject allowing more) and are reached through a plain `Service` in the same
namespace: one that selects their pods (with the labels their controller adds, such as an
LWS leader's `leaderworkerset.sigs.k8s.io/worker-index: "0"`), is not headless and has no
`sessionAffinity: ClientIP`, while no `InferencePool` selects the same pods and no
vLLM production-stack router in the namespace uses session or prefix-aware routing.

Workloads with no Service in the run are skipped (their routing is unknown). Where a
repository keeps alternatives of one Service (two blueprints that define the same namespace
and name), the workload is judged behind the copy in its own file, else in its own folder.

Severity: warning with 3 or more replicas (most requests miss the cache); info with 2.

## Why is this bad?
Prefix caching only pays off when requests that share a prefix (a system prompt, a chat
history, a RAG context) reach the replica that already holds it. A Service balances
connections round-robin, so with N replicas about 1/N of the shared prefixes hit the
cache: measured reuse drops to about 25%, against over 80% with prefix-aware routing, and
time-to-first-token and GPU cost go up accordingly.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
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
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
---
apiVersion: v1
kind: Service
metadata:
  name: vllm
spec:
  selector: {app: vllm}
  ports:
    - port: 8000
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
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
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
---
apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata:
  name: vllm
spec:
  selector:
    matchLabels: {app: vllm}
  targetPorts:
    - number: 8000
  endpointPickerRef:
    name: vllm-epp
    port:
      number: 9002
```

## Options
None.

## Fix
Unsafe stopgap, offered when the Service is in the same file: sets
`sessionAffinity: ClientIP` on it (sticky per client, not per prefix). The real fix is an
`InferencePool` with an endpoint picker (Gateway API Inference Extension, llm-d) or a
prefix-aware router, which the linter cannot generate safely.

## References
- https://docs.vllm.ai/en/stable/design/prefix_caching.html
- https://gateway-api-inference-extension.sigs.k8s.io/
- https://kubernetes.io/docs/reference/networking/virtual-ips/#session-affinity
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity, as_dict, get_in
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import serving
from ailint.domain.context import Context, nearest
from ailint.domain.extract import pod_templates
from ailint.domain.pod_labels import may_select
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SRV007",
    name="prefix-caching-behind-round-robin",
    severity=Severity.INFO,
    summary="Replicated vLLM/SGLang servers with prefix caching sit behind round-robin Service balancing",
    kinds=("Deployment", "StatefulSet", "LeaderWorkerSet"),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("serving", "routing", "cost"),
    precision="medium",
)


def _autoscaler_max(obj: Any, ctx: Any) -> int | None:
    ns = obj.namespace_or_default
    best = None
    for hpa in ctx.of_kind("HorizontalPodAutoscaler", namespace=ns):
        ref = as_dict(hpa.get("spec", "scaleTargetRef"))
        if ref.get("kind") == obj.kind and ref.get("name") == obj.name:
            v = serving.arg_int(hpa.get("spec", "maxReplicas"))
            if v is not None:
                best = max(best or 0, v)
    for so in ctx.of_kind("ScaledObject", namespace=ns):
        ref = as_dict(so.get("spec", "scaleTargetRef"))
        if (ref.get("kind") or "Deployment") == obj.kind and ref.get("name") == obj.name:
            v = serving.arg_int(so.get("spec", "maxReplicaCount"))
            best = max(best or 0, 100 if v is None else v)
    return best


def _pool_selects(pool: Any, pod: Any) -> bool:
    """The InferencePool's selector (v1 `matchLabels`, v1alpha2 a plain map) selects the pod."""
    sel = pool.get("spec", "selector")
    if not isinstance(sel, dict) or not sel:
        return False
    if "matchLabels" in sel:
        sel = as_dict(sel.get("matchLabels"))
        if not sel:
            return False
    return may_select(sel, pod)


def _prefix_aware_router(ctx: Any, ns: str) -> bool:
    aware = set(serving.data()["prefix_aware_router_logic"])
    for o in ctx.of_kind("Deployment", "StatefulSet", namespace=ns):
        for pod in pod_templates(o):
            for c in pod.containers(include_init=False):
                toks = c.tokens
                logic = serving.get_flag(toks, ["--routing-logic"])
                if logic and logic.strip().lower() in aware:
                    return True
    return False


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if ctx is None or not getattr(ctx, "bundle", False):
        return
    pods = list(pod_templates(obj))
    if obj.kind == "LeaderWorkerSet" and any(p.role == "leader" for p in pods):
        pods = [p for p in pods if p.role == "leader"]
    for pod in pods:
        engines = [(c, e) for c, e in serving.iter_serving(pod) if e in ("vllm", "sglang")]
        cached = [(c, e) for c, e in engines if (a := serving.engine_args(c, e)) is not None and a.prefix_caching]
        if not cached:
            continue
        spec = as_dict(obj.get("spec"))
        replicas = serving.arg_int(spec.get("replicas")) if "replicas" in spec else 1
        auto = _autoscaler_max(obj, ctx)
        n = max(x for x in (replicas, auto, 0) if x is not None)
        if n <= 1:
            continue
        ns = obj.namespace_or_default
        services = []
        for svc in ctx.of_kind("Service", namespace=ns):
            sel = svc.get("spec", "selector")
            if not isinstance(sel, dict) or not sel or svc.get("spec", "clusterIP") == "None":
                continue
            if svc.get("spec", "type") == "ExternalName":
                continue
            if may_select(sel, pod):
                services.append(svc)
        # (an alternative of the same Service in another blueprint's folder is not the one
        # applied with this workload)
        services = nearest(obj, services)
        if not services:
            continue
        if any(s.get("spec", "sessionAffinity") == "ClientIP" for s in services):
            continue
        if any(_pool_selects(p, pod) for p in ctx.of_kind("InferencePool", namespace=ns)):
            continue
        if _prefix_aware_router(ctx, ns):
            continue
        _c, engine = cached[0]
        what = "vLLM prefix caching" if engine == "vllm" else "SGLang's radix (prefix) cache"
        how = f"{n} replicas" if auto is None else f"up to {n} replicas"
        names = ", ".join(sorted({ctx.describe(s) for s in services}))
        msg = (
            f"{what} is on in {how} behind round-robin {names}, so shared prefixes miss the cache; "
            "route with an InferencePool or use sessionAffinity: ClientIP"
        )
        path = ("spec", "replicas") if "replicas" in spec else ("spec",)
        yield RULE.finding(
            obj, path, msg, severity=Severity.WARNING if n >= 3 else Severity.INFO, fix=_fix(obj, services)
        )
        return


def _fix(obj: Any, services: list[Any]) -> Fix | None:
    if len(services) != 1:
        return None
    svc = services[0]
    if svc.source is not obj.source:
        return None
    if svc.has(("spec", "sessionAffinity")):
        e = edits.replace_value(svc, ("spec", "sessionAffinity"), "ClientIP")
    else:
        if not isinstance(get_in(svc.data, ("spec",)), dict):
            return None
        e = edits.insert_value(svc, ("spec",), "sessionAffinity", "ClientIP")
    return make_fix(f"set sessionAffinity: ClientIP on Service {svc.name} (a stopgap)", [e], unsafe=True)
