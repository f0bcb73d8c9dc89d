"""
## What it does
Finds inference servers that load NVFP4/FP4 weights or an NVFP4 KV cache and can land on
GPUs without native FP4 support. FP4 is seen as `--quantization` (`-q`, TGI `--quantize`)
naming `nvfp4`, `modelopt_fp4` or `fp4`, `--kv-cache-dtype nvfp4*`, a model name with an
`NVFP4`/`FP4` token (`MXFP4` is a different format and is not flagged), or the same keys
in a RayService's `engine_kwargs`.

It fires when the target instance set (the pod's selectors intersected with the NodePools
that would host it) contains GPUs other than the Blackwell ones: `b200`, `b300`,
`rtx-pro-4500`, `rtx-pro-server-6000` (families p6-b200, p6-b300, g7, g7e). A warning when
no target type is Blackwell, info when the set is mixed. Pods whose target set is unknown
are skipped.

## Why is this bad?
NVFP4 tensor cores exist only on Blackwell. On Hopper, Ada or Ampere the engine
dequantizes the 4-bit weights in software: the model still fits in less memory, but it
runs slower than FP8 or BF16 would on the same GPU, and an NVFP4 KV cache is refused or
emulated. In a mixed pool the same Deployment is fast on one node and slow on the next.

## Example
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: llama-fp4
spec:
  nodeSelector:
    karpenter.k8s.aws/instance-gpu-name: h100
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.10.1
      args: ["--model", "nvidia/Llama-3.3-70B-Instruct-FP4"]
      resources:
        limits:
          nvidia.com/gpu: 1
```

## Use instead
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: llama-fp4
spec:
  nodeSelector:
    karpenter.k8s.aws/instance-gpu-name: b200
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.10.1
      args: ["--model", "nvidia/Llama-3.3-70B-Instruct-FP4"]
      resources:
        limits:
          nvidia.com/gpu: 1
```

## Options
None.

## Fix
Unsafe (the pod then needs capacity that offers Blackwell GPUs): adds the required node
affinity `karpenter.k8s.aws/instance-gpu-name In [b200, b300, rtx-pro-4500,
rtx-pro-server-6000]` (`eks.amazonaws.com/instance-gpu-name` on EKS Auto Mode pools).
No fix when the pod's own selectors already pin other GPUs or instance types.

## References
- https://docs.vllm.ai/en/stable/features/quantization/index.html
- https://github.com/aws/karpenter-provider-aws/blob/main/website/content/en/docs/reference/instance-types.md
- https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity, as_dict, as_list
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import instances, serving
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, pod_node_requirements, pod_templates
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SRV006",
    name="quantization-unsupported-by-gpu",
    severity=Severity.WARNING,
    summary="NVFP4/FP4 weights or KV cache are served on GPUs without native FP4 (non-Blackwell)",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("serving", "gpu", "quantization"),
)

_FP4_NAME = lazy_re(r"(?<![a-z0-9])(nv)?fp4(?![a-z0-9])", re.I)


def _fp4_reason(quant: str | None, kv: str | None, model: str | None) -> str | None:
    d = serving.data()
    if quant and quant.strip().lower() in d["nvfp4_quantization"]:
        return f"quantization {quant.strip()}"
    if kv and kv.strip().lower().startswith("nvfp4"):
        return f"KV cache dtype {kv.strip()}"
    if model:
        base = model.rstrip("/").rsplit("/", 1)[-1]
        m = _FP4_NAME.search(base)
        if m:
            return f"{m.group(0)} model {base}"
    return None


def _gpu_types(types: set[str]) -> list[Any]:
    return [it for t in sorted(types) if (it := instances.get(t)) is not None and it.is_gpu]


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if ctx is None or not getattr(ctx, "bundle", False):
        return
    if obj.kind == "RayService":
        yield from _rayservice(obj, ctx)
        return
    for pod in pod_templates(obj):
        for c, engine in serving.iter_serving(pod):
            args = serving.engine_args(c, engine)
            if args is None:
                continue
            model = serving.served_model(c, args)
            reason = _fp4_reason(args.raw("quantization"), args.raw("kv_cache_dtype"), model)
            if reason is None:
                continue
            key = (
                "quantization"
                if reason.startswith("quantization")
                else "kv_cache_dtype"
                if reason.startswith("KV")
                else None
            )
            where = serving.flag_path(c, args.flag_names(key)) if key else None
            if where is not None:
                path, span = where, serving.flag_span(obj, c, args.flag_names(key or ""))
            else:
                loc = serving.text_location(obj, c, model or "")
                path, span = loc if loc else (c.path_of("image"), None)
            yield from _judge(obj, ctx, pod, path, span, reason)


def _judge(obj: Any, ctx: Any, pod: Any, path: tuple, span: Any, reason: str) -> Iterator[Finding]:
    types = ctx.target_types(pod)
    if not types:
        return
    gpus = _gpu_types(types)
    if not gpus:
        return
    blackwell = set(instances.blackwell_gpu_names())
    other = sorted({it.gpu_name for it in gpus if it.gpu_name not in blackwell})
    if not other:
        return
    mixed = len(other) < len({it.gpu_name for it in gpus})
    names = ", ".join(other)
    if mixed:
        msg = (
            f"{reason} can land on non-Blackwell GPUs ({names}) as well as Blackwell ones; FP4 runs emulated "
            "there: require instance-gpu-name b200/b300/rtx-pro"
        )
    else:
        alt = "an fp8 KV cache" if reason.startswith("KV") else "an FP8/BF16 checkpoint"
        msg = (
            f"{reason} runs on {names} GPUs, which have no native FP4 (Blackwell only): it runs emulated; use "
            f"b200/b300/rtx-pro GPUs or {alt}"
        )
    yield RULE.finding(
        obj, path, msg, severity=Severity.INFO if mixed else Severity.WARNING, span=span, fix=_fix(obj, ctx, pod)
    )


def _fix(obj: Any, ctx: Any, pod: Any) -> Fix | None:
    for term in pod_node_requirements(pod):
        for r in term:
            if r.key in instances.INSTANCE_KEYS or r.key == "karpenter.sh/nodepool":
                return None  # the pod pins types itself: changing that is a human decision
    auto = ctx.profile.flag("autoMode") or any(p.is_auto_mode for p in ctx.pools_for(pod))
    key = ("eks.amazonaws.com/" if auto else "karpenter.k8s.aws/") + "instance-gpu-name"
    expr = {"key": key, "operator": "In", "values": list(instances.blackwell_gpu_names())}
    spec_path = pod.spec_path
    spec = pod.spec
    aff = spec.get("affinity")
    title = f"require {key} In [{', '.join(instances.blackwell_gpu_names())}]"
    if aff is None:
        e = edits.insert_value(
            obj,
            spec_path,
            "affinity",
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [expr]}]
                    }
                }
            },
        )
        return make_fix(title, [e], unsafe=True)
    if not isinstance(aff, dict) or not aff:
        return None
    na = aff.get("nodeAffinity")
    if na is None:
        e = edits.insert_value(
            obj,
            spec_path + ("affinity",),
            "nodeAffinity",
            {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}},
        )
        return make_fix(title, [e], unsafe=True)
    if not isinstance(na, dict) or not na:
        return None
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is None:
        e = edits.insert_value(
            obj,
            spec_path + ("affinity", "nodeAffinity"),
            "requiredDuringSchedulingIgnoredDuringExecution",
            {"nodeSelectorTerms": [{"matchExpressions": [expr]}]},
        )
        return make_fix(title, [e], unsafe=True)
    terms = as_list(as_dict(req).get("nodeSelectorTerms"))
    out = []
    for i, term in enumerate(terms):
        exprs = as_dict(term).get("matchExpressions")
        if not isinstance(exprs, list) or not exprs:
            return None
        out.append(
            edits.append_item(
                obj,
                spec_path
                + (
                    "affinity",
                    "nodeAffinity",
                    "requiredDuringSchedulingIgnoredDuringExecution",
                    "nodeSelectorTerms",
                    i,
                    "matchExpressions",
                ),
                expr,
            )
        )
    if not out or any(e is None for e in out):
        return None
    return make_fix(title, out, unsafe=True)


def _rayservice(obj: Any, ctx: Any) -> Iterator[Finding]:
    configs = serving.llm_configs(obj)
    if not configs:
        return
    workers = serving.ray_worker_gpus(list(pod_templates(obj)))
    for cfg in configs:
        ek = cfg.engine_kwargs
        q = ek.get("quantization")
        kv = ek.get("kv_cache_dtype")
        reason = _fp4_reason(
            q if isinstance(q, str) else None, kv if isinstance(kv, str) else None, cfg.model_source or cfg.model_id
        )
        if reason is None:
            continue
        span = (
            serving.span_in_scalar(obj, ("spec", "serveConfigV2"), r"model_source:[ \t]*[^\s#]+")
            if len(configs) == 1 and cfg.model_source
            else None
        )
        for pod, _, _ in workers:
            found = list(_judge(obj, ctx, pod, ("spec", "serveConfigV2"), span, reason))
            if found:
                yield found[0]
                break
