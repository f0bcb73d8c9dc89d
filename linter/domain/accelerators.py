"""GPU, Karpenter and capacity facts shared by the GPU, TRN and NET rules.

What this module answers, from the manifests of the run only:
- does a pod target accelerator nodes (by request or by node selection), and why;
- can a NodePool launch accelerator nodes (`yes`, `no`, or `maybe` when it does not say);
- which scheduling taints of a NodePool a pod does not tolerate;
- a pod's *closed* target instance set: only when every hosting pool (or the pod itself)
  pins the types to families the instance table knows completely, so a rule never judges
  a pool that may also launch types ailint has no numbers for;
- whether a pod may run on Spot capacity; whether the run shows pod-sparse (accelerator)
  capacity;
- small text-edit helpers (append several list items in one edit, tolerations).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Sequence
from functools import lru_cache

from ailint.core.lazyre import lazy_re
from ailint.core.model import Edit, K8sObject, Span, as_dict, as_list, iter_dicts
from ailint.domain import instances
from ailint.domain.extract import (
    ACCELERATOR_RESOURCES,
    NEURON_RESOURCES,
    PodTemplate,
    Requirement,
    pod_accelerators,
    pod_node_requirements,
)
from ailint.domain.quantities import parse_quantity
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# ---------------------------------------------------------------------------------------
# Instance families and node labels
# ---------------------------------------------------------------------------------------
TYPE_KEYS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
FAMILY_KEYS = ("karpenter.k8s.aws/instance-family", "eks.amazonaws.com/instance-family")
CATEGORY_KEYS = ("karpenter.k8s.aws/instance-category", "eks.amazonaws.com/instance-category")
GPU_NAME_KEYS = ("karpenter.k8s.aws/instance-gpu-name", "eks.amazonaws.com/instance-gpu-name")
ACC_NAME_KEYS = ("karpenter.k8s.aws/instance-accelerator-name", "eks.amazonaws.com/instance-accelerator-name")
COUNT_KEYS = tuple(
    p + s
    for p in ("karpenter.k8s.aws/", "eks.amazonaws.com/")
    for s in ("instance-gpu-count", "instance-accelerator-count")
)
CAPACITY_KEYS = ("karpenter.sh/capacity-type", "eks.amazonaws.com/capacityType")
NODEPOOL_KEY = "karpenter.sh/nodepool"

# Labels only node-discovery agents set (GPU Feature Discovery, NFD, the GPU Operator).
DISCOVERY_PREFIXES = ("nvidia.com/", "feature.node.kubernetes.io/", "amd.com/gpu", "beta.amd.com/")
# Discovery labels that say "this node has an NVIDIA / AMD GPU".
_GPU_DISCOVERY_KEYS = lazy_re(
    r"^(nvidia\.com/gpu(\.|$)|nvidia\.com/mig|nvidia\.com/cuda|amd\.com/gpu|"
    r"feature\.node\.kubernetes\.io/pci-(10de|1002)[._-])"
)

_GPU_WORDS = lazy_re(r"gpu|nvidia|accelerat|neuron|inferentia|trainium|cuda", re.I)


@lru_cache(maxsize=1)
def table_families() -> frozenset[str]:
    return frozenset(it.family for it in instances.table().values())


@lru_cache(maxsize=1)
def _closed_gpu_names() -> frozenset[str]:
    # GPU names whose EC2 families are all in the table (every size of them).
    return frozenset(it.gpu_name for it in instances.table().values() if it.gpu_name)


_CLOSED_ACC_NAMES = frozenset({"inferentia2", "trainium"})


def is_gpu_discovery_key(key: str) -> bool:
    return bool(_GPU_DISCOVERY_KEYS.match(key))


# ---------------------------------------------------------------------------------------
# Does a pod target accelerator nodes?
# ---------------------------------------------------------------------------------------
def requirement_selects_accelerators(r: Requirement, ctx: Any = None) -> bool:
    """One node requirement of a pod that can only be met by accelerator nodes."""
    op, key, vals = r.operator, r.key, r.values
    if op in ("NotIn", "DoesNotExist"):
        return False
    if key in COUNT_KEYS:
        if op == "Exists":
            return True
        if op == "Gt":
            q = parse_quantity(vals[0]) if vals else None
            return q is not None and q >= 0
        if op == "In":
            return bool(vals) and all((parse_quantity(v) or 0) > 0 for v in vals)
        return False
    if key.startswith(instances.ACCELERATOR_LABEL_PREFIXES):
        # nodes without an accelerator carry no instance-gpu-*/instance-accelerator-* label
        return op == "Exists" or (op in ("In", "Gt", "Lt") and bool(vals))
    if op != "In" or not vals:
        return op == "Exists" and is_gpu_discovery_key(key)
    if key in TYPE_KEYS:
        return all(instances.is_accelerator_type(v) for v in vals)
    if key in FAMILY_KEYS:
        return all(instances.is_accelerator_family(v) for v in vals)
    if key in CATEGORY_KEYS:
        return all(v in instances.ACCELERATOR_CATEGORIES for v in vals)
    if key == NODEPOOL_KEY and ctx is not None:
        pools = [ctx.nodepool(v) for v in vals]
        return all(p is not None and pool_capability(p) == "yes" for p in pools)
    if is_gpu_discovery_key(key):
        return not (key.endswith(".present") and all(str(v).lower() == "false" for v in vals))
    return False


def main_resource(acc: dict[str, float]) -> str:
    """The accelerator resource to name in a message (GPUs first, EFA last)."""
    order = list(ACCELERATOR_RESOURCES)
    return sorted(acc, key=lambda r: (order.index(r) if r in order else len(order), r))[0]


def container_label(c: Any) -> str:
    """`container <name>`, or its position when it has no name."""
    if c.name:
        return f"container {c.name}"
    kind = "initContainers" if c.init else "containers"
    return f"{kind}[{c.path[-1]}]"


def accelerator_target(pod: PodTemplate, ctx: Any = None) -> str | None:
    """Why the pod targets accelerator nodes (a short phrase), or None when it does not.

    Either it requests an accelerator resource, or every required node-selection term
    (nodeSelector ANDed into each nodeAffinity term) can only match accelerator nodes.
    """
    acc = pod_accelerators(pod)
    if acc:
        res = main_resource(acc)
        return f"requests {res}"
    terms = pod_node_requirements(pod)
    reasons = []
    for term in terms:
        hit = next((r for r in term if requirement_selects_accelerators(r, ctx)), None)
        if hit is None:
            return None
        reasons.append(hit)
    if not reasons:
        return None
    r = reasons[0]
    if r.operator == "In" and r.values:
        return f"selects accelerator nodes ({r.key}={r.values[0]})"
    return f"selects accelerator nodes ({r.key} {r.operator}{' ' + r.values[0] if r.values else ''})"


# ---------------------------------------------------------------------------------------
# NodePools
# ---------------------------------------------------------------------------------------
_CAPABILITY: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def pool_capability(pool: Any) -> str:
    """Can this NodePool launch accelerator nodes: `yes`, `no`, or `maybe` (it does not say)."""
    try:
        return _CAPABILITY[pool]
    except (KeyError, TypeError):
        pass
    cap = _pool_capability(pool)
    try:
        _CAPABILITY[pool] = cap  # a pure memo: the view is immutable for the run
    except TypeError:
        pass
    return cap


def _pool_capability(pool: Any) -> str:
    reqs = pool.requirements
    for r in reqs:
        if requirement_selects_accelerators(r):
            return "yes"
    if any(str(t.get("key")) in ACCELERATOR_RESOURCES for t in pool.taints):
        return "yes"
    for k, _v in pool.labels.items():
        if is_gpu_discovery_key(k) or k.startswith(instances.ACCELERATOR_LABEL_PREFIXES):
            return "yes"
    # Requirements that rule every accelerator type out.
    for r in reqs:
        op, key, vals = r.operator, r.key, r.values
        if key in COUNT_KEYS or key.startswith(instances.ACCELERATOR_LABEL_PREFIXES):
            if op == "DoesNotExist":
                return "no"
            if key in COUNT_KEYS and op == "In" and vals and all((parse_quantity(v) or 0) == 0 for v in vals):
                return "no"
            if key in COUNT_KEYS and op == "Lt" and vals and (parse_quantity(vals[0]) or 0) <= 1:
                return "no"
        if op != "In" or not vals:
            continue
        if key in TYPE_KEYS and not any(instances.is_accelerator_type(v) for v in vals):
            return "no"
        if key in FAMILY_KEYS and not any(instances.is_accelerator_family(v) for v in vals):
            return "no"
        if key in CATEGORY_KEYS and not any(v in instances.ACCELERATOR_CATEGORIES for v in vals):
            return "no"
    # A pool whose requirements merely allow some accelerator types (instance-cpu > 64, an
    # instance-family list mixing GPU and CPU families) is not an accelerator pool.
    return "maybe"


def taint_text(t: dict[str, Any]) -> str:
    key = str(t.get("key") or "")
    value = t.get("value")
    kv = f"{key}={value}" if value not in (None, "") else key
    return f"{kv}:{t.get('effect') or ''}"


def is_accelerator_taint(t: dict[str, Any]) -> bool:
    key = str(t.get("key") or "")
    return (
        key in ACCELERATOR_RESOURCES
        or bool(_GPU_WORDS.search(key))
        or bool(_GPU_WORDS.search(str(t.get("value") or "")))
    )


def hosting_pools(ctx: Any, pod: PodTemplate, *, needs_accelerators: bool) -> list[Any]:
    """NodePools whose requirements and labels let them host the pod, ignoring taints.

    With `needs_accelerators`, pools that rule accelerators out are dropped.
    """
    terms = pod_node_requirements(pod)
    memo = getattr(ctx, "memo", None)
    if memo is not None:  # pods with the same node requirements share the answer
        key = (needs_accelerators, tuple(tuple((r.key, r.operator, r.values) for r in t) for t in terms))
        # a memo per key, so the results cache notes the pools this read for every later reader
        hit = memo(("accelerators.hosting_pools", key), lambda: _hosting_pools(ctx, terms, needs_accelerators))
        return list(hit)
    return _hosting_pools(ctx, terms, needs_accelerators)


def _hosting_pools(ctx: Any, terms: list[list[Any]], needs_accelerators: bool) -> list[Any]:
    out = []
    for pool in ctx.nodepools:
        if pool.obj.get("spec", "template") is None:
            continue
        if not any(pool.compatible_with(t) for t in terms):
            continue
        if needs_accelerators and pool_capability(pool) == "no":
            continue
        out.append(pool)
    return out


def pins_pool(pod: PodTemplate, pool: Any) -> bool:
    """The pod names this pool explicitly (`karpenter.sh/nodepool`) or a label only it sets."""
    for term in pod_node_requirements(pod):
        for r in term:
            if r.key == NODEPOOL_KEY and r.operator == "In" and pool.name in r.values:
                return True
            if (
                r.operator == "In"
                and r.key in pool.labels
                and pool.labels[r.key] in r.values
                and not r.key.startswith(("kubernetes.io/", "karpenter.", "eks.amazonaws.com/", "node.kubernetes.io/"))
            ):
                return True
    return False


# ---------------------------------------------------------------------------------------
# Target instance set (closed form)
# ---------------------------------------------------------------------------------------
def closes_types(reqs: Iterable[Requirement]) -> bool:
    """Requirements that pin instance types to families the table covers completely."""
    for r in reqs:
        if r.operator != "In" or not r.values:
            continue
        if r.key in TYPE_KEYS and all(instances.get(v) is not None for v in r.values):
            return True
        if r.key in FAMILY_KEYS and all(v in table_families() for v in r.values):
            return True
        if r.key in GPU_NAME_KEYS and all(v in _closed_gpu_names() for v in r.values):
            return True
        if r.key in ACC_NAME_KEYS and all(v in _CLOSED_ACC_NAMES for v in r.values):
            return True
    return False


def target_types(ctx: Any, pod: PodTemplate) -> set[str] | None:
    """The pod's target instance set (spec section 0), or None when it is not known for sure.

    Pools that could host the pod are those whose taints it tolerates and whose
    requirements meet its own; each (pool, term) pair must pin types to families the
    instance table covers, otherwise the pool may launch types ailint cannot size.
    """
    terms = pod_node_requirements(pod)
    needs_acc = bool(pod_accelerators(pod))
    pools = []
    if getattr(ctx, "bundle", False):
        pools = [p for p in ctx.pools_for(pod) if not (needs_acc and pool_capability(p) == "no")]
    out: set[str] = set()
    if pools:
        for pool in pools:
            for term in terms:
                if not pool.compatible_with(term):
                    continue
                reqs = list(pool.requirements) + list(term)
                if not closes_types(reqs):
                    return None
                out |= instances.matching_types(reqs) or set()
        return out or None
    for term in terms:
        if not closes_types(term):
            return None
        out |= instances.matching_types(term) or set()
    return out or None


def describe_types(types: Iterable[str], limit: int = 3) -> str:
    ts = sorted(types, key=instance_type_order)
    if len(ts) <= limit:
        return ", ".join(ts)
    return ", ".join(ts[:limit]) + f" and {len(ts) - limit} more"


def instance_type_order(t: str) -> tuple[str, int, str]:
    """Sort key of instance types: by family, then size (vCPUs), then name."""
    it = instances.get(t)
    return (it.family if it else t, it.vcpu if it else 0, t)


def largest_type(types: Iterable[str]) -> str | None:
    best = None
    for t in types:
        it = instances.get(t)
        if it is None:
            continue
        if best is None or (it.allocatable_cpu_m, it.allocatable_memory_mib) > (
            best.allocatable_cpu_m,
            best.allocatable_memory_mib,
        ):
            best = it
    return best.type if best else None


def device_count(it: Any, resource: str) -> int:
    """How many of `resource` one node of this type offers."""
    if resource in ("nvidia.com/gpu",):
        return it.count if it.is_gpu else 0
    if resource == "amd.com/gpu":
        return 0
    if resource in ("aws.amazon.com/neuron", "aws.amazon.com/neurondevice"):
        return it.count if it.is_neuron else 0
    if resource == "aws.amazon.com/neuroncore":
        return (it.neuron_cores or 0) if it.is_neuron else 0
    if resource == "vpc.amazonaws.com/efa":
        return it.efa_max
    return 0


# ---------------------------------------------------------------------------------------
# Capacity type and pod-sparse evidence
# ---------------------------------------------------------------------------------------
def _capacity_values(reqs: Iterable[Requirement]) -> set[str] | None:
    vals = None
    for r in reqs:
        if r.key in CAPACITY_KEYS and r.operator == "In":
            v = {str(x).lower() for x in r.values}
            vals = v if vals is None else vals & v
    return vals


def pod_may_use_spot(ctx: Any, pod: PodTemplate) -> bool:
    """The pod itself requires Spot, or every NodePool that could host it allows Spot."""
    terms = pod_node_requirements(pod)
    own = [_capacity_values(t) for t in terms]
    if own and all(v is not None and v <= {"spot"} and v for v in own):
        return True
    if not getattr(ctx, "bundle", False):
        return False
    pools = ctx.pools_for(pod)
    if not pools:
        return False
    for pool in pools:
        vals = _capacity_values(pool.requirements)
        if vals is None or "spot" not in vals:
            return False  # Karpenter's default capacity type is on-demand
    return True


def accelerator_pools(ctx: Any) -> list[Any]:
    memo = getattr(ctx, "memo", None)
    if memo is None:
        return [p for p in ctx.nodepools if pool_capability(p) == "yes"]
    return list(
        memo("accelerators.accelerator_pools", lambda: [p for p in ctx.nodepools if pool_capability(p) == "yes"])
    )


def eksctl_accelerator_nodegroups(ctx: Any) -> list[str]:
    """Names of eksctl (managed) node groups whose instance types are accelerator types."""
    out = []
    for o in ctx.of_kind("ClusterConfig"):
        if not o.group.startswith("eksctl.io"):
            continue
        for key in ("managedNodeGroups", "nodeGroups"):
            for _, ng in iter_dicts(o.get("spec", key) if o.get("spec", key) is not None else o.data.get(key)):
                types: list[Any] = (
                    [ng.get("instanceType")]
                    + as_list(ng.get("instanceTypes"))
                    + as_list(as_dict(ng.get("instancesDistribution")).get("instanceTypes"))
                )
                types = [t for t in types if isinstance(t, str)]
                if types and all(instances.is_accelerator_type(t) for t in types):
                    out.append(str(ng.get("name") or key))
    return out


# ---------------------------------------------------------------------------------------
# Text in manifests
# ---------------------------------------------------------------------------------------
def line_span_in_value(obj: K8sObject, path: Sequence[Any], needle: str) -> Span | None:
    """The span of the first line of the scalar at `path` that contains `needle`.

    Works for block (`|`, `>`) and plain multi-line scalars, whose lines appear in the
    file in order; falls back to the value's span.
    """
    from ailint.core.model import Span

    p = obj.positions.get(obj.base + tuple(path))
    if p is None:
        return None
    src = obj.source
    for line in range(p[4], p[6] + 1):
        text = src.line_text(line)
        if line == p[4]:
            col0 = p[5] - 1
            seg = text[col0:]
        else:
            col0, seg = 0, text
        i = seg.find(needle)
        if i >= 0:
            start = col0 + i
            stripped_end = len(text.rstrip())
            return Span(line, start + 1, line, max(stripped_end + 1, start + 2))
    return None


# ---------------------------------------------------------------------------------------
# Edits
# ---------------------------------------------------------------------------------------
def append_items(obj: K8sObject, seq_path: Sequence[Any], items: Sequence[Any]) -> Edit | None:
    """Append several items to a block sequence as one edit (None when not possible)."""
    parts = []
    start = None
    for i, item in enumerate(items):
        e = edits.append_item(obj, seq_path, item)
        if e is None:
            return None
        body = e.content
        if i and body.startswith(("\n", "\r\n")):
            body = body.lstrip("\r\n")
        parts.append(body)
        start = e.start
    if start is None:
        return None
    return Edit(start, start, "".join(parts))


def add_list_items(obj: K8sObject, parent_path: Sequence[Any], key: str, items: Sequence[Any]) -> Edit | None:
    """Add items to the list `parent.key`: append to a block list, rewrite a flow list,
    or insert the key with a new block list."""
    path = tuple(parent_path) + (key,)
    cur = obj.get(*path)
    if isinstance(cur, list) and cur and not edits.is_flow(obj, path):
        return append_items(obj, path, items)
    if isinstance(cur, list) and obj.has(path):
        merged = list(cur) + list(items)
        return edits.replace_value(obj, path, edits.inline(merged))
    if cur is None and key not in as_dict(obj.get(*parent_path)):
        if not isinstance(obj.get(*parent_path), dict) or edits.is_flow(obj, parent_path):
            return None
        return edits.insert_value(obj, parent_path, key, list(items))
    return None


_PAUSE_IMAGE = lazy_re(r"(^|/)pause(:|@|$)")
_VGPU_RESOURCES = ("nvidia.com/gpumem", "nvidia.com/gpucores", "nvidia.com/gpumem-percentage")


def is_placeholder(c: Any) -> bool:
    """A `pause` container: it only holds resources (overprovisioning, scale tests)."""
    return bool(_PAUSE_IMAGE.search(c.image))


def shares_gpus(c: Any) -> bool:
    """HAMi-style virtual GPUs: `nvidia.com/gpu` then counts slices, not devices."""
    res = set(c.resources("limits")) | set(c.resources("requests"))
    return any(r in res for r in _VGPU_RESOURCES)


def toleration_item(taint: dict[str, Any]) -> dict[str, Any]:
    """A toleration for one taint: `Exists` for accelerator taints (any value, the device
    plugin convention); `Equal` on the value otherwise, so a tenant or dedicated taint is
    not tolerated for every tenant at once."""
    key, effect, value = str(taint.get("key")), str(taint.get("effect")), taint.get("value")
    if value in (None, "") or is_accelerator_taint(taint):
        return {"key": key, "operator": "Exists", "effect": effect}
    return {"key": key, "operator": "Equal", "value": str(value), "effect": effect}


__all__ = [
    "NEURON_RESOURCES",
    "accelerator_pools",
    "accelerator_target",
    "add_list_items",
    "append_items",
    "closes_types",
    "describe_types",
    "device_count",
    "hosting_pools",
    "line_span_in_value",
    "pod_may_use_spot",
    "pool_capability",
    "requirement_selects_accelerators",
    "taint_text",
    "target_types",
    "toleration_item",
]


def merge_inserts(parts: Sequence[Edit | None]) -> list[Edit] | None:
    """Edits of one fix, with inserts at the same offset joined in the given order.

    `apply_to_text` cannot order two inserts at one point, so a fix that inserts, say, a
    container's `volumeMounts` and the pod's `volumes` at the same offset must hand it
    one edit. Returns None when any part is None (the fix is then not offered).
    """
    if any(p is None for p in parts):
        return None
    out: list[Edit] = []
    for e in parts:
        assert e is not None
        for i, prev in enumerate(out):
            if prev.start == prev.end == e.start == e.end:
                body = e.content
                if prev.content.endswith("\n") and body.startswith(("\n", "\r\n")):
                    body = body.lstrip("\r\n")
                out[i] = Edit(prev.start, prev.end, prev.content + body)
                break
        else:
            out.append(e)
    return out


def set_map_values(obj: K8sObject, mapping_path: Sequence[Any], values: dict[str, Any]) -> list[Edit] | None:
    """Add keys to a mapping, creating the mapping (and its missing parents) as needed.

    `mapping_path` may not exist yet: the nearest existing block mapping receives the
    missing parents as a nested block. Flow mappings are rewritten inline.
    """
    path = tuple(mapping_path)
    cur = obj.get(*path)
    if isinstance(cur, dict) and obj.has(path):
        if edits.is_flow(obj, path) or not cur:
            merged = {**cur, **values}
            e = edits.replace_value(obj, path, edits.inline(merged))
            return None if e is None else [e]
        return merge_inserts([edits.insert_value(obj, path, k, v) for k, v in values.items()])
    # build the missing chain under the nearest existing mapping
    nested: Any = dict(values)
    p = path
    while p and not (isinstance(obj.get(*p), dict) and obj.has(p)):
        nested = {p[-1]: nested}
        p = p[:-1]
    if not p and obj.base:
        return None
    parent = obj.get(*p)
    if not isinstance(parent, dict) or not parent or edits.is_flow(obj, p):
        return None
    ((key, val),) = nested.items()
    if key in parent:
        return None  # present but not a mapping (null, a scalar): leave it to a human
    e = edits.insert_value(obj, p, key, val)
    return None if e is None else [e]
