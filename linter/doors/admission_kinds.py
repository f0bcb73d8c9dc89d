"""Which resources the admission webhook should be sent: the kinds ailint has rules for.

`deploy/webhook.yaml`'s ValidatingWebhookConfiguration lists them (a test keeps the two
equal; `python -m ailint.doors.admission_kinds` prints the `rules:` block). Rules name
kinds, admission rules name API groups and resources: a kind a rule lists without a group
is looked up in `API_GROUPS` (the Kubernetes API's own kinds and the custom resources the
rules read) and in the CRD index ailint compiles (`schemas/crds/index.json`); the resource
is Kubernetes' own guess from the kind (`meta.UnsafeGuessKindToResource`), which is the
plural every one of these CRDs declares. Rules for every kind (`*`) do not widen the list:
the webhook would otherwise receive Secrets, Events and Leases for nothing.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# kind -> API groups that serve it, for the kinds rules name without a group
API_GROUPS: dict[str, tuple[str, ...]] = {
    # the Kubernetes API
    "Pod": ("",),
    "PodTemplate": ("",),
    "ReplicationController": ("",),
    "ConfigMap": ("",),
    "Service": ("",),
    "PersistentVolumeClaim": ("",),
    "Deployment": ("apps",),
    "StatefulSet": ("apps",),
    "DaemonSet": ("apps",),
    "ReplicaSet": ("apps",),
    "Job": ("batch",),
    "CronJob": ("batch",),
    "PodDisruptionBudget": ("policy",),
    "HorizontalPodAutoscaler": ("autoscaling",),
    "Ingress": ("networking.k8s.io",),
    "NetworkPolicy": ("networking.k8s.io",),
    "Role": ("rbac.authorization.k8s.io",),
    "ClusterRole": ("rbac.authorization.k8s.io",),
    "RoleBinding": ("rbac.authorization.k8s.io",),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io",),
    "StorageClass": ("storage.k8s.io",),
    # custom resources the rules read that the CRD index does not carry
    "PyTorchJob": ("kubeflow.org",),
    "TFJob": ("kubeflow.org",),
    "XGBoostJob": ("kubeflow.org",),
    "PaddleJob": ("kubeflow.org",),
    "JAXJob": ("kubeflow.org",),
    "MPIJob": ("kubeflow.org",),
    "TrainingRuntime": ("trainer.kubeflow.org",),
    "ClusterTrainingRuntime": ("trainer.kubeflow.org",),
    "LLMInferenceService": ("serving.kserve.io",),
    "LLMInferenceServiceConfig": ("serving.kserve.io",),
    "InferencePool": ("inference.networking.k8s.io", "inference.networking.x-k8s.io"),  # v1, and v1alpha2 before it
    "HTTPRoute": ("gateway.networking.k8s.io",),
    "PrometheusRule": ("monitoring.coreos.com",),
    "ScaledObject": ("keda.sh",),
    "ScaledJob": ("keda.sh",),
    "ExternalSecret": ("external-secrets.io",),
    "SecretStore": ("external-secrets.io",),
    "ClusterSecretStore": ("external-secrets.io",),
    "ClusterExternalSecret": ("external-secrets.io",),
    "GrafanaDashboard": ("grafana.integreatly.org",),
    "Sandbox": ("agents.x-k8s.io",),
    "SandboxTemplate": ("extensions.agents.x-k8s.io",),
}

# short names a kind list has used for a group (`Volcano/Job` for Volcano's batch Job)
_GROUP_ALIASES = {"Volcano": "batch.volcano.sh"}

# kinds rules read that are files, not API objects: never admitted
NOT_API_OBJECTS = frozenset({"ClusterConfig", "DeschedulerPolicy"})


def guess_resource(kind: str) -> str:
    """Kubernetes' `UnsafeGuessKindToResource`: lower case, then `s`, `es` or `ies`."""
    low = kind.lower()
    if low.endswith("s"):
        return low + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return low[:-1] + "ies"
    return low + "s"


def _crd_groups() -> dict[str, set[str]]:
    from ailint.core import pkgdata

    out: dict[str, set[str]] = {}
    try:
        index = pkgdata.load_json("ailint.schemas", "crds/index.json")
    except (OSError, ValueError):
        return out
    for group, kinds in index.items():
        for kind in kinds:
            out.setdefault(kind, set()).add(group)
    return out


def rule_kinds() -> set[str]:
    """Every kind (`Kind` or `group/Kind`) a rule with a check lists, `*` left out."""
    from ailint.engine.registry import all_rules

    kinds: set[str] = set()
    for reg in all_rules().values():
        if reg.check:
            kinds.update(k for k in reg.rule.kinds if k != "*")
    return kinds


def group_resources() -> tuple[dict[str, set[str]], set[str]]:
    """(API group -> resources) for the rules' kinds, and the kinds that could not be placed."""
    crds = _crd_groups()
    groups: dict[str, set[str]] = {}
    unknown: set[str] = set()
    for target in sorted(rule_kinds()):
        if "/" in target:
            group, kind = target.rsplit("/", 1)
            group = _GROUP_ALIASES.get(group, group)
            if "." not in group:  # API groups are DNS names: no object has this one
                continue
            found = {group}
        else:
            kind = target
            # a kind of the table is that group's only (core `Service`, not llmaz's)
            found = set(API_GROUPS[kind]) if kind in API_GROUPS else crds.get(kind, set())
        if kind in NOT_API_OBJECTS:
            continue
        if not found:
            unknown.add(target)
            continue
        for group in found:
            groups.setdefault(group, set()).add(guess_resource(kind))
    return groups, unknown


def admission_rules() -> list[dict[str, Any]]:
    """The `rules:` of the ValidatingWebhookConfiguration: one per API group, sorted."""
    groups, _ = group_resources()
    return [
        {
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": [group],
            "apiVersions": ["*"],
            "resources": sorted(resources),
            "scope": "*",
        }
        for group, resources in sorted(groups.items())
    ]


def main() -> None:
    import json

    for rule in admission_rules():
        print(
            f'      - {{operations: ["CREATE", "UPDATE"], apiGroups: [{json.dumps(rule["apiGroups"][0])}], '
            f'apiVersions: ["*"], scope: "*",\n         resources: {json.dumps(rule["resources"])}}}'
        )


if __name__ == "__main__":
    main()
