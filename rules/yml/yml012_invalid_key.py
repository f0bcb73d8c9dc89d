"""
## What it does
Reports mapping keys that are themselves mappings or lists.

## Why is this bad?
Kubernetes objects are JSON: every key is a string. A complex key is usually an unquoted `{{ }}` template or a stray `?`.

## Example
```yaml
? [a, b]
: value

```

## Use instead
```yaml
a: value

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
    code="YML012",
    name="invalid-key",
    severity=Severity.ERROR,
    summary="A mapping key is not a string",
    engine=True,
    tags=("input",),
)
