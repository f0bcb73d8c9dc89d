"""
## What it does
Finds serving pods that cache model weights on node-local storage too small for the model.
The cache is a volume a serving container mounts where the weights land: the Hugging Face
cache (`HF_HOME`, `HF_HUB_CACHE`, `TRANSFORMERS_CACHE`, `HUGGINGFACE_HUB_CACHE`, or the
default `/root/.cache/huggingface`), vLLM/SGLang `--download-dir`, TGI's `/data`, or the
directory a local `--model` path points into. Node-local means an `emptyDir` without
`medium`, a `hostPath` under `/mnt/k8s-disks` or `/opt/dlami/nvme`, or a PVC bound to a
local PersistentVolume.

The model size is the `ailint.io/model-size` annotation (pod template or object), else an
estimate from the parameter count in the model id (`70B` x bytes per parameter from the
quantization or name suffix; `--dtype` is ignored because it does not change the download).
An image size counts only when `ailint.io/image-size` is set. The rule fires when the model
does not fit in:

- (a) the `emptyDir.sizeLimit`, or the local PersistentVolume's capacity;
- (b) the pod's `ephemeral-storage` limit (else request) when the cache is an `emptyDir`;
- (c) the node: the local NVMe of the smallest type in the pod's target instance set when
  the NodePool's EC2NodeClass sets `instanceStorePolicy: RAID0` or is not in the run, else
  the root volume (`blockDeviceMappings`; 20Gi by default on AL2023; the 20Gi data volume
  `/dev/xvdb` on Bottlerocket). 85% of a volume counts as usable;
- (d) the node, once every GPU of it runs a replica: (GPUs per node / GPUs per pod) x model
  size (per-pod `emptyDir` caches only; a shared `hostPath` holds one copy).

Types missing from the instance table are skipped, and so are EKS Auto Mode NodePools for
(c) and (d) (their NodeClass sizes ephemeral storage differently). Severity: warning for (a)
and (b) and for estimated sizes; error for (c) and (d) when the model size is declared.

## Why is this bad?
Model caches exist to make restarts and scale-out fast. A cache that does not fit fails in
the worst way: the download stops at "no space left on device", or the kubelet evicts the
pod for exceeding its ephemeral storage, over and over, on every node it lands on. Node disk
usage also scales with the pods per node: four 1-GPU replicas of a 70B model on a 4-GPU node
download four copies.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama-70b
  namespace: inference
spec:
  replicas: 1
  selector:
    matchLabels: {app: llama-70b}
  template:
    metadata:
      labels: {app: llama-70b}
    spec:
      nodeSelector:
        node.kubernetes.io/instance-type: g6e.12xlarge
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "meta-llama/Llama-3.3-70B-Instruct", "--tensor-parallel-size", "4"]
          env:
            - name: HF_HOME
              value: /cache
          volumeMounts:
            - name: cache
              mountPath: /cache
          resources:
            limits:
              nvidia.com/gpu: 4
      volumes:
        - name: cache
          emptyDir:
            sizeLimit: 50Gi
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama-70b
  namespace: inference
spec:
  replicas: 1
  selector:
    matchLabels: {app: llama-70b}
  template:
    metadata:
      labels: {app: llama-70b}
    spec:
      nodeSelector:
        node.kubernetes.io/instance-type: g6e.12xlarge
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "meta-llama/Llama-3.3-70B-Instruct", "--tensor-parallel-size", "4"]
          env:
            - name: HF_HOME
              value: /cache
          volumeMounts:
            - name: cache
              mountPath: /cache
          resources:
            limits:
              nvidia.com/gpu: 4
      volumes:
        - name: cache
          emptyDir:
            sizeLimit: 160Gi
```

## Options
None.

## Fix
Unsafe: raises `emptyDir.sizeLimit` or the `ephemeral-storage` value to the model size plus
10% (rounded up to a whole Gi), only when that still fits the node. For (c) and (d), choose
larger instances: add the NodePool requirement `karpenter.k8s.aws/instance-local-nvme Gt
<GB>` with `instanceStorePolicy: RAID0`, enlarge the root/data volume, or move the cache to
a shared file system (FSx for Lustre, S3 mountpoint).

## References
- https://karpenter.sh/docs/concepts/nodeclasses/#specinstancestorepolicy
- https://karpenter.sh/docs/concepts/nodeclasses/#specblockdevicemappings
- https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#local-ephemeral-storage
- https://huggingface.co/docs/huggingface_hub/guides/manage-cache
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import instances
from ailint.domain.context import Context, nearest
from ailint.domain.extract import (
    POD_KINDS,
    Container,
    flag_value,
    is_serving_pod,
    pod_accelerators,
    pod_templates,
    serving_engine,
)
from ailint.domain.models import Estimate, describe, estimate, image_bytes
from ailint.domain.quantities import format_bytes, parse_quantity
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="STO001",
    name="model-cache-exceeds-local-nvme",
    severity=Severity.ERROR,
    summary="A serving pod caches model weights on node-local storage that is smaller than the model",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("storage", "model-cache", "serving"),
    precision="medium",
)

GI = 2**30


def _qty(v: Any) -> float | None:
    """A positive, finite quantity, or None."""
    q = parse_quantity(v)
    return q if q is not None and math.isfinite(q) and q > 0 else None


USABLE = 0.85
NVME_HOSTPATHS = ("/mnt/k8s-disks", "/opt/dlami/nvme")
CACHE_ENV = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_HOME")
DEFAULT_HF_CACHE = "/root/.cache/huggingface"
ROOT_DEFAULT = 20 * GI  # AL2023 root, Bottlerocket data volume (EC2NodeClass defaults)


@dataclass
class Cache:
    """A local volume that holds a model's weights, and how it was found to."""

    index: int  # volume index
    name: str
    kind: str  # emptyDir | hostPath | localPV
    volume: dict[str, Any]
    container: Container
    via: str  # how the volume was found to hold the weights
    capacity: float | None = None  # local PV capacity
    capacity_desc: str = ""


