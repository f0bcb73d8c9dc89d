"""
## What it does
Reports suppressions that name no known rule code, prefix or name.

## Why is this bad?
A typo in a suppression suppresses nothing and hides the intent.

## Example
```yaml
# ailint: ignore[GPU0001]

```

## Use instead
```yaml
# ailint: ignore[GPU001]

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
    code="AIL002",
    name="unknown-suppression-code",
    severity=Severity.WARNING,
    summary="A suppression names a code that does not exist",
    engine=True,
    tags=("linter",),
)
