"""llmaz: OpenModel (llmaz.io, cluster-scoped catalogue), Playground, Service and
BackendRuntime (inference.llmaz.io/v1alpha1). `Service` here is llmaz's, never core v1.

A Service's `workloadTemplate` is a LeaderWorkerSet template (`leaderTemplate`,
`workerTemplate`, `size`) run `replicas` times; the controller writes the claimed OpenModel
flavor's `limits` into both requests and limits of the `model-runner` container (InftyAI/llmaz
pkg/controller/inference/service_controller.go). A Playground writes no pod: it names a
model (OpenModel) and a backend (BackendRuntime, default vllm) and generates the Service.
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import K8sObject, as_dict, as_list
from ailint.domain.extract import PodTemplate
from ailint.domain.quantities import parse_quantity
from ailint.domain.workloads.base import Catalog, Facts, Family, as_int
from ailint.domain.workloads.lws import group_templates

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GROUP = "inference.llmaz.io"
MODEL_GROUP = "llmaz.io"
_BACKENDS = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llama.cpp", "tgi": "tgi", "ollama": "ollama"}


def templates(obj: K8sObject) -> Iterator[PodTemplate]:
    if obj.kind != "Service":
        return
    spec = as_dict(obj.data.get("spec"))
    replicas = as_int(spec.get("replicas")) if "replicas" in spec else 1
    base: tuple[str, ...] = ("spec", "workloadTemplate")
    if isinstance(obj.get(*base, "leaderWorkerTemplate"), dict):
        base += ("leaderWorkerTemplate",)  # the older schema (llmaz before v0.1)
        replicas = as_int(obj.get("spec", "workloadTemplate", "replicas")) or replicas
    yield from group_templates(obj, base, replicas)


def claimed_models(obj: K8sObject) -> list[str]:
    spec = as_dict(obj.data.get("spec"))
    names = []
    one = as_dict(spec.get("modelClaim")).get("modelName")
    if isinstance(one, str):
        names.append(one)
    for m in as_list(as_dict(spec.get("modelClaims")).get("models")):
        if isinstance(m, dict) and isinstance(m.get("name"), str):
            names.append(m["name"])
    return names


def open_model_id(model: K8sObject) -> str | None:
    src = as_dict(model.get("spec", "source"))
    hub = as_dict(src.get("modelHub"))
    if isinstance(hub.get("modelID"), str):
        return str(hub["modelID"])
    return str(src["uri"]) if isinstance(src.get("uri"), str) else None


def flavor_limits(model: K8sObject) -> dict[str, float] | None:
    for f in as_list(model.get("spec", "inferenceConfig", "flavors")):
        if isinstance(f, dict) and isinstance(f.get("limits"), dict):
            out = {k: q for k, v in f["limits"].items() if (q := parse_quantity(v)) is not None and q > 0}
            return out or None
    return None


def facts(obj: K8sObject, pods: list[PodTemplate], catalog: Catalog) -> Facts | None:
    if obj.kind not in ("Playground", "Service"):
        return None
    out = Facts(roles=["serving"])
    names = claimed_models(obj)
    for name in names[:1]:
        model = catalog.get(MODEL_GROUP, "OpenModel", name)
        out.model = (open_model_id(model) if model is not None else None) or name
        if model is not None:
            out.accelerators = flavor_limits(model)
    if obj.kind == "Playground":
        cfg = as_dict(obj.get("spec", "backendRuntimeConfig"))
        backend = str(cfg.get("backendName") or "vllm")
        out.engine = _BACKENDS.get(backend, "other")
        res = as_dict(as_dict(cfg.get("resources")).get("limits"))
        mine: dict[str, Any] = {k: q for k, v in res.items() if (q := parse_quantity(v)) and "/" in k}
        if mine:
            out.accelerators = mine
        out.replicas = as_int(obj.get("spec", "replicas")) if obj.has(("spec", "replicas")) else 1
    return out


def _role(pod: PodTemplate) -> str:
    return "serving"


FAMILY = Family(
    "llmaz",
    ((GROUP, "Service"), (GROUP, "Playground")),
    templates,
    facts,
    catalogue=((MODEL_GROUP, "OpenModel"), (GROUP, "BackendRuntime")),
    role=_role,
    serving=((GROUP, "Service"),),
)
