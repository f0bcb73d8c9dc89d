"""
## What it does
Reports a file with more than `limits.max-documents` (5,000) documents.

## Why is this bad?
Such streams are generated or hostile; the rest of the file is skipped.

## Example
```yaml
---
---
# ... 10,000 times

```

## Use instead
```yaml
# fewer documents per file

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
    code="YML010",
    name="too-many-documents",
    severity=Severity.ERROR,
    summary="A file has more documents than the configured bound",
    engine=True,
    tags=("input",),
)