def _under(path: str, mount: str) -> bool:
    m = mount.rstrip("/") or "/"
    p = path.rstrip("/") or "/"
    return p == m or p.startswith(m + "/") or m == "/"


def _weight_paths(c: Container) -> list[tuple[str, str]]:
    """(path, why) where a serving container writes or reads its weights."""
    out = []
    env_set = False
    for name in CACHE_ENV:
        v = c.env_value(name)
        if v and v.startswith("/"):
            out.append((v, f"{name}={v}"))
            env_set = True
    toks = c.tokens
    dl = flag_value(toks, "--download-dir", "--download_dir", "--huggingface-hub-cache")
    if dl and dl.startswith("/"):
        out.append((dl, f"--download-dir {dl}"))
    model = flag_value(toks, "--model", "--model-id", "--model-path", "--model_id")
    if model and model.startswith("/"):
        out.append((model, f"--model {model}"))
    if not env_set and not dl:
        eng = serving_engine(c)
        if eng == "tgi":
            out.append(("/data", "TGI's default cache /data"))
        elif eng in ("vllm", "sglang", "lmdeploy", "ray-serve"):
            out.append((DEFAULT_HF_CACHE, f"the default Hugging Face cache {DEFAULT_HF_CACHE}"))
    return out


def _local_pvs(ctx: Any, namespace: str) -> dict[str, list[tuple[Any, tuple[float | None, str] | None]]]:
    """PVC name -> each copy of that claim with (capacity, description) when it is bound to a
    local PersistentVolume (None: it is not), for `nearest` to choose the copy a pod beside
    it mounts."""
    local_classes = {
        sc.name for sc in ctx.of_kind("StorageClass") if sc.get("provisioner") == "kubernetes.io/no-provisioner"
    }
    pvs: dict[str, list[Any]] = {}
    for pv in ctx.of_kind("PersistentVolume"):
        pvs.setdefault(pv.name, []).append(pv)
    out: dict[str, list[tuple[Any, tuple[float | None, str] | None]]] = {}
    for pvc in ctx.of_kind("PersistentVolumeClaim"):
        if (pvc.namespace_or_default) != namespace or not pvc.name:
            continue
        req = pvc.get("spec", "resources", "requests", "storage")
        vol = pvc.get("spec", "volumeName")
        pv = nearest(pvc, pvs[vol])[0] if isinstance(vol, str) and vol in pvs else None
        room: tuple[float | None, str] | None = None
        if pv is not None and isinstance(pv.get("spec", "local"), dict):
            cap = pv.get("spec", "capacity", "storage")
            room = (_qty(cap), f"local PersistentVolume {vol} of {cap}")
        elif isinstance(sc := pvc.get("spec", "storageClassName"), str) and sc in local_classes:
            room = (_qty(req), f"local volume claim of {req}")
        out.setdefault(pvc.name, []).append((pvc, room))
    return out


