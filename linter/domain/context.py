"""The run's context: what cross-resource rules know about the other objects.

Single-object rules only read `ctx.profile` and their options. Bundle rules ask the
context: NodePools that could host a pod, objects by kind and namespace, label selector
matches. Everything is indexed once per run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from ailint.core.model import K8sObject, as_dict, as_list, get_in, iter_dicts
from ailint.core.paths import root_relative
from ailint.domain import instances
from ailint.domain.extract import (
    ACCELERATOR_RESOURCES,
    PodTemplate,
    Profile,
    Requirement,
    effective_tolerations,
    pod_node_requirements,
    requirements_from_terms,
    untolerated,
)
from ailint.domain.resources import CLUSTER_SCOPED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def shown_path(obj: K8sObject, root: str = "") -> str:
    """The file of `obj` as messages name it: relative to the run `root` (the folder SARIF
    URIs are relative to, `ailint.core.paths.run_root`), so it reads the same from any
    subfolder; the path the run shows when there is no root or the file lies outside it."""
    src = obj.source
    if root and not src.is_stdin and src.path:
        rel = root_relative(src.path, root)
        if rel is not None:
            return rel
    return obj.file


def describe(obj: K8sObject, root: str = "") -> str:
    """How a message names another object: `Kind namespace/name (path)`, the namespace
    left out for cluster-scoped kinds, e.g. `NodePool gpu (karpenter/nodepools.yaml)`.
    Bundle rules call `ctx.describe(obj)`, which passes the run root."""
    name = obj.name or "(unnamed)"
    if (obj.group, obj.kind) not in CLUSTER_SCOPED and obj.kind not in _UNSCOPED:
        name = f"{obj.namespace_or_default}/{name}"  # a namespace a cluster-scoped kind sets is ignored
    return f"{obj.kind or 'object'} {name} ({shown_path(obj, root)})"


# documents that are not API objects (no namespace to show)
_UNSCOPED = frozenset({"DeschedulerPolicy", "KubeSchedulerConfiguration"})


def copyable_selector(selector: Any) -> dict[str, Any] | None:
    """`selector` as a LabelSelector a fix can copy into a new object (a PodDisruptionBudget,
    a NetworkPolicy): string matchLabels and/or mapping matchExpressions, nothing else and not
    empty; None otherwise."""
    if not isinstance(selector, dict) or not set(selector) <= {"matchLabels", "matchExpressions"}:
        return None
    ml, exprs = selector.get("matchLabels"), selector.get("matchExpressions")
    if (
        (ml is None or (isinstance(ml, dict) and all(isinstance(v, str) for v in ml.values())))
        and (exprs is None or (isinstance(exprs, list) and all(isinstance(e, dict) for e in exprs)))
        and (ml or exprs)
    ):
        return {k: v for k, v in selector.items() if v}
    return None


def selector_terms(selector: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """(matchLabels, matchExpressions) of a LabelSelector; a plain map (a Service's
    `spec.selector`) is all matchLabels."""
    if "matchLabels" in selector or "matchExpressions" in selector:
        return as_dict(selector.get("matchLabels")), as_list(selector.get("matchExpressions"))
    return selector, []


def selector_matches(selector: Any, labels: dict[str, Any]) -> bool:
    """A LabelSelector (matchLabels + matchExpressions) or a plain map against labels.

    An empty selector matches everything; a non-mapping matches nothing.
    """
    if not isinstance(selector, dict):
        return False
    labels = {str(k): str(v) for k, v in labels.items()}
    ml, exprs = selector_terms(selector)
    for k, v in ml.items():
        if labels.get(str(k)) != str(v):
            return False
    for _, e in iter_dicts(exprs):
        key, op = str(e.get("key")), e.get("operator")
        vals = [str(v) for v in as_list(e.get("values"))]
        have = labels.get(key)
        if op == "In" and have not in vals:
            return False
        if op == "NotIn" and have in vals:
            return False
        if op == "Exists" and have is None:
            return False
        if op == "DoesNotExist" and have is not None:
            return False
    return True


def nearest(origin: K8sObject, candidates: list[Any], of: Callable[[Any], K8sObject] = lambda c: c) -> list[Any]:
    """The candidates a reference from `origin` (a route's Service name, a selector) reaches,
    in run order: of several copies of one object (the same kind, namespace and name), the
    copy in `origin`'s file, else those in its folder, else all of them; every other
    candidate as it is. `of` maps a candidate to its object.

    A repository may keep alternatives of one object: two blueprints that each define the
    RayService `stablediffusion/stablediffusion` with its own Ingress. Each is applied with the
    files beside it, so a reference reaches the copy next to it, and a message that named the
    other blueprint's copy would send the reader to a file this one is never applied with.
    Objects of different names are never alternatives: a selector may reach all of them."""
    if len(candidates) < 2:
        return list(candidates)
    copies: dict[tuple[str, str, str, str | None], list[int]] = {}
    for i, c in enumerate(candidates):
        o = of(c)
        copies.setdefault((o.kind, o.group, o.namespace_or_default, o.name), []).append(i)
    if all(len(group) == 1 for group in copies.values()):
        return list(candidates)
    folder = _folder(origin.file)
    kept: list[int] = []
    for group in copies.values():
        here = [i for i in group if of(candidates[i]).file == origin.file]
        beside = here or [i for i in group if _folder(of(candidates[i]).file) == folder]
        kept += beside or group
    return [candidates[i] for i in sorted(kept)]


def _folder(file: str) -> str:
    return file.replace("\\", "/").rpartition("/")[0]


@dataclass(eq=False)
class NodePoolView:
    """A Karpenter / EKS Auto Mode NodePool, read once."""

    obj: K8sObject

    @property
    def name(self) -> str:
        return self.obj.name or ""

    @cached_property
    def taints(self) -> list[dict[str, Any]]:
        return [t for _, t in iter_dicts(self.obj.get("spec", "template", "spec", "taints"))]

    @cached_property
    def requirements(self) -> list[Requirement]:
        return requirements_from_terms(self.obj.get("spec", "template", "spec", "requirements"))

    @cached_property
    def labels(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in as_dict(self.obj.get("spec", "template", "metadata", "labels")).items()}

    @cached_property
    def tolerable_taints(self) -> list[dict[str, Any]]:
        """The taints a pod must tolerate to land on the pool's nodes
        (`karpenter.tolerable_taints`), the Karpenter domain imported when a run first asks:
        a run with no NodePool never loads it. Read once per pool: GPU001 asks every pool
        about every pod object it checks (33,000 times a run where the corpus is one project)."""
        from ailint.domain.karpenter import tolerable_taints

        return tolerable_taints(self)

    @property
    def limits(self) -> dict[str, Any]:
        return as_dict(self.obj.get("spec", "limits"))

    @property
    def node_class_ref(self) -> dict[str, Any]:
        return as_dict(self.obj.get("spec", "template", "spec", "nodeClassRef"))

    @property
    def is_auto_mode(self) -> bool:
        return self.node_class_ref.get("group") == "eks.amazonaws.com"

    @cached_property
    def allowed_types(self) -> set[str] | None:
        """Known table types the pool can launch; None when its requirements do not say."""
        return instances.matching_types(self.requirements)

    @cached_property
    def can_launch_accelerators(self) -> bool:
        """The pool's requirements allow accelerator types, or it carries an accelerator taint."""
        for r in self.requirements:
            if r.key.endswith(("instance-gpu-count", "instance-accelerator-count")) and r.operator in ("Gt", "Exists"):
                return True
            if r.key.startswith(instances.ACCELERATOR_LABEL_PREFIXES) and r.operator in ("In", "Exists", "Gt"):
                return True
        # Only requirements that name types or families can say "this pool launches GPUs":
        # a table match on `instance-cpu Gt 64` alone says nothing (the table only lists
        # accelerator types).
        naming = {
            "node.kubernetes.io/instance-type",
            "beta.kubernetes.io/instance-type",
            "karpenter.k8s.aws/instance-family",
            "eks.amazonaws.com/instance-family",
        }
        if any(r.key in naming and r.operator == "In" for r in self.requirements) and self.allowed_types:
            return True
        return bool(any(str(t.get("key")) in ACCELERATOR_RESOURCES for t in self.taints))

    def label_value(self, key: str) -> tuple[bool, set[str] | None]:
        """(known, values): what values nodes of this pool can carry for `key`.

        `known` is False when the pool says nothing about the key (not a template label,
        not a requirement, not an instance label the table can answer).
        """
        if key in self.labels:
            return True, {self.labels[key]}
        if key == "karpenter.sh/nodepool":
            return True, {self.name}
        vals: set[str] | None = None
        known = False
        for r in self.requirements:
            if r.key == key and r.operator == "In":
                known = True
                vals = set(r.values) if vals is None else vals & set(r.values)
        if known:
            return True, vals
        if key in instances.INSTANCE_KEYS:
            types = self.allowed_types
            if types is None:
                return False, None
            got = self._instance_labels.get(key)
            if got is None:  # once per pool and key: every pod's selector asks again
                table = [it for it in (instances.get(t) for t in types) if it is not None]
                got = self._instance_labels[key] = frozenset(it.labels().get(key, "") for it in table)
            return True, set(got)
        return False, None

    @cached_property
    def _instance_labels(self) -> dict[str, frozenset[str]]:
        return {}

    def compatible_with(self, reqs: list[Requirement]) -> bool:
        """Could a node of this pool satisfy the pod's node requirements (one term)?"""
        for r in reqs:
            known, vals = self.label_value(r.key)
            if not known:
                if r.key.startswith(
                    (
                        "karpenter.k8s.aws/",
                        "eks.amazonaws.com/",
                        "topology.kubernetes.io/",
                        "kubernetes.io/",
                        "node.kubernetes.io/",
                        "karpenter.sh/",
                    )
                ):
                    continue  # well-known labels Karpenter sets on every node
                if r.operator in ("NotIn", "DoesNotExist"):
                    continue
                return False  # a custom label no node of this pool carries
            if vals is None:
                continue
            if r.operator in ("In", "Gt", "Lt", "Exists") and not any(r.allows(v) for v in vals):
                return False
        return True


@dataclass
class Context:
    """Everything the rules may know beyond the object they check."""

    objects: list[K8sObject] = field(default_factory=list)
    profile: Profile = field(default_factory=Profile)
    bundle: bool = True  # False in the webhook: one object, no neighbours
    root: str = ""  # the run root (`ailint.core.paths.run_root`); "" when there is none

    def describe(self, obj: K8sObject) -> str:
        """`Kind namespace/name (path relative to the run root)`: how a message names
        another object (see `describe`)."""
        return describe(obj, self.root)

    def path_of(self, obj: K8sObject) -> str:
        """The file of `obj` relative to the run root (see `shown_path`)."""
        return shown_path(obj, self.root)

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """A value computed once per run: bundle rules index the other objects here.

        `key` names the index (a rule code plus what it holds); `compute` builds it on first
        use. Everything a bundle rule derives from `ctx.objects` belongs here, never in a
        loop over objects per checked object (that is O(objects^2) work per run).

        One memo per key (`memo(("RULE.what", key), compute)`), never an empty dict or list
        that its readers fill: the results cache notes what `compute` read for every later
        reader, and an entry a reader added was noted for that reader alone
        (tests/test_cache.py keeps the pattern out).
        """
        cache = self.__dict__.setdefault("_memo_", {})
        try:
            return cache[key]
        except KeyError:
            value = cache[key] = compute()
            return value

    def build_indexes(self) -> None:
        """Build the run-wide indexes most rules read now (before the bundle phase forks, so
        every process inherits them instead of building its own)."""
        self._by_kind, self._pods, self.nodepools  # noqa: B018 - cached properties

    @cached_property
    def _by_kind(self) -> dict[str, list[K8sObject]]:
        idx: dict[str, list[K8sObject]] = {}
        for o in self.objects:
            idx.setdefault(o.kind, []).append(o)
        return idx

    def of_kind(self, *kinds: str, namespace: str | None = None, group: str | None = None) -> Iterator[K8sObject]:
        for k in kinds:
            for o in self._by_kind.get(k, ()):
                if group is not None and not o.group.startswith(group):
                    continue
                if namespace is not None and (o.namespace_or_default) != namespace:
                    continue
                yield o

    def named(
        self, kind: str, name: Any, *, near: K8sObject, namespace: str | None = None, group: str | None = None
    ) -> K8sObject | None:
        """The object of `kind` called `name` (in `namespace`; of a group that starts with
        `group`) that a reference from `near` reaches: of several copies, the one `nearest`
        it (its file, else its folder), else the first in run order; None when there is none."""
        if not isinstance(name, str):
            return None
        found = nearest(near, [o for o in self.of_kind(kind, namespace=namespace, group=group) if o.name == name])
        return found[0] if found else None

    @cached_property
    def nodepools(self) -> list[NodePoolView]:
        return [NodePoolView(o) for o in self.of_kind("NodePool") if o.group == "karpenter.sh"]

    def nodepool(self, name: str) -> NodePoolView | None:
        for p in self.nodepools:
            if p.name == name:
                return p
        return None

    def pools_for(self, pod: PodTemplate, *, check_taints: bool = True) -> list[NodePoolView]:
        """NodePools in the run that could host this pod (selectors; taints when asked)."""
        if not self.nodepools:
            return []
        # memoised per pod template: many rules ask for the same pod (the object is kept in
        # the entry, so its id cannot be reused while the entry lives)
        cache = self.__dict__.setdefault("_pools_for_", {})
        key = (id(pod.obj), pod.spec_path, check_taints)
        hit = cache.get(key)
        if hit is not None and hit[0] is pod.obj:
            return list(hit[1])
        out = self._pools_for(pod, check_taints)
        cache[key] = (pod.obj, out)
        return list(out)

    def _pools_for(self, pod: PodTemplate, check_taints: bool) -> list[NodePoolView]:
        terms = pod_node_requirements(pod)
        tols = effective_tolerations(pod, self.profile.flag("extendedResourceToleration")) if check_taints else []
        # pods with the same node requirements and tolerations land on the same pools
        try:
            sig: Any = (
                check_taints,
                tuple(tuple((r.key, r.operator, r.values) for r in t) for t in terms),
                tuple(tuple((k, v.__class__, v) for k, v in t.items()) for t in tols),
            )
            hash(sig)
        except TypeError:  # an unhashable toleration value: no sharing
            sig = None
        by_sig = self.__dict__.setdefault("_pools_by_sig_", {})
        if sig is not None and sig in by_sig:
            return by_sig[sig]
        out = []
        for pool in self.nodepools:
            if not any(pool.compatible_with(t) for t in terms):
                continue
            if check_taints and untolerated(pool.taints, tols):
                continue
            out.append(pool)
        if sig is not None:
            by_sig[sig] = out
        return out

    def target_types(self, pod: PodTemplate) -> set[str] | None:
        """The pod's target instance set (spec section 0), restricted to the known table.

        None means unknown: no pool in the run hosts the pod and its own selectors say
        nothing about instance types, or a pool allows types outside the table.
        """
        terms = pod_node_requirements(pod)
        pod_types: set[str] | None = None
        for t in terms:
            m = instances.matching_types(t)
            if m is None:
                pod_types = None
                break
            pod_types = m if pod_types is None else pod_types | m
        pools = self.pools_for(pod)
        if not pools:
            if any(instances.names_unknown_type(t) for t in terms):
                return None
            return pod_types
        out: set[str] = set()
        for pool in pools:
            allowed = pool.allowed_types
            if allowed is None or instances.names_unknown_type(pool.requirements):
                return None
            out |= allowed
        if pod_types is not None:
            out &= pod_types
        return out

    def pods_in(self, namespace: str | None) -> Iterator[tuple[K8sObject, PodTemplate]]:
        if namespace is None:
            yield from self._pods[0]
        else:
            yield from self._pods[1].get(namespace or "default", ())

    def pod_owners(self, namespace: str | None = None) -> Iterator[tuple[K8sObject, list[PodTemplate]]]:
        """Every object of the run (of `namespace`, when given) that has pod templates, with
        them, in object order: what a rule that looks at other workloads reads, instead of
        every object (`objects`). Read through `pods_in`, so the results cache knows the
        read for what it is (the run's pods) and an edit of a ConfigMap does not run the
        rule again."""
        owner: K8sObject | None = None
        pods: list[PodTemplate] = []
        for o, pod in self.pods_in(namespace):
            if o is not owner:
                if owner is not None:
                    yield owner, pods
                owner, pods = o, []
            pods.append(pod)
        if owner is not None:
            yield owner, pods

    @cached_property
    def _pods(self) -> tuple[list[tuple[K8sObject, PodTemplate]], dict[str, list[tuple[K8sObject, PodTemplate]]]]:
        """Every (object, pod template) of the run, in object order, and by namespace."""
        from ailint.domain.extract import is_pod_kind, pod_templates

        pods: list[tuple[K8sObject, PodTemplate]] = []
        by_ns: dict[str, list[tuple[K8sObject, PodTemplate]]] = {}
        for o in self.objects:
            if is_pod_kind(o):
                ns = o.namespace_or_default
                for pod in pod_templates(o):
                    pods.append((o, pod))
                    by_ns.setdefault(ns, []).append((o, pod))
        return pods, by_ns


def objects_selected_by(
    selector: Any, candidates: Iterable[tuple[K8sObject, PodTemplate]]
) -> list[tuple[K8sObject, PodTemplate]]:
    return [(o, p) for o, p in candidates if selector_matches(selector, p.labels)]


__all__ = ["Context", "NodePoolView", "get_in", "nearest", "objects_selected_by", "selector_matches"]
