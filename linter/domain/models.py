"""Model-size estimates for the rules that compare weights with memory or disk.

Sizes come, in this order, from the annotation `ailint.io/model-size` (on the pod template
or the object: a quantity such as `140Gi` or `150GB`), from `ailint.io/model-params`
(a parameter count such as `70B`) times the bytes per parameter, or from the parameter
count written in the model id (`Llama-3.1-70B`, MoE `Mixtral-8x7B`, `Qwen3-30B-A3B` is 30B
total) times the bytes per parameter. Bytes per parameter come from `--quantization` /
`--quantize`, then a quantization suffix in the model name (`-AWQ`, `-FP8`, `-bnb-4bit`),
then `--dtype`; bf16/fp16/auto is 2 bytes.

Estimates are deliberately on the low side where the name is ambiguous (MoE totals, mixed
precision): the rules that use them must not invent a shortage.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ailint.core.lazyre import lazy_re
from ailint.domain.extract import KSERVE_LLM_KINDS, Container, PodTemplate, flag_value, model_id
from ailint.domain.quantities import format_bytes, parse_quantity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MODEL_SIZE_ANNOTATION = "ailint.io/model-size"
MODEL_PARAMS_ANNOTATION = "ailint.io/model-params"
IMAGE_SIZE_ANNOTATION = "ailint.io/image-size"

# ---------------------------------------------------------------------------------------
# Parameter counts
# ---------------------------------------------------------------------------------------
_UNIT = {"m": 1e6, "b": 1e9, "t": 1e12}
_EDGE_L = r"(?<![A-Za-z0-9.])"
_EDGE_R = r"(?![A-Za-z0-9])"
_MOE_RE = lazy_re(_EDGE_L + r"(\d+)\s*[xX]\s*(\d+(?:\.\d+)?)\s*([BbTtMm])" + _EDGE_R)
_ACTIVE_EXPERTS_RE = lazy_re(_EDGE_L + r"(\d+(?:\.\d+)?)[Bb]-(\d+)[Ee]" + _EDGE_R)
_SIZE_RE = lazy_re(_EDGE_L + r"(\d+(?:\.\d+)?)\s*([BbTtMm])" + _EDGE_R)

# MoE checkpoints whose name gives experts x expert size or active size x experts: the
# real total is published; e x n would overstate shared attention weights.
_KNOWN_MOE = {(8, 7.0): 46.7e9, (8, 22.0): 141e9}
_KNOWN_ACTIVE_EXPERTS = {(17.0, 16): 109e9, (17.0, 128): 400e9}
# Models whose id carries no size at all.
_KNOWN_NAMES = (
    (lazy_re(r"deepseek-(v3|r1)(?![-_.]?distill)", re.I), 671e9),
    (lazy_re(r"kimi-k2", re.I), 1.0e12),
)
_NATIVE_FP8 = lazy_re(r"deepseek-(v3|r1)|kimi-k2", re.I)


def params_from_model_id(model: str | None) -> float | None:
    """Parameter count written in a model id or path, or None when it does not say.

    `meta-llama/Llama-3.1-70B-Instruct` -> 70e9; `Mixtral-8x7B` -> 46.7e9 (published total;
    other `<e>x<n>B` names count e x n); `Qwen3-30B-A3B` -> 30e9 (the `A3B` active size is
    ignored); `facebook/opt-125m` -> 125e6; `Llama-4-Scout-17B-16E` -> 109e9.
    """
    try:
        p = _params_from_model_id(model)
    except (OverflowError, ValueError):
        return None
    return p if p is not None and math.isfinite(p) and p > 0 else None


def _params_from_model_id(model: str | None) -> float | None:
    if not isinstance(model, str) or not model.strip():
        return None
    name = model.strip()
    m = _MOE_RE.search(name)
    if m:
        experts, size, unit = int(m.group(1)), float(m.group(2)), m.group(3).lower()
        if experts > 0:
            known = _KNOWN_MOE.get((experts, size)) if unit == "b" else None
            return known or experts * size * _UNIT[unit]
    m = _ACTIVE_EXPERTS_RE.search(name)
    if m:
        return _KNOWN_ACTIVE_EXPERTS.get((float(m.group(1)), int(m.group(2))))
    found: dict[str, float] = {}
    for m in _SIZE_RE.finditer(name):
        unit = m.group(2).lower()
        found.setdefault(unit, float(m.group(1)) * _UNIT[unit])
    for unit in ("b", "t", "m"):
        if unit in found and found[unit] > 0:
            return found[unit]
    for pattern, params in _KNOWN_NAMES:
        if pattern.search(name):
            return params
    return None


def parse_params(value: Any) -> float | None:
    """A parameter count from an annotation: `70B`, `1.5T`, `350M`, `8x7B`, `7e9`, 7000000000."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) and value > 0 else None
    s = str(value).strip()
    p = params_from_model_id(s)
    if p is not None:
        return p
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) and v > 0 else None


