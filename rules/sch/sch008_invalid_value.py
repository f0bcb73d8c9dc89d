"""
## What it does
Reports a value that breaks a constraint of its field's schema other than its type or
enum: a pattern (a Karpenter `consolidateAfter: 5 minutes` instead of `5m`, a taint key
with spaces), a minimum or maximum (`weight: 0` on a NodePool, whose weight is 1 to 100), a
length limit or an item count.

## Why is this bad?
The API server rejects the object ("should match ...", "should be greater than or equal
to ..."), so the change never rolls out.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  weight: 0
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["g6e"]
```

## Use instead
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  weight: 10
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["g6e"]
```

## Options
None. Schema validation as a whole is turned off with `--no-schema`.

## Fix
None: the message names the constraint the value must meet.

## References
- https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#validation
- https://karpenter.sh/docs/concepts/nodepools/
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="SCH008",
    name="invalid-value",
    severity=Severity.ERROR,
    summary="A value breaks a constraint of its schema (pattern, minimum, maximum, length)",
    engine=True,
    tags=("schema",),
    precision="high",
)
