"""Kubeflow training (kubeflow.org, trainer.kubeflow.org): the replica specs of PyTorchJob,
MPIJob (v2beta1 Launcher and Worker), TFJob, XGBoostJob, PaddleJob and JAXJob; the JobSet
template of TrainingRuntime/ClusterTrainingRuntime. A TrainJob names a runtime and writes
no pod template of its own."""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import K8sObject, as_dict
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import Family, as_int, jobset_templates, template

REPLICA_SPECS = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
}


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
                    as_int(rs.get("replicas")) if "replicas" in rs else 1,
                    ("spec", key, role),
                )
                if t:
                    yield t
    elif kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        yield from jobset_templates(obj, ("spec", "template", "spec"))


FAMILY = Family(
    "kubeflow",
    tuple((None, k) for k in (*REPLICA_SPECS, "TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")),
    templates,
)
