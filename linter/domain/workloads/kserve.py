"""KServe (serving.kserve.io): InferenceService components and LLMInferenceService(Config).

An InferenceService component (`predictor`, `transformer`, `explainer`) inlines a PodSpec plus
component fields (minReplicas, ...). The `predictor.model` form (and the older framework keys
`huggingface`, `sklearn`, `triton`, ...) names one container that KServe strategic-merges over
the `kserve-container` of the ServingRuntime named by `model.runtime` (a namespaced
ServingRuntime first, then a ClusterServingRuntime), or of the runtime whose
`supportedModelFormats` serve `modelFormat.name` (autoSelect, highest priority, not disabled,
multi-node only for a predictor with a `workerSpec`); the runtime's
args come first and the InferenceService's are appended (kserve
pkg/controller/v1beta1/inferenceservice/utils/utils.go `MergeRuntimeContainers`). Without the
runtime in the run, the pod holds what the InferenceService states.
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Foreign, K8sObject, Path, as_dict, as_list, iter_dicts, own_copy
from ailint.domain.extract import KSERVE_LLM_KINDS, PodTemplate
from ailint.domain.workloads.base import (
    COMPONENT_ONLY,
    Catalog,
    Facts,
    Family,
    Kind,
    as_int,
    merged_origins,
    synthesized,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GROUP = "serving.kserve.io"
FRAMEWORKS = (
    "model",
    "huggingface",
    "sklearn",
    "xgboost",
    "tensorflow",
    "pytorch",
    "triton",
    "onnx",
    "pmml",
    "lightgbm",
    "paddle",
)
# ModelSpec fields that are not container fields
_MODEL_ONLY = ("modelFormat", "runtime", "runtimeVersion", "protocolVersion", "storageUri", "storage")
# component extension fields that are not PodSpec fields (the shared list), and the framework keys
_COMPONENT_ONLY = frozenset({*COMPONENT_ONLY, *FRAMEWORKS})
RUNTIME_CONTAINER = "kserve-container"
# ServingRuntimeSpec fields that are not PodSpec fields
_RUNTIME_ONLY = (
    "containers",
    "supportedModelFormats",
    "multiModel",
    "disabled",
    "protocolVersions",
    "builtInAdapter",
    "grpcEndpoint",
    "grpcDataEndpoint",
    "httpDataEndpoint",
    "replicas",
    "storageHelper",
    "workerSpec",
    "labels",
    "annotations",
)


def framework(component: dict[str, Any]) -> str | None:
    """The framework key a component uses (`model`, `huggingface`, ...), if any."""
    for key in FRAMEWORKS:
        if isinstance(component.get(key), dict):
            return key
    return None


def find_runtime(
    obj: K8sObject, model: dict[str, Any], catalog: Catalog | None, multinode: bool = False
) -> K8sObject | None:
    """The ServingRuntime/ClusterServingRuntime that serves `model`, when it is in the run.
    Auto-selection passes over disabled runtimes and takes a multi-node one (with a
    `workerSpec`) only for a multi-node predictor (`multinode`: it has a `workerSpec`), as
    KServe's `getClusterServingRuntimes` does (`IsMultiNodeRuntime() == isMultinode`)."""
    if catalog is None:
        return None
    ns = obj.namespace
    name = model.get("runtime")
    if isinstance(name, str) and name:
        return catalog.get(GROUP, "ServingRuntime", name, ns) or catalog.get(GROUP, "ClusterServingRuntime", name)
    fmt = as_dict(model.get("modelFormat")).get("name")
    if not isinstance(fmt, str):
        return None
    best: tuple[int, K8sObject] | None = None
    for kind in ("ServingRuntime", "ClusterServingRuntime"):
        for rt in catalog.of_kind(GROUP, kind):
            if kind == "ServingRuntime" and (rt.namespace_or_default) != (ns or "default"):
                continue
            if rt.get("spec", "disabled") is True or bool(rt.get("spec", "workerSpec")) != multinode:
                continue
            for _, f in iter_dicts(rt.get("spec", "supportedModelFormats")):
                if f.get("name") == fmt and f.get("autoSelect") is True:
                    prio = as_int(f.get("priority")) or 0
                    if best is None or prio > best[0]:
                        best = (prio, rt)
    return best[1] if best else None


