"""Labels the controllers add to the pods they create, beyond the template's own, and the one
question every rule asks with them: can this label selector select pods of this template
(`may_select`)?

A Service, PodMonitor, PodDisruptionBudget, NetworkPolicy, descheduler labelSelector or
InferencePool that selects on such a label selects those pods. Each name below is the
controller's own constant:

- Deployment: `pod-template-hash` (kubernetes/api `apps/v1/types.go`
  DefaultDeploymentUniqueLabelKey; a hash, any value). A ReplicaSet written by hand gets none.
- StatefulSet: `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index`,
  `controller-revision-hash`. DaemonSet: `controller-revision-hash`, `pod-template-generation`.
- Job: `batch.kubernetes.io/job-name` and `job-name` (the Job's name),
  `batch.kubernetes.io/controller-uid`, `controller-uid`, `batch.kubernetes.io/job-completion-index`.
- LeaderWorkerSet (kubernetes-sigs/lws `api/leaderworkerset/v1/leaderworkerset_types.go`):
  `leaderworkerset.sigs.k8s.io/name` (SetNameLabelKey, the set's name), `/group-index`,
  `/worker-index` (0 on the leader, 1..size-1 on workers; without a leaderTemplate the leader
  is built from the worker template), `/group-key`, `/template-revision-hash`, and with a
  subGroupPolicy `/subgroup-index`, `/subgroup-key`; its pods are StatefulSet pods too.
- JobSet (kubernetes-sigs/jobset `api/jobset/v1alpha2/jobset_types.go`): `jobset-name`
  (JobSetNameKey), `replicatedjob-name`, `jobset-uid`, `job-index`, `job-global-index`,
  `job-key`, `replicatedjob-replicas`, `global-replicas` under `jobset.sigs.k8s.io/`; plus
  the Job labels. A Kubeflow Trainer TrainingRuntime's templates run as a JobSet named after
  each TrainJob (kubeflow/trainer `pkg/runtime/framework/plugins/jobset/jobset.go`), so there
  `jobset-name` is any value.
- KubeRay (ray-project/kuberay `ray-operator/controllers/ray/common/pod.go` labelPod,
  `utils/constant.go`): `ray.io/cluster` (the RayCluster's name), `ray.io/node-type`
  (`head`/`worker`) and `ray.io/group` (the worker group's name, `headgroup` on the head;
  RayNodeHeadGroupLabelValue) override the template; `ray.io/is-ray-node: "yes"`,
  `ray.io/identifier` (`<cluster>-<node type>`), `app.kubernetes.io/name: kuberay` and
  `app.kubernetes.io/created-by: kuberay-operator` are set unless the template sets them. A
  RayService's or RayJob's cluster gets a generated name.
- Kubeflow training operator (kubeflow/training-operator `pkg/apis/kubeflow.org/v1/common_types.go`,
  `pkg/controller.v1/common/pod.go`): `training.kubeflow.org/job-name`,
  `training.kubeflow.org/replica-type` (the replica type, lower case),
  `training.kubeflow.org/replica-index`, `training.kubeflow.org/operator-name`,
  `training.kubeflow.org/job-role`; they override the template's.
- KServe LLMInferenceService: `ailint.domain.kserve.controller_labels`.
- Any other family that declares them (`Family.pod_labels`): NVIDIA Dynamo's
  `nvidia.com/dynamo-component` and `nvidia.com/dynamo-graph-deployment-name`
  (`ailint.domain.workloads.dynamo`).

`controller_labels` gives the labels whose value is known; `varying_labels` the keys every pod
carries with a value the manifest cannot tell (a hash, an index, a generated name).
`may_select` says whether a selector can select some pod of the template; every rule that
matches a selector against pod templates asks it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ailint.core.model import as_dict, as_list, iter_dicts
from ailint.domain import kserve
from ailint.domain.context import selector_terms
from ailint.domain.extract import PodTemplate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_STS = ("statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index", "controller-revision-hash")
_JOB = ("batch.kubernetes.io/controller-uid", "controller-uid", "batch.kubernetes.io/job-completion-index")
_JOB_NAME = ("batch.kubernetes.io/job-name", "job-name")
_KUBEFLOW = ("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob")
_TRAINING_RUNTIMES = ("TrainingRuntime", "ClusterTrainingRuntime")
_RAY = ("RayCluster", "RayService", "RayJob")
LWS = "leaderworkerset.sigs.k8s.io/"
JOBSET = "jobset.sigs.k8s.io/"
_JOBSET_VARYING = tuple(
    JOBSET + k
    for k in ("jobset-uid", "job-index", "job-global-index", "job-key", "replicatedjob-replicas", "global-replicas")
)
RAY_HEAD_GROUP = "headgroup"  # kuberay utils.RayNodeHeadGroupLabelValue
_LABEL_MAX = 63


@dataclass(frozen=True)
class _Labels:
    """The labels a controller puts on the pods it makes, beyond the template's own."""

    forced: dict[str, str]  # set by the controller over the template's own
    defaults: dict[str, str]  # set by the controller unless the template sets the key
    varying: frozenset[str]  # set on every pod with a value the manifest does not fix
    never: tuple[tuple[str, str], ...] = ()  # (varying key, a value it never takes on these pods)


