"""
## What it does
Evaluates the `ValidatingAdmissionPolicy` objects of the run (and of the files named by
`--policies` or the config's `policies:`) against every object their bindings match, as the
API server would when the object is created: `matchConstraints` and the binding's
`matchResources` (resource rules, `objectSelector`, `namespaceSelector` against the Namespace
objects of the run), `paramKind` with the binding's `paramRef`, `matchConditions`,
`variables` and `validations`. A validation that is false is reported at the field the
expression reads (the deepest one that exists), with the policy's `message` or
`messageExpression`. The severity follows the binding's `validationActions`: `Deny` is an
error, `Warn` a warning, `Audit` info. A policy without a binding does nothing, as in the
cluster; when the object's namespace is not in the run, the message says the result assumes
it matches the `namespaceSelector`. Kustomize patches (a `$patch` directive, a file a
Kustomization of the run names as a patch, a file named `*patch*`) and pod-template files are
fragments the API server never receives as written, and are not judged.

Severity: a warning when the binding's validationActions has Warn (and not Deny); info when
it has only Audit. A warning at most when the match assumes that a namespace not in the run
matches a `namespaceSelector`: a `Deny` there may not apply, so it is not an error.

## Why is this bad?
The cluster rejects the object (`Deny`) or warns about it (`Warn`) at `kubectl apply` time,
after the pull request has merged. Checking the same policies before the merge moves the
failure to review, where it is cheap, and lets a team try a new policy in warn-only mode.

## Example
```yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: demo-policy.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: ["apps"]
        apiVersions: ["v1"]
        operations: ["CREATE", "UPDATE"]
        resources: ["deployments"]
  validations:
    - expression: "object.spec.replicas <= 5"
      message: "at most 5 replicas"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: demo-binding
spec:
  policyName: demo-policy.example.com
  validationActions: [Deny]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  replicas: 8
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
```

## Use instead
```yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: demo-policy.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: ["apps"]
        apiVersions: ["v1"]
        operations: ["CREATE", "UPDATE"]
        resources: ["deployments"]
  validations:
    - expression: "object.spec.replicas <= 5"
      message: "at most 5 replicas"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: demo-binding
spec:
  policyName: demo-policy.example.com
  validationActions: [Deny]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  replicas: 2
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
```

## Options
None. `--policies PATH` (repeatable) and the config's `policies:` list name policy files that
are loaded as context: their policies, bindings, params and namespaces are used, their objects
are not linted.

## Fix
None: change the object, or the policy.

## References
- https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/
- https://kubernetes.io/docs/reference/kubernetes-api/extend-resources/validating-admission-policy-v1/
- https://kubernetes.io/docs/reference/using-api/cel/
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="POL001",
    name="admission-policy-violation",
    severity=Severity.ERROR,
    summary="An object fails a ValidatingAdmissionPolicy that a binding applies to it",
    kinds=("*",),
    engine=True,
    tags=("policy",),
    precision="high",
)
