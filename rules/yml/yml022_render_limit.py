"""
## What it does
Reports a rendering stopped at its wall-clock limit (config `render.timeout`, 60 s) or its output limit (`render.max-output-size`, 64 MiB), and a vendored subchart archive over its size bound (20 MB packed, 200 MB unpacked).

## Why is this bad?
A template loop, a huge generated output or a fetch that never answers must not hang the linter, pre-commit or CI.

## Example
```yaml
{{- range until 100000000 }}
---
{{- end }}

```

## Use instead
```yaml
# a chart whose output is bounded

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
    code="YML022",
    name="render-limit",
    severity=Severity.ERROR,
    summary="A rendering took too long or wrote too much",
    engine=True,
    tags=("input",),
)
