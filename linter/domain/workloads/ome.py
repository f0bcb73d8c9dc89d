"""OME (ome.io/v1beta1): InferenceService engine/decoder/router components over a
ClusterServingRuntime/ServingRuntime's engineConfig/decoderConfig/routerConfig, and the
BaseModel/ClusterBaseModel they serve.

Each component is an inlined PodSpec plus `runner` (the main container), `leader` and
`worker{size}` for multi-node. The controller merges the runtime's config under the
InferenceService's (the InferenceService's runner wins; sgl-project/ome
pkg/controller/v1beta1/inferenceservice/utils `MergeRuntimeContainers`, components/engine.go)
and adds env MODEL_PATH from the base model's `storage.path`. OME adds no probes: the
runtimes carry them, so the runtime's templates are judged as the pods of every
InferenceService that selects it. Without the runtime in the run, an InferenceService's
pods hold only what it states (and are `open`: the runtime may add any field); its engine
then comes from the runtime's name (OME's srt-/vllm- naming) and its replicas from its
`minReplicas`. One that names no runtime and whose base model is not in the run states no
engine: OME selects the runtime by the base model's format and architecture
(pkg/runtimeselector), so the engine stays unknown.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from ailint.core.model import K8sObject, Path, as_dict, iter_dicts
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import (
    COMPONENT_ONLY,
    Catalog,
    Facts,
    Family,
    Foreign,
    Kind,
    as_int,
    merged_origins,
    runner_pod,
)
from ailint.domain.workloads.kserve import merge_container

GROUP = "ome.io"
COMPONENTS = (("engine", "engineConfig"), ("decoder", "decoderConfig"), ("router", "routerConfig"))


def find_runtime(obj: K8sObject, catalog: Catalog | None) -> K8sObject | None:
    """The runtime named in `spec.runtime`, else the auto-selected one: a runtime whose
    `supportedModelFormats` (autoSelect) name the base model's architecture and format,
    highest priority first (sgl-project/ome pkg/runtimeselector)."""
    if catalog is None:
        return None
    name = obj.get("spec", "runtime", "name")
    if isinstance(name, str) and name:
        return catalog.get(GROUP, "ServingRuntime", name, obj.namespace) or catalog.get(
            GROUP, "ClusterServingRuntime", name
        )
    model = base_model(obj, catalog)
    if model is None:
        return None
    arch = model.get("spec", "modelArchitecture")
    fmt = model.get("spec", "modelFormat", "name")
    best: tuple[int, K8sObject] | None = None
    for kind in ("ServingRuntime", "ClusterServingRuntime"):
        for rt in catalog.of_kind(GROUP, kind):
            if kind == "ServingRuntime" and rt.namespace_or_default != obj.namespace_or_default:
                continue
            for f in rt.get("spec", "supportedModelFormats") or []:
                if not isinstance(f, dict) or f.get("autoSelect") is not True:
                    continue
                if f.get("modelArchitecture") != arch or (
                    fmt and as_dict(f.get("modelFormat")).get("name") not in (None, fmt)
                ):
                    continue
                prio = as_int(f.get("priority")) or 0
                if best is None or prio > best[0]:
                    best = (prio, rt)
    return best[1] if best else None


def base_model(obj: K8sObject, catalog: Catalog | None) -> K8sObject | None:
    if catalog is None:
        return None
    name = obj.get("spec", "model", "name")
    kind = obj.get("spec", "model", "kind") or "ClusterBaseModel"
    if kind == "BaseModel":
        return catalog.get(GROUP, "BaseModel", name, obj.namespace)
    return catalog.get(GROUP, "ClusterBaseModel", name)


def _merge(runtime: dict[str, Any], mine: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(runtime)
    for k, v in mine.items():
        if k == "runner" and isinstance(v, dict) and isinstance(runtime.get("runner"), dict):
            out["runner"] = merge_container(runtime["runner"], v)
        else:
            out[k] = v
    return out


_SUBPODS = ("runner", "containers", "leader", "worker")


def _origins(
    rt: K8sObject | None, rt_base: Path, rt_c: dict[str, Any], my_c: dict[str, Any], my_base: Path
) -> list[tuple[Path, Path, bool]]:
    """Anchor fields of a component pod merged from the runtime's config `rt_c` (at `rt_base`
    of `rt`) and the InferenceService's `my_c`: what the runtime supplied points at it."""
    if rt is None or not rt_c:
        return []

    def there(*rest: Any) -> Path:
        return (Foreign(rt, rt_base + tuple(rest), my_base),)

    out: list[tuple[Path, Path, bool]] = []
    runner = rt_c.get("runner")
    off = 1 if isinstance(my_c.get("runner") or runner, dict) else 0
    if not my_c:
        out.append(((), there(), True))
    for k in rt_c:
        if k not in _SUBPODS and k not in COMPONENT_ONLY and k not in my_c:
            out.append(((k,), there(k), True))
    if isinstance(runner, dict):
        if isinstance(my_c.get("runner"), dict):
            out += merged_origins(
                ("containers", 0), rt, rt_base + ("runner",), runner, my_c["runner"], my_base + ("runner",)
            )
        else:
            out.append((("containers", 0), there("runner"), True))
    if "containers" not in my_c:
        for i, _ in iter_dicts(rt_c.get("containers")):
            out.append((("containers", off + i), there("containers", i), True))
    return out