def _group_name(pod: PodTemplate) -> str | None:
    g = as_dict(pod.obj.get(*pod.group_path)) if pod.group_path else {}
    v = g.get("groupName")
    return v if isinstance(v, str) else None


def _lws_has_leader(pod: PodTemplate) -> bool:
    return isinstance(as_dict(pod.obj.get(*pod.group_path)).get("leaderTemplate"), dict) if pod.group_path else False


def _ray(pod: PodTemplate) -> _Labels:
    kind, name = pod.obj.kind, pod.obj.name or ""
    if pod.role == "submitter":  # the RayJob's submitter: a batch Job
        return _Labels({}, {}, frozenset(_JOB + _JOB_NAME))
    head = pod.role == "head"
    node_type = "head" if head else "worker"
    forced = {"ray.io/node-type": node_type, "ray.io/group": RAY_HEAD_GROUP if head else (_group_name(pod) or pod.role)}
    defaults = {
        "ray.io/is-ray-node": "yes",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    varying = {"ray.io/identifier"}
    if kind == "RayCluster" and name:
        forced["ray.io/cluster"] = name
        ident = f"{name}-{node_type}"
        if len(ident) <= _LABEL_MAX:
            defaults["ray.io/identifier"] = ident
            varying.discard("ray.io/identifier")
    else:
        varying.add("ray.io/cluster")  # RayService and RayJob clusters get generated names
    return _Labels(forced, defaults, frozenset(varying))


def _compute(pod: PodTemplate) -> _Labels:
    obj = pod.obj
    kind, name = obj.kind, obj.name or ""
    forced: dict[str, str] = {}
    defaults: dict[str, str] = {}
    varying: tuple[str, ...] = ()
    never: tuple[tuple[str, str], ...] = ()
    if kind == "Deployment":
        varying = ("pod-template-hash",)
    elif kind == "StatefulSet":
        varying = _STS
    elif kind == "DaemonSet":
        varying = ("controller-revision-hash", "pod-template-generation")
    elif kind == "Job" and obj.group.startswith("batch"):
        forced = dict.fromkeys(_JOB_NAME, name)
        varying = _JOB
    elif kind == "CronJob":
        varying = _JOB + _JOB_NAME
    elif kind == "LeaderWorkerSet":
        forced[LWS + "name"] = name
        if pod.role == "leader":
            forced[LWS + "worker-index"] = "0"
        idx = ("group-index", "group-key", "template-revision-hash", "subgroup-index", "subgroup-key")
        varying = _STS + tuple(LWS + k for k in idx) + (() if pod.role == "leader" else (LWS + "worker-index",))
        if pod.role == "worker" and _lws_has_leader(pod):
            never = ((LWS + "worker-index", "0"),)  # workers count from 1; index 0 is the leader
    elif kind == "JobSet" or kind in _TRAINING_RUNTIMES:
        if kind == "JobSet":
            forced[JOBSET + "jobset-name"] = name
        else:
            varying = (JOBSET + "jobset-name",)
        if pod.role:
            forced[JOBSET + "replicatedjob-name"] = pod.role
        varying += _JOB + _JOB_NAME + _JOBSET_VARYING
    elif kind in _RAY:
        return _ray(pod)
    elif kind in _KUBEFLOW and obj.group == "kubeflow.org":
        forced["training.kubeflow.org/job-name"] = name
        if pod.role:
            forced["training.kubeflow.org/replica-type"] = pod.role.lower()
        varying = tuple("training.kubeflow.org/" + k for k in ("replica-index", "operator-name", "job-role"))
    elif kind in kserve.KINDS:
        defaults = kserve.controller_labels(pod)
    else:  # a family that declares its controller's labels (`Family.pod_labels`)
        from ailint.domain import workloads

        forced, varying = workloads.controller_pod_labels(pod)
    return _Labels(forced, defaults, frozenset(k for k in varying if k not in forced), never)


def _labels(pod: PodTemplate) -> _Labels:
    out: _Labels = pod._cached("pod_labels", lambda: _compute(pod))
    return out


def controller_labels(pod: PodTemplate) -> dict[str, str]:
    """Labels with a known value that the owning controller adds to this template's pods
    (those it sets only when the template does not are included when the template does not)."""
    lab = _labels(pod)
    own = pod.labels
    out = {k: v for k, v in lab.defaults.items() if k not in own}
    out.update(lab.forced)
    return out


def varying_labels(pod: PodTemplate) -> frozenset[str]:
    """Keys the controller sets on every pod with a value the manifest does not fix."""
    lab = _labels(pod)
    own = pod.labels
    return frozenset(k for k in lab.varying if k not in lab.forced and k not in own)


def pod_labels(pod: PodTemplate) -> dict[str, str]:
    """The labels the pods of this template carry: the template's, with the controller's
    known labels (its defaults under the template's, its own over them)."""
    return dict(_effective(pod)[0])


def _effective(pod: PodTemplate) -> tuple[dict[str, str], frozenset[str], frozenset[tuple[str, str]]]:
    """(`pod_labels`, `varying_labels`, the (key, value) pairs no pod carries), once per
    template: `may_select` runs for every selector against every pod of a namespace."""

    def compute() -> tuple[dict[str, str], frozenset[str], frozenset[tuple[str, str]]]:
        lab = _labels(pod)
        out = {str(k): str(v) for k, v in lab.defaults.items()}
        out.update({str(k): str(v) for k, v in pod.labels.items()})
        out.update(lab.forced)
        return out, varying_labels(pod), frozenset(lab.never)

    got: tuple[dict[str, str], frozenset[str], frozenset[tuple[str, str]]] = pod._cached(
        "pod_labels_effective", compute
    )
    return got


def may_select(selector: Any, pod: PodTemplate) -> bool:
    """Can `selector` (a LabelSelector with matchLabels/matchExpressions, or a plain map as a
    Service's `spec.selector`) select pods of `pod`, counting the labels the controller adds?
    A key with a per-pod value matches any value. An empty selector selects every pod; a
    missing (None) or malformed one selects none."""
    if not isinstance(selector, dict):
        return False
    labels, vary, never = _effective(pod)
    ml, exprs = selector_terms(selector)
    for k, v in ml.items():
        key = str(k)
        if key in vary:
            if (key, str(v)) in never:
                return False
            continue
        if labels.get(key) != str(v):
            return False
    for _, e in iter_dicts(exprs):
        key, op = str(e.get("key")), e.get("operator")
        vals = [str(v) for v in as_list(e.get("values"))]
        if key in vary:
            if op == "DoesNotExist" or (op == "In" and all((key, v) in never for v in vals)):
                return False
            continue
        have = labels.get(key)
        if (op == "In" and have not in vals) or (op == "NotIn" and have in vals):
            return False
        if (op == "Exists" and have is None) or (op == "DoesNotExist" and have is not None):
            return False
    return True


class LabelIndex:
    """The pod templates of one namespace by label, so that a selector is matched against the
    pods that can carry its first `matchLabels` pair instead of every pod of the namespace
    (a Service per workload in a namespace of thousands was quadratic). `selecting` gives the
    same pods, in the same order, as `may_select` over every pod."""

    __slots__ = ("by_label", "by_varying", "pods")

    def __init__(self, pods: list[tuple[Any, PodTemplate]]) -> None:
        self.pods = pods
        self.by_label: dict[tuple[str, str], list[int]] = {}  # (key, value) -> positions in `pods`
        self.by_varying: dict[str, list[int]] = {}  # a key the controller sets to any value
        for i, (_, pod) in enumerate(pods):
            labels, vary, _ = _effective(pod)
            for pair in labels.items():
                self.by_label.setdefault(pair, []).append(i)
            for key in vary:
                self.by_varying.setdefault(key, []).append(i)

    def selecting(self, selector: Any) -> list[tuple[Any, PodTemplate]]:
        """The (object, pod template) pairs `selector` can select (`may_select`), in order."""
        if not isinstance(selector, dict):
            return []
        ml, _ = selector_terms(selector)
        pods = self.pods
        if not ml:
            return [x for x in pods if may_select(selector, x[1])]
        # `may_select` keeps a pod for a pair only when it carries the pair or the key varies
        k, v = next(iter(ml.items()))
        carrying, varying = self.by_label.get((str(k), str(v)), ()), self.by_varying.get(str(k), ())
        positions = sorted({*carrying, *varying}) if carrying and varying else carrying or varying
        return [pods[i] for i in positions if may_select(selector, pods[i][1])]


__all__ = [
    "JOBSET",
    "LWS",
    "RAY_HEAD_GROUP",
    "LabelIndex",
    "controller_labels",
    "may_select",
    "pod_labels",
    "varying_labels",
]
