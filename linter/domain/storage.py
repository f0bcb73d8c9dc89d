"""Storage helpers for the STO rules (and any rule that asks where a volume lives).

- Claims and classes: `claim_of_volume` (a pod volume -> its PVC in the run),
  `storage_class_of` (a PVC or claim template -> its StorageClass, the default class when
  `storageClassName` is absent; None when several same-named classes of the run disagree),
  `storage_class_candidates` + `agreed` (read only what all candidate classes agree on), `provisioner_of` (-> `fsx.csi.aws.com`, `efs.csi.aws.com`,
  ..., also for statically bound PVs), `claim_templates` (StatefulSet and LeaderWorkerSet
  `volumeClaimTemplates` read like PVCs).
- FSx for Lustre: `FsxParams` (a StorageClass's parameters with the driver's defaults),
  `fsx_round_up_gib` (the driver's `RoundUpVolumeSize`), `fsx_valid_throughputs`. The
  tables are data in `data/fsx.json`.
- Volumes of a pod: `volume_kind` (emptyDir, memory, hostPath, pvc, nfs, csi, ...),
  `network_fs_volume` (is this volume on FSx Lustre, EFS or NFS), `mounts_of`.
- Model downloads at start: `startup_downloads` (initContainers running `aws s3 sync/cp`,
  `hf download`/`huggingface-cli download`, and serving containers loading a Hub id).

All helpers tolerate any YAML shape and never raise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from ailint.core import pkgdata
from ailint.core.lazyre import LazyPattern, lazy_re
from ailint.core.model import K8sObject, Path, as_dict, as_list, iter_dicts
from ailint.domain.extract import Container, PodTemplate, flag_value, model_id, volumes
from ailint.domain.quantities import parse_quantity, to_int
from ailint.domain.roles import serving_engine

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GiB = 2**30
FSX = "fsx.csi.aws.com"
EFS = "efs.csi.aws.com"
EBS = ("ebs.csi.aws.com", "kubernetes.io/aws-ebs")
NFS_PROVISIONER_HINTS = ("nfs", "filestore")
DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


@lru_cache(maxsize=1)
def fsx_table() -> dict[str, Any]:
    return pkgdata.load_json("ailint.data", "fsx.json")


# ---------------------------------------------------------------------------------------
# PVC -> StorageClass -> provisioner
# ---------------------------------------------------------------------------------------
def is_storage_class(obj: K8sObject) -> bool:
    return obj.kind == "StorageClass" and obj.group.startswith("storage.k8s.io")


def storage_classes(ctx: Any) -> list[K8sObject]:
    return [o for o in ctx.of_kind("StorageClass") if is_storage_class(o)]


def default_storage_classes(ctx: Any) -> list[K8sObject]:
    """Every StorageClass of the run annotated as the cluster default."""
    return [
        sc
        for sc in storage_classes(ctx)
        if any(str(sc.annotations.get(a)).lower() == "true" for a in DEFAULT_CLASS_ANNOTATIONS)
    ]


def storage_classes_named(ctx: Any, name: str) -> list[K8sObject]:
    """Every StorageClass of the run called `name`. More than one when the run holds several
    repos' manifests (two `fsx-sc` with different parameters); the cluster has one of them."""

    def build() -> dict[str, list[K8sObject]]:
        idx: dict[str, list[K8sObject]] = {}
        for sc in storage_classes(ctx):
            idx.setdefault(sc.name or "", []).append(sc)
        return idx

    memo = getattr(ctx, "memo", None)
    index = memo(("ailint.domain.storage", "classes_by_name"), build) if callable(memo) else build()
    return list(index.get(name, ()))


DISAGREE = object()  # what `agreed` returns when the candidates differ


def agreed(objs: list[Any], key: Any) -> Any:
    """`key(o)`, when every object gives the same value; `DISAGREE` otherwise (or for none)."""
    if not objs:
        return DISAGREE
    first = key(objs[0])
    return first if all(key(o) == first for o in objs[1:]) else DISAGREE


def class_body(sc: K8sObject) -> dict[str, Any]:
    """What a StorageClass provisions (provisioner, parameters, modes), without its metadata."""
    return {k: v for k, v in sc.data.items() if k not in ("apiVersion", "kind", "metadata", "status")}


