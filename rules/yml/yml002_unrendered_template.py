"""
## What it does
Reports `{{ ... }}` template markers that make a file unparseable as plain YAML.

## Why is this bad?
Templates are not manifests: the values they produce are unknown until rendered, so linting them would guess. Lint the output of `helm template` instead.

## Example
```yaml
image: {{ .Values.image }}

```

## Use instead
```yaml
image: vllm/vllm-openai:v0.9.2

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
    code="YML002",
    name="unrendered-template",
    severity=Severity.WARNING,
    summary="The file is an unrendered Helm or Go template",
    engine=True,
    tags=("input",),
)