# ---------------------------------------------------------------------------------------
# Bytes per parameter
# ---------------------------------------------------------------------------------------
_QUANT_FLAGS = ("--quantization", "-q", "--quantize")
_QUANT_BYTES = {
    # 4-bit (and lower) weight formats
    "awq": 0.5,
    "awq_marlin": 0.5,
    "gptq": 0.5,
    "gptq_marlin": 0.5,
    "gptq_marlin_24": 0.5,
    "marlin": 0.5,
    "gguf": 0.5,
    "bitsandbytes": 0.5,
    "bitsandbytes-nf4": 0.5,
    "bitsandbytes-fp4": 0.5,
    "exl2": 0.5,
    "hqq": 0.5,
    "modelopt_fp4": 0.5,
    "nvfp4": 0.5,
    "mxfp4": 0.5,
    "fp4": 0.5,
    "int4": 0.5,
    "w4a16": 0.5,
    "awq-marlin": 0.5,
    "gptq-marlin": 0.5,
    "torchao": 0.5,
    "aqlm": 0.25,
    # 8-bit weight formats
    "fp8": 1.0,
    "fbgemm_fp8": 1.0,
    "ptpc_fp8": 1.0,
    "modelopt": 1.0,
    "int8": 1.0,
    "w8a8": 1.0,
    "w8a8_int8": 1.0,
    "w8a8_fp8": 1.0,
    "experts_int8": 1.0,
    "smoothquant": 1.0,
    "eetq": 1.0,
    "deepspeedfp": 1.0,
    "fp8-e4m3": 1.0,
    "fp8_e4m3": 1.0,
    "modelopt_fp8": 1.0,
}
# TGI's plain `bitsandbytes` is 8-bit (LLM.int8); `-nf4`/`-fp4` are 4-bit.
_TGI_QUANT_BYTES = {"bitsandbytes": 1.0}
_NAME_4BIT = lazy_re(
    r"(^|[^a-z0-9])(int4|4-?bits?|w4a\d+|nvfp4|mxfp4|fp4|q4(_[a-z0-9]+)*|q3(_[a-z0-9]+)*|"
    r"awq|gptq|exl2|bnb|gguf|nf4)([^a-z0-9]|$)",
    re.I,
)
_NAME_8BIT = lazy_re(r"(^|[^a-z0-9])(int8|8-?bits?|w8a\d+|fp8|q8(_[a-z0-9]+)*|fp8-dynamic)([^a-z0-9]|$)", re.I)
_NAME_16BIT = lazy_re(r"(^|[^a-z0-9])(fp16|bf16|f16|float16|bfloat16)([^a-z0-9]|$)", re.I)
_NAME_32BIT = lazy_re(r"(^|[^a-z0-9])(fp32|f32|float32)([^a-z0-9]|$)", re.I)
_DTYPE_BYTES = {
    "float32": 4.0,
    "float": 4.0,
    "fp32": 4.0,
    "float16": 2.0,
    "half": 2.0,
    "fp16": 2.0,
    "bfloat16": 2.0,
    "bf16": 2.0,
    "auto": 2.0,
}