def merge_container(runtime: dict[str, Any], isvc: dict[str, Any]) -> dict[str, Any]:
    """`isvc` over `runtime` as KServe merges them: scalars and maps replaced (resources per
    key), env merged by name, args appended."""
    out = own_copy(runtime)
    for k, v in isvc.items():
        if k == "args":
            out["args"] = as_list(runtime.get("args")) + as_list(v)
        elif k == "env":
            env = {e.get("name"): e for e in as_list(runtime.get("env")) if isinstance(e, dict)}
            for e in as_list(v):
                if isinstance(e, dict):
                    env[e.get("name")] = e
            out["env"] = list(env.values())
        elif k == "resources" and isinstance(v, dict):
            res = own_copy(as_dict(runtime.get("resources")))
            for which, vals in v.items():
                if isinstance(vals, dict):
                    res.setdefault(which, {})
                    if isinstance(res[which], dict):
                        res[which].update(vals)
                else:
                    res[which] = vals
            out["resources"] = res
        else:
            out[k] = v
    if not out.get("name"):
        out["name"] = runtime.get("name") or RUNTIME_CONTAINER
    return out


def _model_pod(obj: K8sObject, base: Path, comp: dict[str, Any], key: str, catalog: Catalog | None) -> PodTemplate:
    model = as_dict(comp.get(key))
    mine = {k: v for k, v in model.items() if k not in _MODEL_ONLY}
    runtime = find_runtime(obj, model, catalog, bool(comp.get("workerSpec"))) if key == "model" else None
    spec: dict[str, Any] = {}
    containers: list[dict[str, Any]] = []
    fields: list[tuple[Path, Path, bool]] = []
    if runtime is not None:
        rspec = as_dict(runtime.get("spec"))
        spec.update({k: own_copy(v) for k, v in rspec.items() if k not in _RUNTIME_ONLY})
        rts = list(iter_dicts(rspec.get("containers")))
        main_i, main = next(((i, c) for i, c in rts if c.get("name") == RUNTIME_CONTAINER), rts[0] if rts else (0, {}))
        containers.append(merge_container(main, mine))
        # what the runtime supplied points at the runtime's lines (relocate)
        fields += merged_origins(("containers", 0), runtime, ("spec", "containers", main_i), main, mine, base + (key,))
        for i, c in rts:
            if c is not main:
                fields.append(
                    (
                        ("containers", len(containers)),
                        (Foreign(runtime, ("spec", "containers", i), base + (key,)),),
                        True,
                    )
                )
                containers.append(own_copy(c))
        for k in rspec:
            if k not in _RUNTIME_ONLY and k != "containers" and k not in comp:
                fields.append(((k,), (Foreign(runtime, ("spec", k), base),), True))
    else:
        containers.append({"name": RUNTIME_CONTAINER, **mine})
    fields.append((("containers", 0), base + (key,), True))
    for i, c in iter_dicts(comp.get("containers")):
        fields.append((("containers", len(containers)), base + ("containers", i), True))
        containers.append(c)
    spec.update({k: v for k, v in comp.items() if k not in _COMPONENT_ONLY and k != "containers"})
    spec["containers"] = containers
    fields.append(((), base, True))
    replicas = as_int(comp.get("minReplicas")) if "minReplicas" in comp else 1  # Knative's and KServe's default
    pod = synthesized(obj, base, spec, base[-1], replicas, fields)
    pod.open = runtime is None  # the runtime (named or auto-selected) supplies image, command, probes...
    return pod


def isvc_templates(obj: K8sObject, catalog: Catalog | None = None) -> Iterator[PodTemplate]:
    spec = as_dict(obj.data.get("spec"))
    for comp in ("predictor", "transformer", "explainer"):
        c = as_dict(spec.get(comp))
        if not c:
            continue
        key = framework(c)
        if key is not None:
            yield _model_pod(obj, ("spec", comp), c, key, catalog)
        elif "containers" in c:
            yield PodTemplate(obj, ("spec", comp), None, comp, as_int(c.get("minReplicas")))
        worker = c.get("workerSpec")
        if isinstance(worker, dict) and isinstance(worker.get("containers"), list):
            yield PodTemplate(obj, ("spec", comp, "workerSpec"), None, "worker", None, ("spec", comp))


def templates(obj: K8sObject, catalog: Catalog | None = None) -> Iterator[PodTemplate]:
    if obj.kind == "InferenceService":
        yield from isvc_templates(obj, catalog)
    elif obj.kind in KSERVE_LLM_KINDS and obj.group.startswith(GROUP):
        from ailint.domain.kserve import templates as llm_templates  # bare PodSpecs, merged over presets

        yield from llm_templates(obj, as_dict(obj.data.get("spec")))


_FORMAT_ENGINE = {"huggingface": "vllm", "triton": "triton", "tensorrt": "triton", "onnx": "triton"}