def _unique_class(cands: list[K8sObject]) -> K8sObject | None:
    return cands[0] if agreed(cands, class_body) is not DISAGREE else None


def default_storage_class(ctx: Any) -> K8sObject | None:
    """The run's default StorageClass; None when there is none, or several that disagree."""
    return _unique_class(default_storage_classes(ctx))


def storage_class_named(ctx: Any, name: str) -> K8sObject | None:
    """The run's StorageClass called `name`; None when absent, or when several classes of that
    name disagree on what they provision (which one the cluster holds is unknown)."""
    return _unique_class(storage_classes_named(ctx, name))


def storage_class_candidates(ctx: Any, claim_spec: dict[str, Any]) -> list[K8sObject]:
    """Every StorageClass of the run a PVC spec (or claim template spec) may provision from:
    the classes named by `storageClassName`, or the default classes when it is absent. Empty
    for `storageClassName: ""` (static binding) or when no such class is in the run. A rule
    that reads the classes' parameters uses only what all candidates agree on (`agreed`)."""
    if "storageClassName" in claim_spec:
        name = claim_spec.get("storageClassName")
        if not isinstance(name, str) or not name:
            return []
        return storage_classes_named(ctx, name)
    return default_storage_classes(ctx)


def storage_class_of(ctx: Any, claim_spec: dict[str, Any]) -> K8sObject | None:
    """The StorageClass a PVC spec (or claim template spec) provisions from, when in the run.

    `storageClassName: ""` means no class (static binding): None. An absent name means
    the cluster's default class: the run's StorageClass annotated as default, if any.
    Several candidates (one name in several files of the run, several defaults) that
    disagree on what they provision: None.
    """
    return _unique_class(storage_class_candidates(ctx, claim_spec))


def provisioner_name(sc: K8sObject | None) -> str | None:
    if sc is None:
        return None
    p = sc.data.get("provisioner")
    return p if isinstance(p, str) else None


def persistent_volume_named(ctx: Any, name: str) -> K8sObject | None:
    """The run's PersistentVolume called `name`; None when absent or when several disagree."""
    pvs = [pv for pv in ctx.of_kind("PersistentVolume") if pv.name == name]
    return pvs[0] if agreed(pvs, lambda pv: pv.data.get("spec")) is not DISAGREE else None


def pv_driver(pv: K8sObject) -> str | None:
    """A PV's CSI driver, or `nfs` for an in-tree NFS PV."""
    spec = as_dict(pv.data.get("spec"))
    drv = as_dict(spec.get("csi")).get("driver")
    if isinstance(drv, str):
        return drv
    if isinstance(spec.get("nfs"), dict):
        return "nfs"
    if isinstance(spec.get("awsElasticBlockStore"), dict):
        return "kubernetes.io/aws-ebs"
    return None


def provisioner_of(ctx: Any, claim_spec: dict[str, Any]) -> str | None:
    """Where a claim's storage comes from: the class's provisioner, or the bound PV's driver."""
    vol = claim_spec.get("volumeName")
    if isinstance(vol, str) and vol:
        pv = persistent_volume_named(ctx, vol)
        if pv is not None:
            d = pv_driver(pv)
            if d:
                return d
    p = agreed(storage_class_candidates(ctx, claim_spec), provisioner_name)
    return None if p is DISAGREE else p


def pvc_named(ctx: Any, namespace: str, name: str) -> K8sObject | None:
    for pvc in ctx.of_kind("PersistentVolumeClaim"):
        if pvc.name == name and pvc.namespace_or_default == namespace:
            return pvc
    return None


def claim_of_volume(ctx: Any, pod: PodTemplate, volume: dict[str, Any]) -> K8sObject | None:
    """The PVC object a pod volume (`persistentVolumeClaim.claimName`) refers to, if in the run."""
    name = as_dict(volume.get("persistentVolumeClaim")).get("claimName")
    if not isinstance(name, str):
        return None
    return pvc_named(ctx, pod.obj.namespace_or_default, name)


@dataclass(slots=True)
class ClaimTemplate:
    """A PVC, or a `volumeClaimTemplates[]` entry, read the same way."""

    obj: K8sObject
    path: Path  # path of the claim's `spec` inside obj
    name: str
    spec: dict[str, Any]

    def path_of(self, *rest: Any) -> Path:
        return self.path + rest

    @property
    def storage_request(self) -> Any:
        return as_dict(as_dict(self.spec.get("resources")).get("requests")).get("storage")


