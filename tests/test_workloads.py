"""Workload adapters (ailint.domain.workloads), model-server recognition (ailint.domain.roles)
and `ailint inventory`."""

from __future__ import annotations

import json
import pathlib

import jsonschema
import pytest
from ailint.core.model import Anchor, Finding, Severity, SourceFile, Span, real_path
from ailint.domain import workloads
from ailint.domain.roles import serving_engine, what_runs
from ailint.engine import inventory
from ailint.engine.config import Settings
from ailint.engine.load import load_text

ROOT = pathlib.Path(__file__).resolve().parent.parent
INVENTORY = ROOT / "fixtures" / "inventory"
SCHEMA = json.loads((ROOT / "schemas" / "inventory.schema.json").read_text(encoding="utf-8"))
CORPUS = ROOT.parent / "shared" / "corpus"


def objects(text: str, name: str = "t.yaml"):
    return load_text(SourceFile(name, name, text)).objects


def one(text: str):
    (obj,) = objects(text)
    return obj


# -- the registry ---------------------------------------------------------------------------
def test_kinds_are_group_and_kind_pairs_from_the_family_modules():
    kinds = set(workloads.kinds())
    for pair in [
        (None, "Deployment"),
        ("kubeai.org", "Model"),
        ("kaito.sh", "Workspace"),
        ("ome.io", "InferenceService"),
        ("inference.llmaz.io", "Service"),
        ("orchestration.aibrix.ai", "StormService"),
        ("nvidia.com", "DynamoGraphDeployment"),
        ("apps.nvidia.com", "NIMService"),
    ]:
        assert pair in kinds
    names = {f.name for f in workloads.families()}
    assert {"core", "ray", "lws", "jobset", "kubeflow", "volcano", "kserve"} <= names
    assert {"kaito", "ome", "kubeai", "llmaz", "aibrix", "dynamo", "nim", "dra"} <= names
    assert "kubeai.org/Model" in workloads.rule_kinds()


@pytest.mark.parametrize(
    ("api_version", "kind", "family"),
    [
        ("serving.kserve.io/v1beta1", "InferenceService", "kserve"),
        ("ome.io/v1beta1", "InferenceService", "ome"),
        ("inference.llmaz.io/v1alpha1", "Service", "llmaz"),
        ("v1", "Service", None),
        ("apps/v1", "Deployment", "core"),
        ("batch.volcano.sh/v1alpha1", "Job", "volcano"),
        ("batch/v1", "Job", "core"),
        ("example.com/v1", "Model", None),
    ],
)
def test_a_kind_is_chosen_by_its_group(api_version, kind, family):
    obj = one(f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: x}}\nspec: {{}}\n")
    fam = workloads.family_for(obj)
    assert (fam.name if fam else None) == family


def test_catalogue_objects_are_not_workloads():
    for av, kind in [
        ("ome.io/v1beta1", "ClusterBaseModel"),
        ("llmaz.io/v1alpha1", "OpenModel"),
        ("autoscaling.aibrix.ai/v1alpha1", "PodAutoscaler"),
        ("model.aibrix.ai/v1alpha1", "ModelAdapter"),
        ("resource.k8s.io/v1", "ResourceClaimTemplate"),
        ("ome.io/v1beta1", "ClusterServingRuntime"),
    ]:
        obj = one(f"apiVersion: {av}\nkind: {kind}\nmetadata: {{name: x}}\nspec: {{}}\n")
        assert workloads.is_catalogue(obj)
        assert not workloads.is_inventory_workload(obj)


# -- synthesized pods and their anchors -----------------------------------------------------
KUBEAI = """\
apiVersion: kubeai.org/v1
kind: Model
metadata:
  name: m
spec:
  url: hf://org/model-8b
  engine: VLLM
  args:
    - --tensor-parallel-size=2
  resourceProfile: nvidia-gpu-l4:2
"""


