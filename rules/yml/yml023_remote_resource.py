"""
## What it does
Reports a kustomization entry that is a remote base or resource (a URL, or a git reference such as `github.com/org/repo//path?ref=v1`) and a `helmCharts` entry (it needs `--enable-helm`). ailint never downloads and never passes `--enable-helm`: the overlay is not built.

## Why is this bad?
A build that fetches at lint time is not reproducible, can hang, and pulls in content nobody reviewed in this repository.

## Example
```yaml
resources:
- github.com/kubeflow/trainer//manifests/base?ref=v2.0.0

```

## Use instead
```yaml
resources:
- ../vendor/trainer/base

```

## Options
None.

## Fix
None.

## References
- Helm, `helm template`: https://helm.sh/docs/helm/helm_template/
- Kustomize, the kustomization file: https://kubectl.docs.kubernetes.io/references/kustomize/kustomization/
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="YML023",
    name="remote-resource",
    severity=Severity.ERROR,
    summary="An overlay needs the network to build",
    engine=True,
    tags=("input",),
)
