"""
## What it does
Reports an `apiVersion` that the kind's API group no longer serves, and names the version
to use: removed Kubernetes APIs (`extensions/v1beta1` Deployment, `autoscaling/v2beta2`
HorizontalPodAutoscaler, `rbac.authorization.k8s.io/v1beta1`, `policy/v1beta1`
PodDisruptionBudget) for the configured `kube-version`, and custom-resource versions the
CRD no longer serves (`karpenter.sh/v1beta1` NodePool, `karpenter.sh/v1alpha5`
Provisioner, now `karpenter.sh/v1` NodePool; `karpenter.k8s.aws/v1alpha1`
AWSNodeTemplate, now `karpenter.k8s.aws/v1` EC2NodeClass). Versions that only a newer
Kubernetes serves, versions another controller serves (Kubeflow's Training Operator's
`kubeflow.org/v1` MPIJob beside the MPI Operator's `v2beta1`), and kinds ailint has no
schema for, are not reported.

## Why is this bad?
`kubectl apply` fails with "no matches for kind ... in version ...", so nothing is
created; copied examples from old blog posts and charts are the usual source. Where the
kind was renamed too (Karpenter's Provisioner and AWSNodeTemplate), its fields changed with
it, so the object needs migrating, not only a new `apiVersion`.

## Example
```yaml
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef:
        name: gpu
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
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["g6e"]
```

## Options
None. The Kubernetes version is `--kube-version` / `kube-version` (default 1.33).

## Fix
None: move to the version the message names and migrate the fields it changed.

## References
- https://kubernetes.io/docs/reference/using-api/deprecation-guide/
- https://karpenter.sh/docs/upgrading/v1-migration/
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="SCH006",
    name="unserved-api-version",
    severity=Severity.ERROR,
    summary="The apiVersion is removed or not served for this kind; the message names the one to use",
    engine=True,
    tags=("schema", "deprecation"),
    precision="very-high",
    why_when=(  # a renamed kind needs migrating; any other version only fails to apply
        (r"\(its fields changed too", "Where the kind was renamed too"),
        (r".", "kubectl apply fails"),
    ),
)
