"""Karpenter v1 NodePool and EC2NodeClass helpers (and EKS Auto Mode NodeClass lookups).

Every rule about NodePools or node classes reads them through here, so the semantics live
in one place. Functions accept a NodePool `K8sObject` or a `facts.NodePoolView` (anything
with an `.obj`). Facts checked against `karpenter.sh_nodepools.yaml` and
`karpenter.k8s.aws_ec2nodeclasses.yaml` (v1) and the spec's decisions 9 and 28:

- `disruption.consolidationPolicy`: `WhenEmpty`, `WhenEmptyOrUnderutilized` (default) or
  `Balanced`; "consolidation on" means the latter two, and never on a static NodePool
  (`spec.replicas` set: the CRD says policy and consolidateAfter are then ignored).
- `disruption.consolidateAfter`: duration or `Never`; the `disruption` default is
  `{consolidateAfter: 0s}`.
- `disruption.budgets`: default `[{nodes: "10%"}]`; `reasons` are `Underutilized`, `Empty`,
  `Drifted` (none listed = every reason); a budget with a `schedule` is active only in its
  window, so it never counts as blocking.
- `template.spec.nodeClassRef`: `group`, `kind`, `name` (all required).
- EC2NodeClass: `amiSelectorTerms[].alias` is `family@version` with families `al2`,
  `al2023`, `bottlerocket`, `windows2019`, `windows2022`, `windows2025` (Windows only
  `latest`); `instanceStorePolicy` only `RAID0`; `blockDeviceMappings` default per AMI
  family (AL2/AL2023 20Gi root; Bottlerocket 4Gi root + 20Gi data volume).

Rules import this module as `ailint.domain.karpenter`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ailint.core.model import K8sObject, as_dict, as_list, iter_dicts
from ailint.domain import instances
from ailint.domain.durations import parse_duration  # Karpenter's fields take Go durations
from ailint.domain.extract import Requirement, requirements_from_terms

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NODEPOOL_GROUP = "karpenter.sh"
EC2_NODECLASS_GROUP = "karpenter.k8s.aws"
AUTO_MODE_GROUP = "eks.amazonaws.com"

CONSOLIDATING_POLICIES = ("WhenEmptyOrUnderutilized", "Balanced")
DEFAULT_CONSOLIDATION_POLICY = "WhenEmptyOrUnderutilized"
INSTANCE_TYPE_KEYS = (
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
)
CAPACITY_TYPE_KEY = "karpenter.sh/capacity-type"
_PROVIDER_PREFIXES = ("karpenter.k8s.aws/", "eks.amazonaws.com/")

# Taints the kubelet, the node lifecycle controller or Karpenter put on nodes at run time:
# a NodePool template never means these, and no workload is expected to tolerate them.
RUNTIME_TAINT_PREFIXES = (
    "node.kubernetes.io/",
    "node.cloudprovider.kubernetes.io/",
    "karpenter.sh/",
)
ACCELERATOR_TAINT_KEYS = (
    "nvidia.com/gpu",
    "amd.com/gpu",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "habana.ai/gaudi",
)


def _obj(pool: Any) -> K8sObject:
    return pool.obj if hasattr(pool, "obj") and not isinstance(pool, K8sObject) else pool


# ---------------------------------------------------------------------------------------
# Disruption
# ---------------------------------------------------------------------------------------
def is_static(pool: Any) -> bool:
    """A static NodePool (`spec.replicas` set; `replicas: null` is a dynamic pool, the field
    being a pointer): it never consolidates and takes only `limits.nodes`."""
    return _obj(pool).get("spec", "replicas") is not None


def consolidation_policy(pool: Any) -> str:
    v = _obj(pool).get("spec", "disruption", "consolidationPolicy")
    return v if isinstance(v, str) and v else DEFAULT_CONSOLIDATION_POLICY


def consolidate_after(pool: Any) -> tuple[float | None, Any]:
    """(seconds, raw value) of `disruption.consolidateAfter`; 0s when unset (the CRD default)."""
    raw = _obj(pool).get("spec", "disruption", "consolidateAfter")
    if raw is None:
        return 0.0, None
    return parse_duration(raw), raw


def consolidates_running_pods(pool: Any) -> bool:
    """Consolidation that disrupts running pods is on (decision 9): policy
    WhenEmptyOrUnderutilized (default) or Balanced, `consolidateAfter` not `Never`, not a
    static NodePool (decision 28)."""
    if is_static(pool):
        return False
    if consolidation_policy(pool) not in CONSOLIDATING_POLICIES:
        return False
    secs, _ = consolidate_after(pool)
    return secs != math.inf


@dataclass(frozen=True, slots=True)
class Budget:
    """One disruption budget of a NodePool: how many nodes, for which reasons, and when."""

    index: int | None  # None for the CRD default budget
    nodes: str
    reasons: tuple[str, ...]  # empty = every reason
    schedule: str | None
    duration: str | None

    def covers(self, reason: str) -> bool:
        return not self.reasons or reason in self.reasons

    @property
    def always_active(self) -> bool:
        return not self.schedule

    @property
    def is_zero(self) -> bool:
        return self.nodes.strip() in ("0", "0%")


def budgets(pool: Any) -> list[Budget]:
    """The NodePool's disruption budgets, or the CRD default `[{nodes: "10%"}]`."""
    raw = _obj(pool).get("spec", "disruption", "budgets")
    if not isinstance(raw, list):
        return [Budget(None, "10%", (), None, None)]
    out = []
    for i, b in iter_dicts(raw):
        nodes = b.get("nodes", "10%")
        reasons = tuple(str(r) for r in as_list(b.get("reasons")))
        sched = b.get("schedule")
        dur = b.get("duration")
        out.append(
            Budget(
                i,
                str(nodes),
                reasons,
                str(sched) if sched else None,
                str(dur) if dur else None,
            )
        )
    return out


