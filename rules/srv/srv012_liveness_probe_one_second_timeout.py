"""
## What it does
Finds model servers (vLLM, SGLang, TGI, Triton, TensorRT-LLM, NIM, llama.cpp... recognised by
what the container runs) whose `livenessProbe` times out after 1 second: `timeoutSeconds: 1`,
or no `timeoutSeconds` at all, which Kubernetes defaults to 1 second (the `Probe` API:
"Number of seconds after which the probe times out. Defaults to 1 second. Minimum value is 1").
A probe with no handler (a KServe `LLMInferenceServiceConfig` overlay that only changes the
initial delay) keeps the timeout of the probe it overrides, which KServe's LLM template sets
to 1 second, and the message says so. `exec` probes, probes of containers that are no model server, and the probes a controller
writes into the pods it builds (KAITO Workspace, NIM Operator NIMService) are skipped.

## Why is this bad?
A saturated LLM server answers its health endpoint slowly: the API server's event loop is busy
tokenizing and streaming, and the engine's health check waits its turn. vLLM's `/health` only
reports that the API server process answers and that the engine has not died
(`engine_client.check_health()`; 200, or 503 on `EngineDeadError`): it says nothing about
being fast. Under load a 1 s answer is not guaranteed, so three missed 1 s checks make the
kubelet kill a healthy replica mid-traffic; its requests fail, the load moves to the other
replicas, and they are killed in turn. llm-d-benchmark (PR #1734: "probes inherited no
timeoutSeconds, so the kubelet applied its 1s default") and Scale's llm-engine (PR #255: raised
to 5 s) both hit this.

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
          args: ["--model", "Qwen/Qwen2.5-7B-Instruct"]
          livenessProbe:
            httpGet: {path: /health, port: 8000}
            periodSeconds: 10
```

## Use instead
```yaml
          livenessProbe:
            httpGet: {path: /health, port: 8000}
            periodSeconds: 10
            timeoutSeconds: 10
```

## Options
None.

## Fix
Safe: sets `timeoutSeconds: 10` on the liveness probe (when the probe is editable). llm-engine
settled on 5 s for vLLM under load; 10 s leaves room for long prefill steps and equals the
default `periodSeconds`. A dead or hung server is still restarted: it misses its checks either
way, only up to 9 s later per check.

## References
- https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#Probe
- https://github.com/vllm-project/vllm/blob/main/vllm/entrypoints/serve/instrumentator/health.py
- https://github.com/llm-d/llm-d-benchmark/pull/1734
- https://github.com/scaleapi/llm-engine/pull/255
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Options, Rule, make_fix
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, pod_templates
from ailint.domain.quantities import to_int
from ailint.domain.roles import serving_engine
from ailint.fix import edits

RULE = Rule(
    code="SRV012",
    name="liveness-probe-one-second-timeout",
    severity=Severity.WARNING,
    summary="A model server's liveness probe times out after 1 second (the Kubernetes default)",
    kinds=POD_KINDS,
    fix=FixAvailability.SOMETIMES,
    tags=("serving", "probes"),
)

TIMEOUT = 10


_HANDLERS = ("httpGet", "tcpSocket", "grpc", "exec")  # a probe without one only overrides fields of another


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        if pod.synthetic is not None:
            continue  # the controller's own probes (KAITO, NIM Operator): not the manifest's to change
        for c in pod.containers(include_init=False):
            engine = serving_engine(c)
            if not engine:
                continue
            probe = as_dict(c.data.get("livenessProbe"))
            if not probe or "exec" in probe:
                continue
            raw = probe.get("timeoutSeconds")
            timeout = 1 if raw is None else to_int(raw)
            if timeout != 1:
                continue
            overlay = not any(k in probe for k in _HANDLERS)  # over a base probe (KServe's configs)
            misses = to_int(probe.get("failureThreshold"))
            after = f"{misses or 3} misses" if misses or not overlay else "the misses the base probe allows"
            if raw is not None:
                how = "timeoutSeconds: 1"
            elif overlay:
                how = (
                    "no timeoutSeconds, so it keeps the one of the probe it overrides "
                    "(KServe's LLM template sets 1 s, the Kubernetes default)"
                )
            else:
                how = "no timeoutSeconds (Kubernetes defaults it to 1 s)"
            path = c.path_of("livenessProbe", "timeoutSeconds") if raw is not None else c.path_of("livenessProbe")
            fix = make_fix(
                f"set livenessProbe.timeoutSeconds: {TIMEOUT}",
                [edits.set_value(obj, c.path_of("livenessProbe", "timeoutSeconds"), TIMEOUT)],
            )
            yield RULE.finding(
                obj,
                path,
                f"container {c.name or '?'} ({engine}): the liveness probe has {how}; a loaded server answers "
                f"its health check slower than that and the kubelet restarts it mid-traffic after "
                f"{after}; set timeoutSeconds to {TIMEOUT}",
                fix=fix,
            )
