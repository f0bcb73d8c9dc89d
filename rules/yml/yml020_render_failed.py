"""
## What it does
Reports a Helm chart that `helm template` cannot render, or a Kustomize overlay that `kustomize build` cannot build, on its `Chart.yaml` or `kustomization.yaml`, with the tool's own message (for a template error, the template line is a related location). The rest of the run goes on.

## Why is this bad?
What does not render does not deploy, and nothing in it can be checked.

## Example
```yaml
# templates/deployment.yaml
replicas: {{ .Values.replicas

```

## Use instead
```yaml
replicas: {{ .Values.replicas }}

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
    code="YML020",
    name="render-failed",
    severity=Severity.ERROR,
    summary="A chart or overlay does not render",
    engine=True,
    tags=("input",),
)
