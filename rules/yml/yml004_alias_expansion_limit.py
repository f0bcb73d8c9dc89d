"""
## What it does
Reports a document whose anchors and aliases expand to more nodes than `limits.max-alias-expansion` (100,000 by default).

## Why is this bad?
A 'billion laughs' document exhausts memory in every consumer that expands it, including the API server's clients.

## Example
```yaml
a: &a [x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]

```

## Use instead
```yaml
a: [x]

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
    code="YML004",
    name="alias-expansion-limit",
    severity=Severity.ERROR,
    summary="Aliases expand beyond the configured bound",
    engine=True,
    tags=("input",),
)