def _component_pods(
    obj: K8sObject,
    base: tuple[str, ...],
    role: str,
    comp: dict[str, Any] | None,
    replicas: int | None,
    rt: K8sObject | None = None,
    rt_base: Path = (),
    rt_c: dict[str, Any] | None = None,
) -> Iterator[PodTemplate]:
    c = comp if comp is not None else as_dict(obj.get(*base))
    rc = rt_c or {}
    mine = as_dict(obj.get(*base)) if rt is not None else {}
    size = as_int(as_dict(c.get("worker")).get("size"))
    if isinstance(c.get("leader"), dict):
        lo = _origins(
            rt, rt_base + ("leader",), as_dict(rc.get("leader")), as_dict(mine.get("leader")), base + ("leader",)
        )
        t = runner_pod(obj, base + ("leader",), f"{role}-leader", replicas, c.get("leader"), origins=lo)
        if t:
            yield t
        if isinstance(c.get("worker"), dict):
            wo = _origins(
                rt, rt_base + ("worker",), as_dict(rc.get("worker")), as_dict(mine.get("worker")), base + ("worker",)
            )
            w = runner_pod(
                obj,
                base + ("worker",),
                f"{role}-worker",
                None if replicas is None or size is None else replicas * size,
                c.get("worker"),
                origins=wo,
            )
            if w:
                yield w
        return
    t = runner_pod(obj, base, role, replicas, c, origins=_origins(rt, rt_base, rc, mine, base))
    if t:
        yield t


def templates(obj: K8sObject, catalog: Catalog | None = None) -> Iterator[PodTemplate]:
    spec = as_dict(obj.data.get("spec"))
    if obj.kind in ("ServingRuntime", "ClusterServingRuntime"):
        for role, key in COMPONENTS:
            if isinstance(spec.get(key), dict):
                yield from _component_pods(obj, ("spec", key), role, None, None)
        return
    if obj.kind != "InferenceService":
        return
    runtime = find_runtime(obj, catalog)
    rspec = as_dict(runtime.get("spec")) if runtime is not None else {}
    model = base_model(obj, catalog)
    model_path = model.get("spec", "storage", "path") if model is not None else None
    for role, key in COMPONENTS:
        mine = spec.get(role)
        if not isinstance(mine, dict):
            continue
        replicas = as_int(mine.get("minReplicas")) if "minReplicas" in mine else 1
        comp = _merge(as_dict(rspec.get(key)), mine) if runtime is not None else mine
        if isinstance(model_path, str) and isinstance(comp.get("runner"), dict):
            r = comp["runner"] = copy.deepcopy(comp["runner"])
            env = [e for e in r.get("env") or [] if isinstance(e, dict)]
            if not any(e.get("name") == "MODEL_PATH" for e in env):
                r["env"] = [*env, {"name": "MODEL_PATH", "value": model_path}]
        rt_c = as_dict(rspec.get(key))
        for pod in _component_pods(obj, ("spec", role), role, comp, replicas, runtime, ("spec", key), rt_c):
            pod.open = runtime is None
            yield pod


def facts(obj: K8sObject, pods: list[PodTemplate], catalog: Catalog) -> Facts | None:
    if obj.kind != "InferenceService":
        return None
    out = Facts(roles=["serving"])
    name = obj.get("spec", "model", "name")
    model = base_model(obj, catalog)
    uri = model.get("spec", "storage", "storageUri") if model is not None else None
    if isinstance(uri, str) and uri:
        out.model = uri[len("hf://") :] if uri.startswith("hf://") else uri
    elif isinstance(name, str):
        out.model = name
    if find_runtime(obj, catalog) is None:
        out.engine = runtime_engine(obj.get("spec", "runtime", "name"))
    if not pods:
        out.replicas = stated_replicas(obj)
    return out


def stated_replicas(obj: K8sObject) -> int | None:
    """The engine's (else the decoder's) replicas as the InferenceService states them, when it
    writes no pod of its own (its runtime is not in the run): `minReplicas`, which defaults
    to 1 (sgl-project/ome pkg/apis/ome/v1beta1/component.go, ComponentExtensionSpec)."""
    for role in ("engine", "decoder"):
        comp = obj.get("spec", role)
        if isinstance(comp, dict):
            return as_int(comp.get("minReplicas")) if "minReplicas" in comp else 1
    return None


# OME's shipped runtimes are named after their engine: config/runtimes/srt/*.yaml are
# `srt-<model>` (SGLang Runtime, lmsysorg/sglang images), config/runtimes/vllm/*.yaml
# `vllm-<model>` (vllm/vllm-openai engine images) in sgl-project/ome.
_RUNTIME_PREFIXES = (("srt-", "sglang"), ("vllm-", "vllm"))


def runtime_engine(name: Any) -> str | None:
    """The engine an InferenceService's runtime name implies when the runtime is not in the
    run (OME's naming of its shipped runtimes), else None."""
    if isinstance(name, str):
        for prefix, engine in _RUNTIME_PREFIXES:
            if name.startswith(prefix):
                return engine
    return None


def _role(pod: PodTemplate) -> str:
    return "infra" if pod.role.startswith("router") else "serving"


_READS = (
    (GROUP, "ServingRuntime"),
    (GROUP, "ClusterServingRuntime"),
    (GROUP, "BaseModel"),
    (GROUP, "ClusterBaseModel"),
)


def reads(obj: K8sObject, pods: list[PodTemplate]) -> tuple[Kind, ...]:
    """An InferenceService's pods are merged with its runtime and base model of the run."""
    return _READS if obj.kind == "InferenceService" and obj.group == GROUP else ()


FAMILY = Family(
    "ome",
    ((GROUP, "InferenceService"),),
    templates,
    facts,
    catalogue=((GROUP, "BaseModel"), (GROUP, "ClusterBaseModel")),
    takes_catalog=True,
    template_kinds=((GROUP, "ServingRuntime"), (GROUP, "ClusterServingRuntime")),
    role=_role,
    serving=((GROUP, "InferenceService"), (GROUP, "ServingRuntime"), (GROUP, "ClusterServingRuntime")),
    reads=reads,
)
