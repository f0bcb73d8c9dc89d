"""
## What it does
Checks LeaderWorkerSets whose groups span nodes (`leaderWorkerTemplate.size` >= 2, as for
multi-node tensor or pipeline parallelism). It fires when nothing keeps a group in one
zone: no `leaderworkerset.sigs.k8s.io/exclusive-topology` annotation on the
LeaderWorkerSet (or its templates), no required `podAffinity` on the group key
`leaderworkerset.sigs.k8s.io/group-key` with a zone (or narrower) `topologyKey` in every
template, no Kueue Topology Aware Scheduling of the group (every template annotated
`kueue.x-k8s.io/podset-required-topology` with a level narrower than a region and one
`kueue.x-k8s.io/podset-group-name` shared by all templates, which places the leader and its
workers in one domain of that level), no single-zone node selection in the templates, and no
single-zone NodePool hosting them.

## Why is this bad?
Each group is one model replica whose members talk constantly (NCCL all-reduce, KV or
pipeline transfers). Without co-location the scheduler spreads the leader and workers over
availability zones: collectives cross zones at higher latency, inter-AZ traffic is billed
per GB, and EFA does not work across AZs at all.

## Example
```yaml
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: llama-405b
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      spec:
        containers:
          - name: vllm
            image: vllm/vllm-openai:v0.10.1
            resources:
              limits:
                nvidia.com/gpu: 8
```

## Use instead
```yaml
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: llama-405b
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      spec:
        affinity:
          podAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              - labelSelector:
                  matchExpressions:
                    - key: leaderworkerset.sigs.k8s.io/group-key
                      operator: Exists
                matchLabelKeys:
                  - leaderworkerset.sigs.k8s.io/group-key
                topologyKey: topology.kubernetes.io/zone
        containers:
          - name: vllm
            image: vllm/vllm-openai:v0.10.1
            resources:
              limits:
                nvidia.com/gpu: 8
```

## Options
None.

## Fix
Safe: adds to each template a required `podAffinity` term that matches the pod's own
group (`matchLabelKeys: [leaderworkerset.sigs.k8s.io/group-key]`, which needs Kubernetes
1.31 or later) with `topologyKey: topology.kubernetes.io/zone`, so every member lands in
the zone of the first one. The `exclusive-topology` annotation also passes this rule, but
it is not the fix: it allows only one group per topology domain (one replica per zone).

## References
- https://github.com/kubernetes-sigs/lws/blob/main/api/leaderworkerset/v1/leaderworkerset_types.go (`ExclusiveKeyAnnotationKey`, `GroupUniqueHashLabelKey`, `size` default 1)
- https://lws.sigs.k8s.io/docs/concepts/
- https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#matchlabelkeys
- https://kueue.sigs.k8s.io/docs/tasks/run/leaderworkerset/ (Topology Aware Scheduling: `podset-required-topology` and `podset-group-name` on both templates)
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Edit, Finding, FixAvailability, K8sObject, Severity, as_dict, as_list, get_in, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.extract import PodTemplate, pod_node_requirements, pod_templates
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="NET005",
    name="lws-group-not-topology-colocated",
    severity=Severity.WARNING,
    summary="A multi-node LeaderWorkerSet group can span availability zones",
    kinds=("LeaderWorkerSet",),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("lws", "network", "topology", "serving"),
)

EXCLUSIVE = "leaderworkerset.sigs.k8s.io/exclusive-topology"
GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"
ZONE = "topology.kubernetes.io/zone"
_ZONE_KEYS = (ZONE, "topology.k8s.aws/zone-id", "failure-domain.beta.kubernetes.io/zone")
_TOO_WIDE = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
# Kueue Topology Aware Scheduling: a PodSet annotated with a required topology level is placed
# in one domain of that level; PodSets sharing a group name are placed in the same domain.
# Kueue makes one Workload per LWS group, with a leader and a worker PodSet
# (kueue site/content/en/docs/tasks/run/leaderworkerset.md).
KUEUE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
KUEUE_GROUP_NAME = "kueue.x-k8s.io/podset-group-name"

TERM = {
    "labelSelector": {"matchExpressions": [{"key": GROUP_KEY, "operator": "Exists"}]},
    "matchLabelKeys": [GROUP_KEY],
    "topologyKey": ZONE,
}


def _term_colocates(term: dict[str, Any]) -> bool:
    topo = term.get("topologyKey")
    if not isinstance(topo, str) or not topo or topo in _TOO_WIDE:
        return False
    if GROUP_KEY in [str(k) for k in as_list(term.get("matchLabelKeys"))]:
        return True
    sel = as_dict(term.get("labelSelector"))
    if GROUP_KEY in as_dict(sel.get("matchLabels")):
        return True
    return any(e.get("key") == GROUP_KEY for _, e in iter_dicts(sel.get("matchExpressions")))


def _colocated(pod: PodTemplate) -> bool:
    if str(pod.annotations.get(EXCLUSIVE) or "").strip():
        return True
    if "cloud.google.com/gke-tpu-topology" in as_dict(pod.spec.get("nodeSelector")):
        return True  # a multi-host TPU slice is one node pool in one zone
    terms = get_in(pod.spec, ("affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"))
    if any(_term_colocates(t) for _, t in iter_dicts(terms)):
        return True
    return _pinned_zone(pod_node_requirements(pod))


def _kueue_colocated(pods: list[PodTemplate]) -> bool:
    """Kueue TAS keeps the leader and the workers of a group in one domain of the required
    level: every template requires a level below a region and all share one group name (a
    single template names the group of both the leader and the worker PodSet)."""
    levels = [str(p.annotations.get(KUEUE_REQUIRED_TOPOLOGY) or "").strip() for p in pods]
    if not all(levels) or any(level in _TOO_WIDE for level in levels):
        return False
    groups = {str(p.annotations.get(KUEUE_GROUP_NAME) or "").strip() for p in pods}
    return len(groups) == 1 and "" not in groups


def _pinned_zone(terms: Any) -> bool:
    """Every node-selection term pins one zone."""
    terms = list(terms)
    return bool(terms) and all(
        any(r.key in _ZONE_KEYS and r.operator == "In" and len(r.values) == 1 for r in t) for t in terms
    )


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    size = get_in(obj.data, ("spec", "leaderWorkerTemplate", "size"))
    if isinstance(size, bool) or not isinstance(size, int) or size < 2:
        return
    if str(obj.annotations.get(EXCLUSIVE) or "").strip():
        return
    pods = [p for p in pod_templates(obj)]
    if not pods or _kueue_colocated(pods):
        return
    missing = [p for p in pods if not _colocated(p)]
    if not missing:
        return
    if ctx.bundle:
        pools = [pool for p in pods for pool in ctx.pools_for(p)]
        if pools and all(_pinned_zone([pool.requirements]) for pool in pools):
            return
    built = [_add_affinity(obj, p) for p in missing]
    fix = (
        None
        if any(e is None for e in built)
        else make_fix("add a required podAffinity on the group key with topologyKey topology.kubernetes.io/zone", built)
    )
    names = " and ".join(p.role for p in missing) + (" templates" if len(missing) > 1 else " template")
    yield RULE.finding(
        obj,
        ("spec", "leaderWorkerTemplate", "size"),
        f"groups of {size} pods can span AZs: no {EXCLUSIVE} annotation and no required "
        f"podAffinity on the group key in the {names}",
        fix=fix,
    )


def _add_affinity(obj: Any, pod: PodTemplate) -> Edit | None:
    spec = pod.spec
    aff = spec.get("affinity")
    if aff is None:
        return edits.set_value(
            obj, pod.path("affinity"), {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}
        )
    if not isinstance(aff, dict):
        return None
    pa = aff.get("podAffinity")
    if pa is None:
        return edits.set_value(
            obj, pod.path("affinity", "podAffinity"), {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}
        )
    if not isinstance(pa, dict):
        return None
    req = pa.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is None:
        return edits.set_value(
            obj, pod.path("affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"), [TERM]
        )
    if isinstance(req, list):
        return edits.append_item(
            obj, pod.path("affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"), TERM
        )
    return None
