"""
## What it does
Reports documents that are not mappings or lack `apiVersion` or `kind`.

## Why is this bad?
`kubectl apply` rejects them; in a folder of manifests they are usually a leftover or a values file in the wrong place. They are skipped by every other rule.

## Example
```yaml
replicas: 3

```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment

```

## Options
None.

## Fix
None.

## References
- YAML 1.1 and the Kubernetes API conventions.
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="YML008",
    name="not-a-kubernetes-object",
    severity=Severity.INFO,
    summary="A document is not a Kubernetes object",
    engine=True,
    tags=("input",),
)
