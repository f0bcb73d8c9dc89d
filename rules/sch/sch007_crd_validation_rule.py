"""
## What it does
Re-implements the CRD validation rules (CEL `x-kubernetes-validations`) that decide
whether Karpenter and Kueue objects are accepted, and reports each one broken:

- NodePool and NodeClaim `requirements`: restricted label keys (`karpenter.sh/*` other
  than `capacity-type`, `karpenter.sh/nodepool`, `kubernetes.io/hostname`,
  unknown `karpenter.k8s.aws/*`), operator `In` without values, `Gt`/`Lt`/`Gte`/`Lte`
  without a single non-negative integer, `minValues` above the number of values;
  restricted keys in `spec.template.metadata.labels`; disruption budgets with `schedule`
  but no `duration` (or the reverse); empty `nodeClassRef` fields; static NodePools
  (`replicas`) with limits other than `nodes` or with `weight`.
- EC2NodeClass: exactly one of `role` and `instanceProfile`; `amiSelectorTerms` (alias
  format and family, an alias term alone, `id`/`alias` not combined with other fields,
  amiFamily consistent with the alias or required without one); non-empty subnet and
  security-group selector terms; restricted tags; one root volume.
- Kueue ResourceFlavor: taint and toleration effects and operators.

## Why is this bad?
The API server evaluates these rules on every create and update and rejects the object,
so a NodePool with a restricted requirement key never exists and its pods stay pending.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: karpenter.k8s.aws/instance-gpu-count
          operator: Gt
          values: ["0", "1"]
```

## Use instead
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: karpenter.k8s.aws/instance-gpu-count
          operator: Gt
          values: ["0"]
```

## Options
None. Schema validation as a whole is turned off with `--no-schema`.

## Fix
None: the message names the rule and the value to change.

## References
- https://karpenter.sh/docs/concepts/nodepools/
- https://karpenter.sh/docs/concepts/nodeclasses/
- https://kueue.sigs.k8s.io/docs/concepts/resource_flavor/
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="SCH007",
    name="crd-validation-rule",
    severity=Severity.ERROR,
    summary="A custom resource breaks one of its CRD's validation (CEL) rules",
    kinds=(
        "karpenter.sh/NodePool",
        "karpenter.sh/NodeClaim",
        "karpenter.k8s.aws/EC2NodeClass",
        "kueue.x-k8s.io/ResourceFlavor",
    ),
    engine=True,
    tags=("schema", "karpenter"),
    precision="high",
)
