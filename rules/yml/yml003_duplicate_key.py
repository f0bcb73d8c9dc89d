"""
## What it does
Reports the second occurrence of a key in the same mapping.

## Why is this bad?
The Kubernetes API server (strict decoding) rejects duplicate fields, and tools that accept them silently keep only one of the values.

## Example
```yaml
resources:
  limits: {cpu: 1}
  limits: {nvidia.com/gpu: 1}

```

## Use instead
```yaml
resources:
  limits: {cpu: 1, nvidia.com/gpu: 1}

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
    code="YML003",
    name="duplicate-key",
    severity=Severity.ERROR,
    summary="A mapping repeats a key",
    engine=True,
    tags=("input",),
)
