"""
## What it does
Reports every PersistentVolumeClaim (and StatefulSet or LeaderWorkerSet claim template)
on Amazon EFS that requests a `storage` size: its StorageClass has provisioner
`efs.csi.aws.com`, or it is bound (`volumeName`) to a PersistentVolume of that driver.
It reports once per claim, at the request.

## Why is this bad?
EFS is elastic: the EFS CSI driver does not use the requested capacity when it creates an
access point or mounts the file system, so a "500Gi model cache" neither reserves 500 GiB
nor stops the cache at 500 GiB. Kubernetes requires the field, so it has to be there, but
capacity plans, quotas and alerts built on it measure nothing; growth and cost are only
bounded by what you watch on the file system itself (CloudWatch `StorageBytes`).

## Example
```yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: efs-sc
provisioner: efs.csi.aws.com
parameters:
  provisioningMode: efs-ap
  fileSystemId: fs-0123456789abcdef0
  directoryPerms: "700"
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: model-cache
spec:
  accessModes: [ReadWriteMany]
  storageClassName: efs-sc
  resources:
    requests:
      storage: 500Gi
```

## Use instead
```yaml
# Size and alert on the file system (CloudWatch StorageBytes), or use FSx for Lustre /
# EBS where capacity is real. The request on EFS is a placeholder either way:
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: model-cache
  annotations:
    ailint.io/ignore: "STO010: placeholder; the cache is bounded by a CloudWatch alarm on the file system"
spec:
  accessModes: [ReadWriteMany]
  storageClassName: efs-sc
  resources:
    requests:
      storage: 500Gi
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: efs-sc
provisioner: efs.csi.aws.com
parameters:
  provisioningMode: efs-ap
  fileSystemId: fs-0123456789abcdef0
```

## Options
None.

## Fix
None: the field is required by Kubernetes. Review what relies on the number, and suppress
the finding on the claim (as above) once the file system has its own bound.

## References
- https://github.com/kubernetes-sigs/aws-efs-csi-driver/blob/master/docs/README.md ("The actual storage capacity value in persistent volume and persistent volume claim is not used when creating the file system")
- https://docs.aws.amazon.com/eks/latest/userguide/efs-csi.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity
from ailint.core.rule import Options, Rule, Scope
from ailint.domain.context import Context
from ailint.domain.storage import EFS, claim_templates, provisioner_of

RULE = Rule(
    code="STO010",
    name="efs-pvc-size-is-placeholder",
    severity=Severity.INFO,
    summary="An EFS claim's storage request is a placeholder that neither reserves nor limits space",
    kinds=("PersistentVolumeClaim", "StatefulSet", "LeaderWorkerSet"),
    scope=Scope.BUNDLE,
    fix=FixAvailability.NEVER,
    tags=("storage", "efs", "cost"),
    precision="very-high",
)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for claim in claim_templates(obj):
        raw = claim.storage_request
        if raw is None or isinstance(raw, (dict, list)):
            continue
        if provisioner_of(ctx, claim.spec) != EFS:
            continue
        what = f"claim template '{claim.name}'" if obj.kind != "PersistentVolumeClaim" else "claim"
        yield RULE.finding(
            obj,
            claim.path_of("resources", "requests", "storage"),
            f"this {what} is on EFS, which ignores requests.storage ({raw}): it neither reserves "
            "nor caps space; bound and watch the file system itself",
        )
