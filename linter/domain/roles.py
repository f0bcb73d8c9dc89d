"""What a pod does: serving, training, agent (and, from the adapters, batch and infra).

The decision is made here once. A model server is recognised by what the container runs
(its command, args and env, then its image); the `ailint.io/role` annotation on the object
or the pod template overrides every heuristic.
"""

from __future__ import annotations

from ailint.core.lazyre import lazy_re
from ailint.core.model import K8sObject
from ailint.domain.accelerators import is_placeholder
from ailint.domain.extract import (
    KSERVE_LLM_KINDS,
    KSERVE_SERVING_ROLES,
    ROLE_ANNOTATION,
    Container,
    PodTemplate,
    is_accelerator_pod,
    pod_templates,
)

SERVING_ENGINES = {
    "vllm": (
        lazy_re(r"(^|/)vllm[^/:]*(:|$)|vllm-openai|/vllm|vllm-tpu|vllm-neuron|llm-d"),
        ("vllm", "vllm.entrypoints"),
    ),
    "sglang": (lazy_re(r"sglang"), ("sglang.launch_server", "sglang")),
    "tgi": (lazy_re(r"text-generation-inference|/tgi[:-]"), ("text-generation-launcher",)),
    "triton": (lazy_re(r"tritonserver(?!:[\w.-]*-sdk$)|triton-inference|/triton[:-]"), ("tritonserver",)),
    "lmdeploy": (lazy_re(r"lmdeploy"), ("lmdeploy",)),
    "llama.cpp": (lazy_re(r"llama[.-]?cpp|llama-server"), ("llama-server", "llama.cpp")),
    "ray-serve": (lazy_re(r"$^"), ("serve",)),
}


