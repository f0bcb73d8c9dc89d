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
`minReplicas`. One that names no runtime gets the runtime OME would select for its base model among
those of the run (`select_runtime`, after pkg/runtimeselector); when the base model is not
in the run its engine stays unknown.

The deprecated form, `spec.predictor.model` (baseModel, runtime and container fields), is
still reconciled by the controller when the spec does not use the engine architecture: its
pod is the runtime's `spec.containers` (the ome-container) merged with that container
(`legacy`, `_predictor_pod`).
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Foreign, K8sObject, Path, as_dict, as_list, iter_dicts, own_copy
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import (
    COMPONENT_ONLY,
    Catalog,
    Facts,
    Family,
    Kind,
    as_int,
    merged_origins,
    runner_pod,
    synthesized,
)
from ailint.domain.workloads.kserve import merge_container

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GROUP = "ome.io"
COMPONENTS = (("engine", "engineConfig"), ("decoder", "decoderConfig"), ("router", "routerConfig"))


def find_runtime(obj: K8sObject, catalog: Catalog | None) -> K8sObject | None:
    """The runtime the InferenceService names (`spec.runtime.name`, or `runtime` of the
    deprecated `spec.predictor.model`): a ServingRuntime of its namespace, else a
    ClusterServingRuntime; else the one OME selects for its base model (`select_runtime`)."""
    if catalog is None:
        return None
    name = obj.get("spec", "runtime", "name") if not legacy(obj) else obj.get("spec", "predictor", "model", "runtime")
    if isinstance(name, str) and name:
        return catalog.get(GROUP, "ServingRuntime", name, obj.namespace) or catalog.get(
            GROUP, "ClusterServingRuntime", name
        )
    model = base_model(obj, catalog)
    return select_runtime(obj, model, catalog) if model is not None else None


# -- runtime auto-selection (sgl-project/ome pkg/runtimeselector: selector.go, matcher.go,
# scorer.go, types.go; versions as pkg/modelver/util.go parses them) ------------------------
_DEFAULT_PRIORITY = 1  # NewConfig: DefaultPriority 1, ModelFormatWeight 10, ModelFrameworkWeight 5
_FORMAT_WEIGHT, _FRAMEWORK_WEIGHT = 10, 5  # used where a format sets weight 0 (the CRD defaults it to 1)
_VERSION = lazy_re(r"^(v?)(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*))?(?:\.(0|[1-9][0-9]*)(.*))?$")


def _version(v: Any) -> tuple[str, tuple[int, int, int], str, int] | None:
    """(major prefix, (major, minor, patch), pre-release/build/dev suffix, precision)."""
    m = _VERSION.match(str(v)) if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None
    if m is None:
        return None
    precision = 1 + (m.group(3) is not None) + (m.group(4) is not None)
    return m.group(1), (int(m.group(2)), int(m.group(3) or 0), int(m.group(4) or 0)), m.group(5) or "", precision


def _version_ok(supported: dict[str, Any], model: dict[str, Any]) -> bool:
    """matcher.go compareModelFormatVersions: the runtime's version against the model's by
    the format's operator (Equal by default; versions with a pre-release, build or dev part
    compare Equal; other operators need the same precision and prefix)."""
    got, want = _version(model.get("version")), _version(supported.get("version"))
    if got is None or want is None:
        return False
    op = supported.get("operator") or "Equal"
    if got[2] or want[2] or op not in ("GreaterThan", "GreaterThanOrEqual"):
        return got[1:3] == want[1:3]
    if got[3] != want[3] or got[0] != want[0]:
        return False
    return want[1] > got[1] if op == "GreaterThan" else want[1] >= got[1]


def _same(a: Any, b: Any) -> bool:
    """Both unset, or both set and equal (architecture, quantization)."""
    return (a is None) == (b is None) and a == b


