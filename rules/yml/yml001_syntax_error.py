"""
## What it does
Reports a YAML syntax error (bad indentation, a tab used for indentation, an unterminated quoted scalar) at the line and column where the parser stopped.

## Why is this bad?
`kubectl apply` rejects the file, and no other rule can check what cannot be read. Documents before the error are still linted.

## Example
```yaml
metadata:
  name: "vllm

```

## Use instead
```yaml
metadata:
  name: "vllm"

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
    code="YML001",
    name="syntax-error",
    severity=Severity.ERROR,
    summary="The file is not valid YAML",
    engine=True,
    tags=("input",),
)