# What a command runs, matched on one shell command (a segment between `&&`, `;`, `|`...):
# the server it starts, or why it is no model server.
# NVIDIA Dynamo's workers are the engine with Dynamo's runtime around it, and take the
# engine's own flags: `python3 -m dynamo.vllm` parses vLLM's AsyncEngineArgs
# (`--model`, `--tensor-parallel-size`, ...), `dynamo.sglang` SGLang's ServerArgs
# (`--model-path`, `--tp-size`, ...), `dynamo.trtllm` `--model`, `--tensor-parallel-size`
# (ai-dynamo/dynamo components/src/dynamo/{vllm,sglang}/args.py, trtllm/backend_args.py).
_DYNAMO_WORKER = r"\bdynamo\.{}(?![\w.])"
_SERVER_CMD = (
    (
        "vllm",
        lazy_re(
            r"(^|\s|/)vllm serve\b|vllm\.entrypoints\.(openai\.api_server|api_server)\b|/vllm/inference_api\.py|"
            + _DYNAMO_WORKER.format("vllm")
        ),
    ),
    ("sglang", lazy_re(r"\bsglang\.launch_server\b|(^|\s|/)sglang serve\b|" + _DYNAMO_WORKER.format("sglang"))),
    (
        "trtllm",
        lazy_re(
            r"(^|\s|/)trtllm-(serve|llmapi-launch)\b|\blaunch_triton_server\.py\b|" + _DYNAMO_WORKER.format("trtllm")
        ),
    ),
    ("triton", lazy_re(r"(^|\s|/)tritonserver\b")),
    ("tgi", lazy_re(r"(^|\s|/)text-generation-launcher\b")),
    ("nim", lazy_re(r"(^|\s|/)(opt/nim/)?start_server\.sh\b|(^|\s|/)nim[-_]serve\b")),
    ("ollama", lazy_re(r"(^|\s|/)ollama serve\b")),
    ("llama.cpp", lazy_re(r"(^|\s|/)llama-server\b|\bllama_cpp\.server\b")),
    ("lmdeploy", lazy_re(r"(^|\s|/)lmdeploy serve\b")),
    ("dynamo", lazy_re(r"\bdynamo\.llama_cpp\b|(^|\s|/)dynamo serve\b")),
    ("ray-serve", lazy_re(r"(^|\s|/)serve (run|deploy|start)\b")),
)
_NOT_SERVER = (
    # benchmark and load clients
    (
        "client",
        lazy_re(
            r"(^|\s|/)(genai-perf|perf_analyzer|aiperf|locust|guidellm|llmperf|hey|wrk|ab|vegeta)(\s|$)|"
            r"(^|\s|/)k6 run\b|(^|\s|/)vllm (bench|chat|complete)\b|\bbenchmark_(serving|throughput|latency)\.py\b|"
            r"\bsglang\.(bench_\w+|check_env)\b|\btoken_benchmark_ray\.py\b|\bvllm\.entrypoints\.cli\.benchmark\b"
        ),
    ),
    ("batch", lazy_re(r"(^|\s|/)vllm run-batch\b|\bvllm\.entrypoints\.openai\.run_batch\b")),
    ("router", lazy_re(r"\bsglang_router\b|(^|\s|/)(sgl-model-gateway|smg|mini_lb)(\s|$)|\bdynamo\.frontend\b")),
    (
        "download",
        lazy_re(
            r"(^|\s|/)(huggingface-cli|hf) download\b|\bsnapshot_download\b|(^|\s|/)modelscope download\b|"
            r"(^|\s|/)aws s3 (cp|sync)\b|(^|\s|/)(gsutil|s5cmd|tosutil)\b|(^|\s|/)git lfs\b|"
            r"(^|\s|/)(download-to-cache|list-model-profiles|nim_download_to_cache)\b|(^|\s|/)ollama pull\b"
        ),
    ),
    ("ray-node", lazy_re(r"^(ray|/\S*/ray) start\b|\$\{?kuberay_gen_ray_start_cmd\b")),
    ("idle", lazy_re(r"^(/bin/|/usr/bin/)?(sleep|pause)\b|^tail -f /dev/null\b|^(while|until)\b")),
    # GPU stress tests: one CUDA process per GPU, no collective, no model (gpu-burn,
    # DCGM's load generator)
    ("diagnostic", lazy_re(r"(^|\s|/)(gpu_burn|gpu-burn|gpuburn|dcgmproftester\d*)(\s|$)")),
)
# Words each pattern above cannot match without (the segment is lower case): a segment that
# holds none of a pattern's words is not searched with it. Most segments hold none, and the
# `in` tests cost a fraction of a search (tests/test_roles_prefilter.py checks each word list
# against its pattern on every command of the fixtures and the corpus).
_MUST_HOLD: dict[str, tuple[str, ...]] = {
    "vllm": ("vllm",),
    "sglang": ("sglang",),
    "trtllm": ("trtllm", "launch_triton_server"),
    "triton": ("tritonserver",),
    "tgi": ("text-generation-launcher",),
    "nim": ("start_server", "nim"),
    "ollama": ("ollama",),
    "llama.cpp": ("llama",),
    "lmdeploy": ("lmdeploy",),
    "dynamo": ("dynamo",),
    "ray-serve": ("serve",),
    "client": ("perf", "locust", "guidellm", "hey", "wrk", "ab", "vegeta", "k6", "vllm", "benchmark", "sglang"),
    "batch": ("vllm",),
    "router": ("sgl", "smg", "mini_lb", "dynamo"),
    "download": ("download", "s3", "gsutil", "s5cmd", "tosutil", "lfs", "list-model-profiles", "pull"),
    "ray-node": ("ray",),
    "idle": ("sleep", "pause", "tail", "while", "until"),
    "diagnostic": ("burn", "dcgmproftester"),
}
_HOLD = {k: frozenset(words) for k, words in _MUST_HOLD.items()}
_HOLD_WORDS = tuple(sorted(set().union(*_HOLD.values())))
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "do", "done", "then", "fi", "else", "elif", "{", "}"})
_IMAGE_ONLY = (  # servers an image starts by its own entrypoint (no command in the manifest)
    ("nim", lazy_re(r"(^|/)nvcr\.io/nim/")),
    ("ollama", lazy_re(r"(^|/)ollama/ollama(:|@|$)")),
)


