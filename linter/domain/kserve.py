"""KServe LLMInferenceService(Config) (serving.kserve.io v1alpha1/v1alpha2): pod templates,
and what KServe's presets add to them.

Schema (pkg/apis/serving/v1alpha{1,2}/llm_inference_service_types.go): `spec` inlines a
WorkloadSpec (`replicas`, `scaling`, `parallelism{tensor,pipeline,data,dataLocal,expert}`,
`labels`/`annotations` for the pods, `template` and `worker`, both bare corev1.PodSpecs);
`spec.prefill` is another WorkloadSpec; `spec.router.scheduler.template` (PodSpec) is the
endpoint picker, `.tokenizer.template` its tokenizer; `spec.model.uri` (hf://, s3://,
pvc://) and `.name`. With `worker` set, KServe builds a LeaderWorkerSet of `replicas` groups
whose size is data / dataLocal (data parallel), else `pipeline` (ParallelismSpec.GetSize).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from ailint.core.model import K8sObject, Path, as_dict, get_in
from ailint.domain.extract import (
    KSERVE_LLM_KINDS,
    KSERVE_SERVING_ROLES,
    Container,
    PodTemplate,
    command_tokens,
    shell_split,
)
from ailint.domain.quantities import to_int

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

KINDS = KSERVE_LLM_KINDS

SERVING_ROLES = KSERVE_SERVING_ROLES


def templates(obj: K8sObject, spec: dict[str, Any]) -> Iterator[PodTemplate]:
    """KServe LLMInferenceService(Config): bare PodSpecs, merged by the controller over
    well-known configs and `baseRefs` (so a template may be partial).

    `spec.template` is the main (decode) pod, or the leader when `spec.worker` is set (an
    LWS of `replicas` groups of `parallelism` size: data/dataLocal, else pipeline);
    `spec.prefill.{template,worker}` the same for prefill; `spec.router.scheduler.template`
    the EPP and `.tokenizer.template` its tokenizer. A workload's `labels`/`annotations`
    are its pods' metadata. Replicas: `replicas`, else `scaling.minReplicas` (default 1),
    else 1 unless a config may supply them (`baseRefs`, or the object is a config)."""
    config = obj.kind == "LLMInferenceServiceConfig" or bool(spec.get("baseRefs"))

    def count(w: dict[str, Any], default: int | None) -> int | None:
        if "replicas" in w:
            return to_int(w.get("replicas"))
        if isinstance(w.get("scaling"), dict):
            return to_int(w["scaling"].get("minReplicas", 1))
        return None if config else default

    for base, role in ((("spec",), "main"), (("spec", "prefill"), "prefill")):
        w = as_dict(obj.get(*base))
        if not w:
            continue
        has_t, has_w = isinstance(w.get("template"), dict), isinstance(w.get("worker"), dict)
        groups = count(w, 1)
        size = None
        if has_w:
            par = as_dict(w.get("parallelism"))
            data, local, pipe = to_int(par.get("data")), to_int(par.get("dataLocal")), to_int(par.get("pipeline"))
            if (data or 0) > 0 or (local or 0) > 0:
                size = max(max(data or 1, 1) // max(local or 1, 1), 1)
            elif (pipe or 0) > 0:
                size = pipe
        if has_t:
            yield PodTemplate(obj, base + ("template",), base, role, groups, base)
        if has_w:
            workers = None if groups is None or size is None else groups * (size - 1 if has_t else size)
            yield PodTemplate(
                obj, base + ("worker",), base, f"{role}-worker" if role != "main" else "worker", workers, base
            )
    sched = ("spec", "router", "scheduler")
    s = as_dict(obj.get(*sched))
    if isinstance(s.get("template"), dict):
        yield PodTemplate(obj, sched + ("template",), sched, "scheduler", count(s, 1), sched)
    if isinstance(get_in(s, ("tokenizer", "template")), dict):
        yield PodTemplate(obj, sched + ("tokenizer", "template"), None, "tokenizer", None, sched + ("tokenizer",))


# KServe merges well-known presets (kserve-config-llm-template, -decode-/-prefill-template,
# -[decode-|prefill-]worker-data-parallel, -scheduler; config/llmisvcconfig/ upstream) under
# an LLMInferenceService before it builds pods (the service spec wins, then `baseRefs`): the
# container named `main` gets the image (pull policy IfNotPresent), the `vllm serve` command,
# probes (not on headless data-parallel workers), securityContext, a preStop hook,
# terminationMessagePolicy, a Memory emptyDir at /dev/shm, and the pod
# terminationGracePeriodSeconds 60, even when the file shows none of them. KServe names but
# does not ship the pipeline-parallel presets (-worker-pipeline-parallel): an admin must
# supply them, so for that shape the linter knows neither what they fill in nor the command.
_PRESET = {
    "serving": frozenset(
        {
            "image",
            "imagePullPolicy",
            "command",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "securityContext",
            "preStop",
            "terminationMessagePolicy",
            "/dev/shm",
            "terminationGracePeriodSeconds",
        }
    ),
    "scheduler": frozenset(
        {
            "image",
            "imagePullPolicy",
            "livenessProbe",
            "readinessProbe",
            "securityContext",
            "preStop",
            "terminationMessagePolicy",
            "terminationGracePeriodSeconds",
        }
    ),
}


def preset_shape(pod: PodTemplate) -> str | None:
    """`single`, `dp-leader`, `dp-worker`, `pp` or `scheduler` when a KServe preset builds this pod."""
    if pod.obj.kind not in KINDS:
        return None
    if pod.role == "scheduler":
        return "scheduler"
    if pod.role not in SERVING_ROLES:
        return None
    w = as_dict(pod.obj.get(*pod.group_path))
    if not isinstance(w.get("worker"), dict):
        return "single"
    par = as_dict(w.get("parallelism"))
    if (to_int(par.get("data")) or 0) > 0 or (to_int(par.get("dataLocal")) or 0) > 0:
        return "dp-worker" if pod.role.endswith("worker") else "dp-leader"
    if (to_int(par.get("pipeline")) or 0) > 0:
        return "pp"
    return None


def open_spec(pod: PodTemplate) -> bool:
    """A config the linter cannot see may add any field to this pod: the object is an
    LLMInferenceServiceConfig (services and other configs layer on top of it), it names
    `baseRefs`, or its shape needs a pipeline-parallel preset that KServe does not ship."""
    obj = pod.obj
    if obj.kind not in KINDS:
        return False
    return obj.kind == "LLMInferenceServiceConfig" or bool(obj.get("spec", "baseRefs")) or preset_shape(pod) == "pp"


def preset_supplies(c: Container | PodTemplate, field: str) -> bool:
    """True when a controller (its preset, or a runtime not in the run) may fill `field`
    into this container (or pod) before it runs, so its absence in the file is no defect;
    the workload adapter of the object decides (ailint.domain.workloads.supplies)."""
    from ailint.domain import workloads

    return workloads.supplies(c, field)


def llm_preset_supplies(c: Container | PodTemplate, field: str) -> bool:
    """`preset_supplies` for KServe LLMInferenceService(Config): True when a preset may fill
    `field` into this container (or pod) before it runs. `field` is a container key (`image`,
    `imagePullPolicy` (IfNotPresent), `command`, `readinessProbe`, `livenessProbe`,
    `startupProbe`, `securityContext`, `terminationMessagePolicy`, `resources`), `preStop`,
    `/dev/shm` (a Memory emptyDir mount) or, for a pod, `terminationGracePeriodSeconds` or
    `tolerations`. KServe's presets merge into the container named `main` (strategic merge
    by name); with `open_spec` anything may come from a config."""
    pod = c if isinstance(c, PodTemplate) else c.pod
    if open_spec(pod):
        return True
    shape = preset_shape(pod)
    if shape is None:
        return False
    if field == "terminationGracePeriodSeconds":
        return True
    if isinstance(c, PodTemplate) or c.init or c.name != "main":
        return False
    if shape == "dp-worker" and field in ("livenessProbe", "readinessProbe", "startupProbe"):
        return False  # headless data-parallel ranks serve no HTTP: the preset sets no probes
    if field == "terminationMessagePolicy" and c.pod.role == "prefill" and shape == "single":
        return False  # the single-node prefill preset sets `File`
    return field in _PRESET["scheduler" if shape == "scheduler" else "serving"]


_COMPONENT = {
    "main": "workload",
    "prefill": "workload-prefill",
    "worker": "workload-worker",
    "prefill-worker": "workload-worker-prefill",
}


def controller_labels(pod: PodTemplate) -> dict[str, str]:
    """Labels a controller adds to the pods it builds from this template (beyond the
    template's own): today KServe LLMInferenceService workload pods. `kserve.io/component:
    workload` marks the pods its InferencePool selects (the main or leader pod, or the worker
    when there is no leader template); such pods also get the labels of the InferencePool
    named by `spec.router.scheduler.pool.ref`."""
    if pod.obj.kind not in KINDS or pod.role not in SERVING_ROLES:
        return {}
    w = as_dict(pod.obj.get(*pod.group_path))
    multi = isinstance(w.get("worker"), dict)
    has_leader = isinstance(w.get("template"), dict)
    prefill = pod.role.startswith("prefill")
    comp = _COMPONENT[pod.role]
    if multi and pod.role in ("main", "prefill"):
        comp = "workload-leader-prefill" if prefill else "workload-leader"
    out = {
        "app.kubernetes.io/name": pod.obj.name or "",
        "app.kubernetes.io/part-of": "llminferenceservice",
        "app.kubernetes.io/component": "llminferenceservice-" + comp,
    }
    if pod.role in ("main", "prefill") or not has_leader:
        out["kserve.io/component"] = "workload"
        out["llm-d.ai/role"] = (
            "prefill" if prefill else ("decode" if isinstance(pod.obj.get("spec", "prefill"), dict) else "both")
        )
    return out


def preset_tokens(c: Container) -> list[str] | None:
    """The `vllm serve` command a KServe preset runs in an LLMInferenceService `main` container
    that sets no `command`: model at /mnt/models, `--served-model-name`, parallelism from
    `spec[.prefill].parallelism`, then `VLLM_ADDITIONAL_ARGS` and the container's `args`.
    Where a config the linter cannot see may set the parallelism (`open_spec`), the tensor
    parallel size is an unresolved `$(...)` value, so rules that need it skip the pod."""
    pod = c.pod
    shape = preset_shape(pod)
    if shape is None or shape == "scheduler" or c.name != "main" or c.init or "command" in c.data:
        return None
    spec = as_dict(pod.obj.data.get("spec"))
    if spec.get("runtime"):
        return None  # a ServingRuntime picks the engine and its preset
    w = as_dict(pod.obj.get(*pod.group_path))
    par = as_dict(w.get("parallelism"))
    name = get_in(spec, ("model", "name"))  # unset: metadata.name, no hint of the model
    out = ["vllm", "serve", "/mnt/models"]
    if isinstance(name, str) and name:
        out += ["--served-model-name", name]
    if shape in ("dp-leader", "dp-worker") and par.get("expert") is True:
        out.append("--enable-expert-parallel")
    tp = to_int(par.get("tensor"))
    if tp:
        out += ["--tensor-parallel-size", str(tp)]
    if shape in ("dp-leader", "dp-worker"):
        out += [
            "--data-parallel-size",
            str(to_int(par.get("data")) or 1),
            "--data-parallel-size-local",
            str(to_int(par.get("dataLocal")) or 1),
        ]
        if shape == "dp-worker":
            out.append("--headless")
    extra = c.env_value("VLLM_ADDITIONAL_ARGS")
    if extra:
        try:
            out += shell_split(extra)
        except ValueError:
            out += extra.split()
    if open_spec(pod):
        out += ["--tensor-parallel-size", "$(KSERVE_CONFIG)"]  # a config may set it; the args still win
    return out + command_tokens({"args": c.data.get("args")})


_FLAG_FIELDS = {
    "--tensor-parallel-size": "tensor",
    "--data-parallel-size": "data",
    "--data-parallel-size-local": "dataLocal",
}


def preset_source(c: Container, flags: Sequence[str] = (), text: str = "", create: bool = False) -> Path | None:
    """Where the file sets a flag (one of `flags`) or a model id (`text`) of a command that a
    controller preset builds (see `preset_tokens`), outside `command`/`args`: the
    `VLLM_ADDITIONAL_ARGS` env value, `spec[.prefill].parallelism.*`, `spec.model.uri`/`name`.
    With `create`, a parallelism field's path even when it is not written yet (for fixes)."""
    if preset_tokens(c) is None:
        return None
    obj = c.pod.obj
    if text:
        for key in ("uri", "name"):
            if obj.get("spec", "model", key) == text:
                return ("spec", "model", key)
        return None
    extra = c.env_value("VLLM_ADDITIONAL_ARGS")
    if extra and any(re.search(r"(^|\s)" + re.escape(f) + r"(=|\s|$)", extra) for f in flags):
        return c.path_of("env", c.env_index("VLLM_ADDITIONAL_ARGS"), "value")
    for f in flags:
        field_name = _FLAG_FIELDS.get(f)
        if field_name:
            path = c.pod.group_path + ("parallelism", field_name)
            if create or obj.has(path):
                return path
    if "--served-model-name" in flags and obj.has(("spec", "model", "name")):
        return ("spec", "model", "name")
    return None
