"""
## What it does
Reports files over `limits.max-file-size` (10 MiB by default) without parsing them.

## Why is this bad?
Manifests of that size are generated bundles or mistakes, and parsing them slows every pre-commit run.

## Example
```yaml
# a 50 MB file

```

## Use instead
```yaml
# split it, or raise limits.max-file-size

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
    code="YML006",
    name="file-too-large",
    severity=Severity.ERROR,
    summary="The file is larger than the configured bound",
    engine=True,
    tags=("input",),
)
