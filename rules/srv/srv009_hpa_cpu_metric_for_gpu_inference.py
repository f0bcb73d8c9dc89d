"""
## What it does
Finds autoscalers of GPU inference servers that look only at CPU or memory:

- a `HorizontalPodAutoscaler` whose `scaleTargetRef` is a Deployment, StatefulSet or
  LeaderWorkerSet in the run running an inference server on accelerators, and whose
  metrics are all `Resource`/`ContainerResource` on `cpu` or `memory` (including the v1
  `targetCPUUtilizationPercentage`, and no `metrics` at all, which defaults to 80% CPU);
- a KEDA `ScaledObject` for such a workload whose triggers are all `cpu` or `memory`.

Targets not in the run are skipped, and so are CPU-only servers (a CPU embedder or a
`vllm-openai-cpu` pod scales fine on CPU).

## Why is this bad?
A GPU inference server is bound by the GPU: its queue of waiting requests and its KV
cache fill up while the CPU idles, so a CPU target never triggers a scale-out during a
burst (time-to-first-token climbs, requests time out), and a tokenizer spike can scale
out expensive GPU replicas that were not needed. Queue depth
(`vllm:num_requests_waiting`), KV-cache usage or DCGM utilization track the real load.
CPU scaling is right for the stateless gateway in front (LiteLLM, a router), not for the
GPU tier.

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
          resources:
            limits:
              nvidia.com/gpu: 1
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: vllm
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: vllm}
  maxReplicas: 4
  metrics:
    - type: Resource
      resource:
        name: cpu
        target: {type: Utilization, averageUtilization: 70}
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
          resources:
            limits:
              nvidia.com/gpu: 1
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: vllm
spec:
  scaleTargetRef: {name: vllm}
  maxReplicaCount: 4
  triggers:
    - type: prometheus
      metadata:
        serverAddress: http://prometheus-operated.monitoring.svc:9090
        query: sum(vllm:num_requests_waiting)
        threshold: "5"
```

## Options
None.

## Fix
Unsafe, for ScaledObjects with a block `triggers` list: appends a `prometheus` trigger
template on `vllm:num_requests_waiting` (SGLang: `sglang:num_queue_reqs`) with
`serverAddress: http://prometheus-operated.monitoring.svc:9090` and `threshold: "5"`; set
both to your Prometheus and load. HPAs get no fix: move them to KEDA or expose the metric
through a metrics adapter.

## References
- https://keda.sh/docs/latest/scalers/prometheus/
- https://docs.vllm.ai/en/stable/design/metrics.html
- https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Path, Severity, as_dict, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import serving
from ailint.domain.context import Context
from ailint.domain.extract import is_accelerator_pod, pod_templates, role_override
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SRV009",
    name="hpa-cpu-metric-for-gpu-inference",
    severity=Severity.WARNING,
    summary="A GPU inference workload autoscales on CPU or memory only",
    kinds=("HorizontalPodAutoscaler", "ScaledObject"),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("serving", "autoscaling"),
)

_TARGET_KINDS = ("Deployment", "StatefulSet", "LeaderWorkerSet")
PROMETHEUS = "http://prometheus-operated.monitoring.svc:9090"


def _target(obj: Any, ctx: Any, ref: dict[str, Any]) -> tuple[Any, str, str | None] | None:
    """(workload, engine, served model) when the ref names a GPU inference workload in the run."""
    kind = ref.get("kind") or ("Deployment" if obj.kind == "ScaledObject" else None)
    name = ref.get("name")
    if kind not in _TARGET_KINDS or not isinstance(name, str):
        return None
    for w in ctx.of_kind(kind, namespace=obj.namespace_or_default):
        if w.name != name:
            continue
        for pod in pod_templates(w):
            ov = role_override(pod)
            if ov and ov != "serving":
                continue
            if not is_accelerator_pod(pod):
                continue
            for c, engine in serving.iter_serving(pod):
                return w, engine, serving.served_model(c, serving.engine_args(c, engine))
            if ov == "serving":
                return w, "serving", None
    return None


def _resource_name(m: dict[str, Any]) -> str | None:
    t = m.get("type")
    if t == "Resource":
        return as_dict(m.get("resource")).get("name")
    if t == "ContainerResource":
        return as_dict(m.get("containerResource")).get("name")
    return None


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if ctx is None or not getattr(ctx, "bundle", False):
        return
    spec = as_dict(obj.get("spec"))
    found = _target(obj, ctx, as_dict(spec.get("scaleTargetRef")))
    if found is None:
        return
    w, engine, model = found
    metric = serving.data()["queue_metrics"].get(engine, "vllm:num_requests_waiting")
    what = f"{ctx.describe(w)} ({engine} on GPUs)"
    if obj.kind == "HorizontalPodAutoscaler":
        metrics = spec.get("metrics")
        if obj.api_version == "autoscaling/v1" or not metrics:
            path: Path
            if "targetCPUUtilizationPercentage" in spec:
                path, how = (
                    ("spec", "targetCPUUtilizationPercentage"),
                    f"{spec.get('targetCPUUtilizationPercentage')}% utilization",
                )
            else:
                path, how = ("spec",), "no metrics: the 80% default"
            yield RULE.finding(
                obj,
                path,
                f"HPA scales {what} on CPU only ({how}); GPU servers "
                f"saturate on queue depth first: scale on {metric} (KEDA prometheus trigger)",
            )
            return
        if not isinstance(metrics, list):
            return
        names = []
        for _, m in iter_dicts(metrics):
            n = _resource_name(m)
            if n not in ("cpu", "memory"):
                return
            names.append(n)
        if not names:
            return
        yield RULE.finding(
            obj,
            ("spec", "metrics"),
            f"HPA scales {what} on {' and '.join(sorted(set(names)))} only; GPU servers saturate on "
            f"queue depth and KV cache first: scale on {metric} (KEDA prometheus trigger)",
        )
        return
    triggers = spec.get("triggers")
    if not isinstance(triggers, list) or not triggers:
        return
    types = []
    for _, t in iter_dicts(triggers):
        if t.get("type") not in ("cpu", "memory"):
            return
        types.append(str(t.get("type")))
    if not types:
        return
    yield RULE.finding(
        obj,
        ("spec", "triggers"),
        f"ScaledObject scales {what} on {' and '.join(sorted(set(types)))} triggers only; scale on "
        f"{metric} with a prometheus trigger",
        fix=_fix(obj, w, engine, model, metric),
    )


def _fix(obj: Any, w: Any, engine: str, model: str | None, metric: str) -> Fix | None:
    trigger = {
        "type": "prometheus",
        "metadata": {
            "serverAddress": PROMETHEUS,
            "query": f'sum({metric}{{namespace="{w.namespace_or_default}"}})',
            "threshold": "5",
        },
    }
    e = edits.append_item(obj, ("spec", "triggers"), trigger)
    return make_fix(f"add a prometheus trigger on {metric} (check serverAddress and threshold)", [e], unsafe=True)
