"""Label selectors against the pods of a run: which pod templates a selector selects, and the
decision a rule needs before it says a selector "selects no pods".

Every selector-to-pod match goes through `ailint.domain.pod_labels.may_select` (the template's
labels plus the labels its controller adds). `selected` lists the pod templates of a namespace
a selector can select.

A selector that selects no pod template ailint knows may still select pods: those of an
object ailint has no workload adapter for, an operator's own custom resource (a `Milvus`, a
Kubeflow `Notebook`, a Strimzi `Kafka`, a `Prometheus`), whose controller builds the pods the
manifest never shows. `unknown_owner` names such an object of the same run and namespace when
the selector could select its pods:

- the object is a custom resource (its API group has a dot) that no workload adapter or
  catalogue reads, not a Kubernetes API (`*.k8s.io`) and not a kind known to run no pods
  (monitors, routes, policies, queues, certificates: `NO_PODS_GROUPS`, `NO_PODS_KINDS`),
  and it has no label selector of its own in `spec` (an object that selects pods is not
  their owner);
- and one of the selector's required labels points at it: a value equal to the object's
  name under a key that names an owner (`app`, `release`, `app.kubernetes.io/instance`,
  `app.kubernetes.io/name`, `notebook-name`, `strimzi.io/cluster`, a key ending in `name`,
  `instance` or `cluster`, or the kind in lower case such as `prometheus: <name>`), the kind
  in lower case under such a key (`app.kubernetes.io/name: milvus`), or a key and value the
  object itself carries in `metadata.labels` or in any `labels` map inside its `spec` (a pod
  template or component labels, which operators copy onto the pods).

A rule that finds no pod for a selector asks `unknown_owner` and stays silent when it names
an object; with nothing unknown in the run (or nothing pointing at it) the finding stands.
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import K8sObject, as_dict, as_list, iter_dicts
from ailint.domain.context import selector_terms
from ailint.domain.extract import PodTemplate
from ailint.domain.pod_labels import LabelIndex, may_select

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# API groups whose kinds configure other objects and run no pods of their own
NO_PODS_GROUPS = frozenset(
    {
        "cert-manager.io",
        "acme.cert-manager.io",
        "karpenter.sh",
        "karpenter.k8s.aws",
        "karpenter.azure.com",
        "karpenter.kwok.sh",
        "eks.amazonaws.com",
        "kueue.x-k8s.io",
        "inference.networking.x-k8s.io",
        "gateway.networking.x-k8s.io",
        "networking.istio.io",
        "security.istio.io",
        "telemetry.istio.io",
        "extensions.istio.io",
        "gateway.envoyproxy.io",
        "aigateway.envoyproxy.io",
        "external-secrets.io",
        "generators.external-secrets.io",
        "cilium.io",
        "networking.gke.io",
        "cloud.google.com",
        "monitoring.googleapis.com",
        "security.openshift.io",
        "operators.coreos.com",
        "eksctl.io",
        "kind.x-k8s.io",
        "scheduling.volcano.sh",
        "scheduling.run.ai",
        "scheduling.x-k8s.io",
        "traefik.io",
        "traefik.containo.us",
        "kwok.x-k8s.io",
        "sriovnetwork.openshift.io",
    }
)
# kinds that run no pods in groups whose other kinds may
NO_PODS_KINDS = frozenset(
    {
        ("monitoring.coreos.com", k)
        for k in ("ServiceMonitor", "PodMonitor", "PrometheusRule", "Probe", "ScrapeConfig", "AlertmanagerConfig")
    }
    | {
        ("operator.victoriametrics.com", k)
        for k in (
            "VMServiceScrape",
            "VMPodScrape",
            "VMRule",
            "VMProbe",
            "VMNodeScrape",
            "VMStaticScrape",
            "VMScrapeConfig",
        )
    }
    | {("keda.sh", k) for k in ("ScaledObject", "TriggerAuthentication", "ClusterTriggerAuthentication")}
    | {("argoproj.io", k) for k in ("Application", "ApplicationSet", "AppProject", "WorkflowTemplate")}
    | {("argoproj.io", "ClusterWorkflowTemplate"), ("tekton.dev", "Task"), ("tekton.dev", "Pipeline")}
    | {("kafka.strimzi.io", k) for k in ("KafkaTopic", "KafkaUser", "KafkaRebalance")}
)
_OWNER_KEYS = frozenset({"app", "release", "instance", "name", "cluster", "app.kubernetes.io/part-of"})
_OWNER_SUFFIXES = ("name", "instance", "cluster")
_SELECTOR_KEYS = ("selector", "podSelector", "endpointSelector", "workloadSelector")


def selected(ctx: Any, namespace: str, selector: Any) -> list[tuple[K8sObject, PodTemplate]]:
    """The (object, pod template) pairs of the namespace that `selector` can select
    (`may_select`), in object order; through the namespace's label index, once per run."""
    memo = getattr(ctx, "memo", None)
    if memo is None or namespace is None:  # no run-wide memos (one object, no neighbours); every pod
        return [(o, p) for o, p in ctx.pods_in(namespace) if may_select(selector, p)]
    ns = namespace or "default"
    index: LabelIndex = memo(("pod_labels.index", ns), lambda: LabelIndex(list(ctx.pods_in(ns))))
    return index.selecting(selector)


