"""
## What it does
Reports the second occurrence of a key in the same mapping.

## Why is this bad?
One of the values is lost. `kubectl` turns the YAML into JSON before it sends it, keeping the
last value without a word, so the server's strict field validation never sees the duplicate
(kubernetes/kubernetes#67477, #99286, #125885: the first `volumeMounts`, `envFrom` or
`containers` silently dropped); strict YAML readers (older kubectl releases, kubeconform
`-strict`) reject the file instead. ailint's other rules read the first value.

## Example
```yaml
resources:
  limits: {cpu: 1}
  limits: {nvidia.com/gpu: 1}

```

## Use instead
```yaml
resources:
  limits: {cpu: 1, nvidia.com/gpu: 1}

```

## Options
None.

## Fix
None.

## References
- YAML 1.1 and the Kubernetes API conventions.
- https://github.com/kubernetes/kubernetes/issues/125885 (kubectl 1.27 sends the JSON with one
  value, `fieldValidation=Strict` accepts it)
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="YML003",
    name="duplicate-key",
    severity=Severity.ERROR,
    summary="A mapping repeats a key",
    engine=True,
    tags=("input",),
)
