"""
## What it does
Checks the `storage` request of every PersistentVolumeClaim (and StatefulSet or
LeaderWorkerSet claim template) whose StorageClass provisions FSx for Lustre
(`fsx.csi.aws.com`) against the capacities FSx can create for the class's
`deploymentType` and `storageType`:

- `SCRATCH_1`, or `deploymentType` unset (the driver's default): 1200, 2400 or a multiple
  of 3600 GiB;
- `SCRATCH_2`, `PERSISTENT_1` SSD and `PERSISTENT_2`: 1200 or a multiple of 2400 GiB;
- `PERSISTENT_1` HDD: a multiple of 6000 GiB at `perUnitStorageThroughput: "12"`, of 1800
  GiB otherwise.

Severity: info when the rounding adds at most 1% of the request.

## Why is this bad?
The CSI driver silently rounds the request up to the next valid size, creates that file
system, and you are billed for it. The request then misleads everyone who reads it: a
`1.2Ti` request (1228.8 GiB) becomes a 2400 GiB file system, a `5Gi` request a 1200 GiB
one, and a `4000Gi` request on the default `SCRATCH_1` a 7200 GiB one.

## Example
```yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fsx-sc
provisioner: fsx.csi.aws.com
parameters:
  subnetId: subnet-0123456789abcdef0
  securityGroupIds: sg-0123456789abcdef0
  deploymentType: SCRATCH_2
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: model-cache
spec:
  accessModes: [ReadWriteMany]
  storageClassName: fsx-sc
  resources:
    requests:
      storage: 1.2Ti
```

## Use instead
```yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fsx-sc
provisioner: fsx.csi.aws.com
parameters:
  subnetId: subnet-0123456789abcdef0
  securityGroupIds: sg-0123456789abcdef0
  deploymentType: SCRATCH_2
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: model-cache
spec:
  accessModes: [ReadWriteMany]
  storageClassName: fsx-sc
  resources:
    requests:
      storage: 1200Gi
```

## Options
None.

## Fix
Safe: sets `storage` to the size the driver creates anyway (the rounded-up valid value),
so the manifest says what you pay for. When a smaller valid size lies just below the
request (a Ti/Gi slip), the message names it: lower the request by hand if that was meant.
Statically bound claims (`volumeName`) and `INTELLIGENT_TIERING` classes are skipped, and so
are claims whose `storageClassName` names several StorageClasses of the run (manifests from
several repos) that disagree on `deploymentType`, `storageType` or throughput: the cluster
holds only one of them.

## References
- https://github.com/kubernetes-sigs/aws-fsx-csi-driver/blob/master/pkg/util/util.go (`RoundUpVolumeSize`)
- https://github.com/kubernetes-sigs/aws-fsx-csi-driver/tree/master/examples/kubernetes/dynamic_provisioning
- https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html (`StorageCapacity`)
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.quantities import parse_quantity
from ailint.domain.storage import GiB, claim_templates, fsx_capacity_rule, fsx_class_of, fsx_round_up_gib
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="STO003",
    name="fsx-lustre-capacity-rounding",
    severity=Severity.WARNING,
    summary="An FSx for Lustre claim requests a size FSx cannot create, so the driver rounds it up and bills the difference",
    kinds=("PersistentVolumeClaim", "StatefulSet", "LeaderWorkerSet"),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("storage", "fsx", "cost"),
)


def _gib(n: float) -> str:
    v = n / GiB
    return f"{v:.0f}Gi" if abs(v - round(v)) < 0.05 else f"{v:.1f}Gi"


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for claim in claim_templates(obj):
        if claim.spec.get("volumeName"):
            continue  # static provisioning: the file system already exists
        found = fsx_class_of(ctx, claim.spec, _capacity_facet)
        if found is None:
            continue  # not FSx, not in the run, or same-named classes that size differently
        sc, params = found
        if params.intelligent_tiering or params.malformed:
            continue
        raw = claim.storage_request
        size = parse_quantity(raw)
        if size is None or size <= 0:
            continue
        rounded = fsx_round_up_gib(size, params)
        if abs(rounded * GiB - size) < 1:
            continue
        over = (rounded * GiB - size) / size
        rule = fsx_capacity_rule(params)
        kind = params.deployment_type if params.deployment_type_set else f"{params.deployment_type} by default"
        if params.storage_type == "HDD":
            kind = f"{params.deployment_type} HDD"
        shown = str(raw) if str(raw).endswith("Gi") else f"{raw} ({_gib(size)})"
        msg = (
            f"requests {shown} on {ctx.describe(sc)} ({kind}), which takes {rule['valid']}; "
            f"the driver creates and bills {rounded}Gi"
        )
        lower = _lower_valid(rounded, rule)
        if lower and size > lower * GiB and (size - lower * GiB) / size <= 0.1:
            msg += f" (or lower the request to {lower}Gi)"
        path = claim.path_of("resources", "requests", "storage")
        fix = make_fix(f"set storage to {rounded}Gi", [edits.replace_value(obj, path, f"{rounded}Gi")])
        yield RULE.finding(obj, path, msg, severity=Severity.INFO if over <= 0.01 else None, fix=fix)


def _capacity_facet(sc: Any, p: Any) -> tuple[Any, ...]:
    """What the rule reads from a class: same-named classes of the run must agree on it."""
    return (p.malformed, p.storage_type, p.deployment_type, None if p.malformed else fsx_capacity_rule(p))


def _lower_valid(rounded: int, rule: dict[str, Any]) -> int | None:
    """The next valid size below `rounded` (None when `rounded` is the smallest)."""
    candidates = []
    size = rule["below"]
    while size < rounded:
        candidates.append(size)
        size += rule["below"] if size < rule["threshold"] else rule["unit"]
        if size >= rule["threshold"] and size % rule["unit"]:
            size = ((size // rule["unit"]) + 1) * rule["unit"]
    return candidates[-1] if candidates else None