def facts(obj: K8sObject, pods: list[PodTemplate], catalog: Catalog) -> Facts | None:
    if obj.kind != "InferenceService":
        return None
    pred = as_dict(obj.get("spec", "predictor"))
    key = framework(pred)
    if key is None:
        return None
    model = as_dict(pred.get(key))
    out = Facts()
    uri = model.get("storageUri")
    if isinstance(uri, str) and uri:
        out.model = uri
    fmt = str(as_dict(model.get("modelFormat")).get("name") or ("" if key == "model" else key)).lower()
    if fmt.startswith("nvidia-nim"):
        out.engine = "nim"
        for pod in pods:  # a NIM's model is its image (nvcr.io/nim/<org>/<model>)
            for c in pod.containers(include_init=False):
                if "/nim/" in c.image:
                    out.model = c.image.split("/nim/", 1)[1].split(":", 1)[0]
                    break
    elif fmt in _FORMAT_ENGINE:
        out.engine = _FORMAT_ENGINE[fmt]
    elif fmt:
        out.engine = "other"
    tp = as_int(as_dict(pred.get("workerSpec")).get("tensorParallelSize"))
    if tp:
        out.parallelism["tensor"] = tp
    return out


def _role(pod: PodTemplate) -> str | None:
    """The merged model server of the predictor.model form serves (the containers form is
    judged by what it runs, as before)."""
    if pod.obj.kind == "InferenceService" and pod.synthetic is not None and pod.role == "predictor":
        return "serving"
    return None


# What Knative Serving writes into a revision's pod (knative/serving
# pkg/reconciler/revision/resources/deploy.go): a preStop hook on the user container that
# waits for the queue-proxy to drain, terminationMessagePolicy FallbackToLogsOnError when
# unset, terminationGracePeriodSeconds = the revision's timeoutSeconds (300 by default).
_KNATIVE_SUPPLIES = frozenset({"preStop", "terminationMessagePolicy", "terminationGracePeriodSeconds"})
_RAW_MODES = ("RawDeployment", "Standard", "ModelMesh")


def serverless(obj: K8sObject) -> bool:
    """An InferenceService KServe runs as a Knative Service: the `serving.kserve.io/deploymentMode`
    annotation is not RawDeployment/Standard/ModelMesh (upstream's default mode is Serverless,
    the cluster's inferenceservice-config may choose another one)."""
    return obj.annotations.get("serving.kserve.io/deploymentMode") not in _RAW_MODES


def supplies(c: Any, field: str) -> bool | None:
    pod = c if isinstance(c, PodTemplate) else c.pod
    if pod.obj.kind == "InferenceService" and field in _KNATIVE_SUPPLIES and serverless(pod.obj):
        return True
    if pod.obj.kind not in KSERVE_LLM_KINDS:
        return None
    from ailint.domain.kserve import llm_preset_supplies

    return llm_preset_supplies(c, field)


def preset_tokens(c: Any) -> list[str] | None:
    if c.pod.obj.kind not in KSERVE_LLM_KINDS:
        return None
    from ailint.domain.kserve import preset_tokens as llm_preset_tokens

    return llm_preset_tokens(c)


_RUNTIME_KINDS = ((GROUP, "ServingRuntime"), (GROUP, "ClusterServingRuntime"))


def reads(obj: K8sObject, pods: list[PodTemplate]) -> tuple[Kind, ...]:
    """A `predictor.model` InferenceService's pod is merged with a runtime of the run."""
    comps = ("predictor", "transformer", "explainer")
    if (
        obj.kind == "InferenceService"
        and obj.group == GROUP
        and any(framework(as_dict(obj.get("spec", c))) == "model" for c in comps)
    ):
        return _RUNTIME_KINDS
    return ()


FAMILY = Family(
    "kserve",
    ((None, "InferenceService"), (None, "LLMInferenceService"), (None, "LLMInferenceServiceConfig")),
    templates,
    facts,
    catalogue=((GROUP, "ServingRuntime"), (GROUP, "ClusterServingRuntime"), (GROUP, "InferenceGraph")),
    preset_tokens=preset_tokens,
    takes_catalog=True,
    supplies=supplies,
    role=_role,
    # An InferenceService's predictor is a long-running model server in every deployment
    # mode, and neither mode makes its readiness model-aware: in RawDeployment/Standard KServe
    # copies the container and adds, when it states none, only a tcpSocket readinessProbe on
    # its first port (kserve pkg/controller/v1beta1/inferenceservice/reconcilers/deployment/
    # deployment_reconciler.go setDefaultPodSpec); in Serverless Knative defaults a missing
    # readiness probe to tcpSocket on the user port (knative/serving pkg/apis/serving/v1/
    # revision_defaults.go applyProbes) and the queue-proxy runs it (pkg/reconciler/revision/
    # resources/deploy.go). So the rules for servers judge its merged pod as written.
    serving=((GROUP, "InferenceService"),),
    reads=reads,
    reads_only_own=True,
)
