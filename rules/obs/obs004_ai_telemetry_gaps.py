"""
## What it does
Finds three gaps that make broken AI telemetry look healthy:
- (a) a vLLM, TGI, Triton or SGLang (`--enable-metrics`) server that exposes `/metrics`
  but that no ServiceMonitor, PodMonitor or `prometheus.io/scrape` annotation (on the pod
  or a Service selecting it) covers, in files that do define ServiceMonitors or
  PodMonitors (so scraping is managed here; the monitor of an operator's own controller
  manager, which kubebuilder scaffolds selecting `control-plane: controller-manager`, says
  nothing about model servers and does not count);
- (b) PrometheusRules with `DCGM_FI_*` or `vllm:*` alerts while no rule in the files
  alerts on missing data (`absent(...)`, `absent_over_time(...)` or `up == 0`);
- (c) a DCGM exporter DaemonSet that no accelerator NodePool in the files can host
  (selector or taints), so GPU metrics are never collected.
Files that deploy an OpenTelemetry collector or the CloudWatch agent operator are left
alone for (a).

## Why is this bad?
"No data" and "all good" look the same on a dashboard. A model server nobody scrapes, or
a DCGM exporter that runs on no GPU node, produces empty panels and alerts that can never
fire; an alert on `DCGM_FI_DEV_GPU_TEMP > 85` stays green when the exporter is down.
Healthy and broken telemetry must look different: alert when the series goes silent.

## Example
```yaml
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: gpu
spec:
  groups:
    - name: gpu
      rules:
        - alert: GPUHot
          expr: DCGM_FI_DEV_GPU_TEMP > 85
          for: 5m
```

## Use instead
```yaml
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: gpu
spec:
  groups:
    - name: gpu
      rules:
        - alert: GPUHot
          expr: DCGM_FI_DEV_GPU_TEMP > 85
          for: 5m
        - alert: GPUTelemetryAbsent
          expr: absent(DCGM_FI_DEV_GPU_UTIL)
          for: 10m
```

## Options
None.

## Fix
Unsafe, for (b): appends an `absent(...)` alert (`DCGM_FI_DEV_GPU_UTIL` or
`vllm:num_requests_running`, for 10 minutes) to the rule group. (a) and (c) have no fix:
add a ServiceMonitor/PodMonitor, or fix the exporter's selector and tolerations.

## References
- https://prometheus.io/docs/prometheus/latest/querying/functions/#absent
- https://github.com/prometheus-operator/prometheus-operator/blob/main/Documentation/api-reference/api.md
- https://docs.nvidia.com/datacenter/cloud-native/gpu-telemetry/latest/dcgm-exporter.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, as_list, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context, selector_matches
from ailint.domain.extract import (
    KSERVE_LLM_KINDS,
    POD_KINDS,
    has_flag,
    is_accelerator_pod,
    pod_templates,
    serving_containers,
)
from ailint.domain.pod_labels import may_select
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="OBS004",
    name="ai-telemetry-gaps",
    severity=Severity.INFO,
    summary="AI telemetry can fail silently: an unscraped model server, no absent() alert, or a DCGM exporter "
    "on no node",
    kinds=(*POD_KINDS, "PrometheusRule"),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("observability", "monitoring"),
    precision="medium",
)

_MONITORS = ("ServiceMonitor", "PodMonitor", "PodMonitoring", "VMServiceScrape", "VMPodScrape")
_OTHER_STACKS = ("OpenTelemetryCollector", "AmazonCloudWatchAgent", "Instrumentation")
_AI_SERIES = lazy_re(r"\b(DCGM_FI_[A-Z0-9_]+|vllm:[a-z0-9_:]+)")
_ABSENT = lazy_re(r"\babsent(_over_time)?\s*\(|\bup\s*(\{[^}]*\})?\s*==\s*0\b")
_METRICS_ENGINES = ("vllm", "tgi", "triton")


def _ns(o: Any) -> str:
    return o.namespace_or_default


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "PrometheusRule":
        yield from _rules_without_absent(obj, ctx)
        return
    if obj.kind == "DaemonSet":
        yield from _dcgm_exporter_nowhere(obj, ctx)
    yield from _unscraped_servers(obj, ctx)


# (a) ---------------------------------------------------------------------------------
def _ns_selected(sel: Any, monitor: Any, ns: str) -> bool:
    sel = as_dict(sel)
    if sel.get("any") is True:
        return True
    names = [str(n) for n in as_list(sel.get("matchNames"))]
    return ns in names if names else ns == _ns(monitor)


def _scraped(obj: Any, pod: Any, ctx: Any) -> bool:
    ns = _ns(obj)
    if str(pod.annotation("prometheus.io/scrape", "")).lower() == "true":
        return True
    for m in ctx.of_kind("PodMonitor", "PodMonitoring", "VMPodScrape"):
        if _ns_selected(m.get("spec", "namespaceSelector"), m, ns) and may_select(
            as_dict(m.get("spec", "selector")), pod
        ):
            return True
    services = [
        s
        for s in ctx.of_kind("Service", namespace=ns)
        if s.group == ""
        and isinstance(s.get("spec", "selector"), dict)
        and s.get("spec", "selector")
        and may_select(s.get("spec", "selector"), pod)
    ]
    for s in services:
        if str(s.annotations.get("prometheus.io/scrape", "")).lower() == "true":
            return True
        for m in ctx.of_kind("ServiceMonitor", "VMServiceScrape"):
            if _ns_selected(m.get("spec", "namespaceSelector"), m, ns) and selector_matches(
                as_dict(m.get("spec", "selector")), s.labels
            ):
                return True
    return False


def _controller_manager_monitor(m: Any) -> bool:
    """kubebuilder's scaffolded monitor of an operator's own metrics (config/prometheus)."""
    return as_dict(as_dict(m.get("spec", "selector")).get("matchLabels")).get("control-plane") == "controller-manager"


def _manages_scraping(ctx: Any) -> bool:
    """Some monitor of the run is there for workloads, not for an operator's own controller."""
    return any(not _controller_manager_monitor(m) for m in ctx.of_kind(*_MONITORS))


