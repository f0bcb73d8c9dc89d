"""The catalogue pass (ailint.engine.catalogue): object rules on workloads whose pods depend on
other objects of the run (a KServe runtime, DRA claims), with the runtime in another file,
the finding on the runtime's line, and the results cache following edits of either file."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

from ailint.engine.config import Settings
from ailint.engine.run import lint
from ailint.report import json as rep

RUNTIME = """\
apiVersion: serving.kserve.io/v1alpha1
kind: ClusterServingRuntime
metadata:
  name: kserve-vllm
spec:
  supportedModelFormats:
    - name: huggingface
      autoSelect: true
  containers:
    - name: kserve-container
      image: vllm/vllm-openai:v0.8.5
      command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]
      args:
        - --port=8080
        - --tensor-parallel-size=TP
"""
ISVC = """\
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: llama
  annotations:
    serving.kserve.io/deploymentMode: RawDeployment
spec:
  predictor:
    model:
      modelFormat:
        name: huggingface
      storageUri: hf://meta-llama/Llama-3.1-70B-Instruct
      resources:
        requests: {cpu: "16", memory: 128Gi, nvidia.com/gpu: 2}
        limits: {nvidia.com/gpu: 2}
"""


def _run(paths: list[str], cache_dir: Path | None, select: list[str], context: tuple[str, ...] = ()) -> list[dict]:
    settings = Settings(root=os.path.dirname(paths[0]))
    settings.select = select
    saved = os.environ.get("AILINT_CACHE_DIR")
    if cache_dir is not None:
        os.environ["AILINT_CACHE_DIR"] = str(cache_dir)
    try:
        result = lint(paths, settings, cache=cache_dir is not None, context=context)
    finally:
        if saved is None:
            os.environ.pop("AILINT_CACHE_DIR", None)
        else:
            os.environ["AILINT_CACHE_DIR"] = saved
    return json.loads(rep.render(result))["findings"]  # type: ignore[no-any-return]


def _write(tmp: Path, tp: int) -> tuple[Path, Path]:
    rt, isvc = tmp / "runtime.yaml", tmp / "isvc.yaml"
    rt.write_text(RUNTIME.replace("TP", str(tp)), encoding="utf-8")
    isvc.write_text(ISVC, encoding="utf-8")
    return rt, isvc


def test_runtime_in_another_file_finding_on_its_args_line(tmp_path: Path) -> None:
    _rt, isvc = _write(tmp_path, 4)
    found = _run([str(tmp_path)], None, ["SRV004"])
    assert [(f["code"], Path(f["file"]).name, f["line"]) for f in found] == [("SRV004", "runtime.yaml", 15)]
    assert found[0]["object"]["kind"] == "InferenceService"  # the workload judged, on the runtime's line
    assert "TP 4 needs 4 GPUs" in found[0]["message"]
    # the InferenceService alone: its runtime is not in the run, only what it states is judged
    assert _run([str(isvc)], None, ["SRV004"]) == []


def test_runtime_as_context_only_finding_stays_on_the_workload(tmp_path: Path) -> None:
    rt, isvc = _write(tmp_path, 4)
    found = _run([str(isvc)], None, ["SRV004"], context=(str(rt),))
    assert [(f["code"], Path(f["file"]).name, f["line"]) for f in found] == [
        ("SRV004", "isvc.yaml", 9)
    ]  # `model:`, which merges the runtime in


def test_cache_follows_an_edit_of_the_runtime(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    cache = tmp_path / "cache"
    _write(src, 4)
    cold = _run([str(src)], cache, ["SRV004", "GPU005"])
    assert _run([str(src)], cache, ["SRV004", "GPU005"]) == cold  # an exact rerun
    assert sorted(f["code"] for f in cold) == ["GPU005", "SRV004"]
    _write(src, 2)  # only the runtime changes: the InferenceService's file entry is reused
    warm = _run([str(src)], cache, ["SRV004", "GPU005"])
    assert warm == _run([str(src)], None, ["SRV004", "GPU005"])
    assert [f["code"] for f in warm] == ["GPU005"]  # TP 2 on 2 GPUs; still no /dev/shm


DRA = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpus
spec:
  spec:
    devices:
      requests:
        - name: gpus
          exactly:
            deviceClassName: CLASS
            count: 2
"""
POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: train
spec:
  resourceClaims:
    - name: gpus
      resourceClaimTemplateName: gpus
  containers:
    - name: train
      image: nvcr.io/nvidia/pytorch:24.05-py3
      command: ["torchrun", "--nproc-per-node=2", "train.py"]
      resources:
        claims:
          - name: gpus
