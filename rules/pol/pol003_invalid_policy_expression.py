"""
## What it does
Reports a CEL expression of a ValidatingAdmissionPolicy (a validation, a
`messageExpression`, a `matchCondition` or a variable) that does not compile: a syntax error
or a type error, at the line and column of the error inside the policy file.

## Why is this bad?
The API server rejects the policy when it is created, or, with a type error it cannot see
statically, the policy fails on every request it matches and `failurePolicy: Fail` rejects
them all. Either way the policy does not do what it says.

## Example
```yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: ["apps"]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["deployments"]
  validations:
    - expression: "object.spec.replicas <= "
```

## Use instead
```yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: ["apps"]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["deployments"]
  validations:
    - expression: "object.spec.replicas <= 5"
```

## Options
None.

## Fix
None: the message gives the compiler's error.

## References
- https://kubernetes.io/docs/reference/using-api/cel/
- https://github.com/google/cel-spec/blob/master/doc/langdef.md
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="POL003",
    name="invalid-policy-expression",
    severity=Severity.ERROR,
    summary="A ValidatingAdmissionPolicy expression does not compile",
    kinds=("admissionregistration.k8s.io/ValidatingAdmissionPolicy",),
    engine=True,
    tags=("policy",),
    precision="very-high",
)