def claim_templates(obj: K8sObject) -> Iterator[ClaimTemplate]:
    """A PVC object itself, or the claim templates of a StatefulSet / LeaderWorkerSet."""
    if obj.kind == "PersistentVolumeClaim":
        spec = as_dict(obj.data.get("spec"))
        if spec:
            yield ClaimTemplate(obj, ("spec",), obj.name or "", spec)
        return
    if obj.kind == "StatefulSet":
        base: Path = ("spec", "volumeClaimTemplates")
    elif obj.kind == "LeaderWorkerSet":
        base = ("spec", "leaderWorkerTemplate", "volumeClaimTemplates")
    else:
        return
    for i, t in iter_dicts(obj.get(*base)):
        spec = as_dict(t.get("spec"))
        if spec:
            yield ClaimTemplate(obj, base + (i, "spec"), str(as_dict(t.get("metadata")).get("name") or ""), spec)


# ---------------------------------------------------------------------------------------
# FSx for Lustre
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FsxParams:
    """A `fsx.csi.aws.com` StorageClass's parameters, with the driver's defaults applied."""

    deployment_type: str
    deployment_type_set: bool
    storage_type: str
    per_unit_throughput: int | None
    per_unit_raw: Any
    per_unit_set: bool
    malformed: bool = False  # deploymentType or storageType is not a string: rules skip the class

    @property
    def is_scratch(self) -> bool:
        return self.deployment_type in fsx_table()["scratch_types"]

    @property
    def intelligent_tiering(self) -> bool:
        return self.storage_type == "INTELLIGENT_TIERING"


def fsx_params(sc: K8sObject) -> FsxParams:
    params = as_dict(sc.data.get("parameters"))
    t = fsx_table()
    dt = params.get("deploymentType")
    dt_set = isinstance(dt, str) and bool(dt.strip())
    st = params.get("storageType")
    raw = params.get("perUnitStorageThroughput")
    return FsxParams(
        deployment_type=dt.strip().upper() if dt_set else t["default_deployment_type"],  # type: ignore[union-attr]
        deployment_type_set=dt_set,
        storage_type=st.strip().upper() if isinstance(st, str) and st.strip() else t["default_storage_type"],
        per_unit_throughput=to_int(raw),
        per_unit_raw=raw,
        per_unit_set="perUnitStorageThroughput" in params and raw not in (None, ""),
        malformed=any(
            k in params and params[k] is not None and not isinstance(params[k], str)
            for k in ("deploymentType", "storageType")
        ),
    )


def fsx_class_of(ctx: Any, claim_spec: dict[str, Any], facet: Any = None) -> tuple[K8sObject, FsxParams] | None:
    """The FSx for Lustre StorageClass a claim provisions from, with its parameters.

    With several candidate classes (one name in several files of the run, several defaults),
    every one must be an FSx class and agree on `facet(class, params)` (by default: the
    FsxParams), the only parameters the caller then reads; otherwise None.
    """
    cands = storage_class_candidates(ctx, claim_spec)
    if not cands or any(provisioner_name(sc) != FSX for sc in cands):
        return None
    key = facet or (lambda sc, p: p)
    if agreed(cands, lambda sc: key(sc, fsx_params(sc))) is DISAGREE:
        return None
    return cands[0], fsx_params(cands[0])


def fsx_capacity_rule(p: FsxParams) -> dict[str, Any]:
    """The capacity increments the driver rounds to for these parameters."""
    caps = fsx_table()["capacity_gib"]
    if p.storage_type == "HDD":
        return caps["HDD_12"] if p.per_unit_throughput == 12 else caps["HDD_40"]
    if p.deployment_type in ("SCRATCH_1", ""):
        return caps["SCRATCH_1"]
    return caps.get(p.deployment_type) or caps["SCRATCH_2"]