"""


def test_dra_claim_in_another_file_makes_an_accelerator_pod(tmp_path: Path) -> None:
    (tmp_path / "claim.yaml").write_text(DRA.replace("CLASS", "gpu.nvidia.com"), encoding="utf-8")
    (tmp_path / "pod.yaml").write_text(POD, encoding="utf-8")
    found = _run([str(tmp_path)], None, ["GPU003"])
    assert [(f["code"], Path(f["file"]).name) for f in found] == [("GPU003", "pod.yaml")]
    assert "2 nvidia.com/gpu" in found[0]["message"]
    # a claim of a device class that is no accelerator, or no claim in the run: no accelerator pod
    (tmp_path / "claim.yaml").write_text(DRA.replace("CLASS", "nic.example.com"), encoding="utf-8")
    assert _run([str(tmp_path)], None, ["GPU003"]) == []
    assert _run([str(tmp_path / "pod.yaml")], None, ["GPU003"]) == []


def test_cache_follows_an_edit_of_the_claim(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    cache = tmp_path / "cache"
    (src / "claim.yaml").write_text(DRA.replace("CLASS", "gpu.nvidia.com"), encoding="utf-8")
    (src / "pod.yaml").write_text(POD, encoding="utf-8")
    assert [f["code"] for f in _run([str(src)], cache, ["GPU003"])] == ["GPU003"]
    (src / "claim.yaml").write_text(DRA.replace("CLASS", "nic.example.com"), encoding="utf-8")
    assert _run([str(src)], cache, ["GPU003"]) == []


def test_a_repeated_finding_is_kept_as_the_one_of_the_object_holding_its_line() -> None:
    """One runtime line judged on the runtime and on a workload merged with it (the workload
    first in the file): the finding kept names the runtime, whose lines hold it."""
    from ailint.core.model import Finding, Severity, SourceFile, Span
    from ailint.engine.catalogue import unique
    from ailint.engine.load import load_text

    text = (
        "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: isvc}\n"
        "spec: {predictor: {model: {runtime: rt}}}\n---\n"
        "apiVersion: serving.kserve.io/v1alpha1\nkind: ServingRuntime\nmetadata: {name: rt}\n"
        "spec:\n  containers:\n    - name: kserve-container\n      image: vllm/vllm-openai:latest\n"
    )
    objects = load_text(SourceFile("m.yaml", "m.yaml", text)).objects
    isvc, runtime = objects
    span = Span(12, 14, 12, 37)  # the runtime's image line

    def finding(obj) -> Finding:
        return Finding("SRV002", "x", Severity.ERROR, "same message", "m.yaml", span, obj.ref)

    kept = unique([finding(isvc), finding(runtime)], objects)
    assert [f.object_ref.kind for f in kept] == ["ServingRuntime"]
    assert [f.object_ref.kind for f in unique([finding(isvc), finding(runtime)])] == ["InferenceService"]


def test_the_join_takes_which_objects_wait_from_their_files_object_rules(tmp_path: Path, monkeypatch) -> None:
    """`process_file` notes which of a file's objects wait for the catalogue (FileResult.deferred)
    and which are catalogue members (FileResult.catalogue), and the join judges exactly those
    without working either out again, cached or not; the finding is the same."""
    from ailint.engine import catalogue
    from ailint.engine.run import Engine, process_file
    from ailint.engine.sources import Candidate

    _rt, isvc = _write(tmp_path, 4)
    both = tmp_path / "both.yaml"
    both.write_text(isvc.read_text(encoding="utf-8") + "---\n" + RUNTIME.replace("TP", "4"), encoding="utf-8")
    settings = Settings(root=str(tmp_path))
    fr = process_file(Candidate(str(both), "both.yaml"), settings, Engine(settings, []))
    assert [o.kind for o in fr.objects] == ["InferenceService", "ClusterServingRuntime"]
    assert fr.deferred == (0,)
    assert fr.catalogue == (1,)  # the runtime
    alone = tmp_path / "alone.yaml"
    alone.write_text(RUNTIME.replace("TP", "4"), encoding="utf-8")
    none_wait = process_file(Candidate(str(alone), "alone.yaml"), settings, Engine(settings, []))
    # most files wait for nothing: a worker's result then costs the parent no set per file
    # (the empty tuple is one shared object, where every unpickled frozenset is a new one)
    got = pickle.loads(pickle.dumps(none_wait)).deferred
    assert type(got) is tuple and not got

    want = _run([str(both)], None, ["SRV004"])
    assert [(f["code"], f["line"]) for f in want] == [("SRV004", 31)]  # the runtime's args line
    asked: list[bytes] = []
    real = catalogue._flag
    monkeypatch.setattr(
        catalogue, "_flag", lambda obj, memo, what, compute: asked.append(what) or real(obj, memo, what, compute)
    )
    assert _run([str(both)], None, ["SRV004"]) == want
    cache = tmp_path / "cache"
    assert _run([str(both)], cache, ["SRV004"]) == want  # the file's entry written
    (tmp_path / "other.yaml").write_text("kind: ConfigMap\n", encoding="utf-8")
    assert _run([str(tmp_path)], cache, ["SRV004"]) == _run([str(tmp_path)], None, ["SRV004"])
    assert asked == []  # both came with each file: parsed, or from its cache entry