def segments(tokens: list[str]) -> list[str]:
    """The shell commands of a container's command line, one string each."""
    out: list[str] = []
    cur: list[str] = []
    for tok in tokens:
        if tok in _SEPARATORS:
            if cur:
                out.append(" ".join(cur))
            cur = []
            continue
        if tok.endswith(";") and tok != ";":
            cur.append(tok[:-1])
            out.append(" ".join(cur))
            cur = []
            continue
        cur.append(tok)
    if cur:
        out.append(" ".join(cur))
    return out


def what_runs(c: Container) -> tuple[str, str | None]:
    """("server", engine), (reason, None) for a command that is no model server (`client`,
    `batch`, `router`, `download`, `idle`, `diagnostic`), or ("unknown", None)."""
    if isinstance(c, Container):
        return c._cached("what_runs", lambda: _what_runs(c))  # type: ignore[no-any-return]
    return _what_runs(c)


# `sh -c`, `bash -lc`, `/bin/sh -ec` and `exec` before a command: what runs is what follows
# (`sh -c "sleep 6000"` sleeps, as `sleep 6000` does)
_SHELL_PREFIX = lazy_re(r"^((\S*/)?(ba|da|k|z)?sh( -[a-z]+)*? -[a-z]*c[a-z]* )?(exec )?")


def command_segments(c: Container) -> list[str]:
    """A container's shell commands, lower case, each without a leading `sh -c` or `exec`
    (once per container: `what_runs` and `only_waits` both read them)."""
    if isinstance(c, Container):
        return c._cached("command_segments", lambda: _command_segments(c))  # type: ignore[no-any-return]
    return _command_segments(c)


def _command_segments(c: Container) -> list[str]:
    return [_SHELL_PREFIX.sub("", seg.lower(), count=1) for seg in segments(list(c.tokens))]


def only_waits(c: Container) -> bool:
    """A container whose every command sleeps, pauses or tails /dev/null: a placeholder that
    holds its pod's devices (a GPU claim demo, a debug pod), running no workload."""
    segs = command_segments(c)
    return bool(segs) and all(_IDLE_ONLY.fullmatch(seg) for seg in segs)


def only_checks_devices(c: Container) -> bool:
    """A container whose every command lists or checks devices (`nvidia-smi`, `hl-smi`,
    `neuron-ls`, `rocm-smi`, `fi_info`, `ibv_devinfo`...), perhaps echoing or waiting
    around them: a one-shot device check that trains and serves nothing."""
    segs = command_segments(c)
    return (
        bool(segs)
        and any(_DEVICE_CHECK.fullmatch(seg) for seg in segs)
        and all(_DEVICE_CHECK.fullmatch(seg) or _IDLE_ONLY.fullmatch(seg) or seg.startswith("echo ") for seg in segs)
    )


_DEVICE_CHECK = lazy_re(
    r"(\S*/)?(nvidia-smi|hl-smi|neuron-ls|neuron-top|rocm-smi|amd-smi|fi_info|ibv_devinfo|ibv_devices)\b[^;&|]*"
)


def runs_nothing(pod: PodTemplate) -> bool:
    """A pod whose every container is a `pause` placeholder or only waits: it holds capacity
    (overprovisioning, scale tests, a device demo) and loses no work when it is evicted."""
    containers = list(pod.containers())
    return bool(containers) and all(is_placeholder(c) or only_waits(c) for c in containers)


_IDLE_ONLY = lazy_re(r"(\S*/)?(sleep (infinity|inf|\d+(\.\d+)?[smhd]?)|pause|tail -f /dev/null)")


