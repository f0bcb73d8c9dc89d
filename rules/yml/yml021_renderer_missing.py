"""
## What it does
Reports a chart when no Helm 3 or 4 binary is found (`--helm PATH`, config `helm.binary`, else `helm` on PATH), and an overlay when neither `kubectl` (`--kubectl`) nor `kustomize` (`--kustomize`, config `kustomize.binary`) is.

## Why is this bad?
A chart or overlay that was not rendered was not linted: the run says so instead of passing silently.

## Example
```yaml
# helm is not installed

```

## Use instead
```yaml
# install helm, or: ailint check --helm /opt/helm/helm charts/

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
    code="YML021",
    name="renderer-missing",
    severity=Severity.ERROR,
    summary="helm, kubectl or kustomize is not available",
    engine=True,
    tags=("input",),
)