def _caches(obj: Any, pod: Any, ctx: Any) -> list[Cache]:
    vols = {str(v.get("name")): (i, v) for i, v in iter_dicts(pod.spec.get("volumes"))}
    local_pvs = (
        _local_pvs(ctx, obj.namespace_or_default) if any("persistentVolumeClaim" in v for _, v in vols.values()) else {}
    )
    found: dict[str, Cache] = {}
    for c in pod.containers(include_init=False):
        paths = _weight_paths(c)
        for m in c.volume_mounts:
            name, mount = str(m.get("name")), m.get("mountPath")
            if name not in vols or not isinstance(mount, str) or name in found:
                continue
            if mount in ("/dev/shm", "/tmp"):
                continue
            i, v = vols[name]
            kind, cap, cap_desc = None, None, ""
            if isinstance(v.get("emptyDir"), dict) or ("emptyDir" in v and v.get("emptyDir") is None):
                if as_dict(v.get("emptyDir")).get("medium") in (None, ""):
                    kind = "emptyDir"
            elif isinstance(v.get("hostPath"), dict):
                hp = as_dict(v.get("hostPath")).get("path")
                if isinstance(hp, str) and any(_under(hp, p) for p in NVME_HOSTPATHS):
                    kind = "hostPath"
            elif isinstance(v.get("persistentVolumeClaim"), dict):
                claim = as_dict(v.get("persistentVolumeClaim")).get("claimName")
                copies = local_pvs.get(claim) if isinstance(claim, str) else None
                room = nearest(obj, copies, lambda copy: copy[0])[0][1] if copies else None
                if room is not None:  # (the copy of the claim beside the pod: a blueprint's own)
                    kind = "localPV"
                    cap, cap_desc = room
            if kind is None:
                continue
            hit = next((why for p, why in paths if _under(p, mount)), None)
            if hit is None:
                continue
            found[name] = Cache(i, name, kind, v, c, hit, cap, cap_desc)
    return list(found.values())


# ---------------------------------------------------------------------------------------
# Room on the node
# ---------------------------------------------------------------------------------------
def _node_class(ctx: Any, pool: Any) -> Any:
    return ctx.named("EC2NodeClass", pool.node_class_ref.get("name"), group="karpenter.k8s.aws", near=pool.obj)


def _ami_family(nc: Any) -> str:
    for _, t in iter_dicts(nc.get("spec", "amiSelectorTerms")):
        alias = t.get("alias")
        if isinstance(alias, str) and alias:
            return alias.split("@", 1)[0].lower()
    fam = nc.get("spec", "amiFamily")
    return str(fam).lower() if isinstance(fam, str) else "al2023"


