r"""
## What it does
Reports binary content, UTF-16 files and invalid UTF-8 byte sequences, at the first bad byte.

## Why is this bad?
The API server and kubectl read manifests as UTF-8.

## Example
```yaml
name: caf\xe9   # Latin-1 byte

```

## Use instead
```yaml
name: cafe

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
    code="YML007",
    name="invalid-encoding",
    severity=Severity.ERROR,
    summary="The file is not UTF-8 text",
    engine=True,
    tags=("input",),
)
