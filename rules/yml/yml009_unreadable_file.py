"""
## What it does
Reports paths that cannot be opened: permissions, a FIFO or device, a broken link.

## Why is this bad?
A file the linter cannot read is a file nobody checked.

## Example
```yaml
# a FIFO named manifest.yaml

```

## Use instead
```yaml
# a regular, readable file

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
    code="YML009",
    name="unreadable-file",
    severity=Severity.ERROR,
    summary="The file cannot be read",
    engine=True,
    tags=("input",),
)