def fsx_round_up_gib(size_bytes: float, p: FsxParams) -> int:
    """The size in GiB the FSx CSI driver creates for a request of `size_bytes`
    (`pkg/util/util.go` `RoundUpVolumeSize`)."""
    rule = fsx_capacity_rule(p)
    unit = rule["below"] if size_bytes < rule["threshold"] * GiB else rule["unit"]
    return max(1, math.ceil(size_bytes / (unit * GiB))) * unit


def fsx_valid_throughputs(p: FsxParams) -> list[int] | None:
    """Valid `perUnitStorageThroughput` values for the deployment/storage type (None: not applicable)."""
    key = f"{p.deployment_type}/{p.storage_type}"
    return fsx_table()["per_unit_storage_throughput"].get(key)


# ---------------------------------------------------------------------------------------
# Volumes of a pod
# ---------------------------------------------------------------------------------------
def volume_kind(volume: dict[str, Any]) -> str:
    """`memory` (emptyDir Memory), `emptyDir`, `hostPath`, `pvc`, `nfs`, `csi`, `ephemeral`,
    `configMap`, `secret`, `image`, or `other`."""
    if isinstance(volume.get("emptyDir"), dict) or "emptyDir" in volume:
        ed = as_dict(volume.get("emptyDir"))
        return "memory" if str(ed.get("medium") or "") == "Memory" else "emptyDir"
    for key, kind in (
        ("hostPath", "hostPath"),
        ("persistentVolumeClaim", "pvc"),
        ("nfs", "nfs"),
        ("csi", "csi"),
        ("ephemeral", "ephemeral"),
        ("configMap", "configMap"),
        ("secret", "secret"),
        ("image", "image"),
        ("projected", "projected"),
    ):
        if key in volume:
            return kind
    return "other"


def network_fs_of_volume(ctx: Any, pod: PodTemplate, volume: dict[str, Any]) -> str | None:
    """`FSx for Lustre`, `EFS` or `NFS` when the volume lives on a network file system."""
    kind = volume_kind(volume)
    if kind == "nfs":
        return "NFS"
    if kind == "csi":
        return _fs_name(as_dict(volume.get("csi")).get("driver"))
    if kind == "pvc" and ctx is not None and getattr(ctx, "bundle", False):
        pvc = claim_of_volume(ctx, pod, volume)
        if pvc is not None:
            return _fs_name(provisioner_of(ctx, as_dict(pvc.data.get("spec"))))
    return None


def _fs_name(driver: Any) -> str | None:
    if not isinstance(driver, str):
        return None
    d = driver.lower()
    if d == FSX:
        return "FSx for Lustre"
    if d == EFS:
        return "EFS"
    if d == "nfs" or any(h in d for h in NFS_PROVISIONER_HINTS):
        return "NFS"
    return None


def mounts_of(c: Container) -> list[tuple[int, dict[str, Any]]]:
    return [(i, m) for i, m in iter_dicts(c.data.get("volumeMounts"))]


def mount_for_path(c: Container, path: str) -> dict[str, Any] | None:
    """The volumeMount of `c` whose mountPath is `path` or a parent of it (longest match)."""
    best: dict[str, Any] | None = None
    best_len = -1
    p = path.rstrip("/") or "/"
    for _, m in mounts_of(c):
        mp = m.get("mountPath")
        if not isinstance(mp, str):
            continue
        mp = mp.rstrip("/") or "/"
        if (p == mp or p.startswith(mp + "/") or mp == "/") and len(mp) > best_len:
            best, best_len = m, len(mp)
    return best


def volume_for_mount(pod: PodTemplate, mount: dict[str, Any] | None) -> dict[str, Any] | None:
    if mount is None:
        return None
    entry = volumes(pod).get(str(mount.get("name")))
    return entry[1] if entry else None


