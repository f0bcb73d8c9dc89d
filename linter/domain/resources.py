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