def _ebs_room(nc: Any) -> tuple[float | None, str]:
    """Size of the volume holding kubelet and container storage, from an EC2NodeClass."""
    fam = _ami_family(nc)
    if fam.startswith("windows") or fam == "custom":
        return None, ""
    maps = [m for _, m in iter_dicts(nc.get("spec", "blockDeviceMappings"))]
    if fam == "bottlerocket":
        if not maps:
            return ROOT_DEFAULT, "the default 20Gi Bottlerocket data volume"
        for m in maps:
            if m.get("deviceName") == "/dev/xvdb":
                size = _qty(as_dict(m.get("ebs")).get("volumeSize"))
                return size, f"the {as_dict(m.get('ebs')).get('volumeSize')} Bottlerocket data volume"
        return None, ""
    if not maps:
        return ROOT_DEFAULT, "the default 20Gi root volume"
    for m in maps:
        if m.get("rootVolume") is True or m.get("deviceName") == "/dev/xvda":
            size = _qty(as_dict(m.get("ebs")).get("volumeSize"))
            return size, f"the {as_dict(m.get('ebs')).get('volumeSize')} root volume"
    return None, ""


@dataclass
class Room:
    """How much local NVMe a node offers the cache, and what says so."""

    type: str
    bytes: float
    basis: str
    nvme: bool


def _rooms(pod: Any, ctx: Any) -> list[Room]:
    types = ctx.target_types(pod)
    if not types:
        return []
    pools = ctx.pools_for(pod)
    plans: list[tuple[set[str], Any]] = []  # (types, nodeclass or None when not in the run)
    if pools:
        for pool in pools:
            if pool.is_auto_mode:
                continue  # Auto Mode sizes ephemeral storage from its NodeClass; not modelled
            allowed = pool.allowed_types
            pt = types if allowed is None else types & allowed
            plans.append((pt, _node_class(ctx, pool)))
    else:
        plans.append((set(types), None))
    rooms: dict[str, Room] = {}
    for pt, nc in plans:
        raid = nc is None or nc.get("spec", "instanceStorePolicy") == "RAID0"
        ebs, ebs_desc = (None, "") if nc is None else _ebs_room(nc)
        for t in sorted(pt):
            it = instances.get(t)
            if it is None:
                continue
            if raid and it.local_nvme_gb > 0:
                room = Room(t, it.local_nvme_gb * 1e9 * USABLE, f"85% of its {it.local_nvme_gb} GB NVMe", True)
            elif ebs:
                room = Room(t, ebs * USABLE, f"85% of {ebs_desc}", False)
            else:
                continue
            if t not in rooms or room.bytes < rooms[t].bytes:
                rooms[t] = room
    return list(rooms.values())


def _room_order(r: Room) -> tuple:
    it = instances.get(r.type)
    return (r.bytes, it.vcpu if it else 0, r.type)


def _gib_ceil(b: float) -> str:
    return f"{math.ceil(b / GI)}Gi"


def _size(est: Estimate) -> str:
    return format_bytes(est.bytes) if est.exact else f"~{format_bytes(est.bytes)}"


def _sev(est: Estimate) -> Severity:
    return Severity.ERROR if est.exact else Severity.WARNING


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        if not is_serving_pod(pod):
            continue
        caches = _caches(obj, pod, ctx)
        if not caches:
            continue
        rooms = None
        for cache in caches:
            est = estimate(cache.container, pod, on_disk=True)
            if est is None:
                continue
            if rooms is None:
                rooms = _rooms(pod, ctx) if ctx.bundle else []
            yield from _check_cache(obj, pod, cache, est, rooms)


