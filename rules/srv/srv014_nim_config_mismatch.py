"""
## What it does
Checks the NVIDIA NIM containers of a workload (a `nvcr.io/nim/...` image, or a
`NIMService`, whose container the NIM Operator builds) against the GPUs they request:

- the parallelism a NIM is told to use, `NIM_TENSOR_PARALLEL_SIZE` x
  `NIM_PIPELINE_PARALLEL_SIZE` (default 1), or the `tpN`/`ppN` of the profile named in
  `NIM_MODEL_PROFILE` (such as `tensorrt_llm-h100-fp8-tp2-pp1-latency`), must equal the GPUs
  of the container (`nvidia.com/gpu`; pipeline stages on other pods of a multi-node NIM are
  not counted, so those are skipped);
- a readiness probe must ask `/v1/health/ready` (the endpoint that answers once the model is
  loaded; `/v1/health/live` and `/` answer as soon as the server process is up);
- `NIM_LOG_LEVEL` must be one of `DEBUG`, `INFO`, `WARNING`, `ERROR`, `CRITICAL`.

## Why is this bad?
A NIM profile runs on exactly TP x PP GPUs: with fewer the container fails to start after
pulling tens of gigabytes, with more the extra GPUs sit idle and cost money. A readiness
probe on the liveness endpoint sends traffic to a pod that is still loading weights, so
clients get errors on every rollout. An unknown log level is rejected at start or silently
ignored, depending on the NIM version.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama3-70b
spec:
  template:
    spec:
      containers:
        - name: nim
          image: nvcr.io/nim/meta/llama3-70b-instruct:1.0.0
          env:
            - name: NIM_TENSOR_PARALLEL_SIZE
              value: "4"
            - name: NIM_LOG_LEVEL
              value: VERBOSE
          readinessProbe:
            httpGet: {path: /v1/health/live, port: 8000}
          resources:
            limits:
              nvidia.com/gpu: 2
```

## Use instead
```yaml
          env:
            - name: NIM_TENSOR_PARALLEL_SIZE
              value: "2"
            - name: NIM_LOG_LEVEL
              value: INFO
          readinessProbe:
            httpGet: {path: /v1/health/ready, port: 8000}
          resources:
            limits:
              nvidia.com/gpu: 2
```

## Options
None.

## Fix
None: choose between more GPUs and a smaller profile.

## References
- https://docs.nvidia.com/nim/large-language-models/1.12.0/configuration.html (profiles need TP x PP GPUs)
- https://docs.nvidia.com/nim/large-language-models/latest/reference/advanced-configuration.html (NIM_* variables map to engine arguments)
- https://docs.nvidia.com/nim/large-language-models/2.0.4-pb6/reference/environment-variables (NIM_LOG_LEVEL levels)
- https://github.com/NVIDIA/k8s-nim-operator/blob/main/api/apps/v1alpha1/nimservice_types.go (default probes on /v1/health/ready)
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, K8sObject, Severity, as_dict, get_in
from ailint.core.rule import Options, Rule
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, Container, pod_templates
from ailint.domain.quantities import to_int
from ailint.domain.roles import serving_engine

RULE = Rule(
    code="SRV014",
    name="nim-config-mismatch",
    severity=Severity.WARNING,
    summary="A NIM container's parallelism, readiness probe or log level does not match what NIM needs",
    kinds=POD_KINDS,
    tags=("serving", "nim"),
    precision="high",
)

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
READY = "/v1/health/ready"
_PROFILE = lazy_re(r"(?:^|[-_])tp(\d+)(?:[-_]pp(\d+))?(?:[-_]|$)", re.I)


def _parallelism(c: Container) -> tuple[int, str, int | None] | None:
    """(TP x PP, what states it, env index) when the container states its parallelism."""
    tp = to_int(c.env_value("NIM_TENSOR_PARALLEL_SIZE"))
    if tp:
        pp = to_int(c.env_value("NIM_PIPELINE_PARALLEL_SIZE")) or 1
        what = f"NIM_TENSOR_PARALLEL_SIZE={tp}" + (f" x NIM_PIPELINE_PARALLEL_SIZE={pp}" if pp > 1 else "")
        return tp * pp, what, c.env_index("NIM_TENSOR_PARALLEL_SIZE")
    profile = c.env_value("NIM_MODEL_PROFILE")
    m = _PROFILE.search(profile or "")
    if m:
        tp, pp = int(m.group(1)), int(m.group(2) or 1)
        return tp * pp, f"profile {profile} (tp{tp} pp{pp})", c.env_index("NIM_MODEL_PROFILE")
    return None


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        for c in pod.containers(include_init=False):
            if serving_engine(c) != "nim":
                continue
            yield from _check(obj, c)


def _check(obj: K8sObject, c: Container) -> Iterator[Finding]:
    name = c.name or "?"
    stated = _parallelism(c)
    gpus = c.gpu_count()
    multinode = c.pod.role in ("worker", "leader") or bool(obj.get("spec", "multiNode"))
    if stated is not None and gpus and not multinode:
        want, what, idx = stated
        if want != gpus:
            where = c.path_of("env", idx, "value") if idx is not None else c.path_of("env")
            verb = "needs" if want > gpus else "uses"
            tail = "the container will fail to start" if want > gpus else f"{int(gpus - want)} of them sit idle"
            yield RULE.finding(
                obj,
                where,
                f"NIM container {name}: {what} {verb} {want} GPUs but it requests {int(gpus)}; {tail}",
                severity=Severity.ERROR if want > gpus else Severity.WARNING,
            )
    probe = as_dict(c.data.get("readinessProbe"))
    path = get_in(probe, ("httpGet", "path"))
    if isinstance(path, str) and path.rstrip("/") != READY:
        yield RULE.finding(
            obj,
            c.path_of("readinessProbe", "httpGet", "path"),
            f"NIM container {name}: readiness probe asks {path}, which answers before the model is loaded; use {READY}",
        )
    level = c.env_value("NIM_LOG_LEVEL")
    if level is not None and level.strip().upper() not in LEVELS:
        idx = c.env_index("NIM_LOG_LEVEL")
        yield RULE.finding(
            obj,
            c.path_of("env", idx, "value") if idx is not None else c.path_of("env"),
            f"NIM container {name}: NIM_LOG_LEVEL={level} is not a log level NIM accepts ({', '.join(LEVELS)})",
        )
