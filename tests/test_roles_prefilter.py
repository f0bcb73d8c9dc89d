"""The word lists that let `what_runs` skip a command pattern (`roles._MUST_HOLD`): a
pattern may only be skipped on a segment that it could not match anyway.

Checked two ways: on a hand-written example of every alternative of every pattern (each
must match its pattern and hold one of its words), and on every command segment of the
fixtures and the corpus (wherever a pattern matches, one of its words is there)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ailint.domain import roles
from conftest import CORPUS, ROOT, needs_shared

EXAMPLES = {
    "vllm": [
        "vllm serve m",
        "python -m vllm.entrypoints.openai.api_server",
        "python /vllm/inference_api.py",
        "python3 -m dynamo.vllm",
    ],
    "sglang": ["python -m sglang.launch_server", "sglang serve", "python3 -m dynamo.sglang"],
    "trtllm": [
        "trtllm-serve m",
        "trtllm-llmapi-launch x",
        "python launch_triton_server.py",
        "python3 -m dynamo.trtllm",
    ],
    "triton": ["tritonserver --model-repository=/m"],
    "tgi": ["text-generation-launcher --model-id m"],
    "nim": ["/opt/nim/start_server.sh", "start_server.sh", "nim-serve", "nim_serve"],
    "ollama": ["ollama serve"],
    "llama.cpp": ["llama-server -m m", "python -m llama_cpp.server"],
    "lmdeploy": ["lmdeploy serve api_server m"],
    "dynamo": ["python -m dynamo.llama_cpp", "dynamo serve graphs.agg:frontend"],
    "ray-serve": ["serve run app:main", "serve deploy c.yaml", "serve start"],
    "client": [
        "genai-perf profile",
        "perf_analyzer -m m",
        "aiperf profile",
        "locust -f f",
        "guidellm benchmark",
        "llmperf x",
        "hey -n 10 http://x",
        "wrk -t2 http://x",
        "ab -n 10 http://x/",
        "vegeta attack",
        "k6 run s.js",
        "vllm bench serve",
        "vllm chat",
        "vllm complete",
        "python benchmark_serving.py",
        "python -m sglang.bench_serving",
        "python -m sglang.check_env",
        "python token_benchmark_ray.py",
        "python -m vllm.entrypoints.cli.benchmark",
    ],
    "batch": ["vllm run-batch -i x", "python -m vllm.entrypoints.openai.run_batch"],
    "router": [
        "python -m sglang_router.launch_router",
        "sgl-model-gateway --x",
        "smg --x",
        "mini_lb --x",
        "python -m dynamo.frontend",
    ],
    "download": [
        "huggingface-cli download m",
        "hf download m",
        "python -c snapshot_download",
        "modelscope download m",
        "aws s3 cp s3://a b",
        "aws s3 sync s3://a b",
        "gsutil cp a b",
        "s5cmd cp a b",
        "tosutil cp a b",
        "git lfs pull",
        "download-to-cache",
        "list-model-profiles",
        "nim_download_to_cache",
        "ollama pull m",
    ],
    "ray-node": ["ray start --head", "/home/ray/anaconda3/bin/ray start --block", "${kuberay_gen_ray_start_cmd}"],
    "idle": ["sleep infinity", "/bin/sleep 1", "pause", "tail -f /dev/null", "while true", "until false"],
    "diagnostic": ["/opt/gpuburn/gpu_burn 120", "gpu-burn -d 60", "gpuburn 60", "/usr/bin/dcgmproftester12 -t 1004"],
}

TABLE = [*roles._SERVER_CMD, *roles._NOT_SERVER]


def test_every_pattern_has_words_and_examples() -> None:
    names = [name for name, _ in TABLE]
    assert sorted(set(names)) == sorted(roles._MUST_HOLD) == sorted(EXAMPLES)


@pytest.mark.parametrize("name,rx", TABLE, ids=[name for name, _ in TABLE])
def test_each_alternative_holds_one_of_its_words(name: str, rx: object) -> None:
    for example in EXAMPLES[name]:
        assert rx.search(example), (name, example)  # type: ignore[attr-defined]
        assert any(w in example for w in roles._MUST_HOLD[name]), (name, example)


def _segments(paths: list[Path]) -> set[str]:
    from ailint.domain.extract import pod_templates
    from ailint.engine.config import Settings
    from ailint.engine.run import lint

    seen: set[str] = set()
    captured: list[object] = []
    import ailint.engine.run as run_mod

    real = run_mod.finish

    def keep(file_results, *args, **kwargs):  # type: ignore[no-untyped-def]
        captured.extend(o for fr in file_results for o in fr.objects)
        return real(file_results, *args, **kwargs)

    run_mod.finish = keep  # type: ignore[assignment]
    try:
        lint([str(p) for p in paths], Settings(root=str(ROOT)), jobs=1, cache=False)
    finally:
        run_mod.finish = real  # type: ignore[assignment]
    for obj in captured:
        try:
            pods = list(pod_templates(obj))  # type: ignore[arg-type]
        except Exception:
            continue
        for pod in pods:
            for c in pod.containers():
                seen.update(seg.lower() for seg in roles.segments(list(c.tokens)))
    return seen


def _check(segments: set[str]) -> None:
    assert segments
    for seg in segments:
        for name, rx in TABLE:
            if rx.search(seg):
                assert any(w in seg for w in roles._MUST_HOLD[name]), (name, seg)


def test_words_cover_every_command_of_the_fixtures() -> None:
    _check(_segments([ROOT / "fixtures"]))


@needs_shared
def test_words_cover_every_command_of_the_corpus() -> None:
    _check(_segments(sorted(CORPUS.glob("*/plain"))))


def test_infrastructure_agent_names_all_hold_agent() -> None:
    """`agent_words` skips the infrastructure names on a text without `agent`: no name may
    match without it (a name added as an alternative of its own would, and fail here)."""
    import re

    tokens = set(re.findall(r"[a-z][a-z0-9.-]*", roles._INFRA_AGENT_RE.pattern.replace("\\", "")))
    assert len(tokens) > 50
    for token in sorted(tokens):
        for m in roles._INFRA_AGENT_RE.finditer(token):
            assert "agent" in m.group(), token


@pytest.mark.parametrize(
    "text",
    [
        "datadog-agent my-agent",
        "Copilot sandbox-runner",
        "node-agent",
        "MCP-server agent",
        "ray-head worker",
        "",
        "agent",
        "fluent-bit-agent assistant",
    ],
)
def test_agent_words_shortcut_gives_the_full_answer(text: str) -> None:
    full = {m.group(1) for m in roles._AGENT_WORD.finditer(roles._INFRA_AGENT_RE.sub(" ", text.lower()))}
    assert roles.agent_words(text) == full
