"""
## What it does
Reports a field that the schema requires but the object does not set: a container
without `name`, a port without `containerPort`, a NodePool without `nodeClassRef` or
`requirements`, a LeaderWorkerSet `leaderWorkerTemplate` without `workerTemplate`. The
finding points at the parent where the field belongs. When the field is missing because
of a typo reported as an unknown field (`sise:` for `size:`), only the typo is reported.

## Why is this bad?
The API server rejects the object ("Required value"), so nothing is created or updated.

## Example
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: vllm
spec:
  containers:
    - image: vllm/vllm-openai:v0.9.2
      ports:
        - containerPort: 8000
```

## Use instead
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: vllm
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.9.2
      ports:
        - containerPort: 8000
```

## Options
None. Schema validation as a whole is turned off with `--no-schema`.

## Fix
None: add the field with the value you intend.

## References
- https://kubernetes.io/docs/reference/kubernetes-api/
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="SCH004",
    name="missing-required-field",
    severity=Severity.ERROR,
    summary="A field that the schema requires is missing",
    engine=True,
    tags=("schema",),
    precision="very-high",
)