def reason_blocked(pool: Any, reason: str) -> bool:
    """Some always-active budget with `nodes: "0"` covers `reason` (decisions 9 and 28)."""
    return any(b.is_zero and b.always_active and b.covers(reason) for b in budgets(pool))


def reason_rate_limited(pool: Any, reason: str) -> bool:
    """A budget names `reason` explicitly (the user gated that kind of disruption on purpose),
    or a scheduled zero budget covers it."""
    for b in budgets(pool):
        if reason in b.reasons:
            return True
        if b.is_zero and b.covers(reason) and not b.always_active:
            return True
    return False


def drift_enabled(pool: Any) -> bool:
    return not reason_blocked(pool, "Drifted")


# ---------------------------------------------------------------------------------------
# Node classes
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class NodeClassRef:
    """The node class a NodePool points at (group, kind, name)."""

    group: str
    kind: str
    name: str

    @property
    def is_auto_mode(self) -> bool:
        return self.group == AUTO_MODE_GROUP

    @property
    def consistent(self) -> bool:
        """Group and kind agree (decision 13): `eks.amazonaws.com` goes with `NodeClass`,
        `karpenter.k8s.aws` with `EC2NodeClass`."""
        if self.group == AUTO_MODE_GROUP:
            return self.kind == "NodeClass"
        if self.group == EC2_NODECLASS_GROUP:
            return self.kind == "EC2NodeClass"
        return True


def node_class_ref(pool: Any) -> NodeClassRef | None:
    ref = _obj(pool).get("spec", "template", "spec", "nodeClassRef")
    if not isinstance(ref, dict):
        return None
    return NodeClassRef(
        str(ref.get("group") or ""),
        str(ref.get("kind") or ""),
        str(ref.get("name") or ""),
    )


def is_auto_mode(pool: Any) -> bool:
    """An EKS Auto Mode NodePool: its `nodeClassRef.group` is `eks.amazonaws.com`."""
    ref = node_class_ref(pool)
    return ref is not None and ref.is_auto_mode


def nodepools_for_node_class(node_class: K8sObject, ctx: Any) -> list[K8sObject]:
    """NodePools of the run whose `nodeClassRef` names this EC2NodeClass / NodeClass."""
    group = AUTO_MODE_GROUP if node_class.group == AUTO_MODE_GROUP else EC2_NODECLASS_GROUP
    out = []
    for o in ctx.of_kind("NodePool"):
        if o.group != NODEPOOL_GROUP:
            continue
        ref = node_class_ref(o)
        if ref and ref.name == node_class.name and ref.group == group and ref.kind == node_class.kind:
            out.append(o)
    return out