def required_labels(selector: Any) -> list[tuple[str, str]]:
    """(key, value) pairs a pod must carry to be selected: matchLabels (or a plain map) and
    `In` expressions with one value."""
    if not isinstance(selector, dict):
        return []
    ml, exprs = selector_terms(selector)
    out = [(str(k), str(v)) for k, v in ml.items() if isinstance(v, (str, int, float, bool))]
    for _, e in iter_dicts(exprs):
        vals = as_list(e.get("values"))
        if e.get("operator") == "In" and len(vals) == 1:
            out.append((str(e.get("key")), str(vals[0])))
    return out


def may_own_pods(obj: K8sObject) -> bool:
    """Could `obj` be an operator's custom resource whose controller runs pods ailint does not
    see? (A custom resource no adapter reads and not a known configuration kind.)"""
    from ailint.domain import workloads

    group = obj.group
    if "." not in group or group.endswith(".k8s.io") or group.startswith("config."):
        return False
    if group in NO_PODS_GROUPS or (group, obj.kind) in NO_PODS_KINDS:
        return False
    if workloads.family_for(obj) is not None or workloads.is_catalogue(obj):
        return False
    spec = as_dict(obj.data.get("spec"))
    return not any(isinstance(spec.get(k), dict) for k in _SELECTOR_KEYS)


def _owner_key(key: str, kind: str) -> bool:
    last = key.rsplit("/", 1)[-1].lower()
    return key in _OWNER_KEYS or last in _OWNER_KEYS or last.endswith(_OWNER_SUFFIXES) or last == kind.lower()


def _label_maps(node: Any, depth: int = 0) -> Iterator[dict[str, Any]]:
    """Every `labels` mapping inside `node` (a spec), skipping selectors."""
    if depth > 12:
        return
    if isinstance(node, dict):
        for k, v in node.items():
            if k in _SELECTOR_KEYS or k in ("matchLabels", "nodeSelector"):
                continue
            if k == "labels" and isinstance(v, dict):
                yield v
            else:
                yield from _label_maps(v, depth + 1)
    elif isinstance(node, list):
        for v in node:
            yield from _label_maps(v, depth + 1)


def points_at(selector: Any, obj: K8sObject) -> bool:
    """Does one of the selector's required labels point at `obj` (see the module doc)?"""
    name, kind = obj.name or "", obj.kind
    pairs = required_labels(selector)
    if not pairs:
        return False
    for k, v in pairs:
        if _owner_key(k, kind) and (v == name or v.lower() == kind.lower()):
            return True
    carried = [obj.labels, *_label_maps(obj.data.get("spec"))]
    return any(str(m.get(k)) == v for m in carried for k, v in pairs if k in m)


def unknown_owner(selector: Any, ctx: Any, namespace: str, selector_obj: K8sObject | None = None) -> K8sObject | None:
    """An object of the run, in `namespace`, that may own pods ailint cannot see and that the
    selector points at (see the module doc); None when there is none."""
    owners = ctx.memo(
        "selectors.unknown_owners", lambda: [o for o in ctx.objects if may_own_pods(o)]
    )  # once per run: most runs have none
    for o in owners:
        if o is selector_obj or o.namespace_or_default != namespace:
            continue
        if points_at(selector, o):
            return o
    return None


__all__ = [
    "NO_PODS_GROUPS",
    "NO_PODS_KINDS",
    "may_own_pods",
    "points_at",
    "required_labels",
    "selected",
    "unknown_owner",
]
