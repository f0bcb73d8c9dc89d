"""
## What it does
Reports a value of the wrong type for its field: a string where an integer belongs
(`replicas: "2"`), a number or boolean where a string belongs (an unquoted label value
`gpu: true`, an env `value: 8080`), a list where a mapping belongs. In custom resources a
fractional CPU written as a number (`cpu: 0.5`) is also a type error: their quantity fields
accept only integers and strings.

## Why is this bad?
The API server rejects the object ("cannot unmarshal bool into Go struct field ... of type
string", or for custom resources "must be of type integer,string"). YAML 1.1 turns
`yes`, `on`, `true` and bare numbers into non-strings, so the mistake is easy to miss in
review.

## Example
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  labels:
    gpu: true
spec:
  containers:
    - name: trainer
      image: nvcr.io/nvidia/pytorch:24.05-py3
```

## Use instead
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  labels:
    gpu: "true"
spec:
  containers:
    - name: trainer
      image: nvcr.io/nvidia/pytorch:24.05-py3
```

## Options
None. Schema validation as a whole is turned off with `--no-schema`.

## Fix
None: quote the value or write it as the type the message names.

## References
- https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set
- https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#intorstring
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="SCH002",
    name="wrong-type",
    severity=Severity.ERROR,
    summary="A value has the wrong type for its field (for example an unquoted label value)",
    engine=True,
    tags=("schema",),
    precision="very-high",
)
