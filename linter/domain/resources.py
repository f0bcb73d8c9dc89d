"""Kinds as the API server names them: the resource (plural) of a kind, and its scope.

Admission rules match on resources (`deployments`, `rayclusters`), objects carry kinds. The
API server derives a CRD's resource from `spec.names.plural`; for the kinds it serves itself
the names are fixed. Both are defined here once: a table for the built-in kinds whose plural
or scope the general rule gets wrong, the CRDs of the run, and Kubernetes' own guess
(`meta.UnsafeGuessKindToResource`: lower case, `s`/`es`/`ies`) for the rest.
"""

from __future__ import annotations

from collections.abc import Iterable

from ailint.core.model import K8sObject, as_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# built-in kinds whose resource is not the guessed plural
_IRREGULAR = {
    ("", "Endpoints"): "endpoints",
    ("", "ComponentStatus"): "componentstatuses",
}

# cluster-scoped kinds (group, kind); every other kind is namespaced unless a CRD says otherwise
CLUSTER_SCOPED = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "ComponentStatus"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("networking.k8s.io", "IngressClass"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("resource.k8s.io", "DeviceClass"),
        ("resource.k8s.io", "ResourceSlice"),
        ("karpenter.sh", "NodePool"),
        ("karpenter.sh", "NodeClaim"),
        ("karpenter.k8s.aws", "EC2NodeClass"),
        ("eks.amazonaws.com", "NodeClass"),
        ("kueue.x-k8s.io", "ClusterQueue"),
        ("kueue.x-k8s.io", "ResourceFlavor"),
        ("kueue.x-k8s.io", "Cohort"),
        ("kueue.x-k8s.io", "WorkloadPriorityClass"),
        ("kueue.x-k8s.io", "AdmissionCheck"),
        ("kueue.x-k8s.io", "Topology"),
        ("serving.kserve.io", "ClusterServingRuntime"),
        ("serving.kserve.io", "ClusterStorageContainer"),
        ("llmaz.io", "OpenModel"),
        ("inference.llmaz.io", "BackendRuntime"),
        ("ome.io", "ClusterServingRuntime"),
        ("ome.io", "ClusterBaseModel"),
        ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
        ("scheduling.volcano.sh", "Queue"),
    }
)


def guess_resource(kind: str) -> str:
    """Kubernetes' `UnsafeGuessKindToResource` plural of a kind."""
    low = kind.lower()
    if not low:
        return low
    if low.endswith("s"):
        return low + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return low[:-1] + "ies"
    return low + "s"


class ResourceNames:
    """Kind -> (resource, namespaced) for one run: CRDs of the run first, then the tables."""

    def __init__(self, objects: Iterable[K8sObject] = ()) -> None:
        self._crds: dict[tuple[str, str], tuple[str, bool]] = {}
        for obj in objects:
            if obj.kind == "CustomResourceDefinition" and obj.group == "apiextensions.k8s.io":
                spec = as_dict(obj.data.get("spec"))
                names = as_dict(spec.get("names"))
                group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
                if isinstance(group, str) and isinstance(kind, str) and isinstance(plural, str):
                    self._crds[(group, kind)] = (plural, spec.get("scope") != "Cluster")

    def resource(self, group: str, kind: str) -> str:
        got = self._crds.get((group, kind))
        if got is not None:
            return got[0]
        return _IRREGULAR.get((group, kind)) or guess_resource(kind)

    def namespaced(self, group: str, kind: str) -> bool:
        got = self._crds.get((group, kind))
        if got is not None:
            return got[1]
        return (group, kind) not in CLUSTER_SCOPED


# Built-in API groups: the API server decodes their objects into Go types before admission.
_TYPED_GROUPS = frozenset({"", "apps", "batch"})
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def as_served(obj: K8sObject) -> dict[str, Any]:
    """`obj`'s data as the API server hands it to admission (ValidatingAdmissionPolicy's
    `object`): for a built-in kind with pod templates, every container has `resources`.

    The server decodes a built-in object into its Go type and converts it back to
    unstructured data; `Container.Resources` is a `ResourceRequirements` value, not a
    pointer (k8s.io/api core/v1 types.go), and the converter never omits a struct field,
    however empty (k8s.io/apimachinery pkg/runtime/converter.go: `isZero` is false for a
    struct). So `has(c.resources.requests)` is false there, not an error, for a container
    that writes no resources. Custom resources are stored as written: their data is
    returned unchanged. Copies only what it changes; `obj.data` is never modified."""
    if obj.group not in _TYPED_GROUPS:
        return obj.data
    from ailint.domain.extract import pod_templates

    data: dict[str, Any] = obj.data
    for pod in pod_templates(obj):
        path = tuple(pod.spec_path)
        if pod.synthetic is not None or not all(isinstance(step, (str, int)) for step in path):
            continue
        spec = obj.get(*path)
        if not isinstance(spec, dict):
            continue
        changed: dict[str, Any] = {}
        for field in _CONTAINER_LISTS:
            items = spec.get(field)
            if isinstance(items, list) and any(isinstance(c, dict) and "resources" not in c for c in items):
                changed[field] = [
                    {**c, "resources": {}} if isinstance(c, dict) and "resources" not in c else c for c in items
                ]
        if changed:
            data = _replaced(data, path, {**spec, **changed})
    return data


def _replaced(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    """`node` with the value at `path` replaced: a copy of each container on the way."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        return {**node, head: _replaced(node[head], rest, value)}
    out = list(node)
    out[head] = _replaced(node[head], rest, value)
    return out
