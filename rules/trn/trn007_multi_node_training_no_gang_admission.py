"""
## What it does
Finds all-or-nothing accelerator workloads with no gang admission:

- a PyTorchJob, or an MPIJob (kubeflow.org/v2beta1: `mpirun` needs every Worker), with 2 or
  more Worker replicas;
- a JobSet running 2 or more pods, or a TrainJob with `numNodes` 2 or more;
- a LeaderWorkerSet group (`size`) of 2 or more pods;
- a RayJob whose GPU worker groups start 2 or more pods (`replicas`, else `minReplicas`,
  times `numOfHosts`), and a RayCluster that runs training (a `ray.train`, `torchrun`,
  `deepspeed`... command in its pods) with such worker groups.

It fires when nothing gangs the pods: no `kueue.x-k8s.io/queue-name` label (on the object or
its pod templates; a LocalQueue named `default` in the namespace counts, Kueue defaults to
it), no gang scheduler (`schedulerName` Volcano, KAI, scheduler-plugins/coscheduling,
YuniKorn), no pod-group label or annotation, no PyTorchJob `runPolicy.schedulingPolicy`, no
KubeRay batch-scheduler label, no Kubernetes PodGroup on the pods (`spec.schedulingGroup`, or
`spec.workloadRef` of Kubernetes 1.35's Workload API). Only workloads that request
accelerators are checked.

Severity: a warning at warning_gpus accelerators or more (16 by default); info below that.

## Why is this bad?
The default scheduler places pods one at a time. When GPUs are scarce, two jobs can each get
part of their pods and wait forever for the rest, holding the GPUs they got: a deadlock that
also blocks everyone else. Kueue (with `waitForPodsReady`, which lives in its manager
config) or a gang scheduler admits the whole group or nothing.

## Example
```yaml
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: llama-ft
  namespace: training
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: my-registry/llama-ft:1.2.0
              resources:
                limits:
                  nvidia.com/gpu: 8
    Worker:
      replicas: 3
      template:
        spec:
          containers:
            - name: pytorch
              image: my-registry/llama-ft:1.2.0
              resources:
                limits:
                  nvidia.com/gpu: 8
```

## Use instead
```yaml
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: llama-ft
  namespace: training
  labels:
    kueue.x-k8s.io/queue-name: training
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: my-registry/llama-ft:1.2.0
              resources:
                limits:
                  nvidia.com/gpu: 8
    Worker:
      replicas: 3
      template:
        spec:
          containers:
            - name: pytorch
              image: my-registry/llama-ft:1.2.0
              resources:
                limits:
                  nvidia.com/gpu: 8
```

## Options
- `warning_gpus` (integer, default 16): accelerators at which the finding becomes a warning.

## Fix
Unsafe, when exactly one LocalQueue exists in the namespace: adds the
`kueue.x-k8s.io/queue-name` label naming it. On a RayJob only when
`shutdownAfterJobFinishes: true` and no `clusterSelector` (Kueue manages nothing else);
otherwise the message says what Kueue needs first.

## References
- https://kueue.sigs.k8s.io/docs/tasks/manage/setup_wait_for_pods_ready/
- https://kueue.sigs.k8s.io/docs/tasks/run/rayjobs/
- https://github.com/kubernetes-sigs/kueue/blob/main/apis/config/v1beta2/configuration_types.go
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Option, Options, Rule, Scope, make_fix
from ailint.domain import ray
from ailint.domain.context import Context
from ailint.domain.extract import pod_templates as templates_of
from ailint.domain.quantities import to_int
from ailint.domain.roles import is_training_pod
from ailint.rules.trn import _training as tr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="TRN007",
    name="multi-node-training-no-gang-admission",
    severity=Severity.INFO,
    summary="A multi-pod accelerator workload has no gang admission (Kueue queue or gang scheduler)",
    kinds=("PyTorchJob", "MPIJob", "JobSet", "TrainJob", "LeaderWorkerSet", "RayJob", "RayCluster"),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    options={"warning_gpus": Option(16, "accelerators at which the finding becomes a warning", "integer")},
    tags=("training", "scheduling", "kueue"),
)


def _size(obj: Any, ctx: Any) -> tuple[int, float, str] | None:
    """(pods that must start together, accelerators, description) or None when not gang-shaped."""
    kind = obj.kind
    if kind == "PyTorchJob":
        specs = dict(tr.iter_replica_specs(obj))
        workers = tr.replica_count(specs.get("Worker", {"replicas": 0}))
        if workers is None or workers < 2:
            return None
        elastic_min = to_int(obj.get("spec", "elasticPolicy", "minReplicas"))
        if elastic_min is not None and elastic_min < workers:
            return None  # elastic training starts with fewer workers: not all-or-nothing
        pods, devs = tr.accelerator_total(obj)
        return pods, devs, f"{pods} pods ({workers} Workers)"
    if kind == "MPIJob":
        worker = as_dict(obj.get("spec", "mpiReplicaSpecs", "Worker"))
        workers = tr.replica_count(worker) if worker else 0
        if workers is None or workers < 2:
            return None
        pods, devs = tr.accelerator_total(obj)
        return pods, devs, f"{pods} pods ({workers} Workers)"
    if kind == "JobSet":
        pods, devs = tr.accelerator_total(obj)
        return (pods, devs, f"{pods} pods") if pods >= 2 else None
    if kind == "LeaderWorkerSet":
        size = to_int(obj.get("spec", "leaderWorkerTemplate", "size"))
        if size is None or size < 2:
            return None
        from ailint.domain.extract import pod_templates

        per = {
            p.role: sum(
                v
                for c in p.containers(include_init=False)
                for k, v in c.accelerators().items()
                if k != "vpc.amazonaws.com/efa"
            )
            for p in pod_templates(obj)
        }
        if "leader" in per:
            devs = per["leader"] + per.get("worker", 0.0) * (size - 1)
        else:
            devs = per.get("worker", 0.0) * size
        return size, devs, f"groups of {size} pods"
    if kind == "TrainJob":
        runtime = tr.trainjob_runtime(obj, ctx)
        nodes, _ = tr.trainjob_num_nodes(obj, runtime)
        dev = tr.trainjob_devices(obj, runtime)
        if nodes is None or nodes < 2 or dev is None:
            return None
        return nodes, float(nodes * dev[1]), f"{nodes} nodes"
    if kind == "RayCluster" and not any(is_training_pod(p) for p in templates_of(obj)):
        return None  # a RayCluster counts when it runs training (ray.train, torchrun, deepspeed...)
    if kind in ("RayJob", "RayCluster"):
        if kind == "RayJob" and ray.uses_cluster_selector(obj):
            return None
        pods, devs = 0, 0.0
        for g in ray.worker_groups(obj):
            per_pod = g.gpus_per_pod()
            if per_pod > 0:
                n = g.replicas * g.num_of_hosts
                pods += n
                devs += per_pod * n
        return (pods, devs, f"{pods} GPU worker pods") if pods >= 2 else None
    return None


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    size = _size(obj, ctx)
    if size is None:
        return
    _pods, devs, what = size
    if devs <= 0:
        return
    if tr.has_queue_label(obj) or tr.gang_mechanism(obj):
        return
    queues = tr.local_queues(ctx, obj)
    if any(q.name == "default" for q in queues):
        return  # Kueue's LocalQueue defaulting labels the job with the `default` queue
    try:
        warn_at: float = opts.get_int("warning_gpus")
    except (TypeError, ValueError):
        warn_at = 16.0
    sev = Severity.WARNING if devs >= warn_at else Severity.INFO
    msg = (
        f"{what} with {devs:g} accelerators must start together but nothing gangs them (no Kueue "
        "queue-name label, no gang scheduler): partial allocations deadlock on scarce GPUs"
    )
    fix = None
    if len(queues) == 1 and queues[0].name:
        blocker = None
        if obj.kind == "RayJob" and obj.get("spec", "shutdownAfterJobFinishes") is not True:
            blocker = "Kueue also needs shutdownAfterJobFinishes: true on a RayJob"
        if blocker:
            msg += f"; {blocker}"
        else:
            fix = make_fix(
                f"add label kueue.x-k8s.io/queue-name: {queues[0].name}",
                [tr.add_label_edit(obj, tr.QUEUE_LABEL, queues[0].name)],
                unsafe=True,
            )
    where = ("metadata", "labels") if obj.has(("metadata", "labels")) else ("metadata",)
    yield RULE.finding(obj, where if obj.has(where) else (), msg, severity=sev, fix=fix)
