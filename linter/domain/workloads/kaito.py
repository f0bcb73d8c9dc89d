"""KAITO (kaito.sh): Workspace, InferenceSet, RAGEngine and MultiRoleInference.

A Workspace has no `spec`: `resource` (instanceType, count, labelSelector), `inference`
(preset or a pod `template`) and `tuning` sit at the top. With a preset, KAITO builds a
StatefulSet whose pod this adapter synthesizes (kaito-project/kaito
pkg/workspace/inference/preset_inferences.go): one container named after the Workspace
running the vLLM preset (`python3 /workspace/vllm/inference_api.py`, tensor parallel = the
SKU's GPU count), GPU requests = limits = the SKU's GPU count, tolerations
`nvidia.com/gpu` Exists and `sku=gpu`, probes on /health:5000 and a /dev/shm emptyDir. The
SKU table is KAITO's (pkg/sku/azure_sku_handler.go); findings on the synthesized pod point
at `resource.instanceType` or `inference.preset`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ailint.core.model import K8sObject, Path, as_dict
from ailint.domain import instances
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import Catalog, Facts, Family, as_int, synthesized, template

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GROUP = "kaito.sh"
# SKU -> (GPU count, total GPU memory GiB, GPU model): kaito pkg/sku/azure_sku_handler.go,
# plus the NCv3 (V100 16 GB) sizes of the tuning samples (Azure's size tables)
SKUS: dict[str, tuple[int, float, str]] = {
    "Standard_NC4as_T4_v3": (1, 16, "T4"),
    "Standard_NC8as_T4_v3": (1, 16, "T4"),
    "Standard_NC16as_T4_v3": (1, 16, "T4"),
    "Standard_NC64as_T4_v3": (4, 64, "T4"),
    "Standard_NV36ads_A10_v5": (1, 24, "A10"),
    "Standard_NV72ads_A10_v5": (2, 48, "A10"),
    "Standard_NC24ads_A100_v4": (1, 80, "A100"),
    "Standard_NC48ads_A100_v4": (2, 160, "A100"),
    "Standard_NC96ads_A100_v4": (4, 320, "A100"),
    "Standard_ND96asr_A100_v4": (8, 320, "A100"),
    "Standard_ND96amsr_A100_v4": (8, 640, "A100"),
    "Standard_NC40ads_H100_v5": (1, 94, "H100"),
    "Standard_NC80adis_H100_v5": (2, 188, "H100"),
    "Standard_ND96isr_H100_v5": (8, 640, "H100"),
    "Standard_NCC40ads_H100_v5": (1, 94, "H100"),
    "Standard_ND96isr_H200_v5": (8, 1128, "H200"),
    "Standard_NC6s_v3": (1, 16, "V100"),
    "Standard_NC12s_v3": (2, 32, "V100"),
    "Standard_NC24s_v3": (4, 64, "V100"),
}
PORT = 5000


def sku(instance_type: Any) -> tuple[int, float, str] | None:
    return SKUS.get(instance_type) if isinstance(instance_type, str) else None


@dataclass(frozen=True, slots=True)
class PresetNeed:
    """The GPU memory a KAITO inference preset needs, and whether KAITO may spread it over
    several nodes (`SupportDistributedInference`)."""

    gib: float
    distributed: bool
    field: str  # the preset field the value comes from


# Inference presets: (GiB, SupportDistributedInference, field) from kaito-project/kaito
# presets/workspace/models/*/model.go and builtin_models.yaml. `TotalSafeTensorFileSize` is
# the size of the weights (the node estimator in pkg/workspace/estimator/nodesestimator
# sizes nodes from it); for llama-3.3-70b-instruct and phi-3 only releases with
# `TotalGPUMemoryRequirement` were found, and the smallest value they declared is kept.
# gpt-oss-20b/120b are left out: their stated sizes (25.63Gi, 121.54Gi) contradict the
# single-GPU examples KAITO ships for them. Names not listed are never judged.
_SAFETENSORS = "TotalSafeTensorFileSize"
_REQUIREMENT = "TotalGPUMemoryRequirement"
PRESETS: dict[str, PresetNeed] = {
    "phi-4": PresetNeed(27.31, False, _SAFETENSORS),  # builtin_models.yaml
    "phi-4-mini-instruct": PresetNeed(7.15, False, _SAFETENSORS),  # builtin_models.yaml
    "phi-3-mini-4k-instruct": PresetNeed(9, False, _REQUIREMENT),  # phi3/model.go
    "phi-3-mini-128k-instruct": PresetNeed(9, False, _REQUIREMENT),
    "phi-3-medium-4k-instruct": PresetNeed(28, False, _REQUIREMENT),
    "phi-3-medium-128k-instruct": PresetNeed(28, False, _REQUIREMENT),
    "mistral-7b": PresetNeed(13.49, False, _SAFETENSORS),  # mistral/model.go
    "mistral-7b-instruct": PresetNeed(13.49, False, _SAFETENSORS),
    "ministral-3-3b-instruct": PresetNeed(8.70, False, _SAFETENSORS),
    "ministral-3-8b-instruct": PresetNeed(19.41, False, _SAFETENSORS),
    "ministral-3-14b-instruct": PresetNeed(29.29, False, _SAFETENSORS),
    "mistral-large-3-675b-instruct": PresetNeed(634.70, True, _SAFETENSORS),
    "gemma-3-4b-instruct": PresetNeed(8.6, False, _SAFETENSORS),  # gemma3/model.go
    "gemma-3-27b-instruct": PresetNeed(54.8, False, _SAFETENSORS),
    "qwen2.5-coder-7b-instruct": PresetNeed(14.19, False, _SAFETENSORS),  # qwen/model.go
    "qwen2.5-coder-32b-instruct": PresetNeed(61.03, False, _SAFETENSORS),
    "deepseek-r1-distill-llama-8b": PresetNeed(14.96, False, _SAFETENSORS),  # deepseek/model.go
    "deepseek-r1-distill-qwen-14b": PresetNeed(27.51, False, _SAFETENSORS),
    "deepseek-r1-0528": PresetNeed(641.3, True, _SAFETENSORS),
    "deepseek-v3-0324": PresetNeed(641.3, True, _SAFETENSORS),
    "falcon-7b": PresetNeed(13.44, False, _SAFETENSORS),  # falcon/model.go
    "falcon-7b-instruct": PresetNeed(13.44, False, _SAFETENSORS),
    "falcon-40b": PresetNeed(77.9, False, _SAFETENSORS),
    "falcon-40b-instruct": PresetNeed(77.9, False, _SAFETENSORS),
    "llama-3.3-70b-instruct": PresetNeed(152, True, _REQUIREMENT),  # llama3/model.go (152/160/320Gi)
}


def preset_need(name: Any) -> PresetNeed | None:
    """What a preset needs (KAITO lower-cases preset names before it looks them up:
    api/v1beta1/workspace_validation.go)."""
    return PRESETS.get(name.strip().lower()) if isinstance(name, str) else None


@dataclass(frozen=True, slots=True)
class NodeGPUs:
    """The GPUs of one node of an instance type."""

    count: int
    gib: float  # total GPU memory of the node
    model: str


def node_gpus(instance_type: Any) -> NodeGPUs | None:
    """GPUs of an instance type KAITO provisions: Azure sizes from KAITO's SKU table
    (`SKUS`), AWS GPU types from the EC2 instance table (`ailint.domain.instances`, the
    memory EC2 reports). None for anything else."""
    known = sku(instance_type)
    if known is not None:
        return NodeGPUs(known[0], known[1], known[2])
    if not isinstance(instance_type, str):
        return None
    it = instances.get(instance_type)
    if it is None or not it.is_gpu or it.count < 1:
        return None
    return NodeGPUs(it.count, it.count * it.memory_mib_per_device / 1024, (it.gpu_name or "").upper())


def _preset_pod(obj: K8sObject, base: Path, res_path: Path, preset_path: Path, replicas: int | None) -> PodTemplate:
    res = as_dict(obj.get(*res_path))
    preset = as_dict(obj.get(*preset_path))
    known = sku(res.get("instanceType"))
    part = as_dict(res.get("partition"))
    gpus = known[0] if known else None
    name = obj.name or "workspace"
    c: dict[str, Any] = {
        "name": name,
        "command": ["python3", "/workspace/vllm/inference_api.py", f"--model={preset.get('name') or ''}"],
        "ports": [{"containerPort": PORT}],
        "startupProbe": {"httpGet": {"path": "/health", "port": PORT}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/health", "port": PORT}, "periodSeconds": 10, "failureThreshold": 3},
        "readinessProbe": {
            "httpGet": {"path": "/health", "port": PORT},
            "initialDelaySeconds": 30,
            "periodSeconds": 10,
        },
    }
    image = as_dict(preset.get("presetOptions")).get("image")
    if isinstance(image, str) and image:
        c["image"] = image  # else KAITO's base image, which this file does not choose
    if gpus:
        c["command"].append(f"--tensor-parallel-size={gpus}")
        if part.get("mode") == "mig" and part.get("profile"):
            key = f"nvidia.com/mig-{part['profile']}"
            c["resources"] = {
                "requests": {key: str(as_int(part.get("count")) or 1)},
                "limits": {key: str(as_int(part.get("count")) or 1)},
            }
        else:
            c["resources"] = {"requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}
    spec: dict[str, Any] = {
        "containers": [c],
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        ],
    }
    if isinstance(res.get("instanceType"), str):
        spec["nodeSelector"] = {"node.kubernetes.io/instance-type": res["instanceType"]}
    at_res = res_path + ("instanceType",) if "instanceType" in res else res_path
    fields: list[tuple[Path, Path, bool]] = [
        (("containers", 0, "resources"), at_res, False),
        (("nodeSelector",), at_res, False),
        (("containers", 0, "command"), preset_path, False),
        (("containers", 0, "image"), preset_path + (("presetOptions", "image") if "image" in c else ()), False),
    ]
    return synthesized(obj, preset_path, spec, "inference", replicas, fields)


def inference_preset_paths(obj: K8sObject) -> tuple[Path, Path] | None:
    """(resource path, inference.preset path) of a Workspace or InferenceSet that serves an
    inference preset (not a pod template, not tuning); None otherwise."""
    tops: dict[str, Path] = {"Workspace": (), "InferenceSet": ("spec", "template")}
    if obj.group != GROUP or obj.kind not in tops:
        return None
    top = tops[obj.kind]
    inf = as_dict(obj.get(*top, "inference")) if top else as_dict(obj.data.get("inference"))
    if not isinstance(inf.get("preset"), dict) or isinstance(inf.get("template"), dict):
        return None
    return top + ("resource",), top + ("inference", "preset")


def _nodes(res: dict[str, Any]) -> int | None:
    return as_int(res.get("count")) if "count" in res else 1


def templates(obj: K8sObject) -> Iterator[PodTemplate]:
    kind = obj.kind
    if kind == "Workspace":
        res = as_dict(obj.data.get("resource"))
        inf = as_dict(obj.data.get("inference"))
        if isinstance(inf.get("template"), dict):
            t = template(obj, ("inference", "template"), "inference", _nodes(res), ("inference",))
            if t:
                yield t
        elif isinstance(inf.get("preset"), dict):
            yield _preset_pod(obj, ("inference",), ("resource",), ("inference", "preset"), _nodes(res))
    elif kind == "InferenceSet":
        base = ("spec", "template")
        inf = as_dict(obj.get(*base, "inference"))
        replicas = as_int(obj.get("spec", "replicas")) if obj.has(("spec", "replicas")) else 1
        if isinstance(inf.get("template"), dict):
            t = template(obj, base + ("inference", "template"), "inference", replicas, base)
            if t:
                yield t
        elif isinstance(inf.get("preset"), dict):
            yield _preset_pod(obj, base, base + ("resource",), base + ("inference", "preset"), replicas)


def facts(obj: K8sObject, pods: list[PodTemplate], catalog: Catalog) -> Facts | None:
    kind = obj.kind
    out = Facts()
    if kind in ("Workspace", "InferenceSet"):
        top: Path = () if kind == "Workspace" else ("spec", "template")
        res = as_dict(obj.get(*top, "resource")) if top else as_dict(obj.data.get("resource"))
        inf = as_dict(obj.get(*top, "inference")) if top else as_dict(obj.data.get("inference"))
        tuning = as_dict(obj.data.get("tuning")) if kind == "Workspace" else {}
        preset = as_dict(inf.get("preset")) or as_dict(tuning.get("preset"))
        out.roles = ["training"] if tuning else ["serving"]
        if preset.get("name"):
            out.model = str(preset["name"])
            out.engine = "vllm" if not tuning else "other"
        known = sku(res.get("instanceType"))
        part = as_dict(res.get("partition"))
        if part.get("mode") == "mig" and part.get("profile"):
            out.accelerators = {f"nvidia.com/mig-{part['profile']}": float(as_int(part.get("count")) or 1)}
        elif part.get("mode") == "accelerator" and as_int(part.get("count")):
            out.accelerators = {"nvidia.com/gpu": float(as_int(part.get("count")) or 1)}
        elif known:
            out.accelerators = {"nvidia.com/gpu": float(known[0])}
        if known:
            out.parallelism["tensor"] = known[0]
        out.replicas = (_nodes(res) or 1) if kind == "Workspace" else as_int(obj.get("spec", "replicas")) or 1
        return out
    if kind == "RAGEngine":
        spec = as_dict(obj.data.get("spec"))
        out.roles = ["serving"]
        emb = as_dict(as_dict(spec.get("embedding")).get("local"))
        out.model = str(emb["modelID"]) if emb.get("modelID") else None
        known = sku(as_dict(spec.get("compute")).get("instanceType"))
        if known:
            out.accelerators = {"nvidia.com/gpu": float(known[0])}
        out.engine = "other"
        return out
    if kind == "MultiRoleInference":
        spec = as_dict(obj.data.get("spec"))
        out.model = str(as_dict(spec.get("model")).get("name") or "") or None
        out.roles = ["serving"]
        out.engine = "vllm"
        types = {as_dict(r).get("instanceType") for r in spec.get("roles") or [] if isinstance(r, dict)}
        counts = [k[0] for t in types if (k := sku(t)) is not None]
        if counts:
            out.accelerators = {"nvidia.com/gpu": float(max(counts))}
        return out
    return None


def supplies(c: Any, field: str) -> bool | None:
    pod = c if isinstance(c, PodTemplate) else c.pod
    if pod.synthetic is not None and field == "resources":
        return True  # KAITO provisions a node of the instance type for the preset: it sets only the GPUs
    return None


def _role(pod: PodTemplate) -> str:
    return "training" if isinstance(pod.obj.data.get("tuning"), dict) else "serving"


FAMILY = Family(
    "kaito",
    ((GROUP, "Workspace"), (GROUP, "InferenceSet"), (GROUP, "RAGEngine"), (GROUP, "MultiRoleInference")),
    templates,
    facts,
    role=_role,
    supplies=supplies,
    serving=((GROUP, "Workspace"), (GROUP, "InferenceSet")),
)
