"""
## What it does
Reports a value that is not one of the values its field's schema allows (an `enum`), and
lists the allowed ones. Typical cases are values from an older API version, such as a
Karpenter NodePool's `consolidationPolicy: WhenUnderutilized` (v1beta1; v1 calls it
`WhenEmptyOrUnderutilized`), or a wrong case (`ifnotpresent`).

## Why is this bad?
The API server rejects the object ("Unsupported value"), so the change never rolls out;
in a GitOps pipeline the sync fails until someone reads the controller's events.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  disruption:
    consolidationPolicy: WhenUnderutilized
    consolidateAfter: 1m
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
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
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
None: pick one of the values the message lists.

## References
- https://karpenter.sh/docs/concepts/disruption/#consolidation
- https://karpenter.sh/docs/upgrading/v1-migration/
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="SCH003",
    name="value-not-allowed",
    severity=Severity.ERROR,
    summary="A value is not one of the values its field allows",
    engine=True,
    tags=("schema",),
    precision="very-high",
)
