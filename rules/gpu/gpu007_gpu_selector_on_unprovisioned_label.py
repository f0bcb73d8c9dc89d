"""
## What it does
Flags a `nodeSelector` or required node affinity that selects on a GPU label no
provisioner in the run sets, in a run whose GPU capacity comes from Karpenter or EKS Auto
Mode NodePools:
- labels only node-discovery agents set: `nvidia.com/gpu.present`, `nvidia.com/gpu.product`,
  `nvidia.com/gpu.count` and other `nvidia.com/*` keys (GPU Feature Discovery, the GPU
  Operator), `feature.node.kubernetes.io/*` (Node Feature Discovery);
- ad-hoc keys that name a GPU (`accelerator: nvidia-a10g`, `gpu: "true"`), when the pod
  also targets NodePools of the run (by `karpenter.sh/nodepool` or by a custom label one of
  them sets): custom labels are otherwise usually set by capacity outside the run.

Only pods that some accelerator NodePool of the run would host, but for the label in
question (its taints tolerated, the pod's other node requirements met), are judged: for
other pods the run does not show where their GPU capacity comes from. A key counts as
provisioned when a NodePool's `spec.template.metadata.labels` or
requirements name it, when an eksctl node group labels it, or (for discovery labels) when
the run contains the GPU Operator, GPU Feature Discovery or Node Feature Discovery, or the
profile sets `gpuOperatorInstalled: true`.

## Why is this bad?
Karpenter launches only nodes whose labels it knows: a pod selecting a label that no
NodePool sets stays Pending with "incompatible requirements". A DaemonSet (the DCGM
exporter, a device plugin) selecting such a label runs on no node at all, and the GPU
dashboards it feeds go blank, which looks like a healthy, idle fleet.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - key: karpenter.k8s.aws/instance-gpu-manufacturer
          operator: In
          values: ["nvidia"]
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: dcgm-exporter
spec:
  selector:
    matchLabels: {app: dcgm-exporter}
  template:
    metadata:
      labels: {app: dcgm-exporter}
    spec:
      nodeSelector:
        nvidia.com/gpu.present: "true"
      containers:
        - name: exporter
          image: nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.1-ubuntu22.04
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
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - key: karpenter.k8s.aws/instance-gpu-manufacturer
          operator: In
          values: ["nvidia"]
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: dcgm-exporter
spec:
  selector:
    matchLabels: {app: dcgm-exporter}
  template:
    metadata:
      labels: {app: dcgm-exporter}
    spec:
      nodeSelector:
        karpenter.k8s.aws/instance-gpu-manufacturer: nvidia
      containers:
        - name: exporter
          image: nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.1-ubuntu22.04
```

## Options
None. The profile key `gpuOperatorInstalled` (default false) says the GPU Operator or NFD
runs outside the files.

## Fix
Unsafe, for `nodeSelector` entries `nvidia.com/gpu.present`, `nvidia.com/gpu.count` and
`nvidia.com/gpu.product` (for products the instance table names): swaps the entry for the
provisioner's well-known label, `karpenter.k8s.aws/instance-gpu-manufacturer: nvidia`,
`instance-gpu-count` or `instance-gpu-name` (`eks.amazonaws.com/...` when the GPU NodePools
are Auto Mode pools). The other way out, adding the label to the NodePool template, is left
to you.

## References
- https://karpenter.sh/docs/concepts/scheduling/#well-known-labels
- https://docs.aws.amazon.com/eks/latest/userguide/create-node-pool.html
- https://github.com/NVIDIA/k8s-device-plugin#gpu-feature-discovery
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Edit, Finding, Fix, FixAvailability, K8sObject, Severity, as_dict, get_in, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import accelerators
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, effective_tolerations, pod_node_requirements, pod_templates, untolerated
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="GPU007",
    name="gpu-selector-on-unprovisioned-label",
    severity=Severity.WARNING,
    summary="A pod selects nodes on a GPU label that no NodePool or discovery agent in the run sets",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("gpu", "scheduling", "karpenter", "observability"),
    precision="high",
)

_WELL_KNOWN = lazy_re(
    r"^([a-z0-9.-]*kubernetes\.io/|karpenter\.sh/|karpenter\.k8s\.aws/|eks\.amazonaws\.com/|"
    r"k8s\.io/|[a-z0-9.-]*\.k8s\.io/|alpha\.eksctl\.io/|cloud\.google\.com/|"
    r"[a-z0-9.-]*azure\.com/|[a-z0-9.-]*\.amazonaws\.com/)"
)
_GPU_WORD = lazy_re(r"gpu|nvidia|accelerator|cuda", re.I)
_DISCOVERY_IMAGES = lazy_re(
    r"gpu-feature-discovery|node-feature-discovery|/nfd[:/@]|gpu-operator|"
    r"k8s-device-plugin.*gfd",
    re.I,
)
_DISCOVERY_KINDS = ("ClusterPolicy", "NodeFeatureDiscovery", "NodeFeatureRule", "NodeFeature", "NVIDIADriver")
_PRODUCTS = (
    ("l40s", re.compile(r"l40s", re.I)),
    ("l4", re.compile(r"(^|[-_ ])l4($|[-_ ])", re.I)),
    ("a10g", re.compile(r"a10g", re.I)),
    ("t4", re.compile(r"(^|[-_ ])t4($|[-_ ])", re.I)),
    ("h200", re.compile(r"h200", re.I)),
    ("h100", re.compile(r"h100", re.I)),
    ("a100", re.compile(r"a100", re.I)),
    ("b200", re.compile(r"b200", re.I)),
)


def _is_discovery_key(key: str) -> bool:
    return key.startswith(accelerators.DISCOVERY_PREFIXES)


def _is_gpu_adhoc(key: str, values: list[str]) -> bool:
    if _WELL_KNOWN.match(key) or _is_discovery_key(key):
        return False
    return bool(_GPU_WORD.search(key)) or any(_GPU_WORD.search(v) for v in values)


def _discovery_in_run(ctx: Any) -> bool:
    if ctx.profile.flag("gpuOperatorInstalled"):
        return True
    for kind in _DISCOVERY_KINDS:
        if any(True for _ in ctx.of_kind(kind)):
            return True
    for _o, pod in ctx.pods_in(None):
        for c in pod.containers():
            if _DISCOVERY_IMAGES.search(c.image) or "gpu-feature-discovery" in " ".join(c.tokens[:3]):
                return True
    return False


def _judged(key: str, vals: list[str]) -> bool:
    return _is_discovery_key(key) or _is_gpu_adhoc(key, vals)


def _could_host(ctx: Any, pod: Any, ert: bool) -> bool:
    """Some accelerator NodePool of the run would host the pod but for the labels judged here:
    its taints are tolerated and the pod's other node requirements fit it."""
    tols = effective_tolerations(pod, ert)
    terms = [[r for r in term if not _judged(r.key, list(r.values))] for term in pod_node_requirements(pod)]
    for pool in accelerators.accelerator_pools(ctx):
        if untolerated(pool.tolerable_taints, tols):
            continue
        if any(pool.compatible_with(t) for t in terms):
            return True
    return False


