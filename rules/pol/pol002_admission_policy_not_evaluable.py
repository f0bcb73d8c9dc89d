"""
## What it does
Reports a ValidatingAdmissionPolicy expression that ailint cannot evaluate offline for an
object the policy's binding matches, and names what is missing: a param that is not in the
run (`paramRef` with `parameterNotFoundAction: Deny`), the API server's `authorizer`,
`request.userInfo`, a Kubernetes CEL function ailint does not implement (the `format` and
`semver` libraries, two-variable comprehensions), or a runtime error such as a field that
the API server would have defaulted before admission (`object.spec.replicas` on a
Deployment that omits it).

## Why is this bad?
The policy is not checked for this object, so the manifest may still be rejected at apply
time. Reporting it, rather than passing silently, says which part of the cluster's policy
is not covered before the merge, and how to cover it (add the param object to the run or
to `--policies`, write the field explicitly).

## Example
```yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
      - apiGroups: ["apps"]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["deployments"]
  validations:
    - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit
spec:
  policyName: replica-limit
  validationActions: [Deny]
  paramRef:
    name: replica-limit
    namespace: default
    parameterNotFoundAction: Deny
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

## Use instead
```yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
      - apiGroups: ["apps"]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["deployments"]
  validations:
    - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit
spec:
  policyName: replica-limit
  validationActions: [Deny]
  paramRef:
    name: replica-limit
    namespace: default
    parameterNotFoundAction: Deny
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: replica-limit
  namespace: default
data:
  maxReplicas: "4"
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
None.

## Fix
None: add what is missing to the run (the param object, the field), or to `--policies`.

## References
- https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/#parameter-resources
- https://kubernetes.io/docs/reference/using-api/cel/
- docs/custom-rules.md (the Kubernetes CEL functions ailint supports)
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="POL002",
    name="admission-policy-not-evaluable",
    severity=Severity.INFO,
    summary="A ValidatingAdmissionPolicy cannot be evaluated offline for an object it matches",
    kinds=("*",),
    engine=True,
    tags=("policy",),
    precision="high",
)
