"""
## What it does
Reports `# ailint: ignore[...]` comments and `ailint.io/ignore` annotations that suppressed nothing in this run (only for rules that ran).

## Why is this bad?
Stale suppressions hide the next real finding on that line.

## Example
```yaml
image: vllm/vllm-openai:v0.9.2  # ailint: ignore[SRV002] pinned elsewhere

```

## Use instead
```yaml
image: vllm/vllm-openai:v0.9.2

```

## Options
None.

## Fix
Safe: delete the comment.

## References
- YAML 1.1 and the Kubernetes API conventions.
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="AIL001",
    name="unused-suppression",
    severity=Severity.WARNING,
    summary="A suppression comment or annotation matches no finding",
    engine=True,
    tags=("linter",),
)
