"""
## What it does
Finds model servers started with `--trust-remote-code` (vLLM, SGLang, TGI's
`--trust-remote-code`, or `TRUST_REMOTE_CODE=true` in the environment) whose model is pulled
from a public hub at start: a Hugging Face id `org/name` (or `hf://org/name`), not a local path
(`/models/...`), a `pvc://`, `s3://` or `gs://` location the team controls.

## Why is this bad?
`trust_remote_code` makes Transformers import the Python files (`modeling_*.py`,
`configuration_*.py`, `tokenization_*.py`) that the model repository ships, inside the server
process, with the pod's service account, its secrets (the `HF_TOKEN`, cloud credentials) and
its network. Whoever can push to that repository, or take it over, runs code in your cluster
at the next restart. Pin what runs: download the repository once, review it, and serve it from
a path or bucket you control, or pin `--revision` and `--code-revision` to a reviewed commit.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "deepseek-ai/DeepSeek-V2-Lite-Chat", "--trust-remote-code"]
          resources:
            limits: {nvidia.com/gpu: 1}
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "/models/deepseek-v2-lite-chat", "--trust-remote-code"]
          resources:
            limits: {nvidia.com/gpu: 1}
```

## Options
None.

## Severity
Error when the model id carries no pinned revision; warning when `--revision` and
`--code-revision` (vLLM) pin the repository to a commit.

## Fix
None: which copy of the model to trust is the team's decision.

## References
- https://docs.vllm.ai/en/latest/configuration/engine_args/
- https://huggingface.co/docs/transformers/en/models#custom-models
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, K8sObject, Severity
from ailint.core.rule import Options, Rule
from ailint.domain import serving
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, Container, flag_value, model_id, pod_templates
from ailint.domain.roles import serving_engine

RULE = Rule(
    code="SEC012",
    name="trust-remote-code-public-model",
    severity=Severity.ERROR,
    summary="A model server runs a public hub model's own Python (--trust-remote-code)",
    kinds=POD_KINDS,
    tags=("security", "serving", "supply-chain"),
    precision="high",
    security_severity=7.5,
)

_FLAGS = ("--trust-remote-code", "--trust_remote_code")
_HUB_ID = lazy_re(r"^(hf://)?[A-Za-z0-9][\w.-]*/[\w.-]+$")
_TRUE = ("1", "true", "yes", "on")


def _trusts(c: Container) -> tuple[str, bool] | None:
    """(how, in env) when the container turns remote code on."""
    for tok in c.tokens:
        low = tok.lower()
        if low in _FLAGS:
            return tok, False
        for f in _FLAGS:
            if low.startswith(f + "="):
                return (tok, False) if low.split("=", 1)[1] in _TRUE else None
    v = c.env_value("TRUST_REMOTE_CODE")
    if v is not None and v.strip().lower() in _TRUE:
        return "TRUST_REMOTE_CODE=" + v, True
    return None


def public_hub_model(model: str | None) -> bool:
    """A Hugging Face hub id (`org/name`, `hf://org/name`), not a path or a bucket."""
    if not model or model.startswith(("/", ".", "~")) or ("://" in model and not model.startswith("hf://")):
        return False
    return bool(_HUB_ID.match(model)) and "$" not in model


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        for c in pod.containers(include_init=False):
            engine = serving_engine(c)
            if not engine:
                continue
            trust = _trusts(c)
            if trust is None:
                continue
            model = model_id(c)
            if not public_hub_model(model):
                continue
            how, in_env = trust
            pinned = bool(flag_value(c.tokens, "--revision") and flag_value(c.tokens, "--code-revision"))
            if in_env:
                idx = c.env_index("TRUST_REMOTE_CODE")
                path, span = c.path_of("env", idx if idx is not None else 0), None
            else:
                # the list item that carries the flag (in a controller-built pod, the adapter's
                # Anchor maps it to the field the user wrote)
                loc = serving.text_location(obj, c, how)
                path, span = loc if loc else (c.path_of("args"), None)
            yield RULE.finding(
                obj,
                path,
                f"container {c.name or '?'} ({engine}) runs {how} with {model} from the public hub: the Python "
                "files of that repository run inside the server with its credentials; serve a reviewed copy "
                "from a path or bucket you control"
                + ("" if not pinned else " (revision and code revision are pinned)"),
                span=span,
                severity=Severity.WARNING if pinned else None,
                severity_reason="--revision and --code-revision pin the repository to a commit" if pinned else None,
            )
