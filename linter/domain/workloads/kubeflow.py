"""Kubeflow training (kubeflow.org, trainer.kubeflow.org): the replica specs of PyTorchJob,
MPIJob (v2beta1 Launcher and Worker), TFJob, XGBoostJob, PaddleJob and JAXJob; the JobSet
template of TrainingRuntime/ClusterTrainingRuntime. A TrainJob names a runtime and writes
no pod template of its own.

MPIJob (kubeflow.org/v2beta1), verified in kubeflow/mpi-operator
pkg/apis/kubeflow/v2beta1/{types.go,default.go,constants.go} and
pkg/controller/mpi_job_controller.go:

- defaults: `slotsPerWorker` 1, `mpiImplementation` OpenMPI, `runPolicy.cleanPodPolicy`
  None, `runLauncherAsWorker` false; Launcher `replicas` 1 and `restartPolicy` OnFailure,
  Worker `replicas` 0 and `restartPolicy` Never;
- the launcher is a batch/v1 Job whose `backoffLimit` is `runPolicy.backoffLimit` (unset: the
  Job API's default, 6): retrying the launcher re-runs `mpirun`; workers are bare Pods the
  controller creates only when missing (a Failed worker is not replaced, an evicted one
  fails the MPIJob);
- the hostfile lists every worker with `slots=<slotsPerWorker>` (OpenMPI; `host:slots` for
  Intel MPI and MPICH), and the launcher gets `OMPI_MCA_orte_set_default_slots` (OpenMPI) or
  `I_MPI_PERHOST` (Intel) set to the same number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ailint.core.model import K8sObject, Path, as_dict
from ailint.domain.extract import PodTemplate
from ailint.domain.quantities import to_int
from ailint.domain.workloads.base import Family, as_int, jobset_templates, template

REPLICA_SPECS = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
}

MPIJOB_V2 = "kubeflow.org/v2beta1"
# replicas of a replica spec that omits them: mpi-operator default.go (Launcher 1, Worker 0)
_MPI_DEFAULT_REPLICAS = {"Launcher": 1, "Worker": 0}


def _default_replicas(obj: K8sObject, role: str) -> int:
    if obj.kind == "MPIJob" and obj.api_version == MPIJOB_V2:
        return _MPI_DEFAULT_REPLICAS.get(role, 1)
    return 1


def templates(obj: K8sObject) -> Iterator[PodTemplate]:
    kind = obj.kind
    key = REPLICA_SPECS.get(kind)
    if key is not None:
        for role, rs in as_dict(obj.get("spec", key)).items():
            if isinstance(rs, dict):
                t = template(
                    obj,
                    ("spec", key, role, "template"),
                    str(role),
                    as_int(rs.get("replicas")) if "replicas" in rs else _default_replicas(obj, str(role)),
                    ("spec", key, role),
                )
                if t:
                    yield t
    elif kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        yield from jobset_templates(obj, ("spec", "template", "spec"))


# ---------------------------------------------------------------------------------------
# MPIJob v2beta1
# ---------------------------------------------------------------------------------------
def is_mpijob_v2(obj: K8sObject) -> bool:
    return obj.kind == "MPIJob" and obj.api_version == MPIJOB_V2


@dataclass(frozen=True, slots=True)
class MPIJobView:
    """What the mpi-operator builds from an MPIJob v2beta1, defaults applied."""

    obj: K8sObject
    slots_per_worker: int | None  # None: written but not an integer
    slots_path: Path
    implementation: str
    launcher_as_worker: bool
    workers: int | None  # Worker replicas (default 0); None: not an integer
    backoff_limit: int | None  # runPolicy.backoffLimit as written (None: unset or not an integer)
    backoff_path: Path

    def replica_path(self, role: str) -> Path:
        return ("spec", "mpiReplicaSpecs", role)

    def pod(self, role: str) -> PodTemplate | None:
        for p in templates(self.obj):
            if p.role == role:
                return p
        return None


def mpijob(obj: K8sObject) -> MPIJobView | None:
    """The MPIJob v2beta1 as the operator defaults it; None for other objects (v1 MPIJobs of
    the training operator have other semantics)."""
    if not is_mpijob_v2(obj):
        return None
    spec = as_dict(obj.get("spec"))
    slots = to_int(spec["slotsPerWorker"]) if "slotsPerWorker" in spec else 1
    worker = as_dict(as_dict(spec.get("mpiReplicaSpecs")).get("Worker"))
    workers = to_int(worker["replicas"]) if "replicas" in worker else (0 if worker else None)
    bl = as_dict(spec.get("runPolicy")).get("backoffLimit")
    return MPIJobView(
        obj,
        slots,
        ("spec", "slotsPerWorker"),
        str(spec.get("mpiImplementation") or "OpenMPI"),
        spec.get("runLauncherAsWorker") is True,
        workers,
        to_int(bl) if bl is not None else None,
        ("spec", "runPolicy", "backoffLimit"),
    )


# ---------------------------------------------------------------------------------------
# OpenMPI `mpirun` command lines (Open MPI 4/5 mpirun(1) options)
# ---------------------------------------------------------------------------------------
MPIRUN_NAMES = frozenset({"mpirun", "mpiexec", "orterun", "prterun"})
_NP = frozenset({"-np", "--np", "-n", "--n", "-c"})
_PER_NODE = frozenset({"-npernode", "--npernode", "-N"})
_HOSTS = frozenset({"-H", "-host", "--host", "-hostfile", "--hostfile", "-machinefile", "--machinefile"})
_MAP_BY = frozenset({"-map-by", "--map-by"})
_OVERSUBSCRIBE = frozenset({"-oversubscribe", "--oversubscribe"})
# options that take one value (so the value is not the program), two for --mca
_ONE_VALUE = frozenset(
    {
        *_NP,
        *_PER_NODE,
        *_HOSTS,
        *_MAP_BY,
        "-x",
        "-bind-to",
        "--bind-to",
        "-rank-by",
        "--rank-by",
        "-wdir",
        "--wdir",
        "-wd",
        "--prefix",
        "-output-filename",
        "--output-filename",
        "-npersocket",
        "--npersocket",
        "-cpus-per-proc",
        "--cpus-per-proc",
        "-cpus-per-rank",
        "--cpus-per-rank",
        "--path",
        "-path",
        "--app",
        "-am",
        "--am",
        "-tune",
        "--tune",
        "--default-hostfile",
        "-default-hostfile",
        "--personality",
        "--launch-agent",
        "-launch-agent",
    }
)
_TWO_VALUES = frozenset({"-mca", "--mca", "-gmca", "--gmca"})
_SHELL_BREAKS = frozenset({"&&", "||", ";", "|", "&", "do", "done", "then", "fi"})
OPERATOR_HOSTFILE = "/etc/mpi/hostfile"  # mpi_job_controller.go: configMountPath + hostfileName


@dataclass(frozen=True, slots=True)
class MpirunCall:
    """One `mpirun` of a launcher command: the options that decide where ranks go."""

    np: str | None  # -np/-n value as written
    per_node: str | None  # -npernode/-N, or N of --map-by ppr:N:node
    map_by: str | None
    oversubscribe: bool
    other_hosts: bool  # -H/--host, or a hostfile other than the operator's
    program: list[str]  # the rank program and its arguments

    @property
    def np_int(self) -> int | None:
        return to_int(self.np) if self.np is not None else None

    @property
    def per_node_int(self) -> int | None:
        return to_int(self.per_node) if self.per_node is not None else None


def _value(tok: str, nxt: str | None, names: frozenset[str]) -> tuple[str | None, bool]:
    """(value, consumed next token) when `tok` is one of `names` (`-np 4`, `--np=4`)."""
    if tok in names:
        return nxt, True
    head, sep, rest = tok.partition("=")
    if sep and head in names:
        return rest, False
    return None, False


def mpirun_calls(tokens: Sequence[str]) -> list[MpirunCall]:
    """Every `mpirun`/`mpiexec` in a command's tokens, parsed up to the end of its shell
    command (`&&`, `;`, `|`). Options are Open MPI's."""
    out: list[MpirunCall] = []
    toks: list[str] = []
    for t in tokens:  # `prog;` ends a shell command as `prog ;` does
        toks += [t[:-1], ";"] if len(t) > 1 and t.endswith(";") else [t]
    i = 0
    while i < len(toks):
        if toks[i].rsplit("/", 1)[-1] not in MPIRUN_NAMES:
            i += 1
            continue
        np = per_node = map_by = None
        over = other = False
        program: list[str] = []
        j = i + 1
        while j < len(toks):
            t = toks[j]
            if t in _SHELL_BREAKS:
                break
            if program:
                program.append(t)
                j += 1
                continue
            nxt = toks[j + 1] if j + 1 < len(toks) else None
            if not t.startswith("-"):
                program.append(t)
                j += 1
                continue
            if t in _OVERSUBSCRIBE:
                over = True
                j += 1
                continue
            if t in _TWO_VALUES:
                j += 3
                continue
            matched = False
            for names in (_NP, _PER_NODE, _HOSTS, _MAP_BY):
                v, used = _value(t, nxt, names)
                if v is None and not used:
                    continue
                matched = True
                if names is _NP:
                    np = v
                elif names is _PER_NODE:
                    per_node = v
                elif names is _HOSTS:
                    if not (t.lstrip("-") in ("hostfile", "machinefile") and v == OPERATOR_HOSTFILE):
                        other = True
                else:
                    map_by = v
                    m = re.fullmatch(r"ppr:(\d+):node(?::.*)?", v or "")
                    if m:
                        per_node = m.group(1)
                j += 2 if used else 1
                break
            if matched:
                continue
            v, used = _value(t, nxt, _ONE_VALUE)
            j += 2 if used else 1
        out.append(MpirunCall(np, per_node, map_by, over, other, program))
        i = j
    return out


FAMILY = Family(
    "kubeflow",
    tuple((None, k) for k in (*REPLICA_SPECS, "TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")),
    templates,
)