def _format_matches(model: dict[str, Any], f: dict[str, Any]) -> bool:
    """matcher.go compareSupportedModelFormats (diffusion pipelines: only that a pipeline the
    format requires is stated by the model)."""
    if f.get("diffusionPipeline") is not None and model.get("diffusionPipeline") is None:
        return False
    if not _same(model.get("modelArchitecture"), f.get("modelArchitecture")):
        return False
    if not _same(model.get("quantization"), f.get("quantization")):
        return False
    for key, required in (("modelFormat", True), ("modelFramework", False)):
        want, got = f.get(key), model.get(key)
        if want is None and got is None and not required:
            continue
        if not isinstance(want, dict) or not isinstance(got, dict) or want.get("name") != got.get("name"):
            return False
        if (want.get("version") is None) != (got.get("version") is None):
            return False
        if want.get("version") is not None and not _version_ok(want, got):
            return False
    return True


def _params(size: Any) -> float:
    """matcher.go parseModelSize: "7B" -> 7e9 (T, B, M suffixes; unparsable is 0)."""
    text = str(size)
    mult = {"T": 1e12, "B": 1e9, "M": 1e6}.get(text[-1:], 1.0)
    try:
        return float(text[:-1] if mult != 1.0 else text) * mult
    except ValueError:
        return 0.0


def _accelerator_classes(obj: K8sObject) -> set[str]:
    """matcher.go collectRequiredAcceleratorClasses: the classes the InferenceService asks for."""
    out = {obj.annotations.get("ome.io/accelerator-class")}
    out.add(obj.get("spec", "acceleratorSelector", "acceleratorClass"))
    for comp in ("engine", "decoder"):
        out.add(obj.get("spec", comp, "acceleratorOverride", "acceleratorClass"))
    return {c for c in out if isinstance(c, str) and c}


def _weight(f: dict[str, Any], default: int) -> int:
    w = as_int(f.get("weight"))
    return 1 if w is None else default if w == 0 else w  # the CRD defaults weight to 1


def _score(model: dict[str, Any], f: dict[str, Any]) -> int:
    """scorer.go CalculateFormatScore: format weight x priority when the format (name, and
    version where both state one) matches, plus framework weight x priority when the
    framework does; 0 when either is stated and does not match."""
    prio = as_int(f.get("priority")) or _DEFAULT_PRIORITY
    score = 0
    sf, mf = f.get("modelFormat"), as_dict(model.get("modelFormat"))
    if isinstance(sf, dict):
        if sf.get("name") != mf.get("name"):
            return 0
        if sf.get("version") is not None and mf.get("version") is not None and not _version_ok(sf, mf):
            return 0
        score += _weight(sf, _FORMAT_WEIGHT) * prio
    sfw, mfw = f.get("modelFramework"), model.get("modelFramework")
    if isinstance(sfw, dict) and isinstance(mfw, dict):
        if sfw.get("name") != mfw.get("name"):
            return 0
        if sfw.get("version") is not None and mfw.get("version") is not None and not _version_ok(sfw, mfw):
            return 0
        score += _weight(sfw, _FRAMEWORK_WEIGHT) * prio
    elif sfw is not None or mfw is not None:
        return 0
    return score