def _check_cache(obj: Any, pod: Any, cache: Cache, est: Estimate, rooms: list[Room]) -> Iterator[Finding]:
    model = est.bytes
    want = model * 1.1
    smallest = min(rooms, key=_room_order) if rooms else None
    fits_node = smallest is None or want <= smallest.bytes
    vpath = pod.path("volumes", cache.index)
    # (a) the volume's own bound
    if cache.kind == "emptyDir":
        limit_raw = as_dict(cache.volume.get("emptyDir")).get("sizeLimit")
        limit = _qty(limit_raw)
        if limit is not None and model > limit:
            path = vpath + ("emptyDir", "sizeLimit")
            fix = None
            if fits_node:
                fix = make_fix(
                    f"raise sizeLimit to {_gib_ceil(want)}",
                    [edits.replace_value(obj, path, _gib_ceil(want))],
                    unsafe=True,
                )
            yield RULE.finding(
                obj,
                path,
                f"emptyDir `{cache.name}` sizeLimit {limit_raw} is smaller than the "
                f"model cached there: {describe(est)}",
                severity=Severity.WARNING,
                fix=fix,
            )
    elif cache.kind == "localPV" and cache.capacity is not None and model > cache.capacity:
        yield RULE.finding(
            obj,
            vpath + ("persistentVolumeClaim",),
            f"model cache `{cache.name}` is a {cache.capacity_desc}, smaller than {describe(est)}",
            severity=Severity.WARNING,
        )
    # (b) ephemeral storage, which an emptyDir counts against
    if cache.kind == "emptyDir":
        yield from _check_ephemeral(obj, pod, cache, est, fits_node)
    # (c) and (d): the node
    if cache.kind == "localPV" or smallest is None:  # (no rooms: no smallest)
        return
    img = image_bytes(pod) or 0.0
    img_txt = f" + {format_bytes(img)} image" if img else ""
    if model + img > smallest.bytes:
        r = smallest
        yield RULE.finding(
            obj,
            vpath + (cache.kind,),
            f"model cache `{cache.name}` needs {describe(est)}{img_txt} but {r.type} nodes have "
            f"{format_bytes(r.bytes)} usable ({r.basis})",
            severity=_sev(est),
        )
        return
    if cache.kind != "emptyDir":
        return  # a hostPath cache is shared by the pods of a node
    gpus = sum(
        v for k, v in pod_accelerators(pod).items() if k in ("nvidia.com/gpu", "amd.com/gpu", "aws.amazon.com/neuron")
    )
    if not math.isfinite(gpus) or gpus <= 0:
        return
    worst = None
    for r in rooms:
        it = instances.get(r.type)
        if it is None or it.count < 2 * gpus:
            continue
        n = int(it.count // gpus)
        if pod.replicas is not None:
            n = min(n, pod.replicas)
        if n < 2:
            continue
        need = n * model + img
        if need > r.bytes and (worst is None or need / r.bytes > worst[1] / worst[0].bytes):
            worst = (r, need, n, it.count)
    if worst:
        r, need, n, count = worst
        yield RULE.finding(
            obj,
            vpath + (cache.kind,),
            f"{n} replicas per {r.type} ({count} GPUs, {gpus:g} per pod) each cache "
            f"{_size(est)} in `{cache.name}`: {format_bytes(need)} > {format_bytes(r.bytes)} "
            f"usable ({r.basis})",
            severity=_sev(est),
        )


def _check_ephemeral(obj: Any, pod: Any, cache: Cache, est: Estimate, fits_node: bool) -> Iterator[Finding]:
    model = est.bytes
    for which in ("limits", "requests"):
        total = 0.0
        holders = []
        for c in pod.containers(include_init=False):
            v = c.resources(which).get("ephemeral-storage")
            if which == "requests" and v is None:
                v = c.limit("ephemeral-storage")
            q = _qty(v)
            if q is not None:
                total += q
                holders.append((c, v))
        if not holders:
            continue
        if model <= total:
            return
        c, _raw = holders[0]
        path = c.path_of("resources", which, "ephemeral-storage")
        if not obj.has(path):
            path = c.path_of("resources", "limits", "ephemeral-storage")
        fix = None
        if len(holders) == 1 and fits_node and obj.has(path):
            new = _gib_ceil(model * 1.1)
            fix = make_fix(
                f"raise the ephemeral-storage {which[:-1]} to {new}", [edits.replace_value(obj, path, new)], unsafe=True
            )
        word = "limit" if which == "limits" else "request"
        consequence = "the kubelet evicts the pod" if which == "limits" else "nodes get overcommitted"
        yield RULE.finding(
            obj,
            path,
            f"ephemeral-storage {word} {format_bytes(total)} is below the model cached "
            f"in emptyDir `{cache.name}`: {describe(est)}; {consequence}",
            severity=Severity.WARNING,
            fix=fix,
        )
        return


__all__ = ["RULE", "check"]
