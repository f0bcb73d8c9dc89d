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


def test_the_family_index_declares_what_the_modules_declare(tmp_path, monkeypatch):
    """The index kept in the cache folder gives back each family's module, kinds and flags in
    the order the modules give them; a torn index, or one naming a module the package does
    not have, is not read (the families are imported again)."""
    from ailint.domain.workloads import _declared_by_import, _read_index, _write_index

    declared = _declared_by_import()
    path = str(tmp_path / "families.json")
    _write_index(path, declared)
    assert _read_index(path) == declared
    assert declared[0].module.endswith(".core")
    assert {d.module.rsplit(".", 1)[1] for d in declared if d.reads} >= {"kserve", "ome", "dra"}
    text = (tmp_path / "families.json").read_text()
    for bad in (text[: len(text) // 2], text.replace("workloads.ray", "workloads.nothere"), "{}", "[]"):
        (tmp_path / "families.json").write_text(bad)
        assert _read_index(path) is None


def test_a_deployment_run_imports_only_the_families_it_needs(tmp_path):
    """With the index, a one-file run of a Deployment imports its own family and those that
    read every workload's catalogue (DRA claims, KServe and OME runtimes), not the other
    eleven (Ray, KAITO, LWS, JobSet...)."""
    import os
    import subprocess
    import sys

    probe = (
        "import os, sys\nreal = os._exit\n"
        "def bye(code):\n"
        "    names = sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('ailint.domain.workloads.'))\n"
        "    print('FAMILIES', *names, file=sys.stderr)\n    real(code)\n"
        "os._exit = bye\nsys.argv = ['ailint', *sys.argv[1:]]\nfrom ailint.doors.lean import main\nmain()\n"
    )
    env = {**os.environ, "AILINT_CACHE_DIR": str(tmp_path / "c")}
    env.pop("AILINT_NO_CACHE", None)
    lines = []
    for _ in range(2):  # the first run writes the index, the second reads it
        proc = subprocess.run(
            [sys.executable, "-c", probe, "check", "--no-config", "--no-cache", "fixtures/demo/vllm.yaml"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 1, proc.stderr
        lines.append(next(ln for ln in proc.stderr.splitlines() if ln.startswith("FAMILIES")).split()[1:])
    assert "ray" in lines[0] and "kaito" in lines[0], "the first run imports every family to index them"
    # kubeflow: TRN006 (torchrun arguments, any pod) imports its helpers
    assert set(lines[1]) <= {"base", "core", "dra", "kserve", "ome", "kubeflow"}, lines[1]
    assert "core" in lines[1]


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


# -- issue 12 review: relocation, Dynamo workers, OME selection and the predictor form -------
def _lint(path: pathlib.Path, code: str):
    from fixture_harness import run_rule

    return [f for f in run_rule(code, path).findings if f.code == code]


def test_a_field_a_merged_pod_took_from_a_runtime_keeps_the_rules_anchor_and_is_reported_once():
    path = ROOT / "fixtures" / "SRV002" / "ome_runtime_and_isvc_latest.yaml"
    runtime, isvc = objects(path.read_text(encoding="utf-8"))
    (merged,) = workloads.pod_templates(isvc, workloads.Catalog([runtime]))
    (c,) = merged.containers()
    image = c.path_of("image")
    loc = runtime.location(("spec", "engineConfig", "runner", "image"))
    assert loc is not None
    # spans of a Foreign path are the runtime's, of the kind asked for (key: value / value)
    assert isvc.value_span(image) == loc.value
    assert isvc.span(image).col == loc.key.col and isvc.span(image).end_col == loc.value.end_col
    found = _lint(path, "SRV002")
    assert len(found) == 1 and found[0].span == loc.value
    assert found[0].object_ref is not None and found[0].object_ref.kind == "ClusterServingRuntime"


def test_relocate_moves_the_file_and_path_and_keeps_the_span():
    path = ROOT / "fixtures" / "SRV002" / "ome_runtime_and_isvc_latest.yaml"
    runtime, isvc = objects(path.read_text(encoding="utf-8"), name="other.yaml")
    (merged,) = workloads.pod_templates(isvc, workloads.Catalog([runtime]))
    (c,) = merged.containers()
    p = c.path_of("image")
    f = Finding("SRV002", "x", Severity.ERROR, "m", isvc.file, isvc.value_span(p), isvc.ref, p)
    moved = workloads.relocate(f, isvc)
    assert moved.path == ("spec", "engineConfig", "runner", "image") and moved.span == f.span
    hidden = workloads.relocate(f, isvc, frozenset({runtime.file}))
    assert hidden.path == ("spec", "engine") and hidden.span == isvc.span(("spec", "engine"))


@pytest.mark.parametrize(
    ("command", "engine", "tp"),
    [
        (["python3", "-m", "dynamo.vllm", "--model", "m", "--tensor-parallel-size", "2"], "vllm", 2),
        (["python3", "-m", "dynamo.sglang", "--model-path", "m", "--tp-size", "4"], "sglang", 4),
        (["python3", "-m", "dynamo.trtllm", "--model", "m", "--tensor-parallel-size", "2"], "trtllm", None),
        (["python3", "-m", "dynamo.frontend", "--http-port", "8000"], None, None),
        (["python3", "-m", "dynamo.vllm.something_else"], None, None),
    ],
)
def test_dynamo_workers_are_their_engine_with_its_flags(command, engine, tp):
    from ailint.domain import serving

    c = {"name": "main", "image": "nvcr.io/nvidia/ai-dynamo/runtime:0.4.1", "command": command}
    obj = one(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [c]}}))
    (pod,) = workloads.pod_templates(obj)
    (cont,) = pod.containers()
    assert serving_engine(cont) == engine, what_runs(cont)
    args = serving.engine_args(cont)
    assert (args.int("tp") if args is not None else None) == tp


OME_MODEL = """apiVersion: ome.io/v1beta1
kind: ClusterBaseModel
metadata: {name: m}
spec:
  modelFormat: {name: safetensors, version: "1.0.0"}
  modelFramework: {name: transformers, version: "4.47.0"}
  modelArchitecture: LlamaForCausalLM
  modelParameterSize: 70B
  storage: {path: /models/m}
"""


def _ome_runtime(name: str, kind: str = "ClusterServingRuntime", namespace: str | None = None, **extra) -> str:
    fmt = {
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelFramework": {"name": "transformers", "version": "4.47.0"},
        "modelArchitecture": "LlamaForCausalLM",
        "autoSelect": True,
        "priority": extra.pop("priority", 1),
    }
    fmt.update(extra.pop("format", {}))
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    spec = {"supportedModelFormats": [fmt], "engineConfig": {"runner": {"name": "ome-container", "image": "i:1"}}}
    spec.update(extra)
    return json.dumps({"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec})


def _select(*runtimes: str, isvc_extra: str = "") -> str | None:
    isvc = (
        "apiVersion: ome.io/v1beta1\nkind: InferenceService\nmetadata: {name: s, namespace: ns" + isvc_extra + "}\n"
        "spec:\n  model: {name: m}\n  engine: {minReplicas: 1}\n"
    )
    objs = objects("\n---\n".join([OME_MODEL, *runtimes, isvc]))
    from ailint.domain.workloads import ome

    rt = ome.find_runtime(objs[-1], workloads.Catalog(objs[:-1]))
    return rt.name if rt is not None else None


def test_ome_runtime_selection_follows_the_runtimeselector_matcher():
    assert _select(_ome_runtime("a", priority=9, disabled=True), _ome_runtime("b")) == "b"
    small = _ome_runtime("small", priority=9, modelSizeRange={"min": "1B", "max": "10B"})
    assert _select(small, _ome_runtime("b")) == "b"
    assert _select(_ome_runtime("q", priority=9, format={"quantization": "fp8"}), _ome_runtime("b")) == "b"
    other_fw = _ome_runtime("fw", priority=9, format={"modelFramework": {"name": "tensorrtllm"}})
    assert _select(other_fw, _ome_runtime("b")) == "b"
    newer = _ome_runtime("v", priority=9, format={"modelFormat": {"name": "safetensors", "version": "2.0.0"}})
    assert _select(newer, _ome_runtime("b")) == "b"
    not_auto = _ome_runtime("manual", priority=9, format={"autoSelect": False})
    assert _select(not_auto, _ome_runtime("b")) == "b"
    # the highest (weight x priority) score wins; then the tightest size range; then the name
    assert _select(_ome_runtime("b"), _ome_runtime("c", priority=3)) == "c"
    wide = _ome_runtime("wide", modelSizeRange={"min": "1B", "max": "400B"})
    tight = _ome_runtime("tight", modelSizeRange={"min": "60B", "max": "80B"})
    assert _select(wide, tight) == "tight"
    assert _select(_ome_runtime("z"), _ome_runtime("y")) == "y"
    # a namespace's ServingRuntime comes before every ClusterServingRuntime
    mine = _ome_runtime("local", kind="ServingRuntime", namespace="ns")
    assert _select(_ome_runtime("c", priority=9), mine) == "local"
    # an accelerator class the InferenceService asks for must be one the runtime supports
    annotated = ", annotations: {ome.io/accelerator-class: h100}"
    h100 = _ome_runtime("h100", acceleratorRequirements={"acceleratorClasses": ["h100"]})
    assert _select(_ome_runtime("c", priority=9), h100, isvc_extra=annotated) == "h100"
    assert _select(_ome_runtime("c")) == "c" and _select() is None


def test_ome_predictor_model_form_merges_the_runtimes_ome_container():
    path = ROOT / "fixtures" / "SRV004" / "ome_predictor_model_tp_over_gpus.yaml"
    runtime, isvc = objects(path.read_text(encoding="utf-8"))
    (alone,) = workloads.pod_templates(isvc)
    assert alone.open and alone.role == "predictor"
    (merged,) = workloads.pod_templates(isvc, workloads.Catalog([runtime]))
    (c,) = merged.containers()
    assert not merged.open and c.image == "docker.io/vllm/vllm-openai:v0.9.2"
    assert c.accelerators() == {"nvidia.com/gpu": 2.0}  # the InferenceService's limit wins
    assert serving_engine(c) == "vllm"
    assert real_path(c.path_of("args", 1))[0].obj is runtime  # the runtime's argument, at its line
    facts, _ = workloads.workload_facts(isvc, workloads.Catalog([runtime]))
    assert facts.engine == "vllm" and facts.model == "llama-3-1-70b-instruct" and facts.replicas == 1
    # the engine architecture wins over a predictor the same object still carries
    both = one(
        "apiVersion: ome.io/v1beta1\nkind: InferenceService\nmetadata: {name: s}\n"
        "spec:\n  model: {name: m}\n  engine: {minReplicas: 2}\n  predictor: {model: {baseModel: m}}\n"
    )
    assert [p.role for p in workloads.pod_templates(both)] == []  # engine without a runner: no pod
    from ailint.domain.workloads import ome

    assert not ome.legacy(both)


def test_nimservice_image_findings_point_at_the_tag():
    path = ROOT / "fixtures" / "SRV002" / "nimservice_image_latest.yaml"
    obj = one(path.read_text(encoding="utf-8"))
    (pod,) = workloads.pod_templates(obj)
    (c,) = pod.containers()
    assert real_path(c.path_of("image")) == ("spec", "image", "tag")


def test_kserve_inferenceservices_are_server_kinds():
    assert "serving.kserve.io/InferenceService" in workloads.serving_rule_kinds()


@pytest.mark.parametrize(("multinode", "pods"), [(None, 3), ({}, 6), ({"nodeCount": 4}, 12)])
def test_dynamo_multinode_without_node_count_is_two_nodes(multinode, pods):
    """`multinode` written without `nodeCount` spans 2 nodes per replica (the CRD's default
    and minimum); without `multinode`, one."""
    svc: dict = {
        "replicas": 3,
        "extraPodSpec": {"mainContainer": {"image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.1"}},
    }
    if multinode is not None:
        svc["multinode"] = multinode
    obj = one(
        json.dumps(
            {
                "apiVersion": "nvidia.com/v1alpha1",
                "kind": "DynamoGraphDeployment",
                "metadata": {"name": "g"},
                "spec": {"services": {"VllmWorker": svc}},
            }
        )
    )
    (pod,) = workloads.pod_templates(obj)
    assert pod.replicas == pods
