"""
## What it does
Checks that Kueue can admit the accelerator workloads of the run:

- (a) a `ClusterQueue` whose `resourceGroups[].coveredResources` lacks an accelerator resource
  (`nvidia.com/gpu`, `amd.com/gpu`, `aws.amazon.com/neuron`, `aws.amazon.com/neuroncore`,
  `vpc.amazonaws.com/efa`) that a workload queued to it through a LocalQueue requests;
- (b) a `ClusterQueue` without `spec.namespaceSelector`: null is a nothing selector, so no
  namespace is eligible (`{}` means all namespaces); a ClusterQueue in a cohort that no
  LocalQueue of the run points at only lends its quota to the cohort and is left alone;
- (c) an accelerator Job, RayJob, PyTorchJob, JobSet, LeaderWorkerSet or TrainJob in a
  namespace that has a LocalQueue, without the `kueue.x-k8s.io/queue-name` label (skipped when
  the namespace has a LocalQueue named `default`: Kueue then labels jobs itself);
- (d) a GPU `ResourceFlavor` (used for an accelerator resource, or with accelerator node
  labels) whose `nodeLabels` no accelerator NodePool of the run can satisfy, or whose
  `tolerations` miss a taint of the NodePools it selects.

Severity: warning for ResourceFlavors whose node labels or tolerations do not match the
NodePools they select, and for a workload with no queue-name label in a namespace served by
LocalQueues; an error when the workload can never be admitted.

## Why is this bad?
Kueue refuses a workload that requests a resource its ClusterQueue does not cover ("resource
unavailable in ClusterQueue"), and a ClusterQueue with no namespaceSelector admits nothing:
the jobs sit suspended forever. A GPU job without the queue label bypasses the quota (or stays
suspended when `manageJobsWithoutQueueName: true`). A flavor whose node labels match no
NodePool injects a node selector that no node will ever satisfy.

## Example
```yaml
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: gpu-cq
spec:
  resourceGroups:
    - coveredResources: ["cpu", "memory"]
      flavors:
        - name: default
          resources:
            - name: cpu
              nominalQuota: 64
            - name: memory
              nominalQuota: 256Gi
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: training
  namespace: ml
spec:
  clusterQueue: gpu-cq
---
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune
  namespace: ml
  labels:
    kueue.x-k8s.io/queue-name: training
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: my/trainer:1.0
          resources:
            limits:
              nvidia.com/gpu: 8
```

## Use instead
```yaml
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: gpu-cq
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: ["cpu", "memory", "nvidia.com/gpu"]
      flavors:
        - name: default
          resources:
            - name: cpu
              nominalQuota: 64
            - name: memory
              nominalQuota: 256Gi
            - name: nvidia.com/gpu
              nominalQuota: 16
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: training
  namespace: ml
spec:
  clusterQueue: gpu-cq
---
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune
  namespace: ml
  labels:
    kueue.x-k8s.io/queue-name: training
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: my/trainer:1.0
          resources:
            limits:
              nvidia.com/gpu: 8
```

## Options
None.

## Fix
(b), unsafe: adds `namespaceSelector: {}` (every namespace; narrow it if queues are per team).
(c), unsafe, when the namespace has exactly one LocalQueue: adds the queue-name label; on a
RayJob only with `shutdownAfterJobFinishes: true` and no `clusterSelector`, which Kueue
requires. (a) and (d) need quota and label choices: the message names them.

## References
- https://github.com/kubernetes-sigs/kueue/blob/main/apis/kueue/v1beta2/clusterqueue_types.go
- https://github.com/kubernetes-sigs/kueue/blob/main/apis/kueue/v1beta2/resourceflavor_types.go
- https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/
- https://kueue.sigs.k8s.io/docs/tasks/run/rayjobs/
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, as_list, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import instances, karpenter, ray
from ailint.domain.context import Context, NodePoolView
from ailint.domain.extract import Requirement, pod_templates, untolerated
from ailint.fix import edits
from ailint.rules.trn import _training as tr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="TRN008",
    name="kueue-workload-unadmittable",
    severity=Severity.ERROR,
    summary="Kueue cannot admit the accelerator workloads: uncovered resources, no namespaces, missing queue label",
    kinds=(
        "kueue.x-k8s.io/ClusterQueue",
        "kueue.x-k8s.io/ResourceFlavor",
        "Job",
        "RayJob",
        "PyTorchJob",
        "JobSet",
        "LeaderWorkerSet",
        "TrainJob",
    ),
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("kueue", "scheduling", "training"),
)

ACCEL = (
    "nvidia.com/gpu",
    "amd.com/gpu",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "aws.amazon.com/neurondevice",
    "vpc.amazonaws.com/efa",
)
KUEUE_JOB_KINDS = ("Job", "RayJob", "PyTorchJob", "JobSet", "LeaderWorkerSet", "TrainJob")


def _is_kueue(obj: K8sObject) -> bool:
    return obj.group.startswith("kueue.x-k8s.io")


def _workload_resources(obj: K8sObject, ctx: Any) -> set[str]:
    """Accelerator resources a workload requests (limits count as requests)."""
    out: set[str] = set()
    if obj.kind == "TrainJob":
        rpn = as_dict(obj.get("spec", "trainer", "resourcesPerNode"))
        for part in ("limits", "requests"):
            out |= {r for r in as_dict(rpn.get(part)) if r in ACCEL}
        if not rpn:
            tpl = tr.runtime_trainer_template(tr.trainjob_runtime(obj, ctx))
            if tpl is not None:
                for c in tpl.containers():
                    out |= set(c.accelerators())
        return out
    for p in pod_templates(obj):
        if p.role == "submitter":
            continue
        for c in p.containers():
            out |= set(c.accelerators())
    return out


def _name(obj: K8sObject) -> str:
    ns = f"{obj.namespace}/" if obj.namespace else ""
    return ns + str(obj.name or obj.metadata.get("generateName") or "<unnamed>")


def _queue_name(obj: K8sObject) -> str | None:
    v = obj.labels.get(tr.QUEUE_LABEL, obj.annotations.get(tr.QUEUE_LABEL))
    return str(v) if v is not None else None


def _covered(cq: K8sObject) -> set[str]:
    out: set[str] = set()
    for _, rg in iter_dicts(cq.get("spec", "resourceGroups")):
        out |= {str(r) for r in as_list(rg.get("coveredResources"))}
    return out


def _workloads_by_queue(ctx: Any) -> dict[str | None, list[K8sObject]]:
    """Workloads of the run by queue-name label, in kind then run order (indexed once per run)."""

    def build() -> dict[str | None, list[K8sObject]]:
        out: dict[str | None, list[K8sObject]] = {}
        for kind in KUEUE_JOB_KINDS:
            for w in ctx.of_kind(kind):
                out.setdefault(_queue_name(w), []).append(w)
        return out

    return ctx.memo("TRN008.workloads_by_queue", build)


def _by_name(ctx: Any, kind: str) -> dict[Any, list[K8sObject]]:
    """Kueue objects of `kind` by name (indexed once per run)."""

    def build() -> dict[Any, list[K8sObject]]:
        out: dict[Any, list[K8sObject]] = {}
        for o in ctx.of_kind(kind):
            if _is_kueue(o):
                out.setdefault(o.name, []).append(o)
        return out

    return ctx.memo(("TRN008.by_name", kind), build)


def _lq_workloads(ctx: Any, lq: K8sObject) -> list[tuple[K8sObject, set[str]]]:
    """(workload, accelerator resources it needs) of the workloads a LocalQueue serves, in run
    order (once per LocalQueue: every ClusterQueue naming it asks again)."""
    got: list[tuple[K8sObject, set[str]]] = ctx.memo(  # LocalQueues live as long as the run's context
        ("TRN008.lq_workloads", id(lq)),
        lambda: [(w, _needed(w, ctx)) for w in _workloads_by_queue(ctx).get(lq.name, ()) if tr.same_namespace(w, lq)],
    )
    return got


def _covering(ctx: Any, lq_name: Any, w: K8sObject, needed: set[str]) -> list[K8sObject]:
    """ClusterQueues that a LocalQueue of this name in the workload's namespace points to and
    that cover everything the workload needs (once per queue name and workload)."""

    def covering() -> list[K8sObject]:
        names = {
            o.get("spec", "clusterQueue")
            for o in _by_name(ctx, "LocalQueue").get(lq_name, ())
            if tr.same_namespace(o, w)
        }
        return [c for n in names for c in _by_name(ctx, "ClusterQueue").get(n, ()) if not needed - _covered(c)]

    got: list[K8sObject] = ctx.memo(("TRN008.covering", lq_name, id(w)), covering)
    return got


def _needed(w: K8sObject, ctx: Any) -> set[str]:
    got = ctx.memo(("TRN008.needed", id(w)), lambda: _workload_resources(w, ctx))  # objects outlive the memo
    return set(got)


def _cluster_queue(obj: K8sObject, ctx: Any) -> Iterator[Finding]:
    spec = as_dict(obj.get("spec"))
    lends_only = bool(spec.get("cohort") or spec.get("cohortName")) and not any(
        _is_kueue(lq) and lq.get("spec", "clusterQueue") == obj.name for lq in ctx.of_kind("LocalQueue")
    )  # a queue no LocalQueue feeds that only lends its quota to its cohort admits nothing by design
    if obj.get("spec", "namespaceSelector") is None and not lends_only:
        fix = None
        if "namespaceSelector" not in spec and spec:
            fix = make_fix(
                "add namespaceSelector: {} (all namespaces)",
                [edits.insert_key(obj, ("spec",), "namespaceSelector", "{}")],
                unsafe=True,
            )
        where = ("spec", "namespaceSelector") if "namespaceSelector" in spec else ("spec",)
        yield RULE.finding(
            obj,
            where,
            f"ClusterQueue {obj.name!r} has no namespaceSelector: null selects no namespace, so it "
            "admits nothing (use {} for all namespaces)",
            fix=fix,
        )
    if "resourceGroups" not in spec:
        return
    covered = _covered(obj)
    lqs = [lq for lq in ctx.of_kind("LocalQueue") if _is_kueue(lq) and lq.get("spec", "clusterQueue") == obj.name]
    missing: dict[str, str] = {}
    for lq in lqs:
        for w, needed in _lq_workloads(ctx, lq):
            uncovered = needed - covered
            if not uncovered:
                continue
            # The same LocalQueue or ClusterQueue defined more than once (alternative setups
            # in one repo): trust any definition that covers the workload.
            if any(c is not obj for c in _covering(ctx, lq.name, w, needed)):
                continue
            for res in sorted(uncovered):
                missing.setdefault(res, f"{w.kind} {_name(w)}")
    for res, who in missing.items():
        yield RULE.finding(
            obj,
            ("spec", "resourceGroups"),
            f"{who} requests {res} but ClusterQueue {obj.name!r} does not cover it: Kueue never "
            f"admits the workload; add {res} to coveredResources with a quota",
        )


def _flavor_used_for_accelerators(rf: K8sObject, ctx: Any) -> bool:
    for cq in ctx.of_kind("ClusterQueue"):
        if not _is_kueue(cq):
            continue
        for _, rg in iter_dicts(cq.get("spec", "resourceGroups")):
            if not any(str(r) in ACCEL for r in as_list(rg.get("coveredResources"))):
                continue
            if any(f.get("name") == rf.name for _, f in iter_dicts(rg.get("flavors"))):
                return True
    labels = as_dict(rf.get("spec", "nodeLabels"))
    for k, v in labels.items():
        k = str(k)
        if k == "karpenter.sh/nodepool":
            pool = ctx.nodepool(str(v))
            if pool is not None and karpenter.is_accelerator_pool(pool):
                return True
        if (karpenter.provider_suffix(k) or "").startswith(("instance-gpu", "instance-accelerator")):
            return True
        if k in karpenter.INSTANCE_TYPE_KEYS and instances.is_accelerator_type(str(v)):
            return True
        if (karpenter.provider_suffix(k) or "") == "instance-family" and instances.is_accelerator_family(str(v)):
            return True
    return False


_RUNTIME_LABEL_PREFIXES = ("nvidia.com/", "feature.node.kubernetes.io/", "cloud.google.com/")
_PROVISIONER_PREFIXES = ("karpenter.sh/", "karpenter.k8s.aws/", "eks.amazonaws.com/")


def _resource_flavor(rf: K8sObject, ctx: Any) -> Iterator[Finding]:
    pools = ctx.memo("TRN008.accelerator_pools", lambda: [p for p in ctx.nodepools if karpenter.is_accelerator_pool(p)])
    if not pools or not _flavor_used_for_accelerators(rf, ctx):
        return
    labels = {str(k): str(v) for k, v in as_dict(rf.get("spec", "nodeLabels")).items()}
    pool_keys = ctx.memo("TRN008.pool_label_keys", lambda: {k for p in ctx.nodepools for k in p.labels})
    if labels and not any(
        k.startswith(_PROVISIONER_PREFIXES) or k in karpenter.INSTANCE_TYPE_KEYS or k in pool_keys for k in labels
    ):
        return  # labels of another provisioner (GKE node pools, device plugins): not about these NodePools
    reqs = [Requirement(k, "In", (v,)) for k, v in labels.items() if not k.startswith(_RUNTIME_LABEL_PREFIXES)]
    matching: list[NodePoolView] = [p for p in pools if p.compatible_with(reqs)] if reqs else list(pools)
    names = ", ".join(ctx.describe(p.obj) for p in pools[:3]) + (", ..." if len(pools) > 3 else "")
    if reqs and not matching:
        shown = ", ".join(f"{r.key}={r.values[0]}" for r in reqs[:3])
        yield RULE.finding(
            rf,
            ("spec", "nodeLabels"),
            f"ResourceFlavor {rf.name!r} nodeLabels ({shown}) match none of the accelerator pools {names}: "
            "admitted pods get a node selector no node satisfies",
            severity=Severity.WARNING,
        )
        return
    tols = [t for _, t in iter_dicts(rf.get("spec", "tolerations"))]
    if not tols:
        return
    implicit = [{"key": r, "operator": "Exists", "effect": "NoSchedule"} for r in ACCEL]
    for p in matching:
        left = untolerated(p.taints, tols + implicit)
        if left:
            t = left[0]
            taint = f"{t.get('key')}{'=' + str(t.get('value')) if t.get('value') else ''}:{t.get('effect')}"
            yield RULE.finding(
                rf,
                ("spec", "tolerations"),
                f"ResourceFlavor {rf.name!r} tolerations do not tolerate taint {taint} of "
                f"{ctx.describe(p.obj)}, which it selects: admitted pods stay Pending",
                severity=Severity.WARNING,
            )
            return


def _workload(obj: K8sObject, ctx: Any) -> Iterator[Finding]:
    if obj.kind == "Job" and obj.group.startswith("batch.volcano.sh"):
        return  # Volcano schedules its own jobs
    if (
        tr.has_queue_label(obj)
        or tr.gang_mechanism(obj)
        or not _workload_resources(obj, ctx) - {"vpc.amazonaws.com/efa"}
    ):
        return
    queues = tr.local_queues(ctx, obj)
    if not queues or any(q.name == "default" for q in queues):
        return
    all_names = sorted({ctx.describe(q) for q in queues})
    names = ", ".join(all_names[:3]) + (f" and {len(all_names) - 3} more" if len(all_names) > 3 else "")
    many = len(all_names) > 1
    msg = (
        f"{names} serve{'' if many else 's'} this namespace but this {obj.kind} "
        "has no kueue.x-k8s.io/queue-name label: it bypasses the GPU quota (or stays suspended)"
    )
    fix = None
    blockers = []
    if obj.kind == "RayJob":
        if obj.get("spec", "shutdownAfterJobFinishes") is not True:
            blockers.append("shutdownAfterJobFinishes: true")
        if ray.uses_cluster_selector(obj):
            blockers.append("no clusterSelector")
    if blockers:
        msg += "; Kueue also requires " + " and ".join(blockers) + " on a RayJob"
    elif len(queues) == 1 and queues[0].name:
        fix = make_fix(
            f"add label kueue.x-k8s.io/queue-name: {queues[0].name}",
            [tr.add_label_edit(obj, tr.QUEUE_LABEL, str(queues[0].name))],
            unsafe=True,
        )
    where = ("metadata", "labels") if obj.has(("metadata", "labels")) else ("metadata",)
    yield RULE.finding(obj, where, msg, severity=Severity.WARNING, fix=fix)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "ClusterQueue":
        if _is_kueue(obj):
            yield from _cluster_queue(obj, ctx)
    elif obj.kind == "ResourceFlavor":
        if _is_kueue(obj):
            yield from _resource_flavor(obj, ctx)
    elif obj.kind in KUEUE_JOB_KINDS:
        yield from _workload(obj, ctx)