def _what_runs(c: Container) -> tuple[str, str | None]:
    segs = command_segments(c)
    server: str | None = None
    last: str | None = None  # the last command's verdict
    for seg in segs:
        verdict: str | None = None
        present = {w for w in _HOLD_WORDS if w in seg}  # (each word tested once, not once per pattern)
        if not present:
            continue  # (most segments: no pattern can match)
        for engine, rx in _SERVER_CMD:
            if not _HOLD[engine].isdisjoint(present) and rx.search(seg):
                verdict = "server"
                server = server or engine
                break
        if verdict is None:
            for reason, rx in _NOT_SERVER:
                if not _HOLD[reason].isdisjoint(present) and rx.search(seg):
                    verdict = reason
                    break
        if verdict is not None:
            last = verdict
    if last is not None and last != "server" and (server is None or last in ("client", "batch", "download")):
        return last, None  # the container ends in a client, a download or an idle loop
    if server is not None:
        return "server", server
    return "unknown", None


def serving_engine(c: Container) -> str | None:
    """Which model server a container runs (vllm, sglang, trtllm, triton, tgi, nim, ollama,
    llama.cpp, lmdeploy, dynamo, ray-serve), by what it runs: the command, args and env
    first; a container that sleeps, loops, downloads, routes or runs a benchmark client is
    no server even in a server image; else its image's entrypoint."""
    if isinstance(c, Container):
        return c._cached("serving_engine", lambda: _serving_engine(c))  # type: ignore[no-any-return]
    return _serving_engine(c)


def _serving_engine(c: Container) -> str | None:
    verdict, engine = what_runs(c)
    if verdict == "server":
        return engine
    if verdict != "unknown":
        return None
    image = c.image.lower()
    if not c.data.get("command"):
        for name, rx in _IMAGE_ONLY:
            if rx.search(image):
                return name
    return _by_image(c, image)


def _by_image(c: Container, image: str) -> str | None:
    toks = c.tokens
    head = " ".join(toks[:8]).lower()
    for engine, (img_re, entry) in SERVING_ENGINES.items():
        if engine == "ray-serve":
            continue
        if engine == "vllm":
            if img_re.search(image) and not any(
                x in image
                for x in (
                    "vllm-router",
                    "production-stack-router",
                    "inference-scheduler",
                    "routing-sidecar",
                    "llm-d-router",
                    "latency-predictor",
                    # test doubles and routers that load no model: AIBrix's mock (a Flask app
                    # answering vLLM's API), the llm-d simulator (`llm-d-inference-sim`, was
                    # `vllm-sim`: "does not truly run inference"), the vLLM semantic router
                    # (an Envoy ext_proc on gRPC)
                    "vllm-mock",
                    "vllm-sim",
                    "inference-sim",
                    "semantic-router",
                )
            ):
                return engine
            continue
        if img_re.search(image) or any(e in head for e in entry):
            return engine
    return None


# ---------------------------------------------------------------------------------------
# Roles
# ---------------------------------------------------------------------------------------
_TRAIN_CMD = lazy_re(
    r"\b(torchrun|deepspeed|accelerate launch|ray\.train|torch\.distributed\.run|"
    r"torch\.distributed\.launch|mpirun|horovodrun)\b"
)
# Infrastructure "agents" (node, log, metrics, tracing, security, CI and secret agents) are
# not AI agents: their names are taken out of a pod's words before the agent words are looked
# for. One list, read by the agent decisions here and by RBAC's (`ailint.domain.rbac`). A
# name matches only where it starts a word (`dialog-agent` is no log agent).
_INFRA_AGENT_RE = lazy_re(
    r"(?<![a-z0-9])(amazon-cloudwatch|cloudwatch|cwagent|datadog|dd|newrelic|nri|dynatrace|oneagent|splunk|"
    r"elastic|beats|filebeat|metricbeat|grafana|alloy|jaeger|zipkin|xray|x-ray|otel|opentelemetry|adot|"
    r"fluent[a-z-]*|honeycomb|lightstep|coralogix|logzio|signalfx|sumologic|instana|appdynamics|loki|promtail|"
    r"vector|node|localmodelnode|host|ssm|pod-identity|spire|vault|consul|teleport|tailscale|kube|volcano|vc|"
    r"calico|cilium|istio|linkerd|falco|falcon|crowdstrike|sysdig|wiz|aqua|twistlock|prisma|lacework|chaos|"
    r"litmus|osquery|wazuh|qualys|tenable|snyk|trivy|kubescape|velero|gitlab|github|buildkite|jenkins|azure|"
    r"azure-pipelines|drone|tekton|ci|runner|build|ecs|nvidia|dcgm|neuron|efa|gpu|in-place-restart|restart|"
    r"monitoring|metrics|logging|log|telemetry|tracing|trace|apm|security|backup|network|csi|storage|"
    r"cluster|health|scheduler|system)[-_.]?agents?"
    r"|agent[-_.]?(scheduler|injector|exporter|operator-webhook)"
)