def parse_ami_alias(alias: Any) -> tuple[str, str] | None:
    """(family, version) of an `amiSelectorTerms[].alias` such as `al2023@latest`."""
    if not isinstance(alias, str) or "@" not in alias:
        return None
    family, _, version = alias.partition("@")
    family = family.strip().lower()
    if not family or not version:
        return None
    return family, version.strip()


def ami_aliases(node_class: K8sObject) -> Iterator[tuple[int, str, str]]:
    """(term index, family, version) for each alias term of an EC2NodeClass."""
    for i, term in iter_dicts(node_class.get("spec", "amiSelectorTerms")):
        parsed = parse_ami_alias(term.get("alias"))
        if parsed:
            yield i, parsed[0], parsed[1]


def ami_family(node_class: K8sObject) -> str | None:
    """`al2023`, `al2`, `bottlerocket`, `windows20xx` or `custom`: from the alias, else `amiFamily`."""
    for _, family, _ in ami_aliases(node_class):
        return family
    fam = node_class.get("spec", "amiFamily")
    return str(fam).lower() if isinstance(fam, str) and fam else None


# Instance labels EKS Auto Mode sets (`eks.amazonaws.com/<suffix>`), per the EKS user guide
# (automode/create-node-pool.adoc, "EKS Auto Mode Supported Labels"). Karpenter's
# `karpenter.k8s.aws/<suffix>` keys with these suffixes translate one to one.
AUTO_MODE_LABEL_SUFFIXES = (
    "instance-hypervisor",
    "instance-encryption-in-transit-supported",
    "instance-category",
    "instance-generation",
    "instance-family",
    "instance-size",
    "instance-cpu",
    "instance-cpu-manufacturer",
    "instance-memory",
    "instance-ebs-bandwidth",
    "instance-network-bandwidth",
    "instance-gpu-name",
    "instance-gpu-manufacturer",
    "instance-gpu-count",
    "instance-gpu-memory",
    "instance-local-nvme",
)
# Labels Auto Mode does not support in NodePool requirements (it runs Linux only).
AUTO_MODE_UNSUPPORTED_KEYS = ("kubernetes.io/os", "node.kubernetes.io/windows-build")


def auto_mode_key(key: str) -> str | None:
    """The Auto Mode equivalent of a `karpenter.k8s.aws/...` label key, or None when Auto Mode
    has none."""
    if key.startswith("karpenter.k8s.aws/"):
        suffix = key.split("/", 1)[1]
        if suffix in AUTO_MODE_LABEL_SUFFIXES:
            return "eks.amazonaws.com/" + suffix
    return None


# Default root (or data) volume that holds images and emptyDirs, per AMI family (GiB).
DEFAULT_CONTAINER_VOLUME_GIB = {"al2023": 20, "al2": 20, "bottlerocket": 20}
DEFAULT_ROOT_DEVICE = {
    "al2023": "/dev/xvda",
    "al2": "/dev/xvda",
    "bottlerocket": "/dev/xvdb",
}


# ---------------------------------------------------------------------------------------
# Requirements
# ---------------------------------------------------------------------------------------
def requirements(pool: Any) -> list[Requirement]:
    return requirements_from_terms(_obj(pool).get("spec", "template", "spec", "requirements"))