def select_runtime(obj: K8sObject, model_obj: K8sObject, catalog: Catalog) -> K8sObject | None:
    """The runtime OME auto-selects for the base model `model_obj` among those of the run:
    not `disabled`, one of its supportedModelFormats matches the model (architecture,
    quantization, format and framework with their versions) and the model's
    `modelParameterSize` is inside its `modelSizeRange`, it supports the accelerator class
    the InferenceService asks for, it has an `autoSelect` format, and its best autoSelect
    format scores above 0. Namespace ServingRuntimes come before ClusterServingRuntimes; then
    the highest score, the tightest size range, the name."""
    model = as_dict(model_obj.get("spec"))
    if not as_dict(model.get("modelFormat")).get("name"):
        return None  # selector.go validateModel: a model format name is required
    size = model.get("modelParameterSize")
    wanted = _accelerator_classes(obj)
    ranked: list[tuple[int, int, float, str, K8sObject]] = []
    for scope, kind in ((0, "ServingRuntime"), (1, "ClusterServingRuntime")):
        for rt in catalog.of_kind(GROUP, kind):
            if kind == "ServingRuntime" and rt.namespace_or_default != obj.namespace_or_default:
                continue
            spec = as_dict(rt.get("spec"))
            if spec.get("disabled") is True:
                continue
            supported = set(as_list(as_dict(spec.get("acceleratorRequirements")).get("acceleratorClasses")))
            if wanted and not wanted <= supported:
                continue
            formats = [f for _, f in iter_dicts(spec.get("supportedModelFormats"))]
            rng = as_dict(spec.get("modelSizeRange"))
            fits = size is None or not rng or _params(rng.get("min")) <= _params(size) <= _params(rng.get("max"))
            if not fits or not any(_format_matches(model, f) for f in formats):
                continue
            auto = [f for f in formats if f.get("autoSelect") is not False]
            if not any(f.get("autoSelect") is True for f in formats):
                continue
            score = max((_score(model, f) for f in auto), default=0)
            if score <= 0:
                continue
            distance = 0.0
            if size is not None:
                distance = sum(abs(_params(rng[b]) - _params(size)) for b in ("min", "max") if rng.get(b) is not None)
            ranked.append((scope, -score, distance, rt.name or "", rt))
    ranked.sort(key=lambda r: r[:4])
    return ranked[0][4] if ranked else None


def legacy(obj: K8sObject) -> bool:
    """An InferenceService in the deprecated `spec.predictor.model` form (baseModel, runtime
    and a container): the controller builds its predictor from it when the spec does not use
    the engine architecture (`spec.model` with an engine, decoder, runtime or router)
    (sgl-project/ome pkg/controller/v1beta1/inferenceservice/controller.go, Reconcile)."""
    spec = as_dict(obj.data.get("spec"))
    if spec.get("model") and any(spec.get(k) for k in ("engine", "decoder", "runtime", "router")):
        return False
    return isinstance(as_dict(spec.get("predictor")).get("model"), dict)


def base_model(obj: K8sObject, catalog: Catalog | None) -> K8sObject | None:
    if catalog is None:
        return None
    if legacy(obj):  # utils.GetBaseModel: a BaseModel of the namespace, else a ClusterBaseModel
        name = obj.get("spec", "predictor", "model", "baseModel")
        return catalog.get(GROUP, "BaseModel", name, obj.namespace_or_default) or catalog.get(
            GROUP, "ClusterBaseModel", name
        )
    name = obj.get("spec", "model", "name")
    kind = obj.get("spec", "model", "kind") or "ClusterBaseModel"
    if kind == "BaseModel":
        return catalog.get(GROUP, "BaseModel", name, obj.namespace)
    return catalog.get(GROUP, "ClusterBaseModel", name)


def _merge(runtime: dict[str, Any], mine: dict[str, Any]) -> dict[str, Any]:
    out = own_copy(runtime)
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
    if legacy(obj):
        yield _predictor_pod(obj, catalog)
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
            r = comp["runner"] = own_copy(comp["runner"])
            env = [e for e in r.get("env") or [] if isinstance(e, dict)]
            if not any(e.get("name") == "MODEL_PATH" for e in env):
                r["env"] = [*env, {"name": "MODEL_PATH", "value": model_path}]
        rt_c = as_dict(rspec.get(key))
        for pod in _component_pods(obj, ("spec", role), role, comp, replicas, runtime, ("spec", key), rt_c):
            pod.open = runtime is None
            yield pod


# ModelSpec fields of the deprecated predictor that are not container fields, and the
# PredictorSpec fields that are not PodSpec fields (ome.io_inferenceservices.yaml)
_MODEL_ONLY = ("baseModel", "runtime", "runtimeVersion", "protocolVersion", "storageUri", "fineTunedWeights")
_PREDICTOR_ONLY = frozenset(
    {*COMPONENT_ONLY, "model", "containers", "maxUnavailable", "minAvailable", "timeoutSeconds"}
)
# ServingRuntimeSpec fields that are not PodSpec fields (ome.io_clusterservingruntimes.yaml)
_RUNTIME_ONLY = frozenset(
    {
        "supportedModelFormats",
        "modelSizeRange",
        "disabled",
        "protocolVersions",
        "acceleratorRequirements",
        "engineConfig",
        "decoderConfig",
        "routerConfig",
        "workers",
        "containers",
        "labels",
        "annotations",
    }
)
OME_CONTAINER = "ome-container"