_AMBIGUOUS_AGENT_WORDS = frozenset({"agent", "sandbox"})  # words that name an AI agent only with an LLM client
_AGENT_WORDS = ("agent", "mcp", "copilot", "assistant", "sandbox")
_AGENT_WORD = lazy_re(r"(?<![a-z])(" + "|".join(_AGENT_WORDS) + r")(?![a-z])")  # every word, overlapping
_LLM_ENV = lazy_re(
    r"^(OPENAI|ANTHROPIC|AZURE_OPENAI|GEMINI|MISTRAL|GROQ|COHERE|TOGETHER|DEEPSEEK|OPENROUTER|FIREWORKS|LITELLM|"
    r"LANGCHAIN|LANGSMITH|LANGFUSE|OLLAMA|LLM|BEDROCK)_\w*$"
)
_AGENT_FRAMEWORK = lazy_re(
    r"langchain|langgraph|code[-_]interpreter|autogen|crewai|llama[_-]?index|smolagents|openhands|pydantic[_-]ai|semantic[_-]kernel|"
    r"\bagno\b|fastmcp|modelcontextprotocol|mcp[-_]server|\bopenai\b|\banthropic\b|claude|\bgpt-\d|adk\b|google\.adk"
)


def prime(obj: K8sObject) -> None:
    """Work out now the facts of `obj`'s pods that most cross-resource rules read (each pod's
    role, what each container runs), as the first rule to ask would. With `--jobs` the
    process that parsed `obj` calls this; the facts travel with the object to the parent
    (`extract.carry_facts`) and every process of the bundle phase inherits them, where each
    worked them out again for the same pods (a fifth of that phase on the corpus). Call it
    only for an object whose pods depend on no other object of the run (not one waiting for
    the catalogue: `ailint.engine.catalogue.deferred`). What fails here is left for the rule
    that asks to report."""
    try:
        for pod in pod_templates(obj):
            is_serving_pod(pod)
            is_training_pod(pod)
            is_agent_pod(pod)
            for c in pod.containers():
                serving_engine(c)
                c.accelerators()
    except Exception:
        pass


def role_override(pod: PodTemplate) -> str | None:
    v = pod.annotation(ROLE_ANNOTATION)
    return str(v).strip().lower() if v else None


def serving_containers(pod: PodTemplate) -> list[tuple[Container, str]]:
    out = []
    for c in pod.containers(include_init=False):
        eng = serving_engine(c)
        if eng:
            out.append((c, eng))
    return out


def is_serving_pod(pod: PodTemplate) -> bool:
    """A pod running an inference server (by image or command), or annotated `serving`."""
    return pod._cached("serving", lambda: _is_serving_pod(pod))


def declared_role(pod: PodTemplate) -> str | None:
    """The `ailint.io/role` annotation, else the role the workload adapter knows the pod has
    (a KubeAI Model's server, a KAITO tuning job, a Dynamo frontend), else None."""
    ov = role_override(pod)
    if ov:
        return ov
    from ailint.domain import workloads

    return workloads.pod_role(pod)


def _is_serving_pod(pod: PodTemplate) -> bool:
    ov = declared_role(pod)
    if ov:
        return ov == "serving"
    if pod.obj.kind == "RayService":
        return True
    if pod.obj.kind in KSERVE_LLM_KINDS and pod.role in KSERVE_SERVING_ROLES:
        return True  # KServe runs vLLM there even when the template names no image
    return bool(serving_containers(pod))


