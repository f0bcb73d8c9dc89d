"""
## What it does
Flags External Secrets Operator objects (`ExternalSecret`, `SecretStore`,
`ClusterSecretStore`, `ClusterExternalSecret`) written against
`external-secrets.io/v1beta1`, or the older `v1alpha1`.

## Why is this bad?
ESO v0.17.0 stopped serving `v1beta1` ("You need to update your manifests from `v1beta1`
to `v1` prior to updating from `v0.16` to `v0.17`"). After the operator upgrade, applying
these manifests fails with "no matches for kind", so the model tokens and API keys they
sync (Hugging Face, NGC) stop being refreshed and new workloads cannot start. `v1` is
served from ESO v0.16 on and has the same schema, so the change is a rename.

## Example
```yaml
apiVersion: external-secrets.io/v1beta1
kind: ExternalSecret
metadata:
  name: hf-token
  namespace: inference
spec:
  secretStoreRef:
    name: aws-secrets-manager
    kind: ClusterSecretStore
  target:
    name: hf-token
  data:
    - secretKey: token
      remoteRef:
        key: prod/hf-token
```

## Use instead
```yaml
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: hf-token
  namespace: inference
spec:
  secretStoreRef:
    name: aws-secrets-manager
    kind: ClusterSecretStore
  target:
    name: hf-token
  data:
    - secretKey: token
      remoteRef:
        key: prod/hf-token
```

## Options
None. The profile key `esoVersion` sets the severity: an error from 0.17 on (the API is
gone), info below 0.17 (it still works, the upgrade will break it), a warning when unset.

## Fix
Changes `apiVersion` to `external-secrets.io/v1`: safe when `esoVersion` is 0.16 or
later, unsafe when it is unset (ESO before 0.16 does not serve `v1`), and not offered when
it is older than 0.16 or for `v1alpha1` (whose schema differs).

## References
- https://github.com/external-secrets/external-secrets/releases/tag/v0.17.0
- https://external-secrets.io/latest/introduction/stability-support/
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity
from ailint.core.rule import Options, Rule, make_fix
from ailint.domain.agents import version_at_least
from ailint.domain.context import Context
from ailint.fix import edits

RULE = Rule(
    code="SEC010",
    name="external-secret-deprecated-api",
    severity=Severity.WARNING,
    summary="An External Secrets object uses external-secrets.io/v1beta1, which ESO 0.17 no longer serves",
    kinds=("ExternalSecret", "SecretStore", "ClusterSecretStore", "ClusterExternalSecret"),
    fix=FixAvailability.SOMETIMES,
    tags=("security", "secrets", "deprecated-api"),
    precision="very-high",
    security_severity=4.0,
)

_GROUP = "external-secrets.io"


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    version = obj.api_version.strip()
    if version not in (f"{_GROUP}/v1beta1", f"{_GROUP}/v1alpha1"):
        return
    old = version.rsplit("/", 1)[1]
    eso = ctx.profile.get("esoVersion")
    gone_in = "0.17" if old == "v1beta1" else "0.16"
    gone = version_at_least(eso, gone_in)
    if gone is True:
        sev, when = Severity.ERROR, f"ESO {eso} no longer serves it"
    elif gone is False:
        sev, when = Severity.INFO, f"it stops being served in ESO {gone_in}.0"
    else:
        sev, when = Severity.WARNING, f"ESO {gone_in}.0 and later no longer serve it"
    fix = None
    if old == "v1beta1":
        has_v1 = version_at_least(eso, "0.16")
        if has_v1 is not False:
            fix = make_fix(
                f"change apiVersion to {_GROUP}/v1",
                [edits.replace_scalar(obj, ("apiVersion",), f"{_GROUP}/v1")],
                unsafe=has_v1 is None,
            )
        tail = f"use {_GROUP}/v1 (same schema, served since ESO 0.16)"
    else:
        tail = f"migrate it to {_GROUP}/v1 (v1alpha1 fields differ)"
    yield RULE.finding(obj, ("apiVersion",), f"{obj.kind} uses {version}: {when}; {tail}", severity=sev, fix=fix)
