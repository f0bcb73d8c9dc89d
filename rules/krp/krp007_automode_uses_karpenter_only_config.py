"""
## What it does
Checks EKS Auto Mode configuration (NodePools whose `nodeClassRef.group` is
`eks.amazonaws.com`) for self-managed Karpenter habits that Auto Mode does not support:

- (a) Auto Mode NodePool requirements on `karpenter.k8s.aws/*` keys, or on the unsupported
  `kubernetes.io/os` / `node.kubernetes.io/windows-build`; and pods whose `nodeSelector` or
  required node affinity uses `karpenter.k8s.aws/*` keys while they can only land on Auto
  Mode nodes (they pin `karpenter.sh/nodepool` to Auto Mode pools, or the profile sets
  `autoMode: true` and the run has no self-managed NodePool). Auto Mode labels its nodes
  `eks.amazonaws.com/instance-*`, so these selectors match nothing. Error.
- (b) a NodePool whose `nodeClassRef` group and kind disagree (`eks.amazonaws.com` with
  `EC2NodeClass`, or `karpenter.k8s.aws` with `NodeClass`). Error.
- (c) a DaemonSet installing the NVIDIA or Neuron device plugin onto Auto Mode nodes (Auto
  Mode ships the plugin itself, invisibly). Warning. A DaemonSet that excludes
  `eks.amazonaws.com/compute-type: auto` is fine.
- (d) an Auto Mode `NodeClass` named `default`, or a NodePool that redefines the built-in
  `system` or `general-purpose` pools. Warning.

Severity: warning for a NodePool that redefines a built-in Auto Mode pool, for a DaemonSet
that installs a device plugin Auto Mode nodes already run, and for a custom NodeClass named
default; an error otherwise.

## Why is this bad?
Selectors on labels no node carries leave pods Pending and NodePools unable to launch
anything; a NodePool that references the wrong NodeClass kind is never ready. A second
device plugin fights the built-in one over the GPUs. The `default` NodeClass and the
built-in NodePools belong to Auto Mode: it overwrites changes to them, and EKS documents
that a custom NodeClass must not be called `default`.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef:
        group: eks.amazonaws.com
        kind: NodeClass
        name: gpu
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["g6e"]
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
        group: eks.amazonaws.com
        kind: NodeClass
        name: gpu
      requirements:
        - key: eks.amazonaws.com/instance-family
          operator: In
          values: ["g6e"]
```

## Options
None.

## Fix
Safe for (a): renames `karpenter.k8s.aws/instance-X` to `eks.amazonaws.com/instance-X` for
the keys Auto Mode supports (family, category, generation, size, cpu, memory, gpu name,
count, manufacturer and memory, local NVMe, hypervisor, bandwidths). Other findings need a
decision and get no fix.

## References
- https://docs.aws.amazon.com/eks/latest/userguide/create-node-pool.html
- https://docs.aws.amazon.com/eks/latest/userguide/auto-accelerated.html
- https://docs.aws.amazon.com/eks/latest/userguide/create-node-class.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Edit, Finding, Fix, FixAvailability, K8sObject, Severity, as_dict, as_list, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, pod_templates

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="KRP007",
    name="automode-uses-karpenter-only-config",
    severity=Severity.ERROR,
    summary="EKS Auto Mode objects use self-managed Karpenter labels, node classes or device plugins",
    kinds=("karpenter.sh/NodePool", "eks.amazonaws.com/NodeClass", *POD_KINDS),
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("karpenter", "auto-mode"),
)

_DEVICE_PLUGIN = lazy_re(r"k8s-device-plugin|nvidia-device-plugin|neuron-device-plugin|neuron-k8s-device-plugin")
BUILT_IN_POOLS = ("system", "general-purpose")


def _rename_key(obj: K8sObject, path: tuple, old: str, new: str) -> Edit | None:
    """Rename a mapping key in place (keeps its quoting)."""
    loc = obj.location(path)
    if loc is None:
        return None
    text = obj.source.text[loc.key_start : loc.key_end]
    if text.strip("\"'") != old:
        return None
    return Edit(loc.key_start, loc.key_end, text.replace(old, new))


def _rename_value(obj: K8sObject, path: tuple, old: str, new: str) -> Edit | None:
    loc = obj.location(path)
    if loc is None or loc.value.line != loc.value.end_line:
        return None
    text = obj.source.text[loc.value_start : loc.value_end]
    if text.strip("\"'") != old:
        return None
    return Edit(loc.value_start, loc.value_end, text.replace(old, new))


def _key_fix(edit: Edit | None, old: str, new: str) -> Fix | None:
    return make_fix(f"use {new}", [edit]) if edit is not None else None


def _nodepool(obj: K8sObject) -> Iterator[Finding]:
    from ailint.domain import karpenter  # (here: a pod of a run with no NodePool never loads it)

    ref = karpenter.node_class_ref(obj)
    if ref is None:
        return
    if not ref.consistent:
        right = "NodeClass" if ref.group == karpenter.AUTO_MODE_GROUP else "EC2NodeClass"
        yield RULE.finding(
            obj,
            ("spec", "template", "spec", "nodeClassRef", "kind"),
            f"nodeClassRef group {ref.group} goes with kind {right}, not {ref.kind}: the NodePool never "
            "resolves its node class",
            anchor="value",
        )
    if not ref.is_auto_mode:
        return
    for i, r in karpenter.requirement_items(obj):
        key = r.get("key")
        if not isinstance(key, str):
            continue
        path = ("spec", "template", "spec", "requirements", i, "key")
        if key.startswith("karpenter.k8s.aws/"):
            new = karpenter.auto_mode_key(key)
            hint = f"; use {new}" if new else "; Auto Mode has no equivalent label"
            yield RULE.finding(
                obj,
                path,
                f"Auto Mode NodePool {obj.name!r} requires {key}, a self-managed Karpenter label Auto "
                f"Mode nodes never carry{hint}",
                anchor="value",
                fix=_key_fix(_rename_value(obj, path, key, new), key, new) if new else None,
            )
        elif key in karpenter.AUTO_MODE_UNSUPPORTED_KEYS:
            yield RULE.finding(
                obj,
                path,
                f"Auto Mode NodePool {obj.name!r} requires {key}, which Auto Mode does not support "
                "(it runs Linux nodes only); drop the requirement",
                anchor="value",
            )
    if obj.name in BUILT_IN_POOLS:
        yield RULE.finding(
            obj,
            ("metadata", "name"),
            f"NodePool {obj.name!r} redefines a built-in Auto Mode pool: built-in pools cannot be "
            "modified (only enabled or disabled); create a custom NodePool instead",
            severity=Severity.WARNING,
            anchor="value",
        )


def _auto_pools(ctx: Any) -> tuple[set[str], bool]:
    """(names of Auto Mode NodePools, whether the run has a self-managed NodePool)."""
    from ailint.domain import karpenter  # (here: a pod of a run with no NodePool never loads it)

    auto, managed = set(), False
    for p in karpenter.nodepools(ctx):
        if karpenter.is_auto_mode(p):
            auto.add(p.name or "")
        else:
            managed = True
    return auto, managed


def _only_auto_mode(pod: Any, ctx: Any) -> bool:
    auto, managed = _auto_pools(ctx)
    sel = as_dict(pod.spec.get("nodeSelector"))
    pinned = sel.get("karpenter.sh/nodepool")
    if isinstance(pinned, str):
        return pinned in auto
    terms = as_list(
        as_dict(
            as_dict(as_dict(pod.spec.get("affinity")).get("nodeAffinity")).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            )
        ).get("nodeSelectorTerms")
    )
    for _, term in iter_dicts(terms):
        for _, e in iter_dicts(term.get("matchExpressions")):
            if e.get("key") == "karpenter.sh/nodepool" and e.get("operator") == "In":
                vals = [str(v) for v in as_list(e.get("values"))]
                if vals and all(v in auto for v in vals):
                    return True
    return ctx.profile.flag("autoMode") and not managed


def _pod_selectors(obj: K8sObject, ctx: Any) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        uses = [k for k in as_dict(pod.spec.get("nodeSelector")) if str(k).startswith("karpenter.k8s.aws/")]
        terms = as_list(
            as_dict(
                as_dict(as_dict(pod.spec.get("affinity")).get("nodeAffinity")).get(
                    "requiredDuringSchedulingIgnoredDuringExecution"
                )
            ).get("nodeSelectorTerms")
        )
        exprs = []
        for ti, term in iter_dicts(terms):
            for ei, e in iter_dicts(term.get("matchExpressions")):
                if isinstance(e.get("key"), str) and e["key"].startswith("karpenter.k8s.aws/"):
                    exprs.append((ti, ei, e["key"]))
        if not uses and not exprs:
            continue
        if not _only_auto_mode(pod, ctx):
            continue
        from ailint.domain import karpenter  # (here: a pod that names no Karpenter label never loads it)

        for k in uses:
            path = pod.path("nodeSelector", k)
            new = karpenter.auto_mode_key(str(k))
            yield RULE.finding(
                obj,
                path,
                f"nodeSelector {k} targets Auto Mode nodes, which carry eks.amazonaws.com/instance-* "
                f"labels instead: the pod stays Pending" + (f"; use {new}" if new else ""),
                fix=_key_fix(_rename_key(obj, path, str(k), new), str(k), new) if new else None,
            )
        for ti, ei, k in exprs:
            path = pod.path(
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms",
                ti,
                "matchExpressions",
                ei,
                "key",
            )
            new = karpenter.auto_mode_key(k)
            yield RULE.finding(
                obj,
                path,
                f"node affinity on {k} targets Auto Mode nodes, which carry eks.amazonaws.com/instance-* "
                f"labels instead: the pod stays Pending" + (f"; use {new}" if new else ""),
                anchor="value",
                fix=_key_fix(_rename_value(obj, path, k, new), k, new) if new else None,
            )


def _excludes_auto(pod: Any) -> bool:
    sel = as_dict(pod.spec.get("nodeSelector"))
    ct = sel.get("eks.amazonaws.com/compute-type")
    if ct is not None and ct != "auto":
        return True
    terms = as_list(
        as_dict(
            as_dict(as_dict(pod.spec.get("affinity")).get("nodeAffinity")).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            )
        ).get("nodeSelectorTerms")
    )
    if not terms:
        return False
    for _, term in iter_dicts(terms):
        ok = False
        for _, e in iter_dicts(term.get("matchExpressions")):
            if e.get("key") != "eks.amazonaws.com/compute-type":
                continue
            vals = [str(v) for v in as_list(e.get("values"))]
            if (
                (e.get("operator") == "NotIn" and "auto" in vals)
                or e.get("operator") == "DoesNotExist"
                or (e.get("operator") == "In" and "auto" not in vals)
            ):
                ok = True
        if not ok:
            return False
    return True


def _daemonset(obj: K8sObject, ctx: Any) -> Iterator[Finding]:
    auto, managed = _auto_pools(ctx)
    if not (ctx.profile.flag("autoMode") or (auto and not managed)):
        return
    for pod in pod_templates(obj):
        if _excludes_auto(pod):
            continue
        for c in pod.containers():
            if _DEVICE_PLUGIN.search(c.image):
                plugin = "Neuron" if "neuron" in c.image else "NVIDIA"
                yield RULE.finding(
                    obj,
                    c.path_of("image"),
                    f"DaemonSet {obj.name!r} installs the {plugin} device plugin on Auto Mode nodes, "
                    "which already run it; exclude eks.amazonaws.com/compute-type: auto or remove it",
                    severity=Severity.WARNING,
                )
                return


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "NodePool":
        from ailint.domain import karpenter  # (here: a pod of a run with no NodePool never loads it)

        if obj.group == karpenter.NODEPOOL_GROUP:
            yield from _nodepool(obj)
        return
    if obj.kind == "NodeClass":
        from ailint.domain import karpenter

        if obj.group == karpenter.AUTO_MODE_GROUP and obj.name == "default":
            yield RULE.finding(
                obj,
                ("metadata", "name"),
                "a custom Auto Mode NodeClass must not be named 'default': that name belongs to the built-in NodeClass",
                severity=Severity.WARNING,
                anchor="value",
            )
        return
    if obj.kind == "DaemonSet":
        yield from _daemonset(obj, ctx)
    yield from _pod_selectors(obj, ctx)