def is_training_pod(pod: PodTemplate) -> bool:
    """A pod of a training job kind, a GPU batch Job, or one running a launcher (torchrun, ...)."""
    return pod._cached("training", lambda: _is_training_pod(pod))


def _is_training_pod(pod: PodTemplate) -> bool:
    ov = declared_role(pod)
    if ov:
        return ov == "training"
    if pod.obj.kind in (
        "PyTorchJob",
        "MPIJob",
        "TFJob",
        "XGBoostJob",
        "PaddleJob",
        "JAXJob",
        "TrainJob",
        "JobSet",
        "RayJob",
        "TrainingRuntime",
        "ClusterTrainingRuntime",
    ):
        return pod.role != "submitter" or True
    if pod.obj.kind in ("Job", "CronJob") and is_accelerator_pod(pod):
        mains = list(pod.containers(include_init=False))
        return not mains or not all(only_checks_devices(c) for c in mains)  # a device check trains nothing
    return any(_TRAIN_CMD.search(" ".join(c.tokens)) for c in pod.containers(include_init=False))


def is_agent_pod(pod: PodTemplate) -> bool:
    """An AI agent's pod: agent-sandbox kinds, or agent/MCP/sandbox words in its names and
    labels once infrastructure agents (log shippers, monitoring) are taken out."""
    return pod._cached("agent", lambda: _is_agent_pod(pod))


def name_words(pod: PodTemplate) -> list[str]:
    """What a pod is called: its object's name, its labels (`key=value`, minus the
    `managed-by` one a tool stamps on everything), and each container's image name and name.
    The agent decisions read these words."""
    obj = pod.obj
    names = [
        obj.name or "",
        *[
            f"{k}={v}"
            for k, v in {**obj.labels, **pod.labels}.items()
            if isinstance(v, str) and not k.startswith("app.kubernetes.io/managed-by")
        ],
    ]
    for c in pod.containers():
        names.append(c.image.rsplit("/", 1)[-1].split(":")[0])
        names.append(c.name)
    return names


def agent_words(text: str) -> set[str]:
    """The agent words (`agent`, `mcp`, `copilot`, `assistant`, `sandbox`) in `text` once
    infrastructure agents' names are taken out of it. A text that holds none of the words
    has none to find, and every infrastructure name holds `agent` (7 to 1 ms over the 869
    texts of a corpus run, most of them without any)."""
    low = text.lower()
    if not any(w in low for w in _AGENT_WORDS):
        return set()
    return {m.group(1) for m in _AGENT_WORD.finditer(_INFRA_AGENT_RE.sub(" ", low) if "agent" in low else low)}


def _is_agent_pod(pod: PodTemplate) -> bool:
    ov = declared_role(pod)
    if ov:
        return ov == "agent"
    obj = pod.obj
    if obj.group.startswith("agents.x-k8s.io") or obj.kind in ("Sandbox", "SandboxTemplate", "SandboxClaim"):
        return True
    if obj.kind in KSERVE_LLM_KINDS:
        return False  # model servers and their endpoint picker
    if obj.kind == "DaemonSet":
        return False  # node agents (log shippers, device plugins, exporters)
    words = agent_words(" ".join(name_words(pod)))
    if not words:
        return False
    if not words <= _AMBIGUOUS_AGENT_WORDS:
        return True  # mcp, copilot, assistant: AI words by themselves
    # `*-agent` alone names many controllers (Kubeflow's persistence-agent, a build agent), and
    # `sandbox` alone a runtime's isolation (KubeRay's gVisor samples): the pod must also
    # behave like an AI agent (an LLM client or an agent framework)
    return any(_llm_client(c) for c in pod.containers())


def _llm_client(c: Container) -> bool:
    """A container that talks to a model or runs an agent framework: an LLM provider's key or
    endpoint in its env, or an agent framework, MCP server or LLM SDK in its command or image."""
    for e in c.env:
        if _LLM_ENV.match(str(e.get("name") or "")):
            return True
    return bool(_AGENT_FRAMEWORK.search(" ".join(c.tokens).lower() + " " + c.image.lower()))
