"""Labels the controllers add to the pods they create, beyond the template's own.

A Service, PodMonitor, PodDisruptionBudget, NetworkPolicy or InferencePool that selects on
such a label selects those pods. Each name below is the controller's own constant:

- Deployment: `pod-template-hash` (ReplicaSet controller; a hash, any value).
- StatefulSet: `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index`,
  `controller-revision-hash`. DaemonSet: `controller-revision-hash`, `pod-template-generation`.
- Job: `batch.kubernetes.io/job-name` and `job-name` (the Job's name),
  `batch.kubernetes.io/controller-uid`, `controller-uid`, `batch.kubernetes.io/job-completion-index`.
- LeaderWorkerSet (lws `api/leaderworkerset/v1`): `leaderworkerset.sigs.k8s.io/name` (SetNameLabelKey),
  `/group-index`, `/worker-index` (0 on the leader), `/group-key`, `/template-revision-hash`;
  its pods are StatefulSet pods too.
- JobSet (`jobset.sigs.k8s.io/...`): `jobset-name`, `replicatedjob-name`, `job-index`,
  `job-global-index`, `job-key`, `replicatedjob-replicas`, `global-replicas`; plus the Job labels.
- KubeRay: `ray.io/cluster` (RayClusterLabelKey), `ray.io/is-ray-node: "yes"`,
  `ray.io/node-type: head|worker`, `ray.io/group` (the worker group's name), `ray.io/identifier`.
- Kubeflow training operator: `training.kubeflow.org/job-name`, `training.kubeflow.org/replica-type`
  (the replica type, lower case), `training.kubeflow.org/replica-index`,
  `training.kubeflow.org/operator-name`, `training.kubeflow.org/job-role`.

`controller_labels` gives the labels whose value is known; `varying_labels` the keys every pod
carries with a value the manifest cannot tell (a hash, an index). `may_select` says whether a
selector can select some pod of the template.
"""

from __future__ import annotations

from typing import Any

from ailint.core.model import as_dict, as_list, iter_dicts
from ailint.domain.extract import PodTemplate

_STS = ("statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index", "controller-revision-hash")
_JOB = ("batch.kubernetes.io/controller-uid", "controller-uid", "batch.kubernetes.io/job-completion-index")
_KUBEFLOW = ("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob")
_RAY = ("RayCluster", "RayService", "RayJob")
_LWS_WORKER_NOT_LEADER = ("LeaderWorkerSet", "worker", "leaderworkerset.sigs.k8s.io/worker-index", "0")


def _group_name(pod: PodTemplate) -> str | None:
    g = as_dict(pod.obj.get(*pod.group_path)) if pod.group_path else {}
    v = g.get("groupName")
    return v if isinstance(v, str) else None


def controller_labels(pod: PodTemplate) -> dict[str, str]:
    """Labels with a known value that the owning controller adds to this template's pods."""
    obj, kind, name = pod.obj, pod.obj.kind, pod.obj.name or ""
    out: dict[str, str] = {}
    if kind == "Job" and obj.group.startswith("batch"):
        out.update({"batch.kubernetes.io/job-name": name, "job-name": name})
    elif kind == "LeaderWorkerSet":
        out["leaderworkerset.sigs.k8s.io/name"] = name
        if pod.role == "leader":
            out["leaderworkerset.sigs.k8s.io/worker-index"] = "0"
    elif kind == "JobSet":
        out["jobset.sigs.k8s.io/jobset-name"] = name
        if pod.role:
            out["jobset.sigs.k8s.io/replicatedjob-name"] = pod.role
    elif kind in _RAY and pod.role != "submitter":
        out["ray.io/is-ray-node"] = "yes"
        if kind == "RayCluster":
            out["ray.io/cluster"] = name
        out["ray.io/node-type"] = "head" if pod.role == "head" else "worker"
        if pod.role != "head":
            out["ray.io/group"] = _group_name(pod) or pod.role
    elif kind in _KUBEFLOW and obj.group == "kubeflow.org":
        out["training.kubeflow.org/job-name"] = name
        if pod.role:
            out["training.kubeflow.org/replica-type"] = pod.role.lower()
    return out


def varying_labels(pod: PodTemplate) -> frozenset[str]:
    """Keys the controller sets on every pod with a value the manifest does not fix."""
    kind = pod.obj.kind
    keys: tuple[str, ...] = ()
    if kind == "Deployment":
        keys = ("pod-template-hash",)
    elif kind == "StatefulSet":
        keys = _STS
    elif kind == "DaemonSet":
        keys = ("controller-revision-hash", "pod-template-generation")
    elif kind == "Job":
        keys = _JOB
    elif kind == "CronJob":
        keys = _JOB + ("batch.kubernetes.io/job-name", "job-name")
    elif kind == "LeaderWorkerSet":
        keys = _STS + tuple(
            "leaderworkerset.sigs.k8s.io/" + k
            for k in ("group-index", "worker-index", "group-key", "template-revision-hash")
        )
    elif kind == "JobSet":
        keys = (
            _JOB
            + ("batch.kubernetes.io/job-name", "job-name")
            + tuple(
                "jobset.sigs.k8s.io/" + k
                for k in ("job-index", "job-global-index", "job-key", "replicatedjob-replicas", "global-replicas")
            )
        )
    elif kind in _RAY:
        keys = ("ray.io/identifier", "ray.io/cluster", "ray.io/group")
    elif kind in _KUBEFLOW:
        keys = tuple("training.kubeflow.org/" + k for k in ("replica-index", "operator-name", "job-role"))
    known = controller_labels(pod)
    return frozenset(k for k in keys if k not in known)


def pod_labels(pod: PodTemplate) -> dict[str, str]:
    """The template's labels with the controller's known labels over them."""
    out = {str(k): str(v) for k, v in pod.labels.items()}
    out.update(controller_labels(pod))
    return out


def may_select(selector: Any, pod: PodTemplate) -> bool:
    """Can `selector` (matchLabels/matchExpressions or a plain map) select pods of `pod`,
    counting the labels the controller adds? A key with a per-pod value matches any value."""
    if not isinstance(selector, dict):
        return False
    labels = pod_labels(pod)
    vary = varying_labels(pod)
    if "matchLabels" in selector or "matchExpressions" in selector:
        ml = as_dict(selector.get("matchLabels"))
        exprs = as_list(selector.get("matchExpressions"))
    else:
        ml, exprs = selector, []
    for k, v in ml.items():
        key = str(k)
        if key in vary and key not in labels:
            if (pod.obj.kind, pod.role, key, str(v)) == _LWS_WORKER_NOT_LEADER:
                return False  # LWS workers are indexed from 1; index 0 is the leader
            continue
        if labels.get(key) != str(v):
            return False
    for _, e in iter_dicts(exprs):
        key, op = str(e.get("key")), e.get("operator")
        vals = [str(v) for v in as_list(e.get("values"))]
        if key in vary and key not in labels:
            if op == "DoesNotExist":
                return False
            continue
        have = labels.get(key)
        if (op == "In" and have not in vals) or (op == "NotIn" and have in vals):
            return False
        if (op == "Exists" and have is None) or (op == "DoesNotExist" and have is not None):
            return False
    return True


__all__ = ["controller_labels", "may_select", "pod_labels", "varying_labels"]
