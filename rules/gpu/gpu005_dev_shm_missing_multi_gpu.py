"""
## What it does
Flags accelerator containers that need a large `/dev/shm` but mount nothing there, in pods
that are not `hostIPC`. A container needs one when it requests 2 or more GPUs, when it runs
vLLM or SGLang with tensor or pipeline parallelism above 1 (`--tensor-parallel-size`/`-tp`,
`--pipeline-parallel-size`/`-pp`, SGLang `--tp-size`/`--pp-size`), or when it is a
torchrun, DeepSpeed or Ray Train worker.

Skipped: `pause` containers (they only hold the GPUs); GPU stress tests (`gpu_burn`,
`dcgmproftester`: one CUDA process per GPU, no collective through shared memory); GPU counts of HAMi virtual GPUs
(`nvidia.com/gpumem`/`gpucores` set: the count is of slices); the Ray container (the first one) of RayCluster, RayJob and RayService head and
worker pods, and of the RayCluster templates of AIBrix RayClusterFleet and
RayClusterReplicaSet (KubeRay builds their pods too), because KubeRay mounts a
memory-backed `/dev/shm` there itself; containers
with `NCCL_SHM_DISABLE=1`; pods with `hostIPC: true` (they share the host's `/dev/shm`).

Severity: error when the container runs tensor parallelism above 1 (GPU processes exchange
data through /dev/shm); a warning otherwise.

## Why is this bad?
Container runtimes give each pod a 64 MiB `/dev/shm` by default (Docker's and CRI-O's
`DefaultShmSize`). NCCL's shared-memory transport between GPUs of one node, vLLM's
tensor-parallel workers and PyTorch DataLoader workers all allocate there; with 64 MiB they
crash with `Bus error` or NCCL "unhandled system error", or fall back to a much slower path.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm-70b
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "4"]
          resources:
            limits:
              nvidia.com/gpu: 4
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm-70b
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "4"]
          resources:
            limits:
              nvidia.com/gpu: 4
          volumeMounts:
            - name: dshm
              mountPath: /dev/shm
      volumes:
        - name: dshm
          emptyDir:
            medium: Memory
            sizeLimit: 16Gi
```

## Options
- `size_limit` (default `16Gi`): the `sizeLimit` the fix gives the new volume; it is capped
  at half the container's memory limit when that is smaller.

## Fix
Unsafe: adds a volume `dshm` (`emptyDir: {medium: Memory, sizeLimit: <size_limit>}`) and
mounts it at `/dev/shm`. A memory-backed emptyDir counts against the container's memory
limit, so the size is a choice to review.

## References
- https://docs.vllm.ai/en/stable/deployment/k8s.html
- https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#docker
- https://kubernetes.io/docs/concepts/storage/volumes/#emptydir
- https://github.com/ray-project/kuberay/blob/master/ray-operator/controllers/ray/common/pod.go
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Option, Options, Rule, make_fix
from ailint.domain import accelerators
from ailint.domain.context import Context
from ailint.domain.extract import (
    GPU_RESOURCES,
    NEURON_RESOURCES,
    POD_KINDS,
    flag_value,
    pod_templates,
    serving_engine,
    volumes,
)
from ailint.domain.kserve import preset_supplies
from ailint.domain.quantities import parse_quantity, to_int
from ailint.domain.roles import what_runs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="GPU005",
    name="dev-shm-missing-multi-gpu",
    severity=Severity.WARNING,
    summary="A multi-GPU, tensor-parallel or distributed-training container has no memory-backed /dev/shm",
    kinds=POD_KINDS,
    fix=FixAvailability.SOMETIMES,
    options={"size_limit": Option("16Gi", "sizeLimit of the /dev/shm emptyDir the fix adds", "string")},
    tags=("gpu", "nccl", "storage"),
    precision="high",
)

_TRAIN = lazy_re(r"(^|[\s/])(torchrun|deepspeed)(\s|$)|torch\.distributed\.(run|launch)|\bray\.train\b")
_TP_FLAGS = ("--tensor-parallel-size", "-tp", "--tp-size", "--tp")
_PP_FLAGS = ("--pipeline-parallel-size", "-pp", "--pp-size", "--pp")


def _mounts_shm(c: Any) -> bool:
    return any(str(m.get("mountPath") or "").rstrip("/") == "/dev/shm" for m in c.volume_mounts)


def _reason(c: Any) -> tuple[str, bool] | None:
    """Why the container needs a large /dev/shm, and whether it is an error (TP > 1)."""
    toks = c.tokens
    engine = serving_engine(c)
    if engine in ("vllm", "sglang"):
        tp, pp = to_int(flag_value(toks, *_TP_FLAGS)), to_int(flag_value(toks, *_PP_FLAGS))
        if tp and tp > 1:
            return f"runs {engine} with tensor parallelism {tp}", True
        if pp and pp > 1:
            return f"runs {engine} with pipeline parallelism {pp}", False
    acc = c.accelerators()
    gpus = sum(acc.get(r, 0) for r in GPU_RESOURCES)
    if gpus >= 2 and not accelerators.shares_gpus(c):
        return f"requests {int(gpus)} GPUs", False
    text = " ".join(toks)
    m = _TRAIN.search(text)
    if m:
        word = m.group(2) or m.group(0).strip()
        return f"is a {word} worker", False
    return None


def _kuberay_builds(obj: K8sObject) -> bool:
    """KubeRay builds the object's pods: a RayCluster, RayJob or RayService, or a holder of a
    RayCluster template. (The Ray module is imported here, after the `Ray` prefix test: a
    Deployment's run imports no Ray or AIBrix module.)"""
    from ailint.domain import ray as ray_domain

    return obj.kind in ray_domain.RAY_KINDS or ray_domain.holds_cluster_template(obj)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        spec = pod.spec
        if spec.get("hostIPC") is True:
            continue
        # KubeRay builds the pods of a RayCluster, RayJob or RayService, and of the RayClusters an
        # AIBrix RayClusterFleet or RayClusterReplicaSet makes from its template
        ray_pod = obj.kind.startswith("Ray") and _kuberay_builds(obj) and pod.role != "submitter"
        for c in pod.containers(include_init=False):
            if ray_pod and c.path[-1] == 0:
                continue  # KubeRay mounts a Memory emptyDir at /dev/shm into the Ray container
            acc = c.accelerators()
            if not any(r in acc for r in GPU_RESOURCES + NEURON_RESOURCES) or accelerators.is_placeholder(c):
                continue
            if what_runs(c)[0] == "diagnostic":
                continue
            if _mounts_shm(c) or c.env_value("NCCL_SHM_DISABLE") in ("1", "true", "True"):
                continue
            if preset_supplies(c, "/dev/shm"):  # KServe LLMInferenceService presets mount a Memory emptyDir
                continue
            why = _reason(c)
            if why is None:
                continue
            text, is_error = why
            name = accelerators.container_label(c)
            msg = (
                f"{name} {text} but mounts nothing at /dev/shm, which defaults to 64 MiB; "
                f"mount an emptyDir with medium: Memory"
            )
            yield RULE.finding(
                obj,
                c.path_of("volumeMounts") if "volumeMounts" in c.data else c.path,
                msg,
                severity=Severity.ERROR if is_error else None,
                fix=_fix(obj, pod, c, opts.get_str("size_limit")),
            )


def _size(c: Any, wanted: str) -> str:
    want = parse_quantity(wanted)
    lim = parse_quantity(c.limit("memory"))
    if want is None:
        return wanted
    if lim is not None and lim / 2 < want:
        gi = max(1, math.floor(lim / 2 / 2**30))
        return f"{gi}Gi"
    return wanted


def _fix(obj: Any, pod: Any, c: Any, size_limit: str) -> Fix | None:
    vols = volumes(pod)
    name = "dshm"
    existing = vols.get(name)
    add_volume = True
    if existing is not None:
        medium = as_dict(existing[1].get("emptyDir")).get("medium")
        if medium == "Memory":
            add_volume = False
        else:
            i = 2
            while f"dshm{i}" in vols:
                i += 1
            name = f"dshm{i}"
    parts = [accelerators.add_list_items(obj, c.path, "volumeMounts", [{"name": name, "mountPath": "/dev/shm"}])]
    size = _size(c, size_limit)
    if add_volume:
        parts.append(
            accelerators.add_list_items(
                obj, pod.spec_path, "volumes", [{"name": name, "emptyDir": {"medium": "Memory", "sizeLimit": size}}]
            )
        )
    merged = accelerators.merge_inserts(parts)
    if merged is None:
        return None
    title = f"mount a {size} memory-backed emptyDir at /dev/shm" if add_volume else f"mount volume {name} at /dev/shm"
    return make_fix(title, merged, unsafe=True)
