"""
## What it does
Reports an internal error of one rule on one object. The rest of the run goes on.

## Why is this bad?
It means ailint could not check this object for that rule; please report it with the file (or `--debug` output).

## Example
```yaml
# any object

```

## Use instead
```yaml
# any object

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
    code="AIL003",
    name="rule-crashed",
    severity=Severity.ERROR,
    summary="A rule failed on an object (a bug in ailint)",
    engine=True,
    tags=("linter",),
)
