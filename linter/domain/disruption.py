"""Karpenter voluntary disruption, read from NodePools and pod templates.

Verified against kubernetes-sigs/karpenter `pkg/apis/v1/nodepool.go` (the CRD in
`shared/ref/crds`) and the Karpenter docs (disruption, well-known annotations):
`consolidationPolicy` WhenEmpty | WhenEmptyOrUnderutilized (default) | Balanced;
`consolidateAfter` a duration or `Never`; `budgets[] {nodes, reasons?, schedule?, duration?}`
(a budget without `reasons` covers every reason; spec decisions 9 and 28: only an
unscheduled `nodes: "0"` budget blocks, and `spec.replicas` pools never consolidate);
`template.spec.expireAfter` (default 720h, EKS Auto Mode 336h) and
`terminationGracePeriod` (no default; Auto Mode 24h). On a pod,
`karpenter.sh/do-not-disrupt` is `"true"` or a duration after the pod starts.
"""

from __future__ import annotations

import math

from ailint.core.model import as_dict, iter_dicts
from ailint.domain.context import NodePoolView
from ailint.domain.durations import NEVER, format_duration, parse_duration
from ailint.domain.extract import PodTemplate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
REMOVED_ANNOTATIONS = ("karpenter.sh/do-not-evict", "karpenter.sh/do-not-consolidate")
DURATION_ANNOTATION = "ailint.io/expected-duration"


# ---------------------------------------------------------------------------------------
# NodePools
# ---------------------------------------------------------------------------------------
def _disruption(pool: NodePoolView) -> dict[str, Any]:
    return as_dict(pool.obj.get("spec", "disruption"))


def budget_blocks(pool: NodePoolView, reason: str) -> bool:
    """An always-active budget with `nodes: "0"` covers `reason`."""
    for _, b in iter_dicts(_disruption(pool).get("budgets")):
        if b.get("schedule") is not None:
            continue
        if str(b.get("nodes", "")).strip() not in ("0", "0%"):
            continue
        reasons = b.get("reasons")
        if not isinstance(reasons, list) or not reasons or reason in [str(r) for r in reasons]:
            return True
    return False


def consolidation_on(pool: NodePoolView) -> bool:
    """Consolidation can remove a node that still runs pods (decision 9 and 28)."""
    from ailint.domain.karpenter import is_static  # (NodePools only: a pod's check never imports it)

    if is_static(pool):
        return False
    d = _disruption(pool)
    policy = d.get("consolidationPolicy") or "WhenEmptyOrUnderutilized"
    if policy not in ("WhenEmptyOrUnderutilized", "Balanced"):
        return False
    if str(d.get("consolidateAfter", "")).strip() == "Never":
        return False
    return not budget_blocks(pool, "Underutilized")


def drift_allowed(pool: NodePoolView) -> bool:
    return not budget_blocks(pool, "Drifted")


def disrupting_reasons(pool: NodePoolView) -> list[str]:
    out = []
    if consolidation_on(pool):
        out.append("consolidation")
    if drift_allowed(pool):
        out.append("drift")
    return out


def expire_after(pool: NodePoolView) -> tuple[float | None, bool]:
    """(seconds or NEVER, explicitly set). Default 720h; 336h on EKS Auto Mode pools."""
    v = pool.obj.get("spec", "template", "spec", "expireAfter")
    if v is None:
        return (336 * 3600.0 if pool.is_auto_mode else 720 * 3600.0), False
    return parse_duration(v), True


def termination_grace_period(pool: NodePoolView) -> tuple[float | None, bool]:
    """(seconds or None when unset, explicitly set). Auto Mode defaults to 24h."""
    v = pool.obj.get("spec", "template", "spec", "terminationGracePeriod")
    if v is None:
        return (24 * 3600.0 if pool.is_auto_mode else None), False
    return parse_duration(v), True


# ---------------------------------------------------------------------------------------
# Pods
# ---------------------------------------------------------------------------------------
def do_not_disrupt(pod: PodTemplate) -> Any:
    """The pod template's `karpenter.sh/do-not-disrupt` value (None when absent)."""
    return pod.annotations.get(DO_NOT_DISRUPT)


def protects(value: Any, runtime: float | None = None) -> bool:
    """Whether a do-not-disrupt value protects a pod for its run (`true`, or a duration
    at least `runtime` seconds when the run time is known)."""
    if value is True or (isinstance(value, str) and value.strip().lower() == "true"):
        return True
    d = parse_duration(value) if isinstance(value, str) and value.strip().lower() != "false" else None
    if d is None or d <= 0:
        return False
    return runtime is None or d >= runtime


def expected_duration(pod: PodTemplate) -> tuple[float | None, str]:
    """(seconds, where it was read) of a job's expected run time, or (None, "")."""
    ann = pod.annotations.get(DURATION_ANNOTATION, pod.obj.annotations.get(DURATION_ANNOTATION))
    if ann is not None:
        d = parse_duration(ann)
        if d is not None and d > 0:
            return d, f"{DURATION_ANNOTATION}={ann}"
    obj = pod.obj
    candidates = [
        (pod.spec.get("activeDeadlineSeconds"), "pod activeDeadlineSeconds"),
        (obj.get("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds"),
        (obj.get("spec", "jobTemplate", "spec", "activeDeadlineSeconds"), "activeDeadlineSeconds"),
        (obj.get("spec", "runPolicy", "activeDeadlineSeconds"), "runPolicy.activeDeadlineSeconds"),
    ]
    if pod.spec_path[-3:-1] == ("template", "spec") and len(pod.spec_path) >= 5:
        # the enclosing Job spec of a JobSet replicated job / Kubeflow replica
        job_spec = obj.get(*pod.spec_path[:-3])
        if isinstance(job_spec, dict):
            candidates.append((job_spec.get("activeDeadlineSeconds"), "activeDeadlineSeconds"))
    for value, where in candidates:
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
            return float(value), f"{where}={value}"
    return None, ""


__all__ = [
    "DO_NOT_DISRUPT",
    "DURATION_ANNOTATION",
    "NEVER",
    "REMOVED_ANNOTATIONS",
    "budget_blocks",
    "consolidation_on",
    "disrupting_reasons",
    "do_not_disrupt",
    "drift_allowed",
    "expected_duration",
    "expire_after",
    "format_duration",
    "parse_duration",
    "protects",
    "termination_grace_period",
]
