"""
## What it does
Finds vLLM metric names that vLLM V1 deprecated, hid or never exposed, in PrometheusRule
`expr`s, Grafana dashboards (ConfigMap data, `GrafanaDashboard` JSON), KEDA prometheus
trigger queries (ScaledObject, ScaledJob) and HPA metric names:
`vllm:gpu_cache_usage_perc` (now `vllm:kv_cache_usage_perc`),
`vllm:gpu_prefix_cache_queries`/`_hits` (now `vllm:prefix_cache_queries`/`_hits`),
`vllm:gpu_prefix_cache_hit_rate`, `vllm:time_per_output_token_seconds` (now
`vllm:inter_token_latency_seconds`), `vllm:time_in_queue_requests`,
`vllm:cpu_cache_usage_perc`, `vllm:cpu_prefix_cache_hit_rate`,
`vllm:num_requests_swapped`, `vllm:model_forward_time_milliseconds` and
`vllm:model_execute_time_milliseconds`. The list is data (`ailint/data/metrics.json`).

## Why is this bad?
vLLM deprecates a metric in one minor release, hides it in the next (unless the server runs
with `--show-hidden-metrics-for-version`) and removes it in the one after. A query on a
hidden series returns nothing, and "nothing" is not an error: the KV-cache alert never
fires, the dashboard shows an empty panel that looks like a quiet system, and a KEDA or
HPA autoscaler sees no data and stops scaling on the signal it was built for.

## Example
```yaml
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: vllm
spec:
  groups:
    - name: vllm
      rules:
        - alert: VLLMKVCacheFull
          expr: vllm:gpu_cache_usage_perc > 0.95
          for: 5m
```

## Use instead
```yaml
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: vllm
spec:
  groups:
    - name: vllm
      rules:
        - alert: VLLMKVCacheFull
          expr: vllm:kv_cache_usage_perc > 0.95
          for: 5m
```

## Options
None. The profile key `vllmVersion` lowers the severity to info when the running vLLM
still exports the series (older than the release that hides it).

## Fix
Safe for renames (`…_total`, `…_bucket`, `…_sum`, `…_count` suffixes are kept). Unsafe
for `vllm:gpu_prefix_cache_hit_rate` written bare: it becomes
`(rate(vllm:prefix_cache_hits_total[5m]) / rate(vllm:prefix_cache_queries_total[5m]))`
(review the window). No fix for series without a successor, for HPA metric names (the
adapter's rules must change too) or when the text layout hides the name.

## References
- https://docs.vllm.ai/en/stable/usage/metrics/
- https://docs.vllm.ai/en/stable/design/metrics.html
- https://keda.sh/docs/latest/scalers/prometheus/
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from ailint.core import pkgdata
from ailint.core.model import Edit, Finding, FixAvailability, K8sObject, Severity, Span, as_dict, iter_dicts
from ailint.core.rule import Options, Rule, make_fix
from ailint.domain.agents import version_at_least
from ailint.domain.context import Context

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="OBS003",
    name="deprecated-vllm-metric-names",
    severity=Severity.WARNING,
    summary="An alert, dashboard or autoscaler queries a vLLM metric that V1 hides or removed",
    kinds=("PrometheusRule", "ConfigMap", "ScaledObject", "ScaledJob", "HorizontalPodAutoscaler", "GrafanaDashboard"),
    fix=FixAvailability.SOMETIMES,
    tags=("observability", "vllm", "autoscaling"),
    precision="very-high",
)

_SUFFIX = r"(_total|_bucket|_sum|_count|_created)?"


@lru_cache(maxsize=1)
def _metrics() -> list[dict[str, Any]]:
    data = pkgdata.load_json("ailint.data", "metrics.json")
    out = []
    for m in data["vllm_deprecated"]:
        m = dict(m)
        m["re"] = re.compile(r"(?<![A-Za-z0-9_:])" + re.escape(m["name"]) + _SUFFIX + r"(?![A-Za-z0-9_:])")
        out.append(m)
    return out


def _strings(obj: Any) -> Iterator[tuple[tuple, str, bool]]:
    """(path, text, fixable) of every string this kind keeps queries in."""
    kind = obj.kind
    if kind == "PrometheusRule":
        for i, g in iter_dicts(obj.get("spec", "groups")):
            for j, r in iter_dicts(g.get("rules")):
                if isinstance(r.get("expr"), str):
                    yield ("spec", "groups", i, "rules", j, "expr"), r["expr"], True
    elif kind == "ConfigMap":
        for k, v in as_dict(obj.data.get("data")).items():
            if isinstance(v, str):
                yield ("data", k), v, True
    elif kind in ("ScaledObject", "ScaledJob"):
        for i, t in iter_dicts(obj.get("spec", "triggers")):
            md = as_dict(t.get("metadata"))
            for key in ("query", "metricName"):
                if isinstance(md.get(key), str):
                    yield ("spec", "triggers", i, "metadata", key), md[key], True
    elif kind == "HorizontalPodAutoscaler":
        for i, m in iter_dicts(obj.get("spec", "metrics")):
            for src in ("external", "pods", "object"):
                name = as_dict(as_dict(m.get(src)).get("metric")).get("name")
                if isinstance(name, str):
                    yield ("spec", "metrics", i, src, "metric", "name"), name, False
    elif kind == "GrafanaDashboard" and isinstance(obj.get("spec", "json"), str):
        yield ("spec", "json"), obj.get("spec", "json"), True


def _raw(obj: Any, path: tuple) -> tuple[int, str] | None:
    loc = obj.location(path)
    if loc is None:
        return None
    return loc.value_start, obj.source.text[loc.value_start : loc.value_end]


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    version = ctx.profile.get("vllmVersion")
    for path, text, fixable in _strings(obj):
        if "vllm:" not in text:
            continue
        raw = _raw(obj, path)
        raw_off, raw_text = raw if raw is not None else (0, "")
        for m in _metrics():
            hits = list(m["re"].finditer(text))
            if not hits:
                continue
            name = m["name"]
            raw_hits = list(m["re"].finditer(raw_text)) if raw else []
            mapped = raw is not None and len(raw_hits) == len(hits) and raw_text[:1] not in "&*!"
            span = None
            if raw_hits:
                off = raw_off + raw_hits[0].start()
                line, col = obj.source.position(off)
                span = Span(line, col, line, col + len(raw_hits[0].group(0)))
            still = version_at_least(version, m["hidden_in"]) is False
            sev = Severity.INFO if still else Severity.WARNING
            if m.get("v0_only"):
                when = (
                    f"vLLM {version} (V0 engine) still exports it; the V1 engine does not"
                    if still
                    else "the V1 engine (default since 0.8) never exports it, so the query returns nothing"
                )
            else:
                when = (
                    f"vLLM {version} still exports it; it is hidden from {m['hidden_in']} on"
                    if still
                    else f"vLLM hides it from {m['hidden_in']} on, so the query returns nothing"
                )
            fix, successor = None, ""
            if m.get("replacement"):
                successor = f"; use {m['replacement']}"
                if fixable and mapped:
                    fix = make_fix(
                        f"rename {name} to {m['replacement']}",
                        [
                            Edit(raw_off + h.start(), raw_off + h.start() + len(name), m["replacement"])
                            for h in raw_hits
                        ],
                    )
            elif m.get("expression"):
                successor = "; compute it from vllm:prefix_cache_hits / vllm:prefix_cache_queries"
                bare = [h for h in raw_hits if not h.group(1) and not re.match(r"\s*[\[{]", raw_text[h.end() :])]
                if fixable and mapped and len(bare) == len(raw_hits):
                    fix = make_fix(
                        f"replace {name} with a rate ratio of the prefix-cache counters",
                        [Edit(raw_off + h.start(), raw_off + h.end(), m["expression"]) for h in bare],
                        unsafe=True,
                    )
            else:
                successor = "; it has no V1 successor: drop or rewrite the query"
            count = f" ({len(hits)} times)" if len(hits) > 1 else ""
            yield RULE.finding(
                obj,
                path,
                f"{name}{count} is a deprecated vLLM metric: {when}{successor}",
                severity=sev,
                fix=fix,
                span=span,
            )
