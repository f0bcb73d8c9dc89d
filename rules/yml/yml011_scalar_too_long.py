"""
## What it does
Reports a string value longer than `limits.max-scalar-length` (1 MiB).

## Why is this bad?
Kubernetes limits annotations to 256 KiB and ConfigMaps to 1 MiB; longer scalars are mistakes or attacks on parsers.

## Example
```yaml
data: "<2 MB of text>"

```

## Use instead
```yaml
data: "..."

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
    code="YML011",
    name="scalar-too-long",
    severity=Severity.ERROR,
    summary="A scalar is longer than the configured bound",
    engine=True,
    tags=("input",),
)