def _pins_run_pool(ctx: Any, pod: Any) -> bool:
    """The pod targets NodePools of the run by name or by a custom label one of them sets."""
    custom: dict[str, set[Any]] = {}
    for pool in ctx.nodepools:
        for k, v in pool.labels.items():
            if not _WELL_KNOWN.match(k):
                custom.setdefault(k, set()).add(v)
    for term in pod_node_requirements(pod):
        for r in term:
            if r.operator != "In":
                continue
            if r.key == accelerators.NODEPOOL_KEY and any(ctx.nodepool(v) is not None for v in r.values):
                return True
            if r.key in custom and custom[r.key] & set(r.values):
                return True
    return False


def _provisioned_keys(ctx: Any) -> set[str]:
    keys: set[str] = set()
    for pool in ctx.nodepools:
        keys |= set(pool.labels)
        keys |= {r.key for r in pool.requirements if r.operator not in ("DoesNotExist", "NotIn")}
    for o in ctx.of_kind("ClusterConfig"):
        for key in ("managedNodeGroups", "nodeGroups"):
            for _, ng in iter_dicts(o.data.get(key)):
                keys |= {str(k) for k in as_dict(ng.get("labels"))}
    return keys


def _selectors(pod: Any) -> Iterator[tuple[str, str, list[str], tuple, bool]]:
    """(key, operator, values, path, in_nodeSelector) for each positive node selection."""
    for k, v in as_dict(pod.spec.get("nodeSelector")).items():
        yield str(k), "In", [str(v)], pod.path("nodeSelector", k), True
    aff = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    for ti, term in iter_dicts(get_in(pod.spec, aff)):
        for ei, e in iter_dicts(term.get("matchExpressions")):
            op = str(e.get("operator") or "")
            if op in ("NotIn", "DoesNotExist") or not isinstance(e.get("key"), str):
                continue
            vals = [str(x) for x in e.get("values") or [] if x is not None] if isinstance(e.get("values"), list) else []
            yield e["key"], op, vals, pod.path(*aff, ti, "matchExpressions", ei, "key"), False


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if not accelerators.accelerator_pools(ctx):
        return  # GPU capacity does not come from NodePools the run shows
    provisioned: set[str] | None = None
    discovery: bool | None = None
    ert = ctx.profile.flag("extendedResourceToleration")
    for pod in pod_templates(obj):
        hosts: bool | None = None
        for key, _op, vals, path, in_selector in _selectors(pod):
            discovery_key = _is_discovery_key(key)
            if not discovery_key and not _is_gpu_adhoc(key, vals):
                continue
            if hosts is None:
                hosts = _could_host(ctx, pod, ert)
            if not hosts:
                break  # no GPU NodePool of the run would host it anyway: its capacity is elsewhere
            if not discovery_key and not _pins_run_pool(ctx, pod):
                continue  # custom labels are usually set by node groups or pools outside the run
            if provisioned is None:
                provisioned = ctx.memo("GPU007.provisioned_keys", lambda: _provisioned_keys(ctx))
            if key in provisioned:
                continue
            if discovery_key:
                if discovery is None:
                    discovery = _discovery_in_run(ctx)
                if discovery:
                    continue
            where = "nodeSelector" if in_selector else "required node affinity on"
            if obj.kind == "DaemonSet":
                then = "the DaemonSet runs on no GPU node"
            else:
                then = "the pod stays Pending (Karpenter launches no node for it)"
            if discovery_key:
                msg = (
                    f"{where} {key} is a GPU Feature Discovery/NFD label; no discovery agent or NodePool in "
                    f"the run sets it, so {then}"
                )
            else:
                msg = f"{where} {key} is a custom label no NodePool in the run sets, so {then}"
            fix = _fix(obj, ctx, pod, key, vals, path) if in_selector else None
            yield RULE.finding(obj, path, msg, fix=fix)


