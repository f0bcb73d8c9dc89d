"""
## What it does
Finds distributed or long-running training that nothing restarts after a failure:

- a Kubeflow `PyTorchJob` replica with `restartPolicy: Never` (replicas default to
  `OnFailure`);
- a `JobSet`, or the JobSet template of a `(Cluster)TrainingRuntime` that a TrainJob of the
  run uses, without `failurePolicy.maxRestarts` (it defaults to 0) while a replicated job
  sets `backoffLimit: 0` (so neither the child Job nor the JobSet retries);
- an Indexed `batch/v1` Job with `parallelism` > 1 and `backoffLimit: 0` (and no
  `backoffLimitPerIndex`);
- distributed training launched as a bare `Pod` (`torchrun`/`python -m torch.distributed.run`
  with `--nnodes`/`--nproc_per_node`, or `deepspeed` with `--num_nodes`/`--num_gpus`);
- a Kubeflow `MPIJob` (`kubeflow.org/v2beta1`) with `runPolicy.backoffLimit: 0`: the
  mpi-operator gives that value to the launcher Job, so the first failed `mpirun` fails the
  MPIJob (unset, the Job default of 6 retries applies). NCCL benchmark runs (`*_perf`)
  are skipped;
- a `RayCluster` (or an AIBrix `RayClusterFleet` template) with GPU worker groups whose own
  container commands run Ray Train code without `FailureConfig(max_failures=...)` (or with
  `max_failures=0`): Ray Train's default is 0, and nothing resubmits a run started there.
  Code in a mounted ConfigMap is TRN001's.

## Why is this bad?
Multi-node training fails routinely: a GPU falls off the bus, a node is repaired, a Spot
instance is reclaimed, NCCL times out. Without a restart budget the first such event ends
the whole run, and someone has to notice and resubmit it. For a PyTorchJob,
`runPolicy.backoffLimit` only counts replicas with `OnFailure`/`Always`: with `Never` a failed
pod ends the job. A bare Pod is never recreated when its node goes away, and the
descheduler never evicts one. An MPIJob retries by re-running the launcher (its workers
stay), so `backoffLimit: 0` turns one NCCL timeout into a failed job.

## Example
```yaml
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: llama-pretrain
spec:
  replicatedJobs:
    - name: workers
      replicas: 4
      template:
        spec:
          backoffLimit: 0
          completionMode: Indexed
          parallelism: 1
          completions: 1
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: trainer
                  image: my/trainer:1.0
                  resources:
                    limits:
                      nvidia.com/gpu: 8
```

## Use instead
```yaml
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: llama-pretrain
spec:
  failurePolicy:
    maxRestarts: 3
  replicatedJobs:
    - name: workers
      replicas: 4
      template:
        spec:
          backoffLimit: 0
          completionMode: Indexed
          parallelism: 1
          completions: 1
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: trainer
                  image: my/trainer:1.0
                  resources:
                    limits:
                      nvidia.com/gpu: 8
```

## Options
- `max_restarts` (integer, default 3): the restart budget the fixes write.

## Fix
Unsafe (the budget is a choice): JobSet and TrainingRuntime get
`failurePolicy.maxRestarts: 3`; a PyTorchJob gets `restartPolicy: OnFailure` on its `Never`
replicas plus `runPolicy.backoffLimit: 3`; an MPIJob gets `runPolicy.backoffLimit: 3`.
Indexed Jobs and bare Pods get no fix: give the Job a `backoffLimit`/`backoffLimitPerIndex`,
run the Pod as a Job or PyTorchJob. Ray Train code gets none: add
`failure_config=FailureConfig(max_failures=N)` to its `RunConfig`.

## References
- https://github.com/kubernetes-sigs/jobset/blob/main/api/jobset/v1alpha2/jobset_types.go
- https://github.com/kubeflow/trainer/blob/release-1.9/pkg/apis/kubeflow.org/v1/common_types.go
- https://kubernetes.io/docs/concepts/workloads/controllers/job/#pod-backoff-failure-policy
- https://github.com/kubeflow/mpi-operator/blob/master/pkg/controller/mpi_job_controller.go
- https://docs.ray.io/en/latest/train/user-guides/fault-tolerance.html
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Path, Severity, as_dict, iter_dicts
from ailint.core.rule import Option, Options, Rule, Scope, make_fix
from ailint.domain import accelerators, ray
from ailint.domain.context import Context
from ailint.domain.extract import flag_value, has_flag, pod_templates
from ailint.domain.quantities import to_int
from ailint.domain.roles import only_waits
from ailint.domain.workloads import kubeflow as kf
from ailint.fix import edits
from ailint.rules.trn import _training as tr
from ailint.rules.trn.trn001_ray_job_no_retries import train_problem

RULE = Rule(
    code="TRN005",
    name="training-job-no-restart-budget",
    severity=Severity.WARNING,
    summary="Distributed training has no restart budget: the first failure ends the run",
    kinds=(
        "PyTorchJob",
        "MPIJob",
        "JobSet",
        "TrainingRuntime",
        "ClusterTrainingRuntime",
        "Job",
        "Pod",
        *ray.CLUSTER_RULE_KINDS,
    ),
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    options={"max_restarts": Option(3, "restart budget written by the fixes", "integer")},
    tags=("training", "reliability"),
)


def _budget(opts: Options) -> int:
    try:
        return max(opts.get_int("max_restarts"), 1)
    except (TypeError, ValueError):
        return 3


def _max_restarts_fix(obj: K8sObject, base: Path, n: int) -> Fix | None:
    fp = obj.get(*base, "failurePolicy")
    if isinstance(fp, dict) and "maxRestarts" in fp:
        return make_fix(
            f"set failurePolicy.maxRestarts: {n}",
            [edits.replace_value(obj, base + ("failurePolicy", "maxRestarts"), str(n))],
            unsafe=True,
        )
    if isinstance(fp, dict) and fp and not edits.is_flow(obj, base + ("failurePolicy",)):
        return make_fix(
            f"add failurePolicy.maxRestarts: {n}",
            [edits.insert_key(obj, base + ("failurePolicy",), "maxRestarts", str(n))],
            unsafe=True,
        )
    if obj.has(base + ("failurePolicy",)):
        return None
    return make_fix(
        f"add failurePolicy.maxRestarts: {n}",
        [edits.insert_value(obj, base, "failurePolicy", {"maxRestarts": n})],
        unsafe=True,
    )


_TRAINING = lazy_re(
    r"torchrun|deepspeed|accelerate\s+launch|torch\.distributed|\btrain|finetune|pretrain|"
    r"megatron|nemo|jax\.distributed|mpirun|horovod",
    re.I,
)


def _is_training(obj: K8sObject) -> bool:
    """Accelerator pods, or a command that runs training (not a sleep demo: a container that
    only sleeps holds its devices and trains nothing, as JobSet's DRA scheduling example)."""
    for pod in pod_templates(obj):
        for c in pod.containers(include_init=False):
            if only_waits(c):
                continue
            if c.accelerators() or _TRAINING.search(" ".join(c.tokens)):
                return True
    return False


def _name(obj: K8sObject) -> str:
    return repr(str(obj.name or obj.metadata.get("generateName") or "<unnamed>"))


def _jobset_like(obj: K8sObject, base: Path, opts: Options, who: str) -> Iterator[Finding]:
    if not _is_training(obj):
        return
    mr = obj.get(*base, "failurePolicy", "maxRestarts")
    if to_int(mr):
        return
    zero = [
        str(rj.get("name") or f"job{i}")
        for i, rj in iter_dicts(obj.get(*base, "replicatedJobs"))
        if to_int(as_dict(as_dict(rj.get("template")).get("spec")).get("backoffLimit")) == 0
    ]
    if not zero:
        return  # child Jobs keep their own backoffLimit (default 6)
    state = "failurePolicy.maxRestarts: 0" if mr is not None else "no failurePolicy.maxRestarts (default 0)"
    where = (
        base + ("failurePolicy", "maxRestarts")
        if mr is not None
        else (base + ("failurePolicy",) if obj.has(base + ("failurePolicy",)) else base)
    )
    yield RULE.finding(
        obj,
        where,
        f"{who} has {state} and replicated job {zero[0]!r} sets backoffLimit: 0: the first pod "
        "failure ends the whole run",
        fix=_max_restarts_fix(obj, base, _budget(opts)),
    )


def _pytorchjob(obj: K8sObject, opts: Options) -> Iterator[Finding]:
    never = [(role, rs) for role, rs in tr.iter_replica_specs(obj) if rs.get("restartPolicy") == "Never"]
    if not never:
        return
    n = _budget(opts)
    es = [
        edits.replace_value(obj, ("spec", "pytorchReplicaSpecs", role, "restartPolicy"), "OnFailure")
        for role, _ in never
    ]
    if obj.get("spec", "runPolicy", "backoffLimit") is None:
        rp = obj.get("spec", "runPolicy")
        if isinstance(rp, dict) and rp and not edits.is_flow(obj, ("spec", "runPolicy")):
            es.append(edits.insert_key(obj, ("spec", "runPolicy"), "backoffLimit", str(n)))
        elif not obj.has(("spec", "runPolicy")):
            es.append(edits.insert_value(obj, ("spec",), "runPolicy", {"backoffLimit": n}))
        else:
            es.append(None)
    fix = (
        make_fix(f"use restartPolicy: OnFailure with runPolicy.backoffLimit: {n}", es, unsafe=True)
        if all(e is not None for e in es)
        else None
    )
    role = never[0][0]
    yield RULE.finding(
        obj,
        ("spec", "pytorchReplicaSpecs", role, "restartPolicy"),
        f"{role} replicas use restartPolicy: Never: the operator never restarts a failed pod, so one "
        "failure ends the PyTorchJob (runPolicy.backoffLimit counts only OnFailure/Always replicas)",
        fix=fix,
    )


def _indexed_job(obj: K8sObject) -> Iterator[Finding]:
    spec = as_dict(obj.get("spec"))
    par = to_int(spec.get("parallelism"))
    if spec.get("completionMode") != "Indexed" or par is None or par < 2:
        return
    if to_int(spec.get("backoffLimit")) != 0 or "backoffLimitPerIndex" in spec or not _is_training(obj):
        return
    yield RULE.finding(
        obj,
        ("spec", "backoffLimit"),
        f"Indexed Job with parallelism {par} has backoffLimit: 0: one failed pod fails all {par} "
        "ranks with no retry; set a backoffLimit (or backoffLimitPerIndex)",
    )


def _bare_pod(obj: K8sObject) -> Iterator[Finding]:
    if obj.metadata.get("ownerReferences"):
        return
    for pod in pod_templates(obj):
        for c in pod.containers(include_init=False):
            toks = c.tokens
            launcher = None
            if tr.runs_torchrun(c) and has_flag(toks, *tr.NNODES_FLAGS, *tr.NPROC_FLAGS):
                launcher = "torchrun"
            elif any(t.rsplit("/", 1)[-1] == "deepspeed" for t in toks) and has_flag(toks, "--num_nodes", "--num_gpus"):
                launcher = "deepspeed"
            if launcher is None:
                continue
            nodes = flag_value(toks, *tr.NNODES_FLAGS, "--num_nodes")
            what = f" across {nodes} nodes" if nodes and nodes != "1" else ""
            yield RULE.finding(
                obj,
                ("kind",),
                f"distributed training ({launcher}{what}) runs as a bare Pod: nothing recreates it "
                "when its node fails or is drained; run it as a Job, PyTorchJob or JobSet",
                anchor="value",
            )
            return


def _is_benchmark(obj: K8sObject) -> bool:
    """An NCCL benchmark (nccl-tests' `all_reduce_perf` and friends): a fail-fast test, no run."""
    return any(
        t.rsplit("/", 1)[-1].endswith("_perf")
        for pod in pod_templates(obj)
        for c in pod.containers(include_init=False)
        for t in c.tokens
    )


def _mpijob(obj: K8sObject, opts: Options) -> Iterator[Finding]:
    job = kf.mpijob(obj)
    if job is None or job.backoff_limit != 0 or not (job.workers or job.launcher_as_worker):
        return
    if not _is_training(obj) or _is_benchmark(obj):
        return
    n = _budget(opts)
    fix = make_fix(
        f"set runPolicy.backoffLimit: {n}", [edits.replace_value(obj, job.backoff_path, str(n))], unsafe=True
    )
    yield RULE.finding(
        obj,
        job.backoff_path,
        "runPolicy.backoffLimit: 0 becomes the launcher Job's backoffLimit: the first failed mpirun (a lost "
        "worker, an NCCL timeout) fails the MPIJob with no retry",
        fix=fix,
    )


def _ray_cluster(obj: K8sObject) -> Iterator[Finding]:
    gpu_workers = [g for g in ray.worker_groups(obj) if g.has_accelerators and g.may_scale_out()]
    if not gpu_workers:
        return
    for src in ray.code_sources(obj):  # container commands only: mounted ConfigMaps are TRN001's
        problem = train_problem(src.text)
        if problem is None:
            continue
        text, needle = problem
        pods = sum(g.replicas * g.num_of_hosts for g in gpu_workers)
        scale = f"{pods} GPU worker pod{'s' if pods != 1 else ''}" if pods else "autoscaled GPU workers"
        yield RULE.finding(
            obj,
            src.path,
            f"{src.label}: {text} ({scale})",
            span=accelerators.line_span_in_value(obj, src.path, needle),
        )
        return


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    kind = obj.kind
    if ray.is_cluster_like(obj):
        yield from _ray_cluster(obj)
    elif kind == "MPIJob":
        yield from _mpijob(obj, opts)
    elif kind == "PyTorchJob":
        yield from _pytorchjob(obj, opts)
    elif kind == "JobSet":
        yield from _jobset_like(obj, ("spec",), opts, f"JobSet {_name(obj)}")
    elif kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        users = [t for t in ctx.of_kind("TrainJob") if tr.trainjob_runtime(t, ctx) is obj] if ctx.bundle else []
        if users:
            yield from _jobset_like(
                obj, ("spec", "template", "spec"), opts, f"{kind} {obj.name!r} (used by TrainJob {users[0].name!r})"
            )
    elif kind == "Job" and not obj.group.startswith("batch.volcano.sh"):
        yield from _indexed_job(obj)
    elif kind == "Pod":
        yield from _bare_pod(obj)
