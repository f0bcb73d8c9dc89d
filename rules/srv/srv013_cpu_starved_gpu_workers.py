"""
## What it does
Finds vLLM and SGLang servers whose container requests fewer CPUs than the server runs busy
processes: with `N` GPUs in the container it fires when the CPU request (the limit when no
request is written) is below `N + 1`. Containers without a CPU request are left to GPU003.

## Why is this bad?
vLLM runs one process per GPU (the GPU worker, which launches kernels and runs a busy loop),
plus an engine-core process (the scheduler, also a busy loop) and an API server process that
tokenizes, detokenizes and streams (vLLM's architecture overview: "1 worker process per GPU",
total `A + DP + N` processes, i.e. `N + 2` for one API server and one engine). SGLang is built
the same way (a tokenizer manager, a scheduler per GPU rank, a detokenizer). A CPU request
below one core per GPU worker plus one for the rest makes the CFS quota throttle the processes
that feed the GPUs: time-to-first-token and inter-token latency grow while the GPUs idle.
The threshold `N + 1` is deliberately one core below what vLLM's process count needs, so that
only clearly starved pods are reported.

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
          args: ["--model", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "4"]
          resources:
            requests: {cpu: "2", memory: 64Gi}
            limits: {nvidia.com/gpu: 4}
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
          args: ["--model", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "4"]
          resources:
            requests: {cpu: "8", memory: 64Gi}
            limits: {nvidia.com/gpu: 4}
```

## Options
None.

## Fix
None: how many cores the node can give is the team's choice (at least `N + 2`).

## References
- https://docs.vllm.ai/en/latest/design/arch_overview/
- https://docs.vllm.ai/en/latest/configuration/optimization/
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, K8sObject, Severity
from ailint.core.rule import Options, Rule
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, pod_templates
from ailint.domain.quantities import parse_quantity
from ailint.domain.roles import serving_engine

RULE = Rule(
    code="SRV013",
    name="cpu-starved-gpu-workers",
    severity=Severity.WARNING,
    summary="A vLLM or SGLang server requests fewer CPUs than its GPU worker processes need",
    kinds=POD_KINDS,
    tags=("serving", "resources"),
    precision="medium",
)

ENGINES = ("vllm", "sglang")


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        for c in pod.containers(include_init=False):
            engine = serving_engine(c)
            if engine not in ENGINES:
                continue
            gpus = int(c.gpu_count())
            if gpus < 1:
                continue
            which = "requests" if "cpu" in c.resources("requests") else "limits"
            cpu = parse_quantity(c.request("cpu"))
            if cpu is None or cpu >= gpus + 1:
                continue
            yield RULE.finding(
                obj,
                c.path_of("resources", which, "cpu"),
                f"container {c.name or '?'} ({engine}) runs {gpus} GPU worker process(es) plus the engine and "
                f"API server but {which} {cpu:g} CPU; below {gpus + 1} the processes that feed the GPUs are "
                f"throttled; request at least {gpus + 2}",
            )