def test_kubeai_model_pod_is_synthesized_from_its_fields():
    obj = one(KUBEAI)
    (pod,) = workloads.pod_templates(obj)
    (c,) = pod.containers()
    assert c.name == "server" and pod.synthetic is not None
    assert c.tokens[:4] == ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model=org/model-8b"]
    assert c.accelerators() == {"nvidia.com/gpu": 2.0}
    assert c.request("memory") == "48Gi"  # the l4 profile's 24Gi, times the count
    # a finding on the synthesized resources points at the resourceProfile line
    assert obj.span(c.path_of("resources", "limits", "nvidia.com/gpu")).line == 10
    assert real_path(c.path_of("resources", "limits")) == ("spec", "resourceProfile")
    # the user's args keep their own lines (after the two KubeAI adds)
    assert real_path(c.path_of("args", 2)) == ("spec", "args", 0)
    assert obj.span(c.path_of("args", 2)).line == 9
    # no edit finds a position under the anchor
    assert not obj.has(c.path_of("resources"))


def test_a_finding_on_a_synthesized_field_names_the_written_field_and_drops_its_fix():
    anchor = Anchor(("spec",), ((("containers", 0, "resources"), ("spec", "resourceProfile"), False),))
    from ailint.core.model import Edit, Fix

    f = Finding(
        "GPU003",
        "x",
        Severity.WARNING,
        "m",
        "f",
        Span(1, 1, 1, 2),
        None,
        (anchor, "containers", 0, "resources", "requests"),
        Fix("t", (Edit(0, 0, "x"),)),
    )
    assert f.path == ("spec", "resourceProfile") and f.fix is None


def test_kserve_model_form_is_merged_with_its_runtime_in_the_run():
    objs = objects((INVENTORY / "kserve.yaml").read_text(encoding="utf-8"))
    runtime, isvc, _ = objs
    catalog = workloads.Catalog([runtime])
    (alone,) = workloads.pod_templates(isvc)
    assert alone.open and not next(iter(alone.containers())).image  # the runtime supplies the image
    (merged,) = workloads.pod_templates(isvc, catalog)
    (c,) = merged.containers()
    assert c.image.startswith("nvcr.io/nim/") and c.accelerators() == {"nvidia.com/gpu": 1.0}
    assert not merged.open
    assert serving_engine(c) == "nim"


# -- what a container runs ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("image", "command", "args", "engine"),
    [
        ("vllm/vllm-openai:v0.10.2", None, ["--model", "m"], "vllm"),
        ("python:3.11", ["vllm", "serve", "m"], None, "vllm"),
        ("python:3.11", ["python3", "-m", "vllm.entrypoints.openai.api_server"], None, "vllm"),
        ("lmsysorg/sglang:v0.5", ["python3", "-m", "sglang.launch_server", "--model-path", "m"], None, "sglang"),
        ("registry/trt:1", ["/bin/bash", "-c"], ["trtllm-serve serve /models/x --port 8000"], "trtllm"),
        ("nvcr.io/nvidia/tritonserver:24.08-py3", ["tritonserver", "--model-repository=/m"], None, "triton"),
        ("ghcr.io/huggingface/text-generation-inference:2.4", None, ["--model-id", "m"], "tgi"),
        ("nvcr.io/nim/meta/llama3-8b-instruct:1.0.0", None, None, "nim"),
        ("ollama/ollama:0.5", None, None, "ollama"),
        ("ghcr.io/ggml-org/llama.cpp:server", ["/app/llama-server", "-m", "/m.gguf"], None, "llama.cpp"),
        ("busybox", ["sh", "-c", "huggingface-cli download org/m && vllm serve org/m"], None, "vllm"),
        # not model servers, whatever the image
        ("vllm/vllm-openai:v0.10.2", ["sleep", "infinity"], None, None),
        ("vllm/vllm-openai:v0.10.2", ["vllm", "bench", "serve", "--model", "m"], None, None),
        ("vllm/vllm-openai:v0.10.2", ["sh", "-c", "while true; do sleep 30; done"], None, None),
        ("vllm/vllm-openai:v0.10.2", ["huggingface-cli", "download", "org/m"], None, None),
        ("nvcr.io/nvidia/tritonserver:24.08-py3-sdk", ["genai-perf", "profile", "-m", "m"], None, None),
        ("lmsysorg/sglang:v0.5", ["python3", "-m", "sglang.bench_serving", "--backend", "sglang"], None, None),
        ("lmsysorg/sglang:v0.5", ["python3", "-m", "sglang_router.launch_router"], None, None),
        ("locustio/locust", ["locust", "-f", "/l.py"], None, None),
        ("vllm/vllm-openai:v0.10.2", ["sh", "-c", "vllm serve m & sleep 60; vllm bench serve --model m"], None, None),
        ("nvcr.io/nim/meta/llama3-8b-instruct:1.0.0", ["list-model-profiles"], None, None),
    ],
)
def test_servers_are_recognised_by_what_they_run(image, command, args, engine):
    c: dict = {"name": "c", "image": image}
    if command is not None:
        c["command"] = command
    if args is not None:
        c["args"] = args
    obj = one(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [c]}}))
    (pod,) = workloads.pod_templates(obj)
    (cont,) = pod.containers()
    assert serving_engine(cont) == engine, what_runs(cont)


