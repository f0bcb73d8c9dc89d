"""The model-size estimator shared by STO001 and SRV005."""

from __future__ import annotations

import pytest
from ailint.core.model import SourceFile
from ailint.domain.extract import all_containers, pod_templates
from ailint.domain.models import (
    bytes_per_param,
    estimate,
    estimate_model_bytes,
    image_bytes,
    params_from_model_id,
    parse_params,
    parse_size,
)
from ailint.engine.load import load_text


@pytest.mark.parametrize(
    "model, params",
    [
        ("meta-llama/Llama-3.1-70B-Instruct", 70e9),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", 8e9),
        ("Qwen/Qwen2.5-0.5B-Instruct", 0.5e9),
        ("Qwen/Qwen2.5-7B-Instruct-1M", 7e9),
        ("Qwen/Qwen3-30B-A3B", 30e9),
        ("Qwen/Qwen3-235B-A22B-FP8", 235e9),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", 46.7e9),
        ("mistralai/Mixtral-8x22B-v0.1", 141e9),
        ("some-org/Foo-4x2B", 8e9),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 109e9),
        ("facebook/opt-125m", 125e6),
        ("google/gemma-2-9b-it", 9e9),
        ("/models/llama-2-13b-chat-hf", 13e9),
        ("s3://bucket/Llama-3-70B/", 70e9),
        ("openai/gpt-oss-120b", 120e9),
        ("deepseek-ai/DeepSeek-V3", 671e9),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", 7e9),
        ("microsoft/Phi-3-mini-4k-instruct", None),
        ("gpt2", None),
        ("/mnt/models", None),
        ("", None),
        (None, None),
        ("some/Model-17B-99E", None),
    ],
)
def test_params_from_model_id(model, params):
    got = params_from_model_id(model)
    if params is None:
        assert got is None
    else:
        assert got == pytest.approx(params)


@pytest.mark.parametrize(
    "tokens, model, bpp",
    [
        ([], "meta-llama/Llama-3.1-8B-Instruct", 2.0),
        (["--dtype", "float32"], "meta-llama/Llama-3.1-8B-Instruct", 4.0),
        (["--dtype=bfloat16"], "x/Model-8B", 2.0),
        (["--quantization", "awq"], "x/Model-8B", 0.5),
        (["-q", "fp8"], "x/Model-8B", 1.0),
        (["--quantization=modelopt_fp4"], "x/Model-8B", 0.5),
        (["--quantize", "bitsandbytes"], "x/Model-8B", 1.0),  # TGI: LLM.int8
        (["--quantize", "bitsandbytes-nf4"], "x/Model-8B", 0.5),
        ([], "TheBloke/Llama-2-13B-chat-AWQ", 0.5),
        ([], "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", 1.0),
        ([], "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", 1.0),
        ([], "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", 0.5),
        ([], "unsloth/Llama-3.2-3B-bnb-4bit", 0.5),
        ([], "nvidia/Llama-3.3-70B-Instruct-NVFP4", 0.5),
        ([], "openai/gpt-oss-20b", 0.5),
        ([], "deepseek-ai/DeepSeek-R1", 1.0),
        ([], "deepseek-ai/DeepSeek-R1-Distill-Llama-70B", 2.0),
        (["--dtype", "float16"], "TheBloke/Llama-2-13B-chat-AWQ", 0.5),
        ([], None, 2.0),
    ],
)
def test_bytes_per_param(tokens, model, bpp):
    assert bytes_per_param(tokens, model) == bpp


@pytest.mark.parametrize(
    "value, expected",
    [
        ("140Gi", 140 * 2**30),
        ("150G", 150e9),
        ("150GB", 150e9),
        ("140GiB", 140 * 2**30),
        ("1.5Ti", 1.5 * 2**40),
        (2**30, 2**30),
        ("lots", None),
        (None, None),
        (True, None),
        ("0", None),
    ],
)
def test_parse_size(value, expected):
    got = parse_size(value)
    assert got == (pytest.approx(expected) if expected is not None else None)


def test_parse_params():
    assert parse_params("70B") == 70e9
    assert parse_params("8x7B") == pytest.approx(46.7e9)
    assert parse_params(7e9) == 7e9
    assert parse_params("7000000000") == 7e9
    assert parse_params("many") is None
    assert parse_params(False) is None


def _pod(text: str):
    res = load_text(SourceFile("t.yaml", "t.yaml", text))
    obj = res.objects[0]
    pod = next(pod_templates(obj))
    c = next(c for c in all_containers(obj) if not c.init)
    return c, pod


DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  annotations: {ANN}
spec:
  template:
    metadata:
      annotations: {TANN}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "meta-llama/Llama-3.1-70B-Instruct", "--dtype", "float32"]
"""


def test_estimate_from_model_id():
    c, pod = _pod(DEPLOY.replace("{ANN}", "{}").replace("{TANN}", "{}"))
    size, how = estimate_model_bytes(c, pod)
    assert size == pytest.approx(70e9 * 4)
    assert how == "70B params x 4 bytes, float32"
    est = estimate(c, pod, on_disk=True)
    assert est is not None and est.bytes == pytest.approx(140e9) and not est.exact


def test_estimate_annotation_wins_template_over_object():
    text = DEPLOY.replace("{ANN}", '{"ailint.io/model-size": "100Gi"}').replace(
        "{TANN}", '{"ailint.io/model-size": "150GB", "ailint.io/image-size": "12Gi"}'
    )
    c, pod = _pod(text)
    est = estimate(c, pod)
    assert est is not None and est.exact and est.bytes == 150e9
    assert image_bytes(pod) == 12 * 2**30


def test_estimate_params_annotation():
    c, pod = _pod(DEPLOY.replace("{ANN}", '{"ailint.io/model-params": "8B"}').replace("{TANN}", "{}"))
    est = estimate(c, pod, on_disk=True)
    assert est is not None and est.source == "params-annotation" and est.bytes == 16e9


def test_estimate_unknown():
    text = DEPLOY.replace("{ANN}", "{}").replace("{TANN}", "{}")
    text = text.replace("meta-llama/Llama-3.1-70B-Instruct", "/models/x")
    c, pod = _pod(text)
    assert estimate_model_bytes(c, pod)[0] is None
    assert image_bytes(pod) is None


def test_rayservice_serve_config():
    text = """\
apiVersion: ray.io/v1
kind: RayService
metadata: {name: llm}
spec:
  serveConfigV2: |
    applications:
      - name: llm
        args:
          llm_configs:
            - model_loading_config:
                model_id: qwen
                model_source: Qwen/Qwen2.5-32B-Instruct
  rayClusterConfig:
    headGroupSpec:
      template:
        spec:
          containers: [{name: head, image: rayproject/ray-llm:2.46.0}]
"""
    c, pod = _pod(text)
    est = estimate(c, pod)
    assert est is not None and est.params == 32e9


def test_hostile_values():
    assert params_from_model_id("x/Model-" + "9" * 400 + "B") is None
    assert parse_size("1e309") is None
    assert parse_size(float("nan")) is None
    assert parse_params(float("inf")) is None
    assert parse_params("1e309") is None
