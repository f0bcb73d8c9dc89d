"""Facts behind TRN005/TRN006 on MPIJob, the Ray rules on AIBrix RayClusterFleet and GPU009:
mpi-operator defaults, Open MPI `mpirun` options, where a fleet keeps its RayCluster, the head
that runs a model server, KAITO preset sizes and node GPU memory."""

from __future__ import annotations

import textwrap

import pytest
from ailint.core.model import K8sObject, SourceFile
from ailint.domain import ray
from ailint.domain.extract import pod_templates
from ailint.domain.workloads import kaito
from ailint.domain.workloads import kubeflow as kf
from ailint.engine.load import load_text


def _objs(text: str) -> list[K8sObject]:
    return list(load_text(SourceFile("t.yaml", "t.yaml", textwrap.dedent(text))).objects)


MPIJOB = """
apiVersion: {api}
kind: MPIJob
metadata:
  name: j
spec:
  {extra}
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers:
            - name: l
              image: x
    Worker:
      {replicas}
      template:
        spec:
          containers:
            - name: w
              image: x
"""


def _mpijob(api: str = "kubeflow.org/v2beta1", extra: str = "", replicas: str = "") -> K8sObject:
    text = MPIJOB.format(api=api, extra=extra or "runPolicy: {}", replicas=replicas or "restartPolicy: Never")
    return _objs(text)[0]


def test_mpijob_defaults_follow_the_operator():
    job = kf.mpijob(_mpijob())
    assert job is not None
    assert (job.slots_per_worker, job.implementation, job.launcher_as_worker) == (1, "OpenMPI", False)
    assert job.workers == 0  # default.go: Worker replicas default to 0
    assert job.backoff_limit is None
    roles = {p.role: p.replicas for p in pod_templates(_mpijob())}
    assert roles == {"Launcher": 1, "Worker": 0}


def test_mpijob_written_values_and_other_versions():
    job = kf.mpijob(_mpijob(extra="slotsPerWorker: 8\n  runPolicy: {backoffLimit: 0}", replicas="replicas: 3"))
    assert job is not None
    assert (job.slots_per_worker, job.workers, job.backoff_limit) == (8, 3, 0)
    assert kf.mpijob(_mpijob(api="kubeflow.org/v1")) is None
    # the training operator's v1 MPIJob keeps the generic default of one replica
    assert {p.role: p.replicas for p in pod_templates(_mpijob(api="kubeflow.org/v1"))}["Worker"] == 1


@pytest.mark.parametrize(
    "tokens, np, per_node, over, other, program",
    [
        (
            ["mpirun", "-np", "16", "-N", "8", "/opt/all_reduce_perf", "-n", "100"],
            "16",
            "8",
            False,
            False,
            ["/opt/all_reduce_perf", "-n", "100"],
        ),
        (
            ["mpirun", "--np=4", "-x", "A=1", "--mca", "pml", "ob1", "python", "t.py"],
            "4",
            None,
            False,
            False,
            ["python", "t.py"],
        ),
        (["mpirun", "--map-by", "ppr:4:node", "-bind-to", "none", "bin"], None, "4", False, False, ["bin"]),
        (["mpirun", "--oversubscribe", "-H", "a:8,b:8", "bin"], None, None, True, True, ["bin"]),
        (["mpirun", "--hostfile", "/etc/mpi/hostfile", "bin"], None, None, False, False, ["bin"]),
        (["mpirun", "--hostfile", "/tmp/hosts", "bin"], None, None, False, True, ["bin"]),
        (
            ["echo", "x", "&&", "/usr/bin/mpirun", "-n", "2", "prog", "&&", "echo", "done"],
            "2",
            None,
            False,
            False,
            ["prog"],
        ),
        (["mpirun", "-np", "2", "prog;", "echo", "done"], "2", None, False, False, ["prog"]),
    ],
)
def test_mpirun_calls(tokens, np, per_node, over, other, program):
    (call,) = kf.mpirun_calls(tokens)
    assert (call.np, call.per_node, call.oversubscribe, call.other_hosts, call.program) == (
        np,
        per_node,
        over,
        other,
        program,
    )


def test_mpirun_calls_finds_every_run_and_none_without_mpirun():
    assert len(kf.mpirun_calls(["mpirun", "a", ";", "mpirun", "b"])) == 2
    assert kf.mpirun_calls(["horovodrun", "-np", "4", "python", "t.py"]) == []


