"""
## What it does
Reports a field that the object's schema does not have: a typo (`resource:` for
`resources:`, `shutdownAfterJobFinish` for `shutdownAfterJobFinishes`, `sise:` for `size:`)
or a key at the wrong level. Core kinds are checked against the Kubernetes OpenAPI schema
of the configured version (`kube-version`, default 1.33); Karpenter, KubeRay,
LeaderWorkerSet, JobSet, TrainJob, InferencePool and Kueue objects against schemas
generated from their CRDs. The message suggests the nearest known field name.

## Why is this bad?
The API server either rejects the object (`kubectl apply` uses strict field validation)
or silently drops the field (older clients, `--validate=false`, controllers that apply
unstructured objects). Either way the setting you wrote never takes effect: a typo in
`resources:` leaves the GPU container without requests or limits, and every rule that reads
the intended field is blind to it.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          resource:
            limits:
              nvidia.com/gpu: 1
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          resources:
            limits:
              nvidia.com/gpu: 1
```

## Options
None. Schema validation as a whole is turned off with `--no-schema` (or `schema: false`
in the config); the Kubernetes version is `--kube-version` / `kube-version`.

## Fix
None: rename or move the field (the message names the nearest known field).

## References
- https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation
- https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#field-pruning
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="SCH001",
    name="unknown-field",
    severity=Severity.ERROR,
    summary="A field is not part of the kind's schema (a typo or a key at the wrong level)",
    engine=True,
    tags=("schema",),
    precision="very-high",
)
