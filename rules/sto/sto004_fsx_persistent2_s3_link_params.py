"""
## What it does
Checks the S3 parameters of FSx for Lustre StorageClasses (`fsx.csi.aws.com`):

- `deploymentType: PERSISTENT_2` together with `s3ImportPath`, `s3ExportPath` or
  `autoImportPolicy`;
- `s3ExportPath` or `autoImportPolicy` without `s3ImportPath`;
- `s3ImportPath` and `s3ExportPath` in different buckets.

## Why is this bad?
FSx creates the file system from these parameters when the first claim is provisioned,
and rejects all three cases: `ImportPath`, `ExportPath` and `AutoImportPolicy` are not
supported on `PERSISTENT_2` (S3 is linked there through a data repository association),
and the driver documents that export and auto-import need an import path in the same
bucket. The StorageClass applies cleanly, but every claim stays `Pending` with a
provisioning error.

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
  perUnitStorageThroughput: "250"
  s3ImportPath: s3://models
  s3ExportPath: s3://models/export
  autoImportPolicy: NEW_CHANGED_DELETED
```

## Use instead
```yaml
# Link the bucket with a data repository association (Terraform, CloudFormation, CLI).
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
None.

## Fix
Unsafe: on `PERSISTENT_2`, removes the S3 parameter; the S3 link then has to be created as
a data repository association in your infrastructure code, which the fix cannot do.
The other two cases have no fix: choose the import path or the bucket by hand.

## References
- https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystemLustreConfiguration.html
- https://github.com/kubernetes-sigs/aws-fsx-csi-driver/tree/master/examples/kubernetes/dynamic_provisioning_s3
- https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Options, Rule, make_fix
from ailint.domain.context import Context
from ailint.domain.storage import FSX, fsx_params, provisioner_name
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="STO004",
    name="fsx-persistent2-s3-link-params",
    severity=Severity.ERROR,
    summary="An FSx for Lustre StorageClass sets S3 link parameters FSx rejects for its deployment type",
    kinds=("storage.k8s.io/StorageClass",),
    fix=FixAvailability.SOMETIMES,
    tags=("storage", "fsx", "s3"),
    precision="very-high",
)

_S3_KEYS = ("s3ImportPath", "s3ExportPath", "autoImportPolicy")


def _bucket(v: Any) -> str | None:
    m = re.match(r"^s3://([^/]+)", str(v).strip()) if isinstance(v, str) else None
    return m.group(1) if m else None


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if provisioner_name(obj) != FSX:
        return
    params = as_dict(obj.data.get("parameters"))
    p = fsx_params(obj)
    if p.malformed:
        return
    present = [k for k in _S3_KEYS if params.get(k) not in (None, "")]
    if p.deployment_type == "PERSISTENT_2" and present:
        for key in present:
            path = ("parameters", key)
            fix = make_fix(
                f"remove {key} (link S3 with a data repository association instead)",
                [edits.delete_key(obj, path)],
                unsafe=True,
            )
            yield RULE.finding(
                obj,
                path,
                f"{key} is not supported on PERSISTENT_2: FSx rejects the file system; "
                "link S3 through a data repository association instead",
                fix=fix,
            )
        return
    if "s3ImportPath" not in present:
        for key in ("s3ExportPath", "autoImportPolicy"):
            if key in present:
                yield RULE.finding(
                    obj,
                    ("parameters", key),
                    f"{key} is set without s3ImportPath; the driver needs an import path to export or auto-import",
                )
        return
    imp, exp = _bucket(params.get("s3ImportPath")), _bucket(params.get("s3ExportPath"))
    if imp and exp and imp != exp:
        yield RULE.finding(
            obj,
            ("parameters", "s3ExportPath"),
            f"s3ExportPath is in bucket {exp} but s3ImportPath in {imp}; both must use the same bucket",
        )