def test_role_annotation_overrides_the_heuristics():
    from ailint.domain.roles import is_serving_pod

    obj = one(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {ailint.io/role: batch}\n"
        "spec:\n  containers: [{name: c, image: 'vllm/vllm-openai:v0.10.2', args: ['--model', 'm']}]\n"
    )
    (pod,) = workloads.pod_templates(obj)
    assert not is_serving_pod(pod)


# -- ailint inventory -----------------------------------------------------------------------
CASES = sorted(INVENTORY.glob("*.yaml"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_inventory_snapshot(path, monkeypatch, update_snapshots):
    monkeypatch.chdir(ROOT)
    inv = inventory.build([str(path.relative_to(ROOT))], Settings(root=str(ROOT)))
    jsonschema.Draft202012Validator(SCHEMA).validate(inv)
    rendered = json.dumps(inv, indent=2) + "\n"
    snap = path.with_suffix(".inventory.json")
    if update_snapshots or not snap.exists():
        snap.write_text(rendered, encoding="utf-8")
        if not update_snapshots:
            pytest.fail(f"wrote missing snapshot {snap.name}; commit it")
    assert rendered == snap.read_text(encoding="utf-8")
    assert inventory.render_text(inv).endswith("unrecognized objects\n")


def test_inventory_schema_is_a_valid_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_inventory_cli_json(tmp_path):
    from ailint.doors.cli import cli
    from click.testing import CliRunner

    out = tmp_path / "inv.json"
    res = CliRunner().invoke(cli, ["inventory", str(INVENTORY / "nim.yaml"), "--format", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    inv = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(SCHEMA).validate(inv)
    assert [w["kind"] for w in inv["workloads"]] == ["NIMCache", "NIMService"]


# -- the development samples ----------------------------------------------------------------
SAMPLES = (
    "substratusai__kubeai",
    "kaito-project__kaito",
    "sgl-project__ome",
    "vllm-project__aibrix",
    "InftyAI__llmaz",
    "NVIDIA__nim-deploy",
    "kubeflow__mpi-operator",
)
# The samples state these facts only through objects that are not in the corpus (an OME
# runtime or base model named but not shipped), or through placeholders (`<your-vm-sku>`).
_UNKNOWABLE_ENGINE = {"InferenceService"}


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not present")
def test_development_samples_are_all_understood(monkeypatch):
    monkeypatch.chdir(CORPUS)
    inv = inventory.build(list(SAMPLES), Settings(root=str(CORPUS)))
    jsonschema.Draft202012Validator(SCHEMA).validate(inv)
    family_groups = {g for g, _ in workloads.kinds() + workloads.catalogue_kinds() if g}
    assert not [u for u in inv["unrecognized"] if u["apiVersion"].rsplit("/", 1)[0] in family_groups]
    seen = {(w["file"], w["kind"], w["name"]) for w in inv["workloads"]}
    missing = []
    for path in sorted(p for s in SAMPLES for p in (CORPUS / s).rglob("*.y*ml")):
        rel = str(path.relative_to(CORPUS))
        for obj in load_text(SourceFile(str(path), rel, path.read_text(encoding="utf-8"))).objects:
            if not workloads.is_inventory_workload(obj) or obj.group in ("", "apps", "batch"):
                continue
            if (rel, obj.kind, obj.name) not in seen:
                missing.append((rel, obj.kind, obj.name))
    assert not missing
    for w in inv["workloads"]:
        text = json.dumps(w)
        if w["apiVersion"].split("/")[0] in ("v1", "apps", "batch"):
            continue
        declares = w["model"] is not None or w["accelerators"] is not None
        if declares:
            assert w["roles"], w
        if w["accelerators"] is not None and w["kind"] not in _UNKNOWABLE_ENGINE:
            assert w["engine"] is not None or "training" in w["roles"] or "infra" in w["roles"], text
