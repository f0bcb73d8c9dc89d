"""KubeAI (kubeai.org/v1 Model): no pod template in the object; the controller runs bare Pods
(`model-<name>-<i>`, `spec.replicas` of them, autoscaled between `minReplicas` and
`maxReplicas`) with one container `server` that this adapter synthesizes.

Verified in substratusai/kubeai: internal/modelcontroller/engine_vllm.go and
engine_ollama.go (command, args, port 8000, probes), charts/kubeai/values.yaml @0021819
(resource profiles and images). A `resourceProfile: <profile>:<count>` multiplies the
profile's requests and limits by the count and copies its nodeSelector and tolerations.
Findings on the synthesized container point at the field that produced it (`resourceProfile`,
`args`, `url`, `image`, `env`), never at a line the user did not write.
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import K8sObject, Path, as_dict, as_list, own_copy
from ailint.domain.extract import PodTemplate
from ailint.domain.quantities import parse_quantity
from ailint.domain.workloads.base import Catalog, Facts, Family, as_int, synthesized

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_TOLERATE_GPU = [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
_GPU1 = {"nvidia.com/gpu": "1"}
# charts/kubeai/values.yaml resourceProfiles (the chart's defaults; a cluster may define others)
PROFILES: dict[str, dict[str, Any]] = {
    "cpu": {"imageName": "cpu", "requests": {"cpu": "1", "memory": "2Gi"}},
    "nvidia-gpu-t4": {"imageName": "nvidia-gpu", "limits": _GPU1, "requests": _GPU1},
    "nvidia-gpu-l4": {
        "imageName": "nvidia-gpu",
        "limits": _GPU1,
        "requests": {**_GPU1, "cpu": "6", "memory": "24Gi"},
        "tolerations": _TOLERATE_GPU,
    },
    "nvidia-gpu-l40s": {
        "imageName": "nvidia-gpu",
        "limits": _GPU1,
        "requests": {**_GPU1, "cpu": "6", "memory": "24Gi"},
        "tolerations": _TOLERATE_GPU,
    },
    "nvidia-gpu-gh200": {"imageName": "gh200", "limits": _GPU1, "requests": _GPU1, "tolerations": _TOLERATE_GPU},
    **{
        name: {"imageName": "nvidia-gpu", "limits": _GPU1, "tolerations": _TOLERATE_GPU}
        for name in (
            "nvidia-gpu-h100",
            "nvidia-gpu-a100-80gb",
            "nvidia-gpu-a100-40gb",
            "nvidia-gpu-a16",
            "nvidia-gpu-rtx4070-8gb",
        )
    },
}
IMAGES = {
    "VLLM": {
        "default": "vllm/vllm-openai:v0.6.4.post1",
        "cpu": "substratusai/vllm:v0.6.3.post1-cpu",
        "google-tpu": "substratusai/vllm:v0.6.4.post1-tpu",
        "nvidia-gpu": "vllm/vllm-openai:v0.6.4.post1",
        "gh200": "drikster80/vllm-gh200-openai:v0.6.4.post1",
    },
    "OLlama": {"default": "ollama/ollama:latest"},
    "FasterWhisper": {
        "default": "fedirz/faster-whisper-server:latest-cpu",
        "nvidia-gpu": "fedirz/faster-whisper-server:latest-cuda",
    },
    "Infinity": {"default": "michaelf34/infinity:latest"},
}
_ENGINE = {"VLLM": "vllm", "OLlama": "ollama", "FasterWhisper": "other", "Infinity": "other"}


def profile(obj: K8sObject) -> tuple[str, int, dict[str, Any] | None]:
    """(profile name, count, profile) of `spec.resourceProfile`; the profile is None when the
    chart does not define it (an overlay or the cluster's config does)."""
    raw = obj.get("spec", "resourceProfile")
    if not isinstance(raw, str) or not raw:
        return "", 0, None
    name, _, n = raw.partition(":")
    count = as_int(n) if n else 1
    return name, count or 0, PROFILES.get(name)


def _scaled(res: dict[str, Any], count: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in res.items():
        q = parse_quantity(v)
        if q is None:
            out[k] = v
            continue
        total = q * count
        if k == "memory" and isinstance(v, str) and v.endswith("Gi"):
            out[k] = f"{total / 2**30:g}Gi"
        else:
            out[k] = f"{total:g}"
    return out


def _resources(name: str, count: int, prof: dict[str, Any] | None) -> dict[str, Any]:
    if prof is not None:
        return {w: _scaled(as_dict(prof.get(w)), count) for w in ("requests", "limits") if prof.get(w)}
    # a profile the chart does not ship: its name says the device (nvidia-gpu-*, amd-gpu-*)
    if name.startswith("nvidia-gpu"):
        return {"limits": {"nvidia.com/gpu": str(count)}}
    if name.startswith("amd-gpu"):
        return {"limits": {"amd.com/gpu": str(count)}}
    if name.startswith("google-tpu"):  # values-gke.yaml: limits google.com/tpu 1 per unit
        return {"limits": {"google.com/tpu": str(count)}}
    return {}


def model_ref(url: Any) -> str | None:
    """The model a Model's `url` names: `hf://org/name` -> `org/name`, else the URL."""
    if not isinstance(url, str) or not url:
        return None
    for scheme in ("hf://", "ollama://"):
        if url.startswith(scheme):
            return url[len(scheme) :]
    return url


def templates(obj: K8sObject) -> Iterator[PodTemplate]:
    spec = as_dict(obj.data.get("spec"))
    if not spec:
        return
    engine = str(spec.get("engine") or "VLLM")
    name, count, prof = profile(obj)

    # the default images are the cluster's KubeAI config, not this file: only a written one counts
    image = spec.get("image") if isinstance(spec.get("image"), str) else ""
    raw_url = spec.get("url")
    url: str = raw_url if isinstance(raw_url, str) else ""
    ref = model_ref(url) or ""
    # engine_vllm.go: a cacheProfile loads the model into a PVC once (the loader Job) and
    # vLLM reads modelCacheDir(m); a pvc:// model is mounted at /model; s3:// is streamed
    volume: dict[str, Any] | None = None
    if spec.get("cacheProfile"):
        ref = f"/models/{obj.name or 'model'}"
        volume = {"name": "model", "persistentVolumeClaim": {"claimName": f"{spec['cacheProfile']}-cache"}}
    elif url.startswith("pvc://"):
        ref = "/model"
        claim = url[len("pvc://") :].split("/", 1)[0]
        volume = {"name": "model", "persistentVolumeClaim": {"claimName": claim}}
    user_args = [a for a in as_list(spec.get("args")) if isinstance(a, (str, int, float))]
    env = [{"name": str(k), "value": str(v)} for k, v in as_dict(spec.get("env")).items()]
    c: dict[str, Any] = {"name": "server", "ports": [{"name": "http", "containerPort": 8000}]}
    if image:
        c["image"] = image
    fields: list[tuple[Path, Path, bool]] = []
    first_arg = 0
    if engine == "VLLM":
        c["command"] = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
        c["args"] = [f"--model={ref}", f"--served-model-name={obj.name or ''}", *[str(a) for a in user_args]]
        first_arg = 2
        env = [{"name": "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "value": "True"}, *env]
        probe = {"httpGet": {"path": "/health", "port": "http"}}
        c["startupProbe"] = {**probe, "periodSeconds": 2, "failureThreshold": 5400}
        c["readinessProbe"] = {**probe, "periodSeconds": 10, "failureThreshold": 3}
        c["livenessProbe"] = {**probe, "periodSeconds": 30, "failureThreshold": 3}
    elif engine == "OLlama":
        if not image:
            c["command"] = ["ollama", "serve"]  # the entrypoint of the chart's ollama/ollama image
        env = [
            {"name": "OLLAMA_HOST", "value": "0.0.0.0:8000"},
            {"name": "OLLAMA_KEEP_ALIVE", "value": "999999h"},
            *env,
        ]
        # engine_ollama.go: the startup probe pulls the model (timeout 180 min)
        pull = f"/bin/ollama pull {ref} && /bin/ollama cp {ref} {obj.name or ''}"
        c["startupProbe"] = {
            "exec": {"command": ["bash", "-c", pull]},
            "initialDelaySeconds": 1,
            "periodSeconds": 3,
            "failureThreshold": 10,
            "timeoutSeconds": 10800,
        }
        c["readinessProbe"] = {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 10, "failureThreshold": 3}
        c["livenessProbe"] = {
            "httpGet": {"path": "/", "port": "http"},
            "initialDelaySeconds": 900,
            "periodSeconds": 30,
            "failureThreshold": 3,
        }
        if user_args:
            c["args"] = [str(a) for a in user_args]
    elif user_args:
        c["args"] = [str(a) for a in user_args]
    if env:
        c["env"] = env
    res = _resources(name, count, prof)
    if res:
        c["resources"] = res
    if volume is not None:
        c["volumeMounts"] = [{"name": "model", "mountPath": ref}]
    pod: dict[str, Any] = {"containers": [c]}  # the controller's /dev/shm volume: workloads.supplies
    if volume is not None:
        pod["volumes"] = [volume]
    if prof is not None:
        for key in ("nodeSelector", "tolerations", "affinity", "runtimeClassName"):
            if prof.get(key):
                pod[key] = own_copy(prof[key])
    if spec.get("priorityClassName"):
        pod["priorityClassName"] = spec["priorityClassName"]
    where_profile: Path = ("spec", "resourceProfile") if "resourceProfile" in spec else ("spec",)
    fields += [
        (("containers", 0, "resources"), where_profile, False),
        (("tolerations",), where_profile, False),
        (("nodeSelector",), where_profile, False),
        (("affinity",), where_profile, False),
        (("containers", 0, "image"), ("spec", "image") if "image" in spec else ("spec", "engine"), False),
        (("containers", 0, "env"), ("spec", "env") if "env" in spec else ("spec",), False),
        (("containers", 0, "args"), ("spec", "args") if "args" in spec else ("spec", "url"), False),
        (("containers", 0, "args", 0), ("spec", "url"), False),
        (("containers", 0, "command"), ("spec", "engine") if "engine" in spec else ("spec",), False),
    ]
    for i in range(len(user_args)):
        fields.append((("containers", 0, "args", first_arg + i), ("spec", "args", i), False))
    replicas = as_int(spec.get("replicas")) if "replicas" in spec else as_int(spec.get("minReplicas"))
    yield synthesized(obj, ("spec",), pod, "server", replicas, fields)


def facts(obj: K8sObject, pods: list[PodTemplate], catalog: Catalog) -> Facts | None:
    spec = as_dict(obj.data.get("spec"))
    out = Facts(roles=["serving"])
    out.engine = _ENGINE.get(str(spec.get("engine") or "VLLM"), "other")
    out.model = model_ref(spec.get("url"))
    return out


def scaling(obj: K8sObject) -> tuple[int, int | None] | None:
    """KubeAI's autoscaler keeps a Model's servers between `minReplicas` (0 when unset: the
    field is no pointer, and 0 "is a valid value") and `maxReplicas` (unset: "no limit"),
    unless `autoscalingDisabled` (kubeai.org_models CRD, ModelSpec)."""
    spec = as_dict(obj.data.get("spec"))
    if spec.get("autoscalingDisabled") is True:
        return None
    lo = as_int(spec.get("minReplicas")) or 0
    hi = as_int(spec.get("maxReplicas"))
    if hi is not None and hi <= lo and lo > 0:
        return None  # a fixed count: nothing is scaled
    return lo, hi


def supplies(c: Any, field: str) -> bool | None:
    if field == "resources":
        return True  # a resource profile is the cluster's KubeAI config: requests may differ there
    return None


def _role(pod: PodTemplate) -> str:
    return "serving"


FAMILY = Family(
    "kubeai",
    (("kubeai.org", "Model"),),
    templates,
    facts,
    supplies=supplies,
    role=_role,
    serving=(("kubeai.org", "Model"),),
    scaling=scaling,
)
