"""
## What it does
Checks Karpenter `EC2NodeClass` objects (`karpenter.k8s.aws`) used for EFA training:

- (a) `spec.tags` keys that start with `aws:` (reserved by EC2; the EKS AI/ML guide sets
  `aws:ec2:placement-group`) or that Karpenter restricts (`kubernetes.io/cluster/*`,
  `karpenter.sh/nodepool`, `karpenter.sh/nodeclaim`, `karpenter.k8s.aws/ec2nodeclass`,
  `eks:eks-cluster-name`): error.
- (b) a NodeClass behind a NodePool that hosts multi-node EFA pods (pods requesting
  `vpc.amazonaws.com/efa` in a workload of two or more pods) with no
  `spec.placementGroupSelector`, no single-zone requirement on the NodePool or the pods, no
  single-subnet selector and no capacity reservation: warning.

Severity: error for a placement-group tag the provider does not accept (the NodeClass cannot
launch nodes).

## Why is this bad?
A tag is not a placement: EC2 refuses user tags with the `aws:` prefix, so launches fail,
and Karpenter's CRD rejects the restricted keys outright. Placement is
`spec.placementGroupSelector` (`name` or `id` of an existing placement group; a cluster
group for EFA). Without a placement group or at least a single AZ, the nodes of one job can
land in different zones: EFA does not cross AZs, NCCL falls back to slower paths, and
cross-zone traffic is billed.

## Example
```yaml
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: efa
spec:
  role: KarpenterNodeRole
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: my-cluster}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: my-cluster}
  tags:
    aws:ec2:placement-group: training-pg
```

## Use instead
```yaml
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: efa
spec:
  role: KarpenterNodeRole
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: my-cluster}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: my-cluster}
  placementGroupSelector:
    name: training-pg
```

## Options
None.

## Fix
Safe, for (a): removes the tag; for `aws:ec2:placement-group` it also adds
`placementGroupSelector` with the tag's value as `name` (or `id` for a `pg-...` value)
when the NodeClass has none. (b) has no fix: create a cluster placement group and
reference it, or pin the NodePool to one zone. `karpenter.k8s.aws/v1beta1` NodeClasses
(Karpenter releases without the field) are not checked for (b).

## References
- https://karpenter.sh/docs/concepts/nodeclasses/#specplacementgroupselector
- https://github.com/aws/karpenter-provider-aws/blob/main/pkg/apis/v1/ec2nodeclass.go (tag validations)
- https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html (EFA and cluster placement groups)
- https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html (the `aws:` prefix is reserved)
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.extract import pod_accelerators, pod_node_requirements
from ailint.domain.storage import pool_can_run
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="NET004",
    name="efa-training-no-placement-group",
    severity=Severity.WARNING,
    summary="An EFA training NodeClass uses reserved tags for placement, or has no placement group or single zone",
    kinds=("karpenter.k8s.aws/EC2NodeClass",),
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("efa", "karpenter", "network", "training"),
)

EFA = "vpc.amazonaws.com/efa"
PG_TAG = "aws:ec2:placement-group"
_RESTRICTED = (
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
    "eks:eks-cluster-name",
)
_ZONE_KEYS = ("topology.kubernetes.io/zone", "topology.k8s.aws/zone-id", "failure-domain.beta.kubernetes.io/zone")


def _restricted(key: str) -> str | None:
    if key.lower().startswith("aws:"):
        return "the aws: prefix is reserved by EC2, so launches with it fail"
    if key.startswith("kubernetes.io/cluster") or key in _RESTRICTED:
        return "Karpenter restricts this key and rejects the EC2NodeClass"
    return None


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    spec = as_dict(obj.data.get("spec"))
    has_pgs = isinstance(spec.get("placementGroupSelector"), dict)
    tags = as_dict(spec.get("tags"))
    for key, value in tags.items():
        why = _restricted(str(key))
        if why is None:
            continue
        path = ("spec", "tags", key)
        drop = (
            edits.delete_key(obj, ("spec", "tags"))
            if all(_restricted(str(k)) for k in tags)
            else edits.delete_key(obj, path)
        )
        if key == PG_TAG:
            msg = f"tag {key} places nothing: {why}; use spec.placementGroupSelector"
            group = str(value).strip() if isinstance(value, (str, int)) else ""
            fix_edits = [drop]
            if group and not has_pgs:
                sel = {"id": group} if re.fullmatch(r"pg-[0-9a-z]+", group) else {"name": group}
                fix_edits.append(edits.insert_value(obj, ("spec",), "placementGroupSelector", sel))
                title = f"replace the tag with placementGroupSelector {next(iter(sel))}: {group}"
            else:
                title = f"remove tag {key}"
            fix = make_fix(title, fix_edits)
        else:
            msg = f"tag {key} is not allowed: {why}"
            fix = make_fix(f"remove tag {key}", [drop])
        yield RULE.finding(obj, path, msg, severity=Severity.ERROR, fix=fix)
    if has_pgs or not obj.api_version.endswith("/v1") or not ctx.bundle:
        return
    if isinstance(spec.get("capacityReservationSelectorTerms"), list) and spec.get("capacityReservationSelectorTerms"):
        return
    subnets = [t for _, t in iter_dicts(spec.get("subnetSelectorTerms"))]
    if len(subnets) == 1 and subnets[0].get("id"):
        return  # a single subnet is a single AZ
    same_name = [o for o in ctx.of_kind("EC2NodeClass") if o.name == obj.name and o.group == obj.group]
    if len(same_name) > 1:
        return  # several NodeClasses of this name (alternative examples): which one a pool uses is unknown
    pools = [
        p
        for p in ctx.nodepools
        if p.node_class_ref.get("name") == obj.name and p.node_class_ref.get("kind", "EC2NodeClass") == "EC2NodeClass"
    ]
    pools = [p for p in pools if not _single_zone(p.requirements) and not _reserved(p)]
    if not pools:
        return
    for other, n, pod in ctx.memo("NET004.multi_node_efa", lambda: _multi_node_efa_jobs(ctx)):
        acc = pod_accelerators(pod)
        hosts = [p for p in ctx.pools_for(pod) if p in pools and pool_can_run(p, acc)]
        if not hosts or any(_single_zone(t) for t in pod_node_requirements(pod)):
            continue
        yield RULE.finding(
            obj,
            ("spec", "placementGroupSelector"),
            f"{ctx.describe(other)} runs {n} EFA pods on {ctx.describe(hosts[0].obj)}, but this "
            "EC2NodeClass has no placementGroupSelector and the pool is not pinned to one zone; "
            "EFA does not cross AZs",
        )
        return


def _single_zone(reqs: Any) -> bool:
    return any(r.key in _ZONE_KEYS and r.operator == "In" and len(r.values) == 1 for r in reqs)


def _reserved(pool: Any) -> bool:
    """Capacity Blocks and reservations already co-locate instances."""
    for r in pool.requirements:
        if r.key == "karpenter.sh/capacity-type" and r.operator == "In" and set(r.values) == {"reserved"}:
            return True
    return False


def _multi_node_efa_jobs(ctx: Any) -> list[tuple[Any, int, Any]]:
    """(object, pod count, EFA pod) of every multi-node EFA object of the run, once per run."""
    out = []
    for other, pods in ctx.pod_owners():
        job = _multi_node_efa(pods)
        if job is not None:
            out.append((other, job[0], job[1]))
    return out


def _multi_node_efa(pods: list[Any]) -> tuple[int, Any] | None:
    """(pod count, an EFA pod template) when the object of `pods` runs two or more pods and
    some request EFA."""
    efa = [p for p in pods if pod_accelerators(p).get(EFA, 0) > 0]
    if not efa:
        return None
    counts = [p.replicas for p in pods]
    known = [n for n in counts if n is not None]
    if len(known) != len(counts):
        return None
    total = sum(known)
    return (total, efa[0]) if total >= 2 else None
