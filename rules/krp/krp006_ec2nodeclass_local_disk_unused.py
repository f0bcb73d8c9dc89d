"""
## What it does
Checks the disk an `EC2NodeClass` gives accelerator nodes, through the NodePools of the run
that use it:

- (a) no `spec.instanceStorePolicy: RAID0` while every instance type the NodePools allow
  (accelerator table, spec section 11) has local NVMe (g4dn, g5, g6, g6e, gr6, p4d, p4de,
  p5*, p6-b200, trn1*, trn2);
- (b) every allowed type lacks NVMe (inf2), the NodeClass has no `blockDeviceMappings`, so
  the AMI default volume holds images and caches (AL2023/AL2 20Gi root, Bottlerocket 20Gi
  data volume), and pods scheduled there need more than 85% of it (sum of their non-memory
  emptyDir `sizeLimit`s and the `ailint.io/image-size` / `ailint.io/model-size` annotations).

Skipped: EKS Auto Mode NodeClasses, NodeClasses that no NodePool of the run uses, (a) when
`userData` prepares the NVMe itself or a local-volume provisioner / NVMe hostPath is in the
run, (b) for custom and Windows AMI families.

## Why is this bad?
Karpenter ignores instance-store NVMe unless `instanceStorePolicy: RAID0` is set: the
terabytes of local disk at several GB/s that GPU instances ship with stay unused, while
container images (10 to 115 GB for AI images) and emptyDir model caches fill the EBS volume
that holds container storage (the 20Gi root volume on AL2023/AL2, the 20Gi data volume
`/dev/xvdb` on Bottlerocket, unless `blockDeviceMappings` resize it), which evicts pods on
disk pressure and slows every cold start. The message names that volume and its size.

## Example
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
          values: ["g5", "g6e"]
```

## Use instead
```yaml
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: gpu
spec:
  role: KarpenterNodeRole
  instanceStorePolicy: RAID0
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
          values: ["g5", "g6e"]
```

## Options
- `volume_size` (string, default `200Gi`): the volume size the fix for (b) writes.

## Fix
Safe. (a) adds `instanceStorePolicy: RAID0`. (b) adds `blockDeviceMappings` with an
encrypted gp3 volume of `volume_size` (AL2023/AL2: `/dev/xvda`; Bottlerocket: the 4Gi
`/dev/xvda` root plus `/dev/xvdb` data volume).

## References
- https://karpenter.sh/docs/concepts/nodeclasses/#specinstancestorepolicy
- https://karpenter.sh/docs/concepts/nodeclasses/#specblockdevicemappings
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, iter_dicts
from ailint.core.rule import Option, Options, Rule, Scope, make_fix
from ailint.domain import instances, karpenter
from ailint.domain.context import Context
from ailint.domain.quantities import format_bytes, parse_quantity
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="KRP006",
    name="ec2nodeclass-local-disk-unused",
    severity=Severity.WARNING,
    summary="An EC2NodeClass leaves GPU instance NVMe unused, or keeps images and caches on a 20Gi default volume",
    kinds=("karpenter.k8s.aws/EC2NodeClass",),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    options={"volume_size": Option("200Gi", "volume size written by the blockDeviceMappings fix", "string")},
    tags=("karpenter", "storage", "gpu"),
)

_NVME_USERDATA = lazy_re(r"nvme|mdadm|instance.?store|raid", re.I)
_LOCAL_PROVISIONER = lazy_re(r"local-(volume|static)-provisioner|sig-storage-local")


def _nvme_used_directly(obj: Any, ctx: Any, pools: list[Any]) -> bool:
    """The NodeClass's userData prepares the NVMe, or a pod that uses the instance store can
    land on one of these NodePools (a pod on other pools says nothing about this NodeClass)."""
    if _NVME_USERDATA.search(str(obj.get("spec", "userData") or "")):
        return True
    names = {p.name for p in pools}
    return any(
        names & {v.name for v in ctx.pools_for(pod, check_taints=False)}
        for pod in ctx.memo("KRP006.nvme_pods", lambda: _pods_use_nvme(ctx))
    )


def _pods_use_nvme(ctx: Any) -> list[Any]:
    """Pods of the run that mount the instance store or run a local volume provisioner (once per run)."""
    out = []
    for _o, p in ctx.pods_in(None):
        if any(_LOCAL_PROVISIONER.search(c.image) for c in p.containers()):
            out.append(p)
            continue
        for _, v in iter_dicts(p.spec.get("volumes")):
            hp = str(as_dict(v.get("hostPath")).get("path") or "")
            if "nvme" in hp or "k8s-disks" in hp or "instance-store" in hp:
                out.append(p)
                break
    return out


def _pod_disk_need(pod: Any) -> float:
    total = 0.0
    for key in ("ailint.io/image-size", "ailint.io/model-size"):
        value = pod.annotation(key)
        q = parse_quantity(str(value)) if value is not None else None
        if q:
            total += q
    for _, v in iter_dicts(pod.spec.get("volumes")):
        ed = v.get("emptyDir")
        if isinstance(ed, dict) and ed.get("medium") != "Memory":
            q = parse_quantity(ed.get("sizeLimit"))
            if q:
                total += q
    return total


def _container_volume(obj: Any) -> str:
    """The EBS volume that holds images and emptyDirs on this NodeClass's nodes: the data
    volume /dev/xvdb on Bottlerocket (20Gi by default), the root volume elsewhere (20Gi on
    AL2023/AL2), with its size from `blockDeviceMappings` when set there."""
    family = karpenter.ami_family(obj)
    maps = [m for _, m in iter_dicts(obj.get("spec", "blockDeviceMappings"))]
    if family == "bottlerocket":
        what, pick = "data volume /dev/xvdb", [m for m in maps if m.get("deviceName") == "/dev/xvdb"]
    else:
        what = "root volume"
        pick = [m for m in maps if m.get("rootVolume") is True] or [
            m for m in maps if m.get("deviceName") == karpenter.DEFAULT_ROOT_DEVICE.get(family or "", "/dev/xvda")
        ]
    if pick:
        size = as_dict(pick[0].get("ebs")).get("volumeSize")
        return f"the {size} {what}" if isinstance(size, (str, int)) and not isinstance(size, bool) else f"the {what}"
    if not maps and family in karpenter.DEFAULT_CONTAINER_VOLUME_GIB:
        return f"the default {karpenter.DEFAULT_CONTAINER_VOLUME_GIB[family]}Gi {what}"
    return f"the {what}"


def _bdm_value(family: str, size: str) -> list[dict[str, Any]]:
    def ebs(sz: str) -> dict[str, Any]:
        return {"volumeSize": sz, "volumeType": "gp3", "encrypted": True}

    if family == "bottlerocket":
        return [{"deviceName": "/dev/xvda", "ebs": ebs("4Gi")}, {"deviceName": "/dev/xvdb", "ebs": ebs(size)}]
    return [{"deviceName": "/dev/xvda", "ebs": ebs(size)}]


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    pools = karpenter.nodepools_for_node_class(obj, ctx)
    if not pools:
        return
    spec = as_dict(obj.get("spec"))
    if not spec:
        return
    nvme_pools, bare_pools = [], []
    for p in pools:
        types = karpenter.allowed_types(p)
        if not types or instances.names_unknown_type(karpenter.requirements(p)):
            continue
        nvme = [known.local_nvme_gb for t in types if (known := instances.get(t))]
        if nvme and all(n > 0 for n in nvme):
            nvme_pools.append((p, sorted(types)))
        elif nvme and all(n == 0 for n in nvme):
            bare_pools.append((p, sorted(types)))
    if (
        nvme_pools
        and spec.get("instanceStorePolicy") != "RAID0"
        and not _nvme_used_directly(obj, ctx, [p for p, _ in nvme_pools])
    ):
        p, pool_types = nvme_pools[0]
        # (every type of an NVMe pool is known: the pool was kept for its known types' disks)
        smallest = min(
            (it for it in (instances.get(t) for t in pool_types) if it is not None), key=lambda it: it.local_nvme_gb
        )
        yield RULE.finding(
            obj,
            ("spec",),
            f"EC2NodeClass {obj.name!r} has no instanceStorePolicy: RAID0, so the local NVMe of "
            f"{ctx.describe(p)} ({smallest.type}: {smallest.local_nvme_gb} GB and up) is ignored; images and "
            f"caches fill {_container_volume(obj)}",
            fix=make_fix(
                "add instanceStorePolicy: RAID0", [edits.insert_key(obj, ("spec",), "instanceStorePolicy", "RAID0")]
            ),
        )
        return
    if not bare_pools or "blockDeviceMappings" in spec:
        return
    family = karpenter.ami_family(obj)
    if family not in karpenter.DEFAULT_CONTAINER_VOLUME_GIB:
        return
    room = karpenter.DEFAULT_CONTAINER_VOLUME_GIB[family] * 2**30 * 0.85
    pool_names = {p.name for p, _ in bare_pools}
    need, who = 0.0, None
    needs = ctx.memo("KRP006.disk_needs", lambda: [(o, pod, _pod_disk_need(pod)) for o, pod in ctx.pods_in(None)])
    for o, pod, n in needs:
        if n <= need:  # cheap test first: most pods need nothing
            continue
        if not any(pl.name in pool_names for pl in ctx.pools_for(pod)):
            continue
        need, who = n, ctx.describe(o)
    if need <= room:
        return
    size = opts.get_str("volume_size")
    fams = ", ".join(sorted({instances.family_of(t) for _, ts in bare_pools for t in ts}))
    vol = "data volume /dev/xvdb" if family == "bottlerocket" else "root volume"
    yield RULE.finding(
        obj,
        ("spec",),
        f"EC2NodeClass {obj.name!r} uses the default {karpenter.DEFAULT_CONTAINER_VOLUME_GIB[family]}Gi "
        f"{vol} on instances without NVMe ({fams}), but {who} needs about "
        f"{format_bytes(need)} of images and caches there",
        fix=make_fix(
            f"add blockDeviceMappings with a {size} gp3 volume",
            [edits.insert_value(obj, ("spec",), "blockDeviceMappings", _bdm_value(family, size))],
        ),
    )
