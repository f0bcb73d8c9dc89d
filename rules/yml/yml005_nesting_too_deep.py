"""
## What it does
Reports a document nested deeper than `limits.max-depth` (200 levels).

## Why is this bad?
No real manifest nests that deep; such input is built to exhaust parsers.

## Example
```yaml
a: [[[[[[[[...]]]]]]]]

```

## Use instead
```yaml
a: [1]

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
    code="YML005",
    name="nesting-too-deep",
    severity=Severity.ERROR,
    summary="Nesting is deeper than the configured bound",
    engine=True,
    tags=("input",),
)
