"""
## What it does
Finds disaggregated prefill/decode serving pairs and checks that the two halves are
configured as one system. A workload (Deployment, StatefulSet or LeaderWorkerSet running
an inference server) takes a role from:

- vLLM `--kv-transfer-config` with `kv_role` `kv_producer` (prefill) or `kv_consumer`
  (decode), or SGLang `--disaggregation-mode prefill|decode`;
- the `llm-d.ai/role` label, or a `prefill`/`decode` word in its name or labels.

A prefill workload is paired with the decode workload of the same namespace that shares
its name stem (`llama-prefill`/`llama-decode`) or its model, or with the only decode
workload there. For each pair it reports:

- (a) only one side has an HPA or KEDA ScaledObject (reported on the other side);
- (b) only one side configures a KV connector (`--kv-transfer-config`, SGLang
  `--disaggregation-transfer-backend`), or the two name different connectors;
- (c) neither side configures a KV connector or shared KV tier (NIXL, LMCache, Mooncake,
  `LMCACHE_*` env).

## Why is this bad?
Prefill and decode only work as a pair: the prefill side computes the KV cache and the
decode side must receive it through the same connector. If only one side autoscales, the
prefill:decode ratio drifts under load and the fixed side becomes the bottleneck (queued
prefills, or decodes waiting for KV). Without a common connector or shared KV tier the
decode side recomputes every prompt, so the split costs GPUs and gains nothing.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama-prefill
spec:
  selector:
    matchLabels: {app: llama-prefill}
  template:
    metadata:
      labels: {app: llama-prefill}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct",
                 "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}']
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama-decode
spec:
  selector:
    matchLabels: {app: llama-decode}
  template:
    metadata:
      labels: {app: llama-decode}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama-prefill
spec:
  selector:
    matchLabels: {app: llama-prefill}
  template:
    metadata:
      labels: {app: llama-prefill}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct",
                 "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}']
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama-decode
spec:
  selector:
    matchLabels: {app: llama-decode}
  template:
    metadata:
      labels: {app: llama-decode}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct",
                 "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}']
```

## Options
None.

## Fix
None: the prefill:decode ratio, the connector and the KV tier are design choices. Scale
both sides together (one autoscaler per side on related metrics, or an orchestrator such
as Grove, Dynamo or llm-d), and give both the same `kv_connector`.

## References
- https://docs.vllm.ai/en/stable/features/disagg_prefill.html
- https://docs.sglang.ai/advanced_features/pd_disaggregation.html
- https://github.com/llm-d/llm-d
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Options, Rule, Scope
from ailint.domain import serving
from ailint.domain.context import Context
from ailint.domain.extract import pod_templates

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SRV010",
    name="disagg-prefill-decode-unbalanced",
    severity=Severity.WARNING,
    summary="A disaggregated prefill/decode pair scales or transfers KV cache inconsistently",
    kinds=("Deployment", "StatefulSet", "LeaderWorkerSet"),
    scope=Scope.BUNDLE,
    fix=FixAvailability.NEVER,
    tags=("serving", "disaggregation", "autoscaling"),
    precision="medium",
)

_WORD = lazy_re(r"(?<![a-z])(prefill|decode)(?![a-z])", re.I)


@dataclass
class Side:
    """One side (prefill or decode) of a disaggregated serving setup."""

    obj: Any
    role: str
    model: str | None
    connector: str | None  # normalized connector name, "" for a shared tier without a named connector
    connector_path: tuple | None
    container_path: tuple


def _kv_config(args: serving.EngineArgs) -> dict[str, Any] | None:
    raw = args.raw("kv_transfer_config")
    if raw is None:
        return None
    try:
        v = json.loads(raw)
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


def side_of(obj: Any) -> Side | None:
    pods = list(pod_templates(obj))
    if obj.kind == "LeaderWorkerSet" and any(p.role == "leader" for p in pods):
        pods = [p for p in pods if p.role == "leader"]
    for pod in pods:
        for c, engine in serving.iter_serving(pod):
            args = serving.engine_args(c, engine)
            role = connector = cpath = None
            if args is not None and engine == "vllm":
                kv = _kv_config(args)
                if kv is not None:
                    cpath = serving.flag_path(c, args.flag_names("kv_transfer_config"))
                    connector = str(kv.get("kv_connector") or "")
                    kr = str(kv.get("kv_role") or "")
                    role = {"kv_producer": "prefill", "kv_consumer": "decode"}.get(kr)
            elif args is not None and engine == "sglang":
                mode = (args.raw("disaggregation_mode") or "").lower()
                if mode in ("prefill", "decode"):
                    role = mode
                    connector = args.raw("disaggregation_backend") or "mooncake"
                    cpath = serving.flag_path(c, args.flag_names("disaggregation_mode"))
            if connector is None and any(str(e.get("name", "")).startswith(("LMCACHE_", "NIXL_")) for e in c.env):
                connector = ""
            if role is None:
                role = _role_from_names(obj, pod)
            if role is None:
                return None
            model = serving.served_model(c, args)
            return Side(obj, role, model, connector, cpath, c.path)
    return None


def _role_from_names(obj: Any, pod: Any) -> str | None:
    labels = {**obj.labels, **pod.labels}
    v = str(labels.get("llm-d.ai/role") or "").lower()
    if v in ("prefill", "decode"):
        return v
    texts = [obj.name or ""] + [str(x) for x in labels.values() if isinstance(x, str)]
    found = {m.group(1).lower() for t in texts for m in _WORD.finditer(t)}
    if len(found) == 1:
        return found.pop()
    return None


def _stem(name: str | None) -> str:
    return re.sub(r"[-_.]+", "-", _WORD.sub("", name or "")).strip("-").lower()


def _sides(ctx: Any, ns: str) -> list[tuple[Any, Side]]:
    """(workload, its side) of the namespace's disaggregated workloads, in object order, once
    per namespace and run (every side looks for its partner among them)."""

    def sides() -> list[tuple[Any, Side]]:
        found = ((o, side_of(o)) for o in ctx.of_kind("Deployment", "StatefulSet", "LeaderWorkerSet", namespace=ns))
        return [(o, s) for o, s in found if s is not None]

    got: list[tuple[Any, Side]] = ctx.memo(("SRV010.sides", ns), sides)
    return got


def _partner(side: Side, ctx: Any) -> Side | None:
    want = "decode" if side.role == "prefill" else "prefill"
    cands = [s for o, s in _sides(ctx, side.obj.namespace_or_default) if o is not side.obj and s.role == want]
    if not cands:
        return None
    by_stem = [s for s in cands if _stem(s.obj.name) == _stem(side.obj.name)]
    if len(by_stem) == 1:
        return by_stem[0]
    by_model = [s for s in cands if side.model and s.model == side.model]
    if len(by_model) == 1:
        return by_model[0]
    return cands[0] if len(cands) == 1 else None


def _autoscaler(obj: Any, ctx: Any) -> str | None:
    ns = obj.namespace_or_default
    for hpa in ctx.of_kind("HorizontalPodAutoscaler", namespace=ns):
        ref = as_dict(hpa.get("spec", "scaleTargetRef"))
        if ref.get("kind") == obj.kind and ref.get("name") == obj.name:
            return ctx.describe(hpa)
    for so in ctx.of_kind("ScaledObject", namespace=ns):
        ref = as_dict(so.get("spec", "scaleTargetRef"))
        if (ref.get("kind") or "Deployment") == obj.kind and ref.get("name") == obj.name:
            return ctx.describe(so)
    return None


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if ctx is None or not getattr(ctx, "bundle", False):
        return
    me = side_of(obj)
    if me is None:
        return
    other = _partner(me, ctx)
    if other is None:
        return
    spec_path = ("spec", "replicas") if obj.has(("spec", "replicas")) else ("spec",)
    mine, theirs = _autoscaler(obj, ctx), _autoscaler(other.obj, ctx)
    if theirs and not mine:
        yield RULE.finding(
            obj,
            spec_path,
            f"{me.role} side {obj.kind} {obj.name} has no autoscaler while its {other.role} pair "
            f"{ctx.describe(other.obj)} scales with {theirs}; the prefill:decode ratio drifts under load",
        )
    if me.role != "prefill":
        if me.connector is None and other.connector:
            yield RULE.finding(
                obj,
                me.container_path,
                f"decode side {obj.name} configures no KV connector while prefill {ctx.describe(other.obj)} uses "
                f"{other.connector or 'a shared KV tier'}; the KV cache cannot reach it",
            )
        return
    if me.connector is None and other.connector is None:
        yield RULE.finding(
            obj,
            me.container_path,
            f"prefill/decode pair {obj.name} and {ctx.describe(other.obj)} configures no KV connector or shared KV "
            "tier (NIXL, LMCache, Mooncake): decode recomputes every prompt",
        )
    elif me.connector is None:
        yield RULE.finding(
            obj,
            me.container_path,
            f"prefill side {obj.name} configures no KV connector while decode {ctx.describe(other.obj)} uses "
            f"{other.connector or 'a shared KV tier'}; the KV cache cannot move between them",
        )
    elif me.connector and other.connector and me.connector.lower() != other.connector.lower():
        yield RULE.finding(
            obj,
            me.connector_path or me.container_path,
            f"prefill {obj.name} uses KV connector {me.connector} but decode {ctx.describe(other.obj)} uses "
            f"{other.connector}; both sides must use the same connector",
        )