def _replacement(key: str, values: list[str]) -> tuple[str, str] | None:
    if not values:
        return None
    v = values[0]
    if key == "nvidia.com/gpu.present" and v.lower() == "true":
        return "instance-gpu-manufacturer", "nvidia"
    if key == "nvidia.com/gpu.count" and v.isdigit():
        return "instance-gpu-count", v
    if key == "nvidia.com/gpu.product":
        for name, rx in _PRODUCTS:
            if rx.search(v.replace("NVIDIA", " ").replace("Tesla", " ")):
                return "instance-gpu-name", name
    return None


def _fix(obj: Any, ctx: Any, pod: Any, key: str, values: list[str], path: tuple) -> Fix | None:
    rep = _replacement(key, values)
    if rep is None:
        return None
    acc = accelerators.accelerator_pools(ctx)
    modes = {p.is_auto_mode for p in acc}
    if len(modes) != 1:
        return None
    prefix = "eks.amazonaws.com/" if modes.pop() else "karpenter.k8s.aws/"
    new_key = prefix + rep[0]
    if new_key in as_dict(pod.spec.get("nodeSelector")):
        return None
    loc = obj.location(path)
    if loc is None:
        return None
    k_start, k_end = loc.key_start, loc.key_end
    if obj.source.text[k_start : k_start + 1] in "?&*!":
        return None
    value_edit = edits.replace_value(obj, path, edits.scalar(rep[1]))
    if value_edit is None:
        return None
    return make_fix(
        f"select {new_key}={rep[1]} instead", [Edit(k_start, k_end, edits.scalar(new_key)), value_edit], unsafe=True
    )