def requirement_items(pool: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, raw requirement) for each requirement mapping of the NodePool template."""
    yield from iter_dicts(_obj(pool).get("spec", "template", "spec", "requirements"))


def provider_suffix(key: str) -> str | None:
    """`instance-family` for `karpenter.k8s.aws/instance-family` or `eks.amazonaws.com/instance-family`."""
    for p in _PROVIDER_PREFIXES:
        if key.startswith(p):
            return key[len(p) :]
    return None


def values_for(pool: Any, *keys: str) -> tuple[str, ...] | None:
    """The values allowed by the `In` requirements on any of `keys` (intersected); None when
    no `In` requirement names them."""
    out: set[str] | None = None
    for r in requirements(pool):
        if r.key in keys and r.operator == "In":
            out = set(r.values) if out is None else out & set(r.values)
    return None if out is None else tuple(sorted(out))


def capacity_types(pool: Any) -> tuple[str, ...] | None:
    return values_for(pool, CAPACITY_TYPE_KEY)


def uses_reserved_capacity(pool: Any) -> bool:
    """ODCR / Capacity Blocks: capacity type `reserved`, or a capacity-reservation requirement."""
    ct = capacity_types(pool)
    if ct and "reserved" in ct:
        return True
    return any((provider_suffix(r.key) or "").startswith("capacity-reservation") for r in requirements(pool))


def instance_type_requirement(
    pool: Any,
) -> tuple[int, dict[str, Any], tuple[str, ...]] | None:
    """The `node.kubernetes.io/instance-type In [...]` requirement: (index, raw, values)."""
    for i, r in requirement_items(pool):
        if r.get("key") in INSTANCE_TYPE_KEYS and (r.get("operator") or "In") == "In":
            vals = tuple(str(v) for v in as_list(r.get("values")))
            return i, r, vals
    return None


def allowed_types(pool: Any) -> set[str] | None:
    """Table types (spec section 11) the pool's requirements allow; None when unconstrained."""
    return instances.matching_types(requirements(pool))


def single_type_family_resolution(pool: Any) -> str | None:
    """The one table type a pool resolves to through family/size requirements whose families
    are all in the table (so no unknown type could match too); None otherwise."""
    fams = values_for(pool, "karpenter.k8s.aws/instance-family", "eks.amazonaws.com/instance-family")
    if not fams:
        return None
    known = {it.family for it in instances.table().values()}
    if not all(f in known for f in fams):
        return None
    types = allowed_types(pool)
    if types is not None and len(types) == 1:
        return next(iter(types))
    return None


# ---------------------------------------------------------------------------------------
# Accelerators
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AcceleratorInfo:
    """Why a NodePool can launch accelerator nodes, and which vendors."""

    reason: str  # e.g. "instance-family In [g5, g6]" (for messages)
    vendors: frozenset[str]  # {"nvidia"}, {"neuron"}, {"amd"}, ... (empty: unknown vendor)
    only_accelerators: bool  # every type the pool allows has an accelerator

    @property
    def resource(self) -> str:
        """The extended resource to limit and to taint with."""
        if self.vendors == frozenset({"neuron"}):
            return "aws.amazon.com/neuron"
        if self.vendors == frozenset({"amd"}):
            return "amd.com/gpu"
        return "nvidia.com/gpu"


def _vendor_of_family(family: str) -> str | None:
    f = family.lower()
    if f.startswith(("inf", "trn")):
        return "neuron"
    if f.startswith("g4ad"):
        return "amd"
    if f.startswith("dl"):
        return "other"
    if f.startswith(("g", "p")):
        return "nvidia"
    return None


def _fmt(values: Iterable[str], limit: int = 4) -> str:
    vals = list(values)
    shown = ", ".join(vals[:limit]) + (", ..." if len(vals) > limit else "")
    return f"[{shown}]"