FLEET = """
apiVersion: orchestration.aibrix.ai/v1alpha1
kind: RayClusterFleet
metadata:
  name: f
spec:
  template:
    metadata:
      annotations:
        ray.io/ft-enabled: "true"
    spec:
      headGroupSpec:
        template:
          spec:
            containers:
              - name: ray-head
                image: vllm/vllm-openai:v0.9.2
                {head_cmd}
      workerGroupSpecs:
        - groupName: g
          replicas: 2
          template:
            spec:
              containers:
                - name: ray-worker
                  image: vllm/vllm-openai:v0.9.2
"""


def _fleet(head_cmd: str = "") -> K8sObject:
    return _objs(FLEET.format(head_cmd=head_cmd or "env: []"))[0]


def test_fleet_is_a_ray_cluster_at_its_template():
    obj = _fleet()
    assert ray.cluster_spec_path(obj) == ("spec", "template", "spec")
    assert ray.holds_cluster_template(obj) and ray.is_cluster_like(obj)
    assert [g.name for g in ray.groups(obj)] == ["head", "g"]
    assert ray.worker_groups(obj)[0].path == ("spec", "template", "spec", "workerGroupSpecs", 0)
    assert ray.cluster_annotations(obj) == {"ray.io/ft-enabled": "true"}
    # another group's RayClusterFleet is nothing ailint knows
    other = _objs(FLEET.replace("orchestration.aibrix.ai", "example.com").format(head_cmd="env: []"))[0]
    assert ray.cluster_spec_path(other) is None and not ray.is_cluster_like(other)


def test_head_model_server_by_command_not_image():
    plain = ray.head_group(_fleet())
    assert plain is not None and ray.head_model_server(plain) is None  # a vLLM image running `ray start`
    serving = ray.head_group(
        _fleet('command: ["bash", "-c", "ray start --head; vllm serve m --distributed-executor-backend ray"]')
    )
    assert serving is not None and ray.head_model_server(serving) == "vllm"
    serve = ray.head_group(_fleet('command: ["sh", "-c", "ray start --head --block & serve run app.yaml"]'))
    assert serve is not None and ray.head_model_server(serve) is None  # Ray Serve: replicas go to workers


def test_kaito_preset_and_node_tables():
    assert kaito.preset_need("Gemma-3-27B-Instruct") == kaito.PresetNeed(54.8, False, "TotalSafeTensorFileSize")
    assert kaito.preset_need("deepseek-r1-0528").distributed  # type: ignore[union-attr]
    assert kaito.preset_need("gpt-oss-120b") is None and kaito.preset_need("Qwen/Qwen3-32B") is None
    a100 = kaito.node_gpus("Standard_NC48ads_A100_v4")
    assert a100 == kaito.NodeGPUs(2, 160, "A100")
    g5 = kaito.node_gpus("g5.12xlarge")
    assert g5 is not None and g5.count == 4 and 89 < g5.gib < 90  # EC2's 22888 MiB per A10G
    assert kaito.node_gpus("inf2.xlarge") is None and kaito.node_gpus("<your-vm-sku>") is None


def test_kaito_inference_preset_paths():
    ws, iset, tuning = _objs(
        """
        apiVersion: kaito.sh/v1beta1
        kind: Workspace
        metadata: {name: a}
        resource: {instanceType: Standard_NC24ads_A100_v4}
        inference: {preset: {name: phi-4}}
        ---
        apiVersion: kaito.sh/v1beta1
        kind: InferenceSet
        metadata: {name: b}
        spec: {template: {resource: {instanceType: g5.xlarge}, inference: {preset: {name: phi-4}}}}
        ---
        apiVersion: kaito.sh/v1beta1
        kind: Workspace
        metadata: {name: c}
        resource: {instanceType: Standard_NC24ads_A100_v4}
        tuning: {preset: {name: phi-4}}
        """
    )
    assert kaito.inference_preset_paths(ws) == (("resource",), ("inference", "preset"))
    assert kaito.inference_preset_paths(iset) == (
        ("spec", "template", "resource"),
        ("spec", "template", "inference", "preset"),
    )
    assert kaito.inference_preset_paths(tuning) is None
