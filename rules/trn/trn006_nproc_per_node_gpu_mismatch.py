"""
## What it does
Compares the processes started per node with the GPUs each pod gets:

- `torchrun --nproc_per_node N` (also `--nproc-per-node`, `python -m torch.distributed.run`)
  against the `nvidia.com/gpu` (or `aws.amazon.com/neuroncore`) limit of the container that
  runs it, in any pod-bearing kind;
- `PyTorchJob.spec.nprocPerNode` against the GPUs of its Master and Worker pods;
- `TrainJob.spec.trainer.numProcPerNode` (or the runtime's `mlPolicy.torch.numProcPerNode`)
  against `trainer.resourcesPerNode` (or the runtime's trainer container).

It also compares `torchrun --nnodes N` with the pods that actually run: Master + Worker
replicas of a PyTorchJob, `numNodes` of a TrainJob, or the completions of an Indexed Job.
`auto`, `gpu`, elastic ranges (`1:4`) and values from env vars are not checked.

For a Kubeflow `MPIJob` (`kubeflow.org/v2beta1`, Open MPI) it reads the launcher's `mpirun`
against the hostfile the mpi-operator writes (every Worker with `slots=<slotsPerWorker>`,
default 1):

- `-np N` above Workers x `slotsPerWorker` (without `--oversubscribe`): Open MPI refuses to
  start;
- `-np N` that fills fewer Workers than there are (Open MPI fills each host's slots in
  order): the other Worker pods, and their GPUs, run no rank;
- the ranks each Worker gets (`slotsPerWorker`, `-npernode`/`-N`, `--map-by ppr:N:node`)
  against its `nvidia.com/gpu` (or `amd.com/gpu`) limit, when each rank drives a known
  number of GPUs: a Python script (Horovod, mpi4py: one) or an nccl-tests binary (`-g`,
  default one). Launchers (`torchrun`, `deepspeed`), shell scripts and other programs may
  start their own processes per GPU and are not compared; nor are Neuron devices, `-H` or
  another hostfile, `runLauncherAsWorker`, or Intel MPI and MPICH.

## Why is this bad?
With fewer processes than GPUs, the extra GPUs sit idle and are billed. With more, ranks
share a device or fail with CUDA "invalid device ordinal". A `--nnodes` that differs from the
number of pods makes the rendezvous wait for nodes that never come (or start with the
wrong world size), so the job hangs until its timeout.

## Example
```yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: ddp
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: trainer
          image: nvcr.io/nvidia/pytorch:24.07-py3
          command: ["torchrun", "--nproc_per_node=4", "train.py"]
          resources:
            limits:
              nvidia.com/gpu: 8
```

## Use instead
```yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: ddp
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: trainer
          image: nvcr.io/nvidia/pytorch:24.07-py3
          command: ["torchrun", "--nproc_per_node=8", "train.py"]
          resources:
            limits:
              nvidia.com/gpu: 8
```

## Options
None.

## Fix
Safe: sets the per-node process count to the GPU limit (the flag in a one-line command
item, `nprocPerNode`, `numProcPerNode`, or an MPIJob's `slotsPerWorker` when `mpirun`
sets no `-np`). Multi-line scripts, `--nnodes` mismatches and `mpirun` flags get no fix:
say which of the two is right.

## References
- https://pytorch.org/docs/stable/elastic/run.html
- https://github.com/kubeflow/trainer/blob/release-1.9/pkg/apis/kubeflow.org/v1/pytorch_types.go
- https://github.com/kubeflow/trainer/blob/master/pkg/apis/trainer/v1alpha1/trainjob_types.go
- https://github.com/kubeflow/mpi-operator/blob/master/pkg/controller/mpi_job_controller.go
- https://docs.open-mpi.org/en/main/launching-apps/scheduling.html
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Path, Severity
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.extract import GPU_RESOURCES, POD_KINDS, Container, flag_value, pod_templates
from ailint.domain.quantities import to_int
from ailint.fix import edits
from ailint.rules.trn import _training as tr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="TRN006",
    name="nproc-per-node-gpu-mismatch",
    severity=Severity.ERROR,
    summary="Processes per node or --nnodes do not match the GPUs per pod or the pods that run",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("training", "gpu"),
)


def _short(res: str) -> str:
    return {"nvidia.com/gpu": "GPU", "amd.com/gpu": "GPU", "aws.amazon.com/neuroncore": "NeuronCore"}.get(res, res)


def _consequence(procs: int, devices: int, res: str) -> str:
    unit = _short(res)
    if procs < devices:
        return f"{devices - procs} {unit}{'s' if devices - procs != 1 else ''} sit idle"
    return f"{procs - devices} extra rank{'s' if procs - devices != 1 else ''} have no {unit} of their own"


def _flag_fix(obj: Any, use: tr.FlagUse, new: int) -> Fix | None:
    if not use.inline:
        return make_fix(f"set --nproc_per_node to {new}", [edits.replace_value(obj, use.path, edits.quoted(str(new)))])
    text = obj.get(*use.path)
    if not isinstance(text, str) or "\n" in text:
        return None
    repl = tr.replace_flag_text(text, tr.NPROC_FLAGS, str(new))
    if repl is None:
        return None
    return make_fix(f"set --nproc_per_node to {new}", [edits.replace_value(obj, use.path, edits.scalar(repl))])


def _container_checks(obj: Any, c: Container) -> Iterator[Finding]:
    if not tr.runs_torchrun(c):
        return
    nproc = tr.find_flag(c, tr.NPROC_FLAGS)
    dev = tr.container_devices(c)
    if nproc is not None and dev is not None:
        n = to_int(nproc.value)
        res, count = dev
        if n is not None and n != count:
            yield RULE.finding(
                obj,
                nproc.path,
                f"torchrun starts {n} process{'es' if n != 1 else ''} per node but container "
                f"{c.name!r} has {count} {res}: {_consequence(n, count, res)}",
                fix=_flag_fix(obj, nproc, count),
            )


def _expected_nodes(obj: Any, pod: Any, ctx: Any) -> tuple[int | None, str]:
    kind = obj.kind
    if kind == "PyTorchJob":
        if obj.get("spec", "elasticPolicy") is not None:
            return None, ""
        total, parts = 0, []
        for role, rs in tr.iter_replica_specs(obj):
            n = tr.replica_count(rs)
            if n is None:
                return None, ""
            total += n
            parts.append(f"{role} {n}")
        return total, "the PyTorchJob runs " + " + ".join(parts) + f" = {total} pod{'s' if total != 1 else ''}"
    if kind == "Job" and obj.get("spec", "completionMode") == "Indexed":
        comp = to_int(obj.get("spec", "completions"))
        if comp is not None:
            return comp, f"the Indexed Job has {comp} completion{'s' if comp != 1 else ''}"
    return None, ""


def _nnodes_checks(obj: Any, ctx: Any) -> Iterator[Finding]:
    seen = set()
    for pod in pod_templates(obj):
        expected, why = _expected_nodes(obj, pod, ctx)
        if expected is None:
            continue
        for c in pod.containers(include_init=False):
            if not tr.runs_torchrun(c):
                continue
            use = tr.find_flag(c, tr.NNODES_FLAGS)
            if use is None or use.path in seen:
                continue
            n = to_int(use.value)
            if n is not None and n != expected:
                seen.add(use.path)
                yield RULE.finding(
                    obj,
                    use.path,
                    f"torchrun --nnodes={n} but {why}: the rendezvous waits for nodes that never join"
                    if n > expected
                    else f"torchrun --nnodes={n} but {why}: pods beyond {n} fail to join the rendezvous",
                )


def _pytorchjob(obj: Any) -> Iterator[Finding]:
    raw = obj.get("spec", "nprocPerNode")
    n = to_int(raw)
    if n is None:
        return
    mismatched, counts = [], set()
    for pod in pod_templates(obj):
        for c in pod.containers(include_init=False):
            dev = tr.container_devices(c)
            if dev is None:
                continue
            counts.add(dev)
            if dev[1] != n:
                mismatched.append((pod.role, c, dev))
            break
    if not mismatched:
        return
    role, c, (res, count) = mismatched[0]
    fix = None
    if len(counts) == 1:
        fix = make_fix(
            f'set nprocPerNode to "{count}"',
            [edits.replace_value(obj, ("spec", "nprocPerNode"), edits.quoted(str(count)))],
        )
    yield RULE.finding(
        obj,
        ("spec", "nprocPerNode"),
        f'nprocPerNode is "{raw}" but {role} pods have {count} {res}: {_consequence(n, count, res)}',
        fix=fix,
    )


def _trainjob(obj: Any, ctx: Any) -> Iterator[Finding]:
    runtime = tr.trainjob_runtime(obj, ctx)
    dev = tr.trainjob_devices(obj, runtime)
    raw = obj.get("spec", "trainer", "numProcPerNode")
    path: Path | None = ("spec", "trainer", "numProcPerNode")
    if raw is None and runtime is not None:
        raw = runtime.get("spec", "mlPolicy", "torch", "numProcPerNode")
        path = None
    n = to_int(raw)
    if dev is not None and n is not None and n != dev[1]:
        res, count = dev
        # (no path: the value came from the runtime)
        from_runtime = f" (from {ctx.describe(runtime)})" if path is None and runtime is not None else ""
        src = f"numProcPerNode is {raw}{from_runtime}"
        new = count if isinstance(raw, int) else edits.quoted(str(count))
        fix = make_fix(f"set numProcPerNode to {count}", [edits.replace_value(obj, path, str(new))]) if path else None
        yield RULE.finding(
            obj,
            path or ("spec", "trainer"),
            f"{src} but each node gets {count} {res}: {_consequence(n, count, res)}",
            fix=fix,
        )
    toks = tr.trainjob_command_tokens(obj)
    if any(t.rsplit("/", 1)[-1] == "torchrun" for t in toks):
        nn = to_int(flag_value(toks, *tr.NNODES_FLAGS))
        nodes, npath = tr.trainjob_num_nodes(obj, runtime)
        if nn is not None and nodes is not None and nn != nodes:
            yield RULE.finding(
                obj,
                npath or ("spec", "trainer"),
                f"torchrun --nnodes={nn} but the TrainJob runs {nodes} node{'s' if nodes != 1 else ''}"
                ": the rendezvous never completes"
                if nn > nodes
                else f"torchrun --nnodes={nn} but the TrainJob runs {nodes} nodes: extra nodes fail to join",
            )
        np_ = to_int(flag_value(toks, *tr.NPROC_FLAGS))
        if np_ is not None and dev is not None and np_ != dev[1] and n is None:
            yield RULE.finding(
                obj,
                ("spec", "trainer"),
                f"torchrun starts {np_} processes per node but each node gets {dev[1]} {dev[0]}: "
                f"{_consequence(np_, dev[1], dev[0])}",
            )


# ---------------------------------------------------------------------------------------
# MPIJob (kubeflow.org/v2beta1, Open MPI)
# ---------------------------------------------------------------------------------------
_PY = lazy_re(r"python(3(\.\d+)?)?")
_OVERSUBSCRIBE_ENV = "OMPI_MCA_rmaps_base_oversubscribe"


def _gpus_per_rank(program: list[str]) -> tuple[str, int] | None:
    """(program, GPUs one rank drives) for the programs whose ranks each drive a known number
    of GPUs: nccl-tests binaries (`-g`, default 1) and Python scripts (Horovod and mpi4py
    pin one GPU per rank). None for launchers, shells and other binaries."""
    if not program:
        return None
    base = program[0].rsplit("/", 1)[-1]
    if base.endswith("_perf"):
        g = flag_value(program, "-g", "--ngpus")
        n = to_int(g) if g is not None else 1
        return (base, n) if n and n > 0 else None
    if _PY.fullmatch(base):
        rest = [t for t in program[1:] if not (t.startswith("-") and t not in ("-m", "-c"))]
        if not rest or rest[0] in ("-m", "-c") or not rest[0].endswith(".py"):
            return None  # a module (torch.distributed.run, deepspeed) or inline code
        return rest[0].rsplit("/", 1)[-1], 1
    return None


def _item_path(c: Container, names: tuple[str, ...]) -> Path | None:
    """The command/args item holding the first of the flags `names` (its value item when the
    flag stands alone), else the item that runs mpirun."""
    from ailint.domain.workloads import kubeflow as kf  # (MPIJobs only: a pod's check never loads it)

    fallback: Path | None = None
    for key in ("command", "args"):
        items = c.data.get(key)
        if not isinstance(items, list):
            continue
        for i, item in enumerate(items):
            if not isinstance(item, str):
                continue
            if item in names and i + 1 < len(items):
                return c.path_of(key, i + 1)
            if any(re.search(rf"(^|\s){re.escape(n)}(=|\s)", item) for n in names):
                return c.path_of(key, i)
            if fallback is None and any(
                t.rsplit("/", 1)[-1] in kf.MPIRUN_NAMES for t in re.split(r"\s+", item.strip())
            ):
                fallback = c.path_of(key, i)
    return fallback


def _worker_gpus(pod: Any) -> tuple[str, int] | None:
    for c in pod.containers(include_init=False):
        dev = tr.container_devices(c)
        if dev is not None:
            return dev if dev[0] in GPU_RESOURCES else None
    return None


def _mpijob(obj: Any) -> Iterator[Finding]:
    from ailint.domain.workloads import kubeflow as kf  # (MPIJobs only: a pod's check never loads it)

    job = kf.mpijob(obj)
    if job is None or job.launcher_as_worker or job.implementation != "OpenMPI":
        return
    slots, workers = job.slots_per_worker, job.workers
    worker, launcher = job.pod("Worker"), job.pod("Launcher")
    if not slots or slots < 1 or not workers or worker is None or launcher is None:
        return
    dev = _worker_gpus(worker)
    if dev is None:
        return
    res, gpus = dev
    calls = [(c, call) for c in launcher.containers(include_init=False) for call in kf.mpirun_calls(c.tokens)]
    if len(calls) != 1:
        return  # several mpirun runs (or none): which one trains is not clear
    c, call = calls[0]
    if call.other_hosts:
        return
    np_, per = call.np_int, call.per_node_int
    if (call.np is not None and np_ is None) or (call.per_node is not None and per is None):
        return  # a variable
    if call.map_by and per is None and "ppr" in call.map_by:
        return
    total = workers * slots
    slots_src = f"slotsPerWorker {slots}" if obj.has(job.slots_path) else "slotsPerWorker 1, the default"
    over = call.oversubscribe or str(c.env_value(_OVERSUBSCRIBE_ENV) or "").lower() in ("1", "true", "yes")
    ranks: int | None = None
    if per is not None:
        if np_ is None or np_ == per * workers:
            ranks = per
    elif np_ is not None:
        if np_ > total and not over:
            yield RULE.finding(
                obj,
                _item_path(c, ("-np", "--np", "-n")) or c.path,
                f"mpirun -np {np_} asks for more ranks than the hostfile's {workers} Worker"
                f"{'s' if workers != 1 else ''} x {slots_src} = {total} slots: Open MPI refuses to start "
                "without --oversubscribe",
            )
            return
        if np_ < total and call.map_by is None:
            used = -(-np_ // slots)
            if used < workers:
                idle = workers - used
                yield RULE.finding(
                    obj,
                    _item_path(c, ("-np", "--np", "-n")) or c.path,
                    f"mpirun -np {np_} fills {used} of {workers} Workers ({slots_src}, Open MPI fills each "
                    f"host in turn): {idle} Worker pod{'s' if idle != 1 else ''} with {gpus} {res} "
                    f"{'each run' if idle != 1 else 'runs'} no rank",
                )
                return
        if np_ == total:
            ranks = slots
    else:
        ranks = slots
    prog = _gpus_per_rank(call.program)
    if ranks is None or prog is None or ranks * prog[1] == gpus:
        return
    name, per_rank = prog
    driven = ranks * per_rank
    what = f"{name} -g {per_rank}" if per_rank != 1 else name
    if per is not None:
        yield RULE.finding(
            obj,
            _item_path(c, ("-npernode", "--npernode", "-N")) or c.path,
            f"mpirun starts {per} rank{'s' if per != 1 else ''} of {what} per Worker but each Worker pod has "
            f"{gpus} {res}: {_consequence(driven, gpus, res)}",
        )
        return
    fix = None
    if np_ is None and gpus % per_rank == 0 and isinstance(obj.get("spec"), dict):
        want = gpus // per_rank
        edit = (
            edits.replace_value(obj, job.slots_path, str(want))
            if obj.has(job.slots_path)
            else edits.insert_key(obj, ("spec",), "slotsPerWorker", str(want))
        )
        fix = make_fix(f"set slotsPerWorker to {want}", [edit])
    yield RULE.finding(
        obj,
        job.slots_path,
        f"mpirun starts {ranks} rank{'s' if ranks != 1 else ''} of {what} per Worker ({slots_src}) but each "
        f"Worker pod has {gpus} {res}: {_consequence(driven, gpus, res)}",
        fix=fix,
    )


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "TrainJob":
        yield from _trainjob(obj, ctx)
        return
    if obj.kind == "MPIJob":
        yield from _mpijob(obj)
    if obj.kind == "PyTorchJob":
        yield from _pytorchjob(obj)
    for pod in pod_templates(obj):
        for c in pod.containers(include_init=False):
            yield from _container_checks(obj, c)
    yield from _nnodes_checks(obj, ctx)