def _name_bytes(model: str | None) -> tuple[float, str] | None:
    if not model:
        return None
    base = model.rstrip("/").rsplit("/", 1)[-1] if "/" in model else model
    for text in (base, model):
        if (m8 := _NAME_8BIT.search(text)) and not re.search(r"(^|[^a-z0-9])(int4|4-?bits?|w4a\d+)", text, re.I):
            return 1.0, m8.group(2).lower()
        m = _NAME_4BIT.search(text)
        if m:
            return 0.5, m.group(2).lower()
        if re.search(r"(^|[^a-z0-9])gpt-oss", text, re.I):
            return 0.5, "mxfp4"
        if _NATIVE_FP8.search(text) and params_from_model_id(text) is not None and not _SIZE_RE.search(text):
            return 1.0, "fp8"
        if _NAME_32BIT.search(text):
            return 4.0, "fp32"
        m = _NAME_16BIT.search(text)
        if m:
            return 2.0, m.group(2).lower()
    return None


def _bytes_per_param(tokens: Sequence[str], model: str | None, on_disk: bool = False) -> tuple[float, str]:
    quant = flag_value(tokens, *_QUANT_FLAGS)
    if quant:
        q = quant.strip().lower()
        tgi = "--quantize" in tokens or any(t.startswith("--quantize=") for t in tokens)
        if tgi and q in _TGI_QUANT_BYTES:
            return _TGI_QUANT_BYTES[q], q
        if q in _QUANT_BYTES:
            return _QUANT_BYTES[q], q
    named = _name_bytes(model)
    if named:
        return named
    if not on_disk:
        dtype = flag_value(tokens, "--dtype")
        if dtype and dtype.strip().lower() in _DTYPE_BYTES:
            d = dtype.strip().lower()
            return _DTYPE_BYTES[d], "bf16/fp16" if d == "auto" else d
    return 2.0, "bf16/fp16"


def bytes_per_param(tokens: Sequence[str], model_id: str | None) -> float:
    """Bytes per weight in GPU memory: quantization flag, model-name suffix, `--dtype`; 2 by default.

    awq/gptq/int4/nvfp4/mxfp4 = 0.5, fp8/int8 = 1, bf16/fp16/auto = 2, float32 = 4.
    """
    return _bytes_per_param(tokens, model_id)[0]


# ---------------------------------------------------------------------------------------
# Sizes
# ---------------------------------------------------------------------------------------
_SIZE_SUFFIX = lazy_re(r"^\s*([0-9.eE+-]+)\s*([KMGTP]i?)B?\s*$", re.I)


def parse_size(value: Any) -> float | None:
    """Bytes from a size annotation: a Kubernetes quantity (`140Gi`, `150G`) or `150GB`/`140GiB`."""
    if isinstance(value, bool) or value is None:
        return None
    q = parse_quantity(value)
    if q is None and isinstance(value, str):
        m = _SIZE_SUFFIX.match(value)
        if m:
            unit = m.group(2)
            unit = unit[0].upper() + unit[1:].lower() if len(unit) == 2 else unit.upper()
            q = parse_quantity(m.group(1) + unit)
    return q if q is not None and math.isfinite(q) and q > 0 else None


@dataclass(frozen=True, slots=True)
class Estimate:
    """How big a model is and how ailint knows."""

    bytes: float
    how: str  # human-readable derivation, for messages
    source: str  # "annotation" (declared size), "params-annotation" or "model-id" (estimates)
    model: str | None = None
    params: float | None = None
    bytes_per_param: float | None = None

    @property
    def exact(self) -> bool:
        """True when the size was declared (annotation), not estimated."""
        return self.source == "annotation"


def _annotation(pod: PodTemplate, key: str) -> tuple[Any, str] | None:
    if key in pod.annotations:
        return pod.annotations[key], "pod template"
    if key in pod.obj.annotations:
        return pod.obj.annotations[key], "object"
    return None


_SERVE_MODEL_RE = lazy_re(r"""["']?\b(model_id|model_source|model)["']?\s*[:=]\s*["']?([A-Za-z0-9_.:/@-]+)""")