def _num(v: str) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def accelerator_info(pool: Any) -> AcceleratorInfo | None:
    """Whether the NodePool can launch accelerator instances, read from its requirements
    (accelerator families, categories or types; `instance-gpu-*` or `instance-accelerator-*`
    keys admitting devices) or an accelerator taint. A pool that says nothing about instance
    types is not counted (it could launch anything, but rarely does)."""
    reasons: list[str] = []
    vendors: set[str] = set()
    only = False
    for r in requirements(pool):
        suffix = provider_suffix(r.key)
        key_short = suffix or r.key
        if suffix and suffix.startswith(("instance-gpu-", "instance-accelerator-")):
            positive = False
            if r.operator == "Exists":
                positive = True
            elif r.operator in ("In",) and r.values:
                if suffix.endswith(("-count", "-memory")):
                    positive = any((_num(v) or 0) > 0 for v in r.values)
                else:
                    positive = True
            elif r.operator in ("Gt", "Gte") and r.values:
                n = _num(r.values[0])
                positive = n is not None and (n >= 0 if r.operator == "Gt" else n >= 1)
            if positive:
                reasons.append(f"{key_short} {r.operator}" + (f" {_fmt(r.values)}" if r.values else ""))
                vendors.add(
                    "neuron"
                    if suffix.startswith("instance-accelerator-")
                    else ("amd" if any(v.lower() == "amd" for v in r.values) else "nvidia")
                )
                only = True
            continue
        if suffix == "instance-family" and r.operator == "In":
            acc = [v for v in r.values if instances.is_accelerator_family(v)]
            if acc:
                reasons.append(f"{key_short} In {_fmt(r.values)}")
                vendors.update(v for v in (_vendor_of_family(f) for f in acc) if v)
                if len(acc) == len(r.values):
                    only = True
            continue
        if suffix == "instance-category" and r.operator == "In":
            acc = [v for v in r.values if v in instances.ACCELERATOR_CATEGORIES]
            if acc:
                reasons.append(f"{key_short} In {_fmt(r.values)}")
                for v in acc:
                    vend = _vendor_of_family(v + "0")
                    if vend:
                        vendors.add(vend)
                if len(acc) == len(r.values):
                    only = True
            continue
        if r.key in INSTANCE_TYPE_KEYS and r.operator == "In":
            acc = [v for v in r.values if instances.is_accelerator_type(v)]
            if acc:
                reasons.append(f"instance-type In {_fmt(r.values)}")
                vendors.update(v for v in (_vendor_of_family(instances.family_of(t)) for t in acc) if v)
                if len(acc) == len(r.values):
                    only = True
    taints = [t for _, t in iter_dicts(_obj(pool).get("spec", "template", "spec", "taints"))]
    for t in taints:
        key = str(t.get("key") or "")
        if key in ACCELERATOR_TAINT_KEYS:
            reasons.append(f"taint {key}")
            vendors.add(
                "neuron"
                if key.startswith("aws.amazon.com/neuron")
                else "amd"
                if key.startswith("amd.com")
                else "nvidia"
                if key.startswith("nvidia")
                else "other"
            )
    if not reasons:
        return None
    vendors.discard("other")
    return AcceleratorInfo("; ".join(reasons[:2]), frozenset(vendors), only)


def is_accelerator_pool(pool: Any) -> bool:
    return accelerator_info(pool) is not None


def scheduling_taints(pool: Any, *, tolerable: bool = False) -> list[tuple[int, dict[str, Any]]]:
    """(index, taint) of `template.spec.taints` with effect NoSchedule or NoExecute
    (startupTaints are temporary and do not count). With `tolerable`, only the taints a
    workload is expected to tolerate: a string key, not one of the RUNTIME_TAINT_PREFIXES."""
    out = []
    for i, t in iter_dicts(_obj(pool).get("spec", "template", "spec", "taints")):
        if t.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if tolerable:
            key = t.get("key")
            if not isinstance(key, str) or not key or key.startswith(RUNTIME_TAINT_PREFIXES):
                continue
        out.append((i, t))
    return out


def tolerable_taints(pool: Any) -> list[dict[str, Any]]:
    """The taints a pod must tolerate to land on the pool's nodes (see scheduling_taints)."""
    return [t for _, t in scheduling_taints(pool, tolerable=True)]


def limits(pool: Any) -> dict[str, Any]:
    return as_dict(_obj(pool).get("spec", "limits"))


def accelerator_limit(pool: Any) -> tuple[str, Any] | None:
    """(resource, value) of an accelerator entry in `spec.limits`, if any."""
    for k, v in limits(pool).items():
        if str(k) in (
            "nvidia.com/gpu",
            "amd.com/gpu",
            "aws.amazon.com/neuron",
            "aws.amazon.com/neuroncore",
            "aws.amazon.com/neurondevice",
            "habana.ai/gaudi",
        ):
            return str(k), v
    return None


def nodepools(ctx: Any) -> list[K8sObject]:
    """NodePool objects (group karpenter.sh) of the run."""
    return [o for o in ctx.of_kind("NodePool") if o.group == NODEPOOL_GROUP]
