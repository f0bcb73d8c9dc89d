"""The precision issue's patterns and misses, each bound to the fixture that reproduces it.

A fixture's findings equal its `# expect:` markers (tests/test_fixtures.py), so a pattern
(a false positive removed) is a fixture with no marker for its code, and a miss (a finding
that was missing) is one with a marker. This index keeps each of them from being deleted
or turned around silently, and names the five rules the issue added.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# (what the pattern is, code, fixture, "pass": no finding / "fail": the finding)
PATTERNS = [
    ("a vLLM image that only sleeps is no model server", "SRV001", "vllm_image_sleeping.yaml", "pass"),
    (
        "a vLLM image running a benchmark client is no model server",
        "SRV001",
        "vllm_image_running_benchmark.yaml",
        "pass",
    ),
    ("Kubeflow's persistence-agent is not an AI agent", "SEC005", "pass_kubeflow_persistence_agent.yaml", "pass"),
    ("an infra '*-agent' with RBAC is not an AI agent", "SEC001", "pass_not_an_agent.yaml", "pass"),
    ("os.environ['HF_TOKEN'] in a script is no literal", "SEC007", "pass_script_reads_environment.yaml", "pass"),
    ("placeholders are info, each at its own match", "SEC007", "placeholders_info.yaml", "fail"),
    (
        "a monitor selecting controller-added labels selects the pods",
        "OBS004",
        "pass_controller_labels_selected.yaml",
        "pass",
    ),
    (
        "a NetworkPolicy on KubeRay's labels selects the Ray pods",
        "SEC005",
        "pass_ray_agent_policy_on_controller_labels.yaml",
        "pass",
    ),
    ("a PDB on LWS's labels selects the group's pods", "REL003", "pass_lws_pdb_on_controller_labels.yaml", "pass"),
    (
        "a pool selecting pods of an operator CR ailint cannot read",
        "SRV008",
        "pass_pods_of_unknown_operator_cr.yaml",
        "pass",
    ),
    (
        "a selector nothing in the run can own still fires",
        "SRV008",
        "selector_matches_no_pod_nor_unknown_owner.yaml",
        "fail",
    ),
    ("two files' versions of one object are alternatives", "STO002", "pass_alternative_samples.yaml", "pass"),
    ("a deliberately multi-stage vLLM --omni server", "SRV004", "pass_vllm_omni_stages.yaml", "pass"),
    ("a ClusterQueue that only lends quota to its cohort", "TRN008", "pass_lending_only_cluster_queue.yaml", "pass"),
    (
        "an NVMe hostPath silences only the NodeClasses hosting that pod",
        "KRP006",
        "nvme_hostpath_on_other_pool.yaml",
        "fail",
    ),
    # misses
    ("TP 4 on one GPU with the Ray executor outside LWS", "SRV004", "ray_backend_tp_beyond_pod.yaml", "fail"),
    ("a /var/run socket hostPath does not cache the model", "STO008", "hub_download_with_socket_hostpath.yaml", "fail"),
    (
        "`.latest`/`-nightly` tags and RayCluster worker images",
        "SRV002",
        "raycluster_worker_and_suffix_tags.yaml",
        "fail",
    ),
    ("a multi-node MPIJob without gang admission", "TRN007", "mpijob_workers_no_gang.yaml", "fail"),
    ("a training RayCluster without gang admission", "TRN007", "raycluster_training_no_gang.yaml", "fail"),
    ("an MPIJob with no restart budget", "TRN005", "mpijob_backoff_zero.yaml", "fail"),
    ("a Ray Train cluster without FailureConfig", "TRN005", "raycluster_train_no_failure_config.yaml", "fail"),
    ("NCCL variables passed by mpirun -x", "NET003", "mpirun_x_variables.yaml", "fail"),
    (
        "a startup probe too short for a model downloaded at start",
        "SRV001",
        "startup_budget_short_for_download.yaml",
        "fail",
    ),
    (
        "a PodMonitor on the Dynamo operator's component label selects the component's pods",
        "OBS004",
        "pass_dynamo_components_scraped.yaml",
        "pass",
    ),
    ("a Dynamo component no monitor selects is reported", "OBS004", "dynamo_component_unscraped.yaml", "fail"),
    (
        "kubebuilder's controller-manager monitor does not mean model servers are scraped here",
        "OBS004",
        "pass_only_controller_manager_monitor.yaml",
        "pass",
    ),
    ("GPU pods that only sleep are no training to lose", "TRN005", "pass_gpu_sleep_demo.yaml", "pass"),
    ("a gVisor 'sandbox' RayCluster is not an AI agent", "SEC005", "pass_gvisor_sandbox_raycluster.yaml", "pass"),
    ("a code sandbox with a model client is an AI agent", "SEC005", "sandbox_with_llm_client.yaml", "fail"),
    ("pause placeholders lose nothing when evicted", "REL003", "pass_pause_placeholders.yaml", "pass"),
    (
        "a `$patch: merge` fragment is not judged by admission policies",
        "POL001",
        "pass_merge_directive_fragment.yaml",
        "pass",
    ),
    (
        "the Training Operator's kubeflow.org/v1 MPIJob is served",
        "SCH006",
        "pass_training_operator_mpijob_v1.yaml",
        "pass",
    ),
    (
        "Ray-backend TP beyond a pod that joins no Ray cluster cannot start",
        "SRV004",
        "ray_backend_without_cluster.yaml",
        "fail",
    ),
    ("a model server of one rank runs no NCCL to trace", "OBS001", "pass_single_rank_server.yaml", "pass"),
    (
        "one rank with an NCCL KV connector still runs NCCL",
        "OBS001",
        "single_rank_server_nccl_kv_connector.yaml",
        "fail",
    ),
    (
        "KServe auto-selects a multi-node runtime only for a multi-node predictor",
        "SRV002",
        "pass_kserve_single_node_runtime_selected.yaml",
        "pass",
    ),
    (
        "a predictor with a workerSpec gets the multi-node runtime",
        "SRV002",
        "kserve_multinode_runtime_selected.yaml",
        "fail",
    ),
    ("a Job that only checks its devices trains nothing", "SRV002", "device_check_and_training_jobs.yaml", "fail"),
    ("a misspelled RDMAV_ variable is named as such", "NET003", "misspelled_rdmav_variable.yaml", "fail"),
    (
        "a handler-less overlay probe keeps its base probe's timeout",
        "SRV012",
        "llm_config_overlay_keeps_base_timeout.yaml",
        "fail",
    ),
]

NEW_RULES = ["SEC011", "SEC012", "SRV012", "SRV013", "GPU008"]


@pytest.mark.parametrize(("what", "code", "name", "kind"), PATTERNS, ids=[f"{p[1]}:{p[2]}" for p in PATTERNS])
def test_pattern_has_its_fixture(what: str, code: str, name: str, kind: str) -> None:
    path = FIXTURES / code / name
    assert path.is_file(), f"{what}: {path} is missing"
    marked = re.search(rf"#\s*expect:.*\b{code}\b", path.read_text(encoding="utf-8")) is not None
    assert marked == (kind == "fail"), f"{what}: {path.name} should {'' if kind == 'fail' else 'not '}expect {code}"


@pytest.mark.parametrize("code", NEW_RULES)
def test_new_rules_are_registered_and_documented(code: str) -> None:
    from ailint.engine.registry import all_rules

    assert code in all_rules()
    assert (FIXTURES.parent / "docs" / "rules" / f"{code}.md").is_file()
    cases = [p for p in (FIXTURES / code).glob("*.yaml") if not p.name.endswith(".fixed.yaml")]
    assert any("expect:" in p.read_text(encoding="utf-8") for p in cases), f"{code} has no failing fixture"
    assert any("expect:" not in p.read_text(encoding="utf-8") for p in cases), f"{code} has no passing fixture"
