"""
## What it does
Checks `perUnitStorageThroughput` on FSx for Lustre StorageClasses (`fsx.csi.aws.com`)
against the values FSx accepts for the `deploymentType` and `storageType`:
`PERSISTENT_1` SSD takes 50, 100 or 200; `PERSISTENT_1` HDD takes 12 or 40;
`PERSISTENT_2` takes 125, 250, 500 or 1000. It also flags the parameter on `SCRATCH_1`
and `SCRATCH_2` (including an unset `deploymentType`, which means `SCRATCH_1`), and its
absence on `PERSISTENT_1`/`PERSISTENT_2`.

## Why is this bad?
FSx requires `PerUnitStorageThroughput` for persistent file systems and refuses it for
scratch ones; the CSI driver passes the parameter through unchanged and sends nothing when
it is unset (the "200" its README calls a default is not applied, and is not a
`PERSISTENT_2` value anyway). The StorageClass applies, but every claim on it stays
`Pending` with a `CreateFileSystem` error.

## Example
```yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fsx-p2
provisioner: fsx.csi.aws.com
parameters:
  subnetId: subnet-0123456789abcdef0
  securityGroupIds: sg-0123456789abcdef0
  deploymentType: PERSISTENT_2
  perUnitStorageThroughput: "200"
```

## Use instead
```yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fsx-p2
provisioner: fsx.csi.aws.com
parameters:
  subnetId: subnet-0123456789abcdef0
  securityGroupIds: sg-0123456789abcdef0
  deploymentType: PERSISTENT_2
  perUnitStorageThroughput: "250"
```

## Options
- `persistent1Throughput` (integer, default 200): the value the fix adds to a
  `PERSISTENT_1` SSD class that lacks one.
- `persistent1HddThroughput` (integer, default 40): the same for `PERSISTENT_1` HDD.
- `persistent2Throughput` (integer, default 125): the same for `PERSISTENT_2`.

## Fix
Safe: an invalid value snaps to the nearest valid one at or above it (the largest when it
is above all of them); a missing value gets the configured default; on scratch types the
parameter is removed. `INTELLIGENT_TIERING` classes (sized by `throughputCapacity`) are
skipped.

## References
- https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystemLustreConfiguration.html (`PerUnitStorageThroughput`)
- https://github.com/kubernetes-sigs/aws-fsx-csi-driver/blob/master/pkg/cloud/cloud.go
- https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-throughput-capacity.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity
from ailint.core.rule import Option, Options, Rule, make_fix
from ailint.domain.context import Context
from ailint.domain.storage import FSX, fsx_params, fsx_valid_throughputs, provisioner_name
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="STO005",
    name="fsx-per-unit-throughput-invalid",
    severity=Severity.ERROR,
    summary="FSx for Lustre perUnitStorageThroughput is invalid, missing or not allowed for the deployment type",
    kinds=("storage.k8s.io/StorageClass",),
    fix=FixAvailability.SOMETIMES,
    options={
        "persistent1Throughput": Option(200, "perUnitStorageThroughput the fix adds on PERSISTENT_1 SSD", "integer"),
        "persistent1HddThroughput": Option(40, "perUnitStorageThroughput the fix adds on PERSISTENT_1 HDD", "integer"),
        "persistent2Throughput": Option(125, "perUnitStorageThroughput the fix adds on PERSISTENT_2", "integer"),
    },
    tags=("storage", "fsx"),
    precision="very-high",
)


def _default(p: Any, valid: list[int], opts: Options) -> int:
    key = {"PERSISTENT_2": "persistent2Throughput"}.get(p.deployment_type) or (
        "persistent1HddThroughput" if p.storage_type == "HDD" else "persistent1Throughput"
    )
    v = opts.get_int(key)
    return v if v in valid else valid[0]


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if provisioner_name(obj) != FSX:
        return
    p = fsx_params(obj)
    if p.intelligent_tiering or p.malformed:
        return
    path = ("parameters", "perUnitStorageThroughput")
    if p.is_scratch:
        if p.per_unit_set:
            dt = p.deployment_type if p.deployment_type_set else "SCRATCH_1 (deploymentType unset)"
            yield RULE.finding(
                obj,
                path,
                f"perUnitStorageThroughput is only valid on PERSISTENT_1 and PERSISTENT_2; FSx rejects it on {dt}",
                fix=make_fix("remove perUnitStorageThroughput", [edits.delete_key(obj, path)]),
            )
        return
    valid = fsx_valid_throughputs(p)
    if not valid:
        return  # an unknown deployment or storage type: nothing to compare with
    kind = f"{p.deployment_type} {p.storage_type}" if p.deployment_type == "PERSISTENT_1" else p.deployment_type
    allowed = ", ".join(str(v) for v in valid)
    if not p.per_unit_set:
        value = _default(p, valid, opts)
        edit = edits.insert_key(obj, ("parameters",), "perUnitStorageThroughput", edits.quoted(str(value)))
        yield RULE.finding(
            obj,
            ("parameters",) if "parameters" in obj.data else (),
            f"perUnitStorageThroughput is unset on {kind}: FSx requires it ({allowed}) and the driver sends no default",
            fix=make_fix(f'add perUnitStorageThroughput: "{value}"', [edit]),
        )
        return
    v = p.per_unit_throughput
    if v in valid:
        return
    snapped = (
        next((x for x in valid if v is not None and x >= v), valid[-1]) if v is not None else _default(p, valid, opts)
    )
    fix = make_fix(
        f'set perUnitStorageThroughput to "{snapped}"', [edits.replace_value(obj, path, edits.quoted(str(snapped)))]
    )
    yield RULE.finding(
        obj, path, f"perUnitStorageThroughput {p.per_unit_raw!s} is not valid on {kind}, which takes {allowed}", fix=fix
    )
