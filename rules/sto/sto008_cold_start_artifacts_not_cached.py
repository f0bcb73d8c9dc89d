"""
## What it does
Finds serving pods that fetch their weights on every start into storage that dies with
the pod: an init container running `aws s3 sync/cp`, `s5cmd`, `hf download` or
`huggingface-cli download` into an `emptyDir` (or the container filesystem), or a
vLLM/TGI/SGLang container given a Hub id (`--model org/name`) whose download directory
(`--download-dir`, `HF_HOME`, or the default `~/.cache/huggingface`) is not on a
PersistentVolumeClaim, hostPath or CSI volume. It is a warning when the workload scales
(an HPA or KEDA ScaledObject with max > min, or KEDA's default `minReplicaCount: 0`; a
KubeAI Model, which KubeAI's autoscaler scales between `minReplicas`, 0 when unset, and
`maxReplicas` unless `autoscalingDisabled`) or can run on Spot capacity, and info with fixed replicas on on-demand nodes. Neuron serving
pods that scale or run on Spot are also flagged when no compile cache is persisted
(`NEURON_LIBTORCH_REMOTE_CACHE`, `NEURON_COMPILED_ARTIFACTS`, `NEURON_COMPILE_CACHE_URL`).

## Why is this bad?
Every new replica, every Spot replacement and every scale-from-zero pays the full download
(and, on Inferentia/Trainium, the full neuronx-cc compilation) before it can serve: tens of
minutes for large models, exactly when traffic is rising or capacity was just lost, while
the GPU or Neuron node is billed and idle. A shared cache (FSx for Lustre, EFS, an S3-backed
node cache, weights baked into the image) or pre-compiled artifacts cut that to minutes.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama
spec:
  selector:
    matchLabels: {app: llama}
  template:
    metadata:
      labels: {app: llama}
    spec:
      initContainers:
        - name: fetch
          image: amazon/aws-cli:2.17.0
          command: [aws, s3, sync, s3://models/llama-3.1-70b, /models]
          volumeMounts:
            - {name: models, mountPath: /models}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.10.1
          args: [--model, /models]
          volumeMounts:
            - {name: models, mountPath: /models}
      volumes:
        - name: models
          emptyDir: {}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: llama
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: llama}
  minReplicas: 1
  maxReplicas: 8
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama
spec:
  selector:
    matchLabels: {app: llama}
  template:
    metadata:
      labels: {app: llama}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.10.1
          args: [--model, /models/llama-3.1-70b]
          volumeMounts:
            - {name: models, mountPath: /models, readOnly: true}
      volumes:
        - name: models
          persistentVolumeClaim:
            claimName: fsx-models
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: llama
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: llama}
  minReplicas: 1
  maxReplicas: 8
```

## Options
- `minModelSize` (string, default `5G`): models known to be smaller (from
  `ailint.io/model-size` or a parameter count in the id, such as `1.5B`) are skipped.

## Fix
None: pre-stage weights on a shared file system (FSx for Lustre, EFS) or a node-local
cache that outlives the pod, bake them into the image, or persist the Neuron compile
cache; then load from that path.

## References
- https://docs.vllm.ai/en/stable/configuration/engine_args.html (`--download-dir`)
- https://keda.sh/docs/latest/reference/scaledobject-spec/ (`minReplicaCount` defaults to 0)
- https://awsdocs-neuron.readthedocs-hosted.com/en/latest/vllm-neuron/docs/design/compilation/compilation_cache.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Option, Options, Rule, Scope
from ailint.domain.context import Context
from ailint.domain.extract import (
    NEURON_RESOURCES,
    POD_KINDS,
    Container,
    PodTemplate,
    is_serving_pod,
    pod_accelerators,
    pod_templates,
)
from ailint.domain.quantities import parse_quantity
from ailint.domain.storage import (
    Download,
    model_size_bytes_hint,
    mount_for_path,
    pool_can_run,
    scaling_of,
    startup_downloads,
    volume_for_mount,
    volume_kind,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="STO008",
    name="cold-start-artifacts-not-cached",
    severity=Severity.WARNING,
    summary="Serving pods download weights or recompile artifacts on every start into storage that dies with the pod",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.NEVER,
    options={"minModelSize": Option("5G", "models known to be smaller than this are skipped", "string")},
    tags=("storage", "model-loading", "autoscaling", "cost"),
)

_PERSISTENT = ("pvc", "hostPath", "csi", "nfs", "image")
_HF_DEFAULT = "/root/.cache/huggingface"
_NEURON_CACHE_ENV = ("NEURON_LIBTORCH_REMOTE_CACHE", "NEURON_COMPILED_ARTIFACTS", "NEURON_COMPILE_CACHE_URL")


def _ephemeral_target(pod: PodTemplate, c: Container, target: str | None) -> bool:
    """Does a download to `target` land on storage that dies with the pod?"""
    paths = [target] if target else []
    if not paths:
        hf_home = c.env_value("HF_HOME")
        paths = [hf_home] if hf_home else [_HF_DEFAULT]
    for p in paths:
        if not p or not p.startswith("/"):
            return False  # relative or templated: cannot tell
        vol = volume_for_mount(pod, mount_for_path(c, p))
        if vol is not None and _can_hold_cache(vol):
            return False
    return not (
        target is None
        and any(
            _can_hold_cache(v)
            for v in _mounted_volumes(pod, c)
            if "cache" in str(v.get("name", "")).lower() or "model" in str(v.get("name", "")).lower()
        )
    )


_NOT_A_CACHE_DIR = ("/var/run", "/run", "/dev", "/sys", "/proc", "/etc", "/var/log", "/usr", "/lib", "/boot")
_NOT_A_CACHE_TYPE = ("Socket", "CharDevice", "BlockDevice", "File", "FileOrCreate")


def _can_hold_cache(v: dict[str, Any]) -> bool:
    """A persistent volume the model cache can live on: not a hostPath socket, device or file,
    nor a system folder (`/var/run/docker.sock`, `/dev/shm`, `/sys`, `/etc/...`)."""
    if volume_kind(v) not in _PERSISTENT:
        return False
    hp = v.get("hostPath")
    if isinstance(hp, dict):
        path = str(hp.get("path") or "").rstrip("/")
        if hp.get("type") in _NOT_A_CACHE_TYPE or not path:
            return False
        if any(path == d or path.startswith(d + "/") for d in _NOT_A_CACHE_DIR):
            return False
    return True


def _mounted_volumes(pod: PodTemplate, c: Container) -> list[dict[str, Any]]:
    out = []
    for m in c.volume_mounts:
        v = volume_for_mount(pod, m)
        if v is not None:
            out.append(v)
    return out


def _spot(ctx: Any, pod: PodTemplate) -> bool:
    sel = as_dict(pod.spec.get("nodeSelector"))
    if (
        str(sel.get("karpenter.sh/capacity-type", "")).lower() == "spot"
        or str(sel.get("eks.amazonaws.com/capacityType", "")).upper() == "SPOT"
    ):
        return True
    if not ctx.bundle:
        return False
    acc = pod_accelerators(pod)
    for pool in ctx.pools_for(pod):
        if not pool_can_run(pool, acc):
            continue
        for r in pool.requirements:
            if r.key == "karpenter.sh/capacity-type" and r.operator == "In" and "spot" in r.values:
                return True
    return False


def _scales(ctx: Any, obj: Any) -> str | None:
    sc = scaling_of(ctx, obj)  # (one object alone: only its own controller's range)
    if sc is None:
        return None
    who = "its controller" if sc.source is obj else ctx.describe(sc.source)
    zero = " from zero" if sc.min_replicas == 0 else ""
    if sc.max_replicas is None:
        return f"{who} scales it{zero} with no upper limit"
    if sc.max_replicas > sc.min_replicas:
        return f"{who} scales it{zero} up to {sc.max_replicas}"
    if sc.min_replicas == 0:
        return f"{who} scales it from zero"
    return None


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    min_size = parse_quantity(opts.get_str("minModelSize")) or 5e9
    for pod in pod_templates(obj):
        if not is_serving_pod(pod):
            continue
        if pod.role == "head" and obj.kind in ("RayCluster", "RayService", "RayJob") and not pod_accelerators(pod):
            continue  # a Ray head that holds no accelerator does not load the model
        scaling = _scales(ctx, obj)
        spot = _spot(ctx, pod)
        why = scaling or ("it can run on Spot capacity" if spot else None)
        sev = None if why else Severity.INFO
        tail = f"; {why}, and every new pod pays the download again" if why else "; every restart pays it again"
        found: Download | None = None
        for d in startup_downloads(pod):
            if d.kind == "hub":
                size = model_size_bytes_hint(pod, d.what)
                ephemeral = _ephemeral_target(pod, d.container, d.target)
            else:
                size = model_size_bytes_hint(pod, None)
                ephemeral = (
                    _ephemeral_target(pod, d.container, d.target)
                    if d.target
                    else not any(_can_hold_cache(v) for v in _mounted_volumes(pod, d.container))
                )
            if not ephemeral or (size is not None and size < min_size):
                continue
            found = d
            break
        if found is not None:
            what = (
                f"container {found.container.name} downloads {found.what} from the Hub at start"
                if found.kind == "hub"
                else f"init container {found.container.name} runs {found.what} into storage that dies with the pod"
            )
            yield RULE.finding(obj, found.where, what + tail, severity=sev)
        acc = pod_accelerators(pod)
        if (
            why
            and any(acc.get(r, 0) for r in NEURON_RESOURCES)
            and not any(c.has_env(n) for c in pod.containers() for n in _NEURON_CACHE_ENV)
        ):
            first = next(
                (c for c in pod.containers(include_init=False) if any(r in c.accelerators() for r in NEURON_RESOURCES)),
                None,
            )
            if first is not None:
                yield RULE.finding(
                    obj,
                    first.path_of("env") if "env" in first.data else first.path,
                    f"Neuron container {first.name} persists no compile cache "
                    "(NEURON_LIBTORCH_REMOTE_CACHE or pre-compiled artifacts); "
                    f"{why}, and every new pod recompiles",
                )
