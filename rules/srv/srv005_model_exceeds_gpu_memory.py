"""
## What it does
Estimates the weight memory of the model an inference server loads and compares it with
the accelerator memory it can use on every instance type of its target instance set
(the types its selectors and the NodePools that would host it allow).

- Weights = parameters x bytes per parameter. Parameters come from the
  `ailint.io/model-size` or `ailint.io/model-params` annotation, or the count in the model
  id (`--model`, `--model-path`, `--model-id`, `vllm serve <model>`, `--served-model-name`,
  RayService `model_source`/`model_id`: `70B`, MoE `8x7B`). Bytes per parameter come from
  `--quantization`/`--quantize`, a quantization suffix in the name, or `--dtype`
  (bf16/fp16/auto 2, fp8/int8 1, awq/gptq/int4/nvfp4 0.5).
- Usable memory = `--gpu-memory-utilization` (SGLang `--mem-fraction-static`, RayService
  `engine_kwargs.gpu_memory_utilization`; 0.9 by default) x per-device memory as EC2
  reports it x TP x PP, plus `--cpu-offload-gb` per device. Neuron types count memory per
  NeuronCore rank (32 GiB Inferentia2/Trainium chips, 96 GiB Trainium2 chips).

It is an error when the weights alone do not fit on any target type, and a warning when
less than 10% of the usable memory is left for the KV cache. Pods whose target instance
set is unknown are skipped.

## Why is this bad?
vLLM and SGLang allocate the weights first; if they do not fit, the engine dies with an
out-of-memory error after downloading the whole model, and the pod crash-loops on an
expensive node. With almost no room left for the KV cache, the engine starts but refuses
long prompts or serves a handful of concurrent requests. An A10G or L4 reports 22.35 GiB,
not 24: an 8B model in bf16 (about 15 GiB) fits, a 13B model (about 24 GiB) does not.

## Example
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: vllm
spec:
  nodeSelector:
    node.kubernetes.io/instance-type: g5.2xlarge
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.9.2
      args: ["--model", "meta-llama/Llama-2-13b-chat-hf"]
      resources:
        limits:
          nvidia.com/gpu: 1
```

## Use instead
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: vllm
spec:
  nodeSelector:
    node.kubernetes.io/instance-type: g5.12xlarge
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.9.2
      args: ["--model", "meta-llama/Llama-2-13b-chat-hf", "--tensor-parallel-size", "2"]
      resources:
        limits:
          nvidia.com/gpu: 2
```

## Options
- `kv-cache-headroom` (number, default 0.1): the fraction of usable memory that must stay
  free for the KV cache before the warning fires.

## Fix
None: raise tensor parallelism, pick an instance type with more memory per GPU, or serve a
quantized checkpoint (AWQ/GPTQ/FP8). The message names the largest fit it found.

## References
- https://docs.vllm.ai/en/stable/configuration/conserving_memory.html
- https://github.com/aws/karpenter-provider-aws/blob/main/website/content/en/docs/reference/instance-types.md
- https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trainium2.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity
from ailint.core.rule import Option, Options, Rule, Scope
from ailint.domain import instances, models, serving
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, pod_templates
from ailint.domain.quantities import format_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SRV005",
    name="model-exceeds-gpu-memory",
    severity=Severity.ERROR,
    summary="The model's weights do not fit in the accelerator memory of any instance type the pod can use",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.NEVER,
    options={"kv-cache-headroom": Option(0.1, "fraction of usable memory to keep for the KV cache", "number")},
    tags=("serving", "gpu", "memory"),
    precision="medium",
)

_GIB = 2**30
# Ray Serve LLM `accelerator_type` -> Karpenter GPU name (and memory, where it tells the sizes apart)
_RAY_ACCEL = {
    "A10G": ("a10g", None),
    "L4": ("l4", None),
    "L40S": ("l40s", None),
    "T4": ("t4", None),
    "H100": ("h100", None),
    "H200": ("h200", None),
    "B200": ("b200", None),
    "A100": ("a100", None),
    "A100-40G": ("a100", 40960),
    "A100-80G": ("a100", 81920),
}


def _rank_memory(it: Any) -> float:
    """Bytes of accelerator memory per engine rank (GPU, or NeuronCore rank on Neuron)."""
    if it.is_gpu:
        return it.memory_mib_per_device * 2**20
    cores = it.neuron_cores or it.count
    if it.accelerator_name == "trainium2":
        cores = max(1, cores // 2)  # LNC=2 by default: two physical cores per logical rank
    return it.count * it.memory_mib_per_device * 2**20 / max(cores, 1)


def _usable(types: set[str], neuron: bool, util: float, shards: int, offload_gib: float) -> list[tuple[float, str]]:
    out = []
    for t in types:
        it = instances.get(t)
        if it is None or (it.is_neuron != neuron) or not (it.is_gpu or it.is_neuron):
            continue
        out.append((util * _rank_memory(it) * shards + offload_gib * _GIB * shards, t))
    return sorted(out, reverse=True)


def _judge(
    obj: Any,
    path: tuple,
    label: str,
    weights: float,
    how: str,
    usable: list[tuple[float, str]],
    util: float,
    shards: int,
    headroom: float,
    span: Any = None,
) -> Iterator[Finding]:
    if not usable:
        return
    best, best_type = usable[0]
    it = instances.get(best_type)
    per = format_bytes(_rank_memory(it)) if it else "?"
    where = (
        f"{best_type} gives {util:g} x {shards} x {per} = {format_bytes(best)}"
        if len(usable) == 1
        else f"the best target type, {best_type}, gives {util:g} x {shards} x {per} = {format_bytes(best)}"
    )
    if weights > best:
        yield RULE.finding(
            obj,
            path,
            f"{label} weights ~{format_bytes(weights)} ({how}) do not fit any target instance type: {where}",
            span=span,
        )
    elif best - weights < headroom * best:
        left = best - weights
        yield RULE.finding(
            obj,
            path,
            f"{label} weights ~{format_bytes(weights)} ({how}) leave {format_bytes(left)} "
            f"for the KV cache at most ({where})",
            severity=Severity.WARNING,
            span=span,
        )


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if ctx is None or not getattr(ctx, "bundle", False):
        return
    headroom = opts.get_float("kv-cache-headroom")
    if obj.kind == "RayService":
        yield from _rayservice(obj, ctx, headroom)
        return
    pods = list(pod_templates(obj))
    if obj.kind == "LeaderWorkerSet" and any(p.role == "leader" for p in pods):
        pods = [p for p in pods if p.role == "leader"]
    for pod in pods:
        for c, engine in serving.iter_serving(pod):
            args = serving.engine_args(c, engine)
            if args is None or args.unresolved:
                continue
            acc = c.accelerators()
            neuron = any(r.startswith("aws.amazon.com/neuron") for r in acc)
            if not neuron and not any(r in acc for r in ("nvidia.com/gpu", "amd.com/gpu")):
                continue
            est = models.estimate(c, pod)
            if est is None:
                continue
            types = ctx.target_types(pod)
            if not types:
                continue
            if engine == "tgi":
                shards = args.int("tp") or int(serving.gpu_limit(c) or 1)
            else:
                shards = args.tp * args.pp
                if args.dp > 1 and serving.has_flag(args.tokens, ("--enable-expert-parallel", "-ep")):
                    continue  # experts spread over TP x DP ranks, across pods: the per-GPU share is unknown
            util = args.float("gpu_memory_utilization") or serving.data()["gpu_memory_utilization_default"]
            offload = args.float("cpu_offload_gb") or 0.0
            usable = _usable(types, neuron, util, shards, offload)
            model = est.model or "the model"
            loc = serving.text_location(obj, c, est.model or "")
            mpath, span = loc if loc else (c.path_of("image"), None)
            yield from _judge(obj, mpath, model, est.bytes, est.how, usable, util, shards, headroom, span=span)


def _rayservice(obj: Any, ctx: Any, headroom: float) -> Iterator[Finding]:
    configs = serving.llm_configs(obj)
    workers = serving.ray_worker_gpus(list(pod_templates(obj)))
    if not configs or not workers:
        return
    types: set[str] = set()
    for pod, _, _ in workers:
        t = ctx.target_types(pod)
        if not t:
            return
        types |= t
    for cfg in configs:
        model = cfg.model_source or cfg.model_id
        params = models.parse_params(obj.annotations.get(models.MODEL_PARAMS_ANNOTATION)) if len(configs) == 1 else None
        params = params or models.params_from_model_id(cfg.model_source) or models.params_from_model_id(cfg.model_id)
        if not params:
            continue
        ek = cfg.engine_kwargs
        toks = []
        for key, flag in (("quantization", "--quantization"), ("dtype", "--dtype")):
            if isinstance(ek.get(key), str):
                toks += [flag, ek[key]]
        bpp = models.bytes_per_param(toks, model)
        weights = params * bpp
        how = f"{params / 1e9:.3g}B params x {bpp:g} bytes"
        sel = types
        accel = _RAY_ACCEL.get((cfg.accelerator_type or "").upper())
        if accel:
            sel = {
                t
                for t in types
                if (it := instances.get(t)) is not None
                and it.gpu_name == accel[0]
                and (accel[1] is None or it.memory_mib_per_device == accel[1])
            } or types
        util = serving.to_float(ek.get("gpu_memory_utilization")) or serving.data()["gpu_memory_utilization_default"]
        shards = cfg.tp * cfg.pp
        usable = _usable(sel, False, util, shards, serving.to_float(ek.get("cpu_offload_gb")) or 0.0)
        span = (
            serving.span_in_scalar(obj, ("spec", "serveConfigV2"), r"model_source:[ \t]*[^\s#]+")
            if len(configs) == 1 and cfg.model_source
            else None
        )
        yield from _judge(
            obj,
            ("spec", "serveConfigV2"),
            f"llm_config {model}",
            weights,
            how,
            usable,
            util,
            shards,
            headroom,
            span=span,
        )