def _predictor_pod(obj: K8sObject, catalog: Catalog | None) -> PodTemplate:
    """The predictor pod of the deprecated form (components/predictor.go reconcilePodSpec):
    the runtime's `spec.containers` entry named ome-container merged with the container
    fields of `predictor.model` (MergeRuntimeContainers), first, then the runtime's other
    containers; the runtime's pod fields under the predictor's (MergePodSpec); env
    MODEL_PATH from the base model's `storage.path`. Without the runtime in the run, the pod
    holds what the InferenceService states (and is `open`)."""
    base: Path = ("spec", "predictor")
    pred = as_dict(obj.get(*base))
    model = as_dict(pred.get("model"))
    mine = {k: v for k, v in model.items() if k not in _MODEL_ONLY}
    runtime = find_runtime(obj, catalog)
    rspec = as_dict(runtime.get("spec")) if runtime is not None else {}
    rts = list(iter_dicts(rspec.get("containers")))
    spec: dict[str, Any] = {}
    containers: list[dict[str, Any]] = []
    fields: list[tuple[Path, Path, bool]] = []
    home = base + ("model",)
    if runtime is not None and rts:
        spec.update({k: own_copy(v) for k, v in rspec.items() if k not in _RUNTIME_ONLY})
        main_i, main = next(((i, c) for i, c in rts if c.get("name") == OME_CONTAINER), rts[0])
        containers.append(merge_container(main, mine))
        fields += merged_origins(("containers", 0), runtime, ("spec", "containers", main_i), main, mine, home)
        for i, c in rts:
            if c is not main:
                fields.append(
                    ((("containers", len(containers))), (Foreign(runtime, ("spec", "containers", i), home),), True)
                )
                containers.append(own_copy(c))
        for k in rspec:
            if k not in _RUNTIME_ONLY and k not in pred:
                fields.append(((k,), (Foreign(runtime, ("spec", k), base),), True))
    else:
        containers.append({"name": OME_CONTAINER, **mine})
    fields.append((("containers", 0), home, True))
    model_obj = base_model(obj, catalog)
    model_path = model_obj.get("spec", "storage", "path") if model_obj is not None else None
    if isinstance(model_path, str):
        env = [e for e in as_list(containers[0].get("env")) if isinstance(e, dict)]
        if not any(e.get("name") == "MODEL_PATH" for e in env):
            containers[0] = {**containers[0], "env": [*env, {"name": "MODEL_PATH", "value": model_path}]}
    spec.update({k: v for k, v in pred.items() if k not in _PREDICTOR_ONLY})
    spec["containers"] = containers
    fields.append(((), base, True))
    replicas = as_int(pred.get("minReplicas")) if "minReplicas" in pred else 1
    pod = synthesized(obj, base, spec, "predictor", replicas, fields)
    pod.open = runtime is None
    return pod


def facts(obj: K8sObject, pods: list[PodTemplate], catalog: Catalog) -> Facts | None:
    if obj.kind != "InferenceService":
        return None
    out = Facts(roles=["serving"])
    name = obj.get("spec", "predictor", "model", "baseModel") if legacy(obj) else obj.get("spec", "model", "name")
    model = base_model(obj, catalog)
    uri = model.get("spec", "storage", "storageUri") if model is not None else None
    if isinstance(uri, str) and uri:
        out.model = uri[len("hf://") :] if uri.startswith("hf://") else uri
    elif isinstance(name, str):
        out.model = name
    if find_runtime(obj, catalog) is None:
        named = obj.get("spec", "predictor", "model", "runtime") if legacy(obj) else obj.get("spec", "runtime", "name")
        out.engine = runtime_engine(named)
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
    reads_only_own=True,
)
