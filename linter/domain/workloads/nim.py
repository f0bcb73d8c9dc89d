"""NVIDIA NIM Operator (apps.nvidia.com/v1alpha1): NIMService and NIMCache.

A NIMService's `spec` is flat: the operator builds a Deployment (an LWS for `multiNode`)
with one container `<name>-ctr` (NVIDIA/k8s-nim-operator api/apps/v1alpha1/nimservice_types.go):
image `repository:tag`, env NIM_CACHE_PATH=/model-store, NGC_API_KEY, OUTLINES_CACHE_DIR,
NIM_SERVER_PORT, NIM_JSONL_LOGGING=1, NIM_LOG_LEVEL=INFO under the user's `env`; when unset,
probes liveness /v1/health/live, readiness /v1/health/ready (initialDelay 15, period 10,
failure 3) and startup /v1/health/ready (initialDelay 40, period 10, failure 180) on the
service port (8000); a /dev/shm Memory emptyDir; `resources` and `tolerations` as written
(the operator adds no GPU and no toleration). A NIMCache runs a download Job (role batch).
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import K8sObject, Path, as_dict, as_list
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import Catalog, Facts, Family, as_int, synthesized

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GROUP = "apps.nvidia.com"
PORT = 8000


def image_of(spec: dict[str, Any]) -> str:
    img = spec.get("image")
    if isinstance(img, str):
        return img
    img = as_dict(img)
    repo, tag = img.get("repository"), img.get("tag")
    return f"{repo}:{tag}" if repo and tag else str(repo or "")


def templates(obj: K8sObject) -> Iterator[PodTemplate]:
    if obj.kind != "NIMService":
        return
    spec = as_dict(obj.data.get("spec"))
    if not spec:
        return
    port = as_int(as_dict(as_dict(spec.get("expose")).get("service")).get("port")) or PORT
    std: list[dict[str, Any]] = [
        {"name": "NIM_CACHE_PATH", "value": "/model-store"},
        {
            "name": "NGC_API_KEY",
            "valueFrom": {"secretKeyRef": {"name": str(spec.get("authSecret") or ""), "key": "NGC_API_KEY"}},
        },
        {"name": "OUTLINES_CACHE_DIR", "value": "/tmp/outlines"},
        {"name": "NIM_SERVER_PORT", "value": str(port)},
        {"name": "NIM_JSONL_LOGGING", "value": "1"},
        {"name": "NIM_LOG_LEVEL", "value": "INFO"},
    ]
    user_env = [e for e in as_list(spec.get("env")) if isinstance(e, dict)]
    names = {e.get("name") for e in user_env}
    kept = [e for e in std if e["name"] not in names]
    c: dict[str, Any] = {
        "name": f"{obj.name or 'nimservice'}-ctr",
        "image": image_of(spec),
        "env": [*kept, *user_env],
        "ports": [{"name": "api", "containerPort": port}],
        "volumeMounts": [
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "model-store", "mountPath": "/model-store"},
        ],
    }
    for key in ("command", "args", "resources"):
        if spec.get(key):
            c[key] = spec[key]
    defaults = {
        "livenessProbe": {"httpGet": {"path": "/v1/health/live", "port": port}},
        "readinessProbe": {
            "httpGet": {"path": "/v1/health/ready", "port": port},
            "initialDelaySeconds": 15,
            "periodSeconds": 10,
            "failureThreshold": 3,
        },
        "startupProbe": {
            "httpGet": {"path": "/v1/health/ready", "port": port},
            "initialDelaySeconds": 40,
            "periodSeconds": 10,
            "failureThreshold": 180,
        },
    }
    for probe, default in defaults.items():
        mine = as_dict(spec.get(probe))
        if mine.get("enabled") is False:
            continue
        c[probe] = as_dict(mine.get("probe")) or default
    shm: dict[str, Any] = {"medium": "Memory"}
    limit = as_dict(spec.get("storage")).get("sharedMemorySizeLimit")
    if limit:
        shm["sizeLimit"] = limit
    pod: dict[str, Any] = {"containers": [c], "volumes": [{"name": "dshm", "emptyDir": shm}]}
    for key in ("nodeSelector", "tolerations", "affinity", "runtimeClassName", "schedulerName", "priorityClassName"):
        if spec.get(key):
            pod[key] = spec[key]
    img = spec.get("image")
    # a finding on the image points at the part a user changes: the tag, else the repository
    img_path: Path = ("spec", "image")
    for part in ("tag", "repository"):
        if isinstance(img, dict) and part in img:
            img_path = ("spec", "image", part)
            break
    fields: list[tuple[Path, Path, bool]] = [
        (("containers", 0, "image"), img_path, False),
        (("containers", 0, "resources"), ("spec", "resources"), True),
        (("containers", 0, "command"), ("spec", "command"), True),
        (("containers", 0, "args"), ("spec", "args"), True),
        (("containers", 0, "env"), ("spec", "env") if user_env else ("spec",), False),
    ]
    for i in range(len(user_env)):
        fields.append((("containers", 0, "env", len(kept) + i), ("spec", "env", i), True))
    for probe in defaults:
        if isinstance(spec.get(probe), dict):
            fields.append((("containers", 0, probe), ("spec", probe, "probe"), True))
    for key in ("nodeSelector", "tolerations", "affinity", "runtimeClassName"):
        fields.append(((key,), ("spec", key), True))
    fields.append((("volumes",), ("spec", "storage"), False))
    replicas = as_int(spec.get("replicas")) if "replicas" in spec else 1
    yield synthesized(obj, ("spec",), pod, "nim", replicas, fields)


def facts(obj: K8sObject, pods: list[PodTemplate], catalog: Catalog) -> Facts | None:
    spec = as_dict(obj.data.get("spec"))
    if obj.kind == "NIMCache":
        ngc = as_dict(as_dict(spec.get("source")).get("ngc"))
        hf = as_dict(as_dict(spec.get("source")).get("hf"))
        out = Facts(roles=["batch"], engine=None)
        puller = ngc.get("modelPuller")
        out.model = str(puller) if puller else (str(hf.get("modelName")) if hf.get("modelName") else None)
        tp = as_int(as_dict(ngc.get("model")).get("tensorParallelism"))
        if tp:
            out.parallelism["tensor"] = tp
        out.replicas = 1
        return out
    out = Facts(roles=["serving"], engine="nim")
    repo = as_dict(spec.get("image")).get("repository")
    if isinstance(repo, str) and "/nim/" in repo:
        out.model = repo.split("/nim/", 1)[1]
    return out


def _role(pod: PodTemplate) -> str:
    return "serving"


FAMILY = Family(
    "nim",
    ((GROUP, "NIMService"), (GROUP, "NIMCache")),
    templates,
    facts,
    role=_role,
    serving=((GROUP, "NIMService"),),
)