def _unscraped_servers(obj: Any, ctx: Any) -> Iterator[Finding]:
    if not ctx.memo("OBS004.manages_scraping", lambda: _manages_scraping(ctx)) or any(
        True for _ in ctx.of_kind(*_OTHER_STACKS)
    ):
        return
    if obj.kind in ("RayCluster", "RayJob", "RayService"):
        return  # Ray exports its own metrics endpoint; vLLM inside Ray Serve is scraped through it
    if obj.kind in KSERVE_LLM_KINDS:
        return  # KServe creates a PodMonitor (kserve-llm-isvc-vllm-engine) for its pods by default
    for pod in pod_templates(obj):
        if (
            obj.kind == "LeaderWorkerSet"
            and pod.role == "worker"
            and obj.has(("spec", "leaderWorkerTemplate", "leaderTemplate"))
        ):
            continue  # only the leader runs the API server
        servers = [
            (c, e)
            for c, e in serving_containers(pod)
            if e in _METRICS_ENGINES or (e == "sglang" and has_flag(c.tokens, "--enable-metrics"))
        ]
        if not servers or _scraped(obj, pod, ctx):
            continue
        c, engine = servers[0]
        # a pod the controller builds from a component (no template metadata): the component
        yield RULE.finding(
            obj,
            pod.meta_path or (pod.path() if pod.synthetic is not None else ("metadata",)),
            f"{engine} container {c.name or '?'} exposes /metrics but no ServiceMonitor, PodMonitor or "
            "prometheus.io/scrape annotation covers this pod; its dashboards stay empty",
        )


# (b) ---------------------------------------------------------------------------------
def _all_exprs(ctx: Any) -> Iterator[str]:
    for pr in ctx.of_kind("PrometheusRule"):
        for _, g in iter_dicts(pr.get("spec", "groups")):
            for _, r in iter_dicts(g.get("rules")):
                if isinstance(r.get("expr"), str):
                    yield r["expr"]


def _rules_without_absent(obj: Any, ctx: Any) -> Iterator[Finding]:
    first = None
    for i, g in iter_dicts(obj.get("spec", "groups")):
        for j, r in iter_dicts(g.get("rules")):
            expr = r.get("expr")
            if isinstance(expr, str) and r.get("alert") and (hit := _AI_SERIES.search(expr)):
                first = (i, j, hit.group(1))
                break
        if first:
            break
    if first is None or any(_ABSENT.search(e) for e in _all_exprs(ctx)):
        return
    i, j, series = first
    probe = "DCGM_FI_DEV_GPU_UTIL" if series.startswith("DCGM") else "vllm:num_requests_running"
    name = "GPUTelemetryAbsent" if series.startswith("DCGM") else "VLLMMetricsAbsent"
    alert = {
        "alert": name,
        "expr": f"absent({probe})",
        "for": "10m",
        "labels": {"severity": "warning"},
        "annotations": {"summary": f"{probe} is missing: the exporter or scrape is down"},
    }
    fix = make_fix(
        f"add an absent({probe}) alert", [edits.append_item(obj, ("spec", "groups", i, "rules"), alert)], unsafe=True
    )
    yield RULE.finding(
        obj,
        ("spec", "groups", i, "rules", j, "expr"),
        f"alerts on {series} but no rule alerts when it goes missing (absent() or up == 0): a dead "
        "exporter looks healthy",
        fix=fix,
    )


# (c) ---------------------------------------------------------------------------------
def _dcgm_exporter_nowhere(obj: Any, ctx: Any) -> Iterator[Finding]:
    accel_pools = [p for p in ctx.nodepools if p.can_launch_accelerators]
    if not accel_pools:
        return
    for pod in pod_templates(obj):
        if not any("dcgm-exporter" in c.image for c in pod.containers(include_init=False)):
            continue
        if is_accelerator_pod(pod):
            continue
        hosts = {p.name for p in ctx.pools_for(pod)}
        if hosts & {p.name for p in accel_pools}:
            continue
        names = ", ".join(sorted(p.name for p in accel_pools)[:3])
        yield RULE.finding(
            obj,
            pod.spec_path,
            f"DCGM exporter can run on none of the GPU NodePools ({names}): "
            "its selector or missing tolerations keep it off GPU nodes, so GPU "
            "metrics are blank",
        )
