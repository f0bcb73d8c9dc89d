"""
## What it does
Reports a resource quantity that Kubernetes cannot parse: `16 Gi` (a space), `16GB` (bytes
are `G` or `Gi`, never `GB`), `500 m`, `1.5.0`, in requests, limits, `emptyDir.sizeLimit`,
PVC sizes and the quantity fields of custom resources. The message suggests the corrected
value when there is an obvious one.

## Why is this bad?
The API server rejects the object ("quantities must match the regular expression ..."),
so the workload is never created.

## Example
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: vllm
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.9.2
      resources:
        limits:
          memory: 64GB
          nvidia.com/gpu: 1
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
      resources:
        limits:
          memory: 64Gi
          nvidia.com/gpu: 1
```

## Options
None. Schema validation as a whole is turned off with `--no-schema`.

## Fix
None: write the quantity as a number with an optional suffix (`m`, `k`, `M`, `G`, `Ki`,
`Mi`, `Gi`, ...). `G` is 10^9 bytes and `Gi` 2^30.

## References
- https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="SCH005",
    name="invalid-quantity",
    severity=Severity.ERROR,
    summary="A resource quantity is not a valid Kubernetes quantity",
    engine=True,
    tags=("schema", "resources"),
    precision="very-high",
)