# ---------------------------------------------------------------------------------------
# Downloads at start
# ---------------------------------------------------------------------------------------
_S3_RE = lazy_re(r"\baws\s+s3\s+(sync|cp)\b|\bs5cmd\b.*\b(sync|cp)\b")
_HF_RE = lazy_re(r"\b(huggingface-cli|hf)\s+download\b|snapshot_download\(")
_HUB_ID = lazy_re(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(slots=True)
class Download:
    """A model fetch at pod start: `kind` is `s3`, `hf` (an init container) or `hub` (a serving
    container given a Hugging Face Hub id). `where` is the path of the field to point at."""

    container: Container
    kind: str
    what: str
    where: Path
    target: str | None = None  # destination path when known


def is_hub_id(value: Any) -> bool:
    """`org/name` (a Hub repo id), not a path, URL or bucket."""
    return (
        isinstance(value, str)
        and bool(_HUB_ID.match(value))
        and not value.startswith(("s3:", "gs:", "pvc:", "/", ".", "~"))
    )


def hf_offline(c: Container) -> bool:
    return any(
        str(c.env_value(n) or "").strip().lower() in ("1", "true", "yes", "on")
        for n in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _command_where(c: Container, pattern: LazyPattern) -> Path:
    for key in ("args", "command"):
        for i, tok in enumerate(as_list(c.data.get(key))):
            if isinstance(tok, str) and pattern.search(tok):
                return c.path_of(key, i)
    if "command" in c.data:
        return c.path_of("command")
    return c.path_of("args") if "args" in c.data else c.path


def _last_path_token(text: str) -> str | None:
    toks = [t for t in re.split(r"\s+", text) if t.startswith("/")]
    return toks[-1] if toks else None


def startup_downloads(pod: PodTemplate) -> list[Download]:
    """Model fetches that run every time the pod starts (spec NET008 / STO008)."""
    out: list[Download] = []
    for c in pod.containers():
        text = " ".join(c.tokens)
        if c.init and not c.sidecar:
            m = _S3_RE.search(text)
            if m:
                seg = text[m.start() :].split("&&")[0].split(";")[0]
                out.append(Download(c, "s3", m.group(0), _command_where(c, _S3_RE), _last_path_token(seg)))
                continue
            m = _HF_RE.search(text)
            if m:
                seg = text[m.start() :].split("&&")[0].split(";")[0]
                target = flag_value(seg.split(), "--local-dir", "--cache-dir")
                out.append(Download(c, "hf", m.group(0), _command_where(c, _HF_RE), target))
            continue
        if c.init:
            continue
        if serving_engine(c) is None:
            continue
        mid = model_id(c)
        if is_hub_id(mid) and not hf_offline(c):
            where = _flag_where(c, ("--model", "--model-id", "--model-path", "--model_id"), mid)
            out.append(
                Download(c, "hub", str(mid), where, flag_value(c.tokens, "--download-dir") or c.env_value("HF_HOME"))
            )
    return out


def _flag_where(c: Container, flags: tuple[str, ...], value: Any) -> Path:
    from ailint.domain.extract import flag_token_index

    hit = flag_token_index(c.data, *flags)
    if hit:
        key, i = hit
        items = as_list(c.data.get(key))
        if i + 1 < len(items) and items[i] in flags and items[i + 1] == value:
            return c.path_of(key, i + 1)
        return c.path_of(key, i)
    for key in ("args", "command"):
        for i, tok in enumerate(as_list(c.data.get(key))):
            if isinstance(tok, str) and isinstance(value, str) and value in tok:
                return c.path_of(key, i)
    for i, e in iter_dicts(c.data.get("env")):
        if e.get("value") == value:
            return c.path_of("env", i, "value")
    return c.path_of("image") if "image" in c.data else c.path


def model_size_bytes_hint(pod: PodTemplate, mid: str | None) -> float | None:
    """Model size from `ailint.io/model-size`, else a parameter count in the id (`8B` -> 16 GB
    at 16-bit). None when unknown."""
    ann = pod.annotation("ailint.io/model-size")
    q = parse_quantity(ann) if ann is not None else None
    if q:
        return q
    if not mid:
        return None
    m = re.search(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)\s*([bBmM])(?![A-Za-z])", mid.rsplit("/", 1)[-1])
    if not m:
        return None
    n = float(m.group(1)) * (1e9 if m.group(2) in "bB" else 1e6)
    return n * 2.0


# ---------------------------------------------------------------------------------------
# Scaling of a workload (HPA, KEDA ScaledObject)
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Scaling:
    """An autoscaler targeting a workload: min and max replicas (None: no upper limit) and
    who says so (the workload itself when its own controller scales it)."""

    min_replicas: int
    max_replicas: int | None
    source: K8sObject

    @property
    def label(self) -> str:
        return f"{self.source.kind} {self.source.name or '<unnamed>'}"


def scaling_of(ctx: Any, obj: K8sObject) -> Scaling | None:
    """What scales `obj`: its own controller (a KubeAI Model, `workloads.own_scaling`), else
    the HPA or KEDA ScaledObject of the run that targets it, with the API defaults (HPA
    `minReplicas` 1; KEDA `minReplicaCount` 0 and `maxReplicaCount` 100)."""
    from ailint.domain import workloads

    own = workloads.own_scaling(obj)
    if own is not None:
        return Scaling(own[0], own[1], obj)
    ns = obj.namespace_or_default
    for hpa in ctx.of_kind("HorizontalPodAutoscaler"):
        spec = as_dict(hpa.data.get("spec"))
        ref = as_dict(spec.get("scaleTargetRef"))
        if hpa.namespace_or_default == ns and ref.get("name") == obj.name and ref.get("kind") == obj.kind:
            lo = to_int(spec.get("minReplicas"))
            hi = to_int(spec.get("maxReplicas"))
            if hi is not None:
                return Scaling(1 if lo is None else lo, hi, hpa)
    for so in ctx.of_kind("ScaledObject"):
        spec = as_dict(so.data.get("spec"))
        ref = as_dict(spec.get("scaleTargetRef"))
        kind = ref.get("kind") or "Deployment"
        if so.namespace_or_default == ns and ref.get("name") == obj.name and kind == obj.kind:
            lo = to_int(spec.get("minReplicaCount"))
            hi = to_int(spec.get("maxReplicaCount"))
            return Scaling(0 if lo is None else lo, 100 if hi is None else hi, so)
    return None


# ---------------------------------------------------------------------------------------
# Could a NodePool run this pod's accelerators at all?
# ---------------------------------------------------------------------------------------
def pool_can_run(pool: Any, accelerators: dict[str, float]) -> bool:
    """Whether a NodePool can launch a node offering the pod's accelerator requests
    (`pod_accelerators`): some allowed table type has enough GPUs, Neuron devices and EFA
    interfaces. A pool whose types the table cannot list counts only when its
    requirements or taints say it launches accelerators. A pod without accelerator
    requests fits any pool. (Karpenter never launches a type without the requested
    extended resources, so other pools are not candidates.)"""
    from ailint.domain import instances

    if not accelerators:
        return True
    allowed = pool.allowed_types
    if not allowed:
        return bool(pool.can_launch_accelerators)
    gpus = sum(v for k, v in accelerators.items() if k in ("nvidia.com/gpu", "amd.com/gpu"))
    neuron = max(accelerators.get("aws.amazon.com/neuron", 0), accelerators.get("aws.amazon.com/neurondevice", 0))
    cores = accelerators.get("aws.amazon.com/neuroncore", 0)
    efa = accelerators.get("vpc.amazonaws.com/efa", 0)
    for t in allowed:
        it = instances.get(t)
        if it is None:
            continue
        if gpus and (not it.is_gpu or it.count < gpus):
            continue
        if neuron and (not it.is_neuron or it.count < neuron):
            continue
        if cores and (not it.is_neuron or (it.neuron_cores or 0) < cores):
            continue
        if efa and it.efa_max < efa:
            continue
        return True
    return False


__all__ = [
    "DISAGREE",
    "EBS",
    "EFS",
    "FSX",
    "ClaimTemplate",
    "Download",
    "FsxParams",
    "GiB",
    "Scaling",
    "agreed",
    "claim_of_volume",
    "claim_templates",
    "class_body",
    "default_storage_class",
    "default_storage_classes",
    "fsx_capacity_rule",
    "fsx_class_of",
    "fsx_params",
    "fsx_round_up_gib",
    "fsx_table",
    "fsx_valid_throughputs",
    "hf_offline",
    "is_hub_id",
    "is_storage_class",
    "model_size_bytes_hint",
    "mount_for_path",
    "mounts_of",
    "network_fs_of_volume",
    "persistent_volume_named",
    "pool_can_run",
    "provisioner_name",
    "provisioner_of",
    "pv_driver",
    "pvc_named",
    "scaling_of",
    "startup_downloads",
    "storage_class_candidates",
    "storage_class_named",
    "storage_class_of",
    "storage_classes",
    "storage_classes_named",
    "volume_for_mount",
    "volume_kind",
]
