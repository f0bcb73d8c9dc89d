"""
## What it does
Finds claims for durable training data on a scratch FSx for Lustre file system: the
claim's StorageClass (`fsx.csi.aws.com`) has `deploymentType` `SCRATCH_1`, `SCRATCH_2` or
none (the driver default, `SCRATCH_1`) and no `s3ExportPath`, and the claim is named like
a checkpoint store (`*checkpoint*`, `*ckpt*`) or a training pod mounts it at a checkpoint
or output path (`/checkpoints`, `/ckpt`, `/output`, `/results`, `/artifacts`), with no
container of that pod copying to S3 (`aws s3 sync/cp`, `s5cmd`, `rclone`).

## Why is this bad?
Scratch file systems are built for temporary data: FSx does not replicate it, keeps no
backups, and a failed file server loses the files on it. Checkpoints and final outputs
are the one thing a long training run cannot recreate cheaply. Persistent deployment
types replicate within the AZ; scratch needs an export to S3 for anything that must
survive.

## Example
```yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fsx-scratch
provisioner: fsx.csi.aws.com
parameters:
  subnetId: subnet-0123456789abcdef0
  deploymentType: SCRATCH_2
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: llama-checkpoints
spec:
  accessModes: [ReadWriteMany]
  storageClassName: fsx-scratch
  resources:
    requests:
      storage: 2400Gi
```

## Use instead
```yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fsx-persistent
provisioner: fsx.csi.aws.com
parameters:
  subnetId: subnet-0123456789abcdef0
  deploymentType: PERSISTENT_2
  perUnitStorageThroughput: "250"
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: llama-checkpoints
spec:
  accessModes: [ReadWriteMany]
  storageClassName: fsx-persistent
  resources:
    requests:
      storage: 2400Gi
```

## Options
None.

## Fix
None: choose a persistent deployment type, add `s3ImportPath`/`s3ExportPath` (scratch and
`PERSISTENT_1`) or a data repository association, or sync checkpoints to S3 from the job.
Data that is disposable by design can suppress the finding.

## References
- https://github.com/kubernetes-sigs/aws-fsx-csi-driver/tree/master/examples/kubernetes/dynamic_provisioning (default `SCRATCH_1`)
- https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-fsx-lustre.html (deployment types: scratch data is not replicated)
- https://repost.aws/knowledge-center/fsx-for-lustre-scratch-file-system
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, iter_dicts
from ailint.core.rule import Options, Rule, Scope
from ailint.domain.context import Context
from ailint.domain.extract import PodTemplate, is_training_pod, pod_templates
from ailint.domain.storage import claim_templates, fsx_class_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="STO006",
    name="fsx-scratch-for-durable-data",
    severity=Severity.INFO,
    summary="Checkpoints or training outputs live on a scratch FSx for Lustre file system with no S3 export",
    kinds=("PersistentVolumeClaim", "StatefulSet", "LeaderWorkerSet"),
    scope=Scope.BUNDLE,
    fix=FixAvailability.NEVER,
    tags=("storage", "fsx", "training", "durability"),
)

_NAME_RE = lazy_re(r"checkpoint|ckpt", re.I)
_PATH_RE = lazy_re(r"(^|/)(checkpoints?|ckpts?|outputs?|results|artifacts|saved_models)(/|$)", re.I)
_SYNC_RE = lazy_re(r"\baws\s+s3\s+(sync|cp)\b|\bs5cmd\b|\brclone\s+(sync|copy)\b")


def _mounts(pod: PodTemplate, volume_names: set[str]) -> list[str]:
    out = []
    for c in pod.containers():
        for _, m in iter_dicts(c.data.get("volumeMounts")):
            if m.get("name") in volume_names and isinstance(m.get("mountPath"), str):
                out.append(m["mountPath"])
    return out


def _syncs(pod: PodTemplate) -> bool:
    return any(_SYNC_RE.search(" ".join(c.tokens)) for c in pod.containers())


def _users(ctx: Any, obj: Any, claim_name: str) -> list[tuple[Any, PodTemplate, list[str]]]:
    """(object, pod, mount paths) of the pods that mount this claim."""
    out = []
    if obj.kind == "PersistentVolumeClaim":
        for o, pod in ctx.pods_in(obj.namespace_or_default):
            vols = {
                str(v.get("name"))
                for _, v in iter_dicts(pod.spec.get("volumes"))
                if as_dict(v.get("persistentVolumeClaim")).get("claimName") == claim_name
            }
            if vols:
                out.append((o, pod, _mounts(pod, vols)))
    else:
        for pod in pod_templates(obj):
            out.append((obj, pod, _mounts(pod, {claim_name})))
    return out


def _s3_export(sc: Any) -> bool:
    return bool(as_dict(sc.data.get("parameters")).get("s3ExportPath"))


def _facet(sc: Any, p: Any) -> tuple[Any, ...]:
    return (p.malformed, p.deployment_type, p.deployment_type_set, _s3_export(sc))


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for claim in claim_templates(obj):
        found = None if claim.spec.get("volumeName") else fsx_class_of(ctx, claim.spec, _facet)
        if found is None:
            continue  # not FSx, or same-named classes of the run that disagree on what is read here
        sc, params = found
        if params.malformed or not params.is_scratch or _s3_export(sc):
            continue
        users = _users(ctx, obj, claim.name)
        if any(_syncs(pod) for _, pod, _ in users):
            continue
        reason = None
        for o, pod, paths in users:
            hit = next((p for p in paths if _PATH_RE.search(p)), None)
            if hit and is_training_pod(pod):
                reason = f"mounted at {hit} by {ctx.describe(o)}"
                break
        if reason is None and _NAME_RE.search(claim.name):
            reason = "named for checkpoints"
        if reason is None:
            continue
        dt = params.deployment_type if params.deployment_type_set else "SCRATCH_1 (the default)"
        path = claim.path_of("storageClassName") if "storageClassName" in claim.spec else claim.path
        yield RULE.finding(
            obj,
            path,
            f"claim {claim.name} holds durable training data ({reason}) on {ctx.describe(sc)}, "
            f"an FSx {dt} file system without s3ExportPath; scratch data is not "
            "replicated and is lost if a file server fails",
        )
