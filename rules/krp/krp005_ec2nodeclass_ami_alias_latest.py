"""
## What it does
Finds `EC2NodeClass` objects whose `amiSelectorTerms[].alias` is `<family>@latest`
(`al2023`, `al2` or `bottlerocket`) and that NodePools of the run use to launch accelerator
nodes. Windows families are skipped (they only allow `latest`). Severity drops to info when
every such NodePool gates drift with a budget (a budget naming `Drifted`, or a scheduled
`nodes: "0"` window), and the finding disappears when an always-active `nodes: "0"` budget
blocks drift. A NodeClass that no NodePool in the run references is not reported.

## Why is this bad?
With `@latest`, every new EKS AMI release (new NVIDIA driver, CUDA, EFA or Neuron runtime)
makes Karpenter see the GPU nodes as drifted and replace them, restarting model servers and
training jobs, and new nodes come up on a driver nobody tested. A driver that no longer
matches the container's CUDA shows up only at runtime. Pinning `family@vYYYYMMDD` makes AMI
upgrades a reviewed change.

## Example
```yaml
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: gpu
spec:
  role: KarpenterNodeRole
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: my-cluster}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: my-cluster}
---
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
          values: ["g5", "g6"]
```

## Use instead
```yaml
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: gpu
spec:
  role: KarpenterNodeRole
  amiSelectorTerms:
    - alias: al2023@v20250715
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: my-cluster}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: my-cluster}
---
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
          values: ["g5", "g6"]
```

## Options
- `pinned_amis` (object, default `{}`): AMI version per alias family, for example
  `{"al2023": "v20250715", "bottlerocket": "v1.42.0"}`. When a family is listed, the fix
  pins the alias to it.

## Fix
Unsafe, only for families listed in `pinned_amis`: rewrites `family@latest` to
`family@<version>` (look the version up in SSM or the EKS AMI release notes). Without the
option there is no fix.

## References
- https://karpenter.sh/docs/concepts/nodeclasses/#specamiselectorterms
- https://karpenter.sh/docs/concepts/disruption/#drift
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity
from ailint.core.rule import Option, Options, Rule, Scope, make_fix
from ailint.domain import karpenter
from ailint.domain.context import Context
from ailint.fix import edits

RULE = Rule(
    code="KRP005",
    name="ec2nodeclass-ami-alias-latest",
    severity=Severity.WARNING,
    summary="An EC2NodeClass used for accelerator nodes follows the latest AMI, so every release drifts GPU nodes",
    kinds=("karpenter.k8s.aws/EC2NodeClass",),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    options={"pinned_amis": Option({}, "AMI version per alias family used by the fix", "object")},
    tags=("karpenter", "gpu", "drift"),
)

_PINNABLE = ("al2", "al2023", "bottlerocket")


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    latest = [(i, fam) for i, fam, ver in karpenter.ami_aliases(obj) if ver.lower() == "latest" and fam in _PINNABLE]
    if not latest:
        return
    pools = [p for p in karpenter.nodepools_for_node_class(obj, ctx) if karpenter.is_accelerator_pool(p)]
    drifting = [p for p in pools if karpenter.drift_enabled(p)]
    if not drifting:
        return
    gated = all(karpenter.reason_rate_limited(p, "Drifted") for p in drifting)
    sev = Severity.INFO if gated else Severity.WARNING
    names = ", ".join(repr(p.name) for p in drifting[:3]) + (", ..." if len(drifting) > 3 else "")
    pins = opts.get_dict("pinned_amis")
    for i, fam in latest:
        path = ("spec", "amiSelectorTerms", i, "alias")
        fix = None
        version = pins.get(fam)
        if isinstance(version, str) and version and version != "latest":
            fix = make_fix(
                f"pin the alias to {fam}@{version}",
                [edits.replace_value(obj, path, edits.scalar(f"{fam}@{version}"))],
                unsafe=True,
            )
        note = "; drift budgets gate the rollout" if gated else ""
        yield RULE.finding(
            obj,
            path,
            f"alias {fam}@latest on the NodeClass of accelerator NodePool{'s' if len(drifting) > 1 else ''} "
            f"{names}: every AMI release (new GPU/Neuron driver, CUDA, EFA) drifts and replaces those nodes; pin "
            f"{fam}@<version>{note}",
            severity=sev,
            fix=fix,
        )
