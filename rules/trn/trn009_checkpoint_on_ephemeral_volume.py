"""
## What it does
Finds training pods whose checkpoint location resolves to an `emptyDir` (worst with
`medium: Memory`) or a `hostPath`, while the pod mounts no persistent volume (PVC, NFS,
EFS/FSx CSI) and nothing copies the checkpoints away (a sidecar or CronJob running
`aws s3 sync`/`s5cmd`/`rclone`, or an `s3://` destination in the command).

The checkpoint location is read from env vars (`CHECKPOINT_DIR`, `CKPT_DIR`,
`CHECKPOINT_PATH`, `SAVE_DIR`, `OUTPUT_DIR` and similar), from flags (`--checkpoint-dir`,
`--checkpoint_dir`, `--ckpt_dir`, `--output_dir`, `--save_dir` and their dash/underscore
variants), or from a volume mounted at a path containing `checkpoint` or `ckpt`.

## Why is this bad?
An emptyDir lives and dies with the pod, a hostPath with the node. An eviction, a Spot
interruption, a node repair or a restart on another node loses every checkpoint, and the
job starts over from step zero. A `medium: Memory` emptyDir also counts against the pod's
memory limit, so a large checkpoint can OOM-kill the trainer.

## Example
```yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune
spec:
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - name: train
          image: my/trainer:1.0
          args: ["--output_dir", "/checkpoints"]
          resources:
            limits:
              nvidia.com/gpu: 8
          volumeMounts:
            - name: ckpt
              mountPath: /checkpoints
      volumes:
        - name: ckpt
          emptyDir:
            medium: Memory
            sizeLimit: 100Gi
```

## Use instead
```yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune
spec:
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - name: train
          image: my/trainer:1.0
          args: ["--output_dir", "/checkpoints"]
          resources:
            limits:
              nvidia.com/gpu: 8
          volumeMounts:
            - name: ckpt
              mountPath: /checkpoints
      volumes:
        - name: ckpt
          persistentVolumeClaim:
            claimName: fsx-checkpoints
```

## Options
None.

## Fix
None: mount a PVC (FSx for Lustre, EFS) at the checkpoint path, or add a sidecar that
syncs the directory to S3.

## References
- https://awslabs.github.io/ai-on-eks/ (EKS AI/ML guide, Checkpoint Management for Training)
- https://kubernetes.io/docs/concepts/storage/volumes/#emptydir
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, FixAvailability, K8sObject, Path, Severity, as_dict, as_list
from ailint.core.rule import Options, Rule, Scope
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, Container, is_training_pod, pod_templates, volumes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="TRN009",
    name="checkpoint-on-ephemeral-volume",
    severity=Severity.WARNING,
    summary="Training checkpoints are written to an emptyDir or hostPath and nothing persists them",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    fix=FixAvailability.NEVER,
    tags=("training", "storage", "reliability"),
)

_ENV_RE = lazy_re(r"^(?:[A-Z0-9_]*_)?(CHECKPOINTS?|CKPTS?)(_(DIR|PATH|ROOT|FOLDER|LOCATION))?$|^(SAVE|OUTPUT)_DIR$")
_FLAGS = frozenset(
    f"--{a}{sep}{b}"
    for a in ("checkpoint", "ckpt", "save", "output", "checkpoints")
    for sep in ("_", "-")
    for b in ("dir", "path")
) | {"--save"}
_SYNC_RE = lazy_re(r"\b(aws\s+s3\s+(sync|cp)|s5cmd|rclone|gsutil|azcopy|mountpoint-s3|s3fs)\b")
_SYNC_IMAGES = ("aws-cli", "awscli", "rclone", "s5cmd")
_PERSISTENT = (
    "persistentVolumeClaim",
    "nfs",
    "ephemeral",
    "awsElasticBlockStore",
    "glusterfs",
    "cephfs",
    "iscsi",
    "fc",
    "azureFile",
    "azureDisk",
    "gcePersistentDisk",
)
_SHARED_CSI = (
    "efs.csi.aws.com",
    "fsx.csi.aws.com",
    "s3.csi.aws.com",
    "nfs.csi.k8s.io",
    "ebs.csi.aws.com",
    "filestore.csi.storage.gke.io",
    "gcsfuse.csi.storage.gke.io",
    "lustre",
)


def _persistent(vol: dict[str, Any]) -> bool:
    if any(k in vol for k in _PERSISTENT):
        return True
    driver = str(as_dict(vol.get("csi")).get("driver") or "")
    return driver.startswith(_SHARED_CSI)


def _syncs(c: Container) -> bool:
    if any(i in c.image for i in _SYNC_IMAGES):
        return True
    return bool(_SYNC_RE.search(" ".join(c.tokens)))


def _cronjob_syncs(obj: Any, ctx: Any) -> bool:
    if not getattr(ctx, "bundle", False):
        return False
    for cj in ctx.of_kind("CronJob", namespace=obj.namespace_or_default):
        for p in pod_templates(cj):
            if any(_syncs(c) for c in p.containers()):
                return True
    return False


def _locations(c: Container) -> Iterator[tuple[str, Path, str]]:
    """(path, where in the object, how it was found) of checkpoint locations in a container."""
    for i, e in enumerate(as_list(c.data.get("env"))):
        if not isinstance(e, dict):
            continue
        name, value = str(e.get("name") or ""), e.get("value")
        if isinstance(value, str) and value.startswith("/") and _ENV_RE.match(name.upper()):
            yield value, c.path_of("env", i, "value"), f"{name}={value}"
    toks = c.tokens
    for i, t in enumerate(toks):
        f, eq, rest = t.partition("=")  # `--flag value` or `--flag=value` (no flag holds `=`)
        if f not in _FLAGS:
            continue
        val = rest if eq else toks[i + 1] if i + 1 < len(toks) else None
        if val and val.startswith("/"):
            where = c.path
            for key in ("args", "command"):
                for j, item in enumerate(as_list(c.data.get(key))):
                    if isinstance(item, str) and f in item:
                        where = c.path_of(key, j)
                        break
                if where != c.path:
                    break
            yield val, where, f"{f} {val}"
    for i, m in enumerate(as_list(c.data.get("volumeMounts"))):
        mp = m.get("mountPath") if isinstance(m, dict) else None
        if isinstance(mp, str) and re.search(r"checkpoint|ckpt", mp, re.I):
            yield mp, c.path_of("volumeMounts", i, "mountPath"), f"mountPath {mp}"


_GENERIC = lazy_re(r"OUTPUT|SAVE|--output|--save", re.I)
_TRAINING_WORDS = lazy_re(
    r"train|finetune|fine[-_]tune|pretrain|sft|torchrun|deepspeed|accelerate|"
    r"torch\.distributed|megatron|nemo|axolotl|trl\b",
    re.I,
)
_TRAINING_KINDS = (
    "PyTorchJob",
    "MPIJob",
    "TFJob",
    "XGBoostJob",
    "PaddleJob",
    "JAXJob",
    "TrainJob",
    "JobSet",
    "TrainingRuntime",
    "ClusterTrainingRuntime",
    "RayJob",
)


def _clearly_training(pod: Any, c: Container) -> bool:
    """Generic output locations (`--output_dir`, `SAVE_DIR`) count only for unmistakable
    training: a training kind, or a command or image that names training."""
    if pod.obj.kind in _TRAINING_KINDS:
        return True
    return bool(_TRAINING_WORDS.search(" ".join(c.tokens) + " " + c.image + " " + c.name))


def _volume_at(c: Container, path: str) -> str | None:
    p = posixpath.normpath(path)
    best, best_len = None, -1
    for m in c.volume_mounts:
        mp = m.get("mountPath")
        if not isinstance(mp, str):
            continue
        mp = posixpath.normpath(mp)
        if (p == mp or p.startswith(mp.rstrip("/") + "/")) and len(mp) > best_len:
            best, best_len = str(m.get("name")), len(mp)
    return best


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    cron_sync = None
    for pod in pod_templates(obj):
        if not is_training_pod(pod):
            continue
        vols = volumes(pod)
        if any(_persistent(v) for _, v in vols.values()):
            continue
        containers = list(pod.containers())
        if any(_syncs(c) for c in containers):
            continue
        if any("s3://" in " ".join(c.tokens) for c in containers):
            continue
        reported: set[tuple[str, str]] = set()
        for c in pod.containers(include_init=False):
            for path, where, how in _locations(c):
                if _GENERIC.search(how) and not _clearly_training(pod, c):
                    continue
                vname = _volume_at(c, path)
                if vname is None or vname not in vols or (c.name, vname) in reported:
                    continue
                _, vol = vols[vname]
                if isinstance(vol.get("emptyDir"), dict) or "emptyDir" in vol:
                    ed = as_dict(vol.get("emptyDir"))
                    kind = "a memory-backed emptyDir" if ed.get("medium") == "Memory" else "an emptyDir"
                    extra = " (and fills pod memory)" if ed.get("medium") == "Memory" else ""
                elif isinstance(vol.get("hostPath"), dict):
                    kind, extra = f"hostPath {as_dict(vol.get('hostPath')).get('path')}", ""
                else:
                    continue
                if cron_sync is None:
                    cron_sync = _cronjob_syncs(obj, ctx)
                if cron_sync:
                    return
                reported.add((c.name, vname))
                yield RULE.finding(
                    obj,
                    where,
                    f"checkpoints ({how}) go to {kind} volume {vname!r} in container {c.name!r}: an "
                    f"eviction or Spot loss loses them{extra}; mount a PVC or sync them to S3",
                )
