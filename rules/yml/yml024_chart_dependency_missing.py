"""
## What it does
Reports a dependency of `Chart.yaml` (or `requirements.yaml`) that has no folder or `.tgz` under `charts/`, at its line. ailint never runs `helm dependency build`.

## Why is this bad?
`helm template` refuses to render a chart whose dependencies are missing, and fetching them at lint time would download code.

## Example
```yaml
dependencies:
- name: redis
  repository: https://charts.bitnami.com/bitnami

```

## Use instead
```yaml
# charts/redis-19.0.0.tgz committed next to Chart.yaml

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
    code="YML024",
    name="chart-dependency-missing",
    severity=Severity.ERROR,
    summary="A chart dependency is not vendored",
    engine=True,
    tags=("input",),
)