def candidate_model_ids(container: Container | None, pod: PodTemplate) -> list[str]:
    """Model ids a container (or a RayService's Serve config) loads, most specific first."""
    out: list[str] = []
    if container is not None:
        m = model_id(container)
        if m:
            out.append(m)
        served = flag_value(container.tokens, "--served-model-name")
        if served:
            out.extend(s for s in served.split(",") if s)
    if pod.obj.kind in KSERVE_LLM_KINDS:
        uri = pod.obj.get("spec", "model", "uri")  # hf://org/name, s3://..., pvc://...
        if isinstance(uri, str) and uri:
            out.append(uri)
    if pod.obj.kind == "RayService":
        cfg = pod.obj.get("spec", "serveConfigV2")
        if isinstance(cfg, str):
            out.extend(m.group(2) for m in _SERVE_MODEL_RE.finditer(cfg))
    return out


def _fmt_params(p: float) -> str:
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if p >= size:
            v = p / size
            return f"{v:.0f}{unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f}{unit}"
    return f"{p:.0f}"


def _how(params: float, bpp: float, why: str) -> str:
    return f"{_fmt_params(params)} params x {bpp:g} byte{'' if bpp == 1 else 's'}, {why}"


def estimate(container: Container | None, pod: PodTemplate, *, on_disk: bool = False) -> Estimate | None:
    """The model's size in bytes, or None when neither an annotation nor the model id says.

    `on_disk=True` sizes the checkpoint as downloaded: `--dtype` (a load-time cast) is
    ignored; quantization flags and name suffixes still count.
    """
    ann = _annotation(pod, MODEL_SIZE_ANNOTATION)
    if ann is not None:
        size = parse_size(ann[0])
        if size is not None:
            return Estimate(size, f"{MODEL_SIZE_ANNOTATION}={ann[0]}", "annotation")
    tokens = container.tokens if container is not None else []
    ids = candidate_model_ids(container, pod)
    ann = _annotation(pod, "ailint.io/model-params")
    if ann is not None:
        params = parse_params(ann[0])
        if params is not None:
            bpp, why = _bytes_per_param(tokens, ids[0] if ids else None, on_disk)
            return Estimate(
                params * bpp, _how(params, bpp, why), "params-annotation", ids[0] if ids else None, params, bpp
            )
    best: Estimate | None = None
    for mid in ids:
        params = params_from_model_id(mid)
        if params is None:
            continue
        bpp, why = _bytes_per_param(tokens, mid, on_disk)
        est = Estimate(params * bpp, _how(params, bpp, why), "model-id", mid, params, bpp)
        if container is not None and mid == ids[0]:
            return est  # the container's own --model wins over aliases
        if best is None or est.bytes > best.bytes:
            best = est
    return best


def estimate_model_bytes(container: Container | None, pod: PodTemplate) -> tuple[float | None, str]:
    """(bytes, how it was derived) for the model a container serves; (None, reason) if unknown."""
    est = estimate(container, pod)
    if est is None:
        return None, "no ailint.io/model-size annotation and no parameter count in the model id"
    return est.bytes, est.how


def image_bytes(pod: PodTemplate) -> float | None:
    """The declared image size (`ailint.io/image-size`), or None: images are never guessed."""
    ann = _annotation(pod, IMAGE_SIZE_ANNOTATION)
    return parse_size(ann[0]) if ann is not None else None


def describe(est: Estimate) -> str:
    """`~131Gi (70B params x 2 bytes (bf16/fp16))` or `140Gi (ailint.io/model-size)`."""
    if est.exact:
        return f"{format_bytes(est.bytes)} ({MODEL_SIZE_ANNOTATION})"
    return f"~{format_bytes(est.bytes)} ({est.how})"


__all__ = [
    "IMAGE_SIZE_ANNOTATION",
    "MODEL_PARAMS_ANNOTATION",
    "MODEL_SIZE_ANNOTATION",
    "Estimate",
    "bytes_per_param",
    "candidate_model_ids",
    "describe",
    "estimate",
    "estimate_model_bytes",
    "image_bytes",
    "params_from_model_id",
    "parse_params",
    "parse_size",
]
