"""
## What it does
Finds workloads of two or more replicas (Deployment, StatefulSet, LeaderWorkerSet) that
something in the run will evict, and that have no PodDisruptionBudget selecting their pods
(by the template's labels or those the controller adds, such as an LWS set name or
`worker-index`). A LeaderWorkerSet of one group that restarts as a whole (the default
`RecreateGroupOnPodRestart`) is a singleton whatever its size, and a workload whose
containers are all `pause` placeholders or only sleep (overprovisioning, Karpenter's scale
examples) loses nothing when evicted. Evictable means either:

- a DeschedulerPolicy in the run has an enabled plugin whose namespaces and labelSelector
  include the workload, and its DefaultEvictor does not protect the pods (see
  `descheduler-skips-ai-pods`); with no policy in the run, the profile flag
  `deschedulerInstalled: true` counts as such a plugin; or
- a Karpenter (or EKS Auto Mode) NodePool that can host the pods has consolidation on
  (`WhenEmptyOrUnderutilized` or `Balanced`, `consolidateAfter` not `Never`, not a static
  pool) or allows drift (no always-active `nodes: "0"` budget for `Drifted`).

It also fires on a PDB that selects such a workload but allows no eviction at all:
`maxUnavailable: 0` (or `0%`), or `minAvailable` equal to the replicas or `100%`.

## Why is this bad?
Consolidation, drift and the descheduler evict pods through the Eviction API, which honours
PodDisruptionBudgets and nothing else. Without a PDB every replica of a model server can be
evicted at once (they often share a node or a drifted AMI), and each restart reloads the
model for minutes. A PDB that allows nothing is as bad the other way: nodes never drain,
consolidation and AMI updates stall, and Karpenter's `terminationGracePeriod` eventually
kills the pods anyway.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: [g6e]
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: inference
spec:
  replicas: 3
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
```

## Use instead
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: [g6e]
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: inference
spec:
  replicas: 3
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
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: vllm
  namespace: inference
spec:
  maxUnavailable: 1
  selector:
    matchLabels: {app: vllm}
```

## Options
None.

## Fix
Unsafe (it picks the budget and adds an object to the file): append a `policy/v1`
`PodDisruptionBudget` named after the workload (`<name>-pdb` when that name is taken), in
its namespace, with `maxUnavailable: 1` and the workload's `spec.selector` (a
LeaderWorkerSet's pods by `leaderworkerset.sigs.k8s.io/name`). Review the budget: a
percentage suits large fleets. No fix when the selector would also select the pods of
another workload in these files (two PDBs on one pod make every eviction fail), when the
workload has no usable selector, or for a blocking PDB: there, choose how many pods may go
at once.

## References
- https://kubernetes.io/docs/tasks/run-application/configure-pdb/
- https://karpenter.sh/docs/concepts/disruption/
- https://github.com/kubernetes-sigs/descheduler#pod-disruption-budget-pdb
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context, copyable_selector
from ailint.domain.descheduler import policies
from ailint.domain.disruption import disrupting_reasons
from ailint.domain.extract import pod_accelerators, pod_templates
from ailint.domain.pod_labels import LWS, may_select
from ailint.domain.roles import runs_nothing
from ailint.domain.selectors import selected
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="REL003",
    name="descheduled-workload-without-pdb",
    severity=Severity.WARNING,
    summary="A replicated workload that consolidation, drift or the descheduler evicts has no usable PDB",
    kinds=("Deployment", "StatefulSet", "LeaderWorkerSet", "PodDisruptionBudget"),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("reliability", "disruption", "karpenter", "descheduler"),
    precision="high",
)

PDB_WORKLOAD_KINDS = ("Deployment", "StatefulSet", "LeaderWorkerSet")
LWS_NAME_LABEL = LWS + "name"  # set on every pod of the set (pod_labels: LWS SetNameLabelKey)


def _replicas(obj: Any) -> int | None:
    """Pods of the workload (LWS: groups x size)."""
    total = 0
    known = False
    for pod in pod_templates(obj):
        if pod.replicas is None:
            return None
        total += pod.replicas
        known = True
    return total if known else None


def _single_group(obj: Any) -> bool:
    """A LeaderWorkerSet of one group that restarts as a whole when one of its pods goes (the
    default `RecreateGroupOnPodRestart`): a singleton, whatever its pod count."""
    if obj.kind != "LeaderWorkerSet":
        return False
    groups = obj.get("spec", "replicas")
    policy = obj.get("spec", "leaderWorkerTemplate", "restartPolicy")
    return (groups is None or groups == 1) and policy in (None, "RecreateGroupOnPodRestart", "RecreateGroupAfterStart")


def _evicted_by(obj: Any, ctx: Any) -> str | None:
    """Why the workload's pods get evicted, or None."""
    ns = obj.namespace_or_default
    pods = list(pod_templates(obj))
    if not pods:
        return None
    pols = policies(ctx)
    if pols:
        by_policy = _evicting_plugin(pols, pods, ns, ctx)
        if by_policy is not None:
            return by_policy
    elif ctx.profile.flag("deschedulerInstalled"):
        return "the descheduler (profile deschedulerInstalled)"
    for pod in pods:
        for pool in ctx.pools_for(pod):
            if pod_accelerators(pod) and not pool.can_launch_accelerators:
                continue
            reasons = disrupting_reasons(pool)
            if reasons:
                return f"Karpenter {' and '.join(reasons)} on {ctx.describe(pool.obj)}"
    return None


def _evicting_plugin(pols: list[Any], pods: list[Any], ns: str, ctx: Any) -> str | None:
    """The first enabled plugin of a policy that evicts one of the pods, said as the finding
    says it; None if the policies' evictors protect them all."""
    from ailint.domain.descheduler.model import protected_by  # (the model: a policy is in the files)

    for pol in pols:
        for prof in pol.profiles():
            plugins = prof.healthy_pod_evictors()
            for pod in pods:
                if not prof.evictor_admits(pod) or protected_by(prof, pod, ctx):
                    continue
                hit = next((p for p in plugins if prof.plugin_covers(p, ns, pod)), None)
                if hit:
                    return f"the descheduler plugin {hit} of {pol.short_label}"
    return None


def _pdbs_for(obj: Any, ctx: Any) -> list[Any]:
    """PodDisruptionBudgets of the namespace that select some pods of the workload (with the
    labels its controller adds: `pod_labels.may_select`); once per workload and run, since
    each PodDisruptionBudget's own check asks it for every workload of its namespace."""
    got: list[Any] = ctx.memo(("REL003.pdbs_for", id(obj)), lambda: _find_pdbs_for(obj, ctx))
    return got


def _find_pdbs_for(obj: Any, ctx: Any) -> list[Any]:
    ns = obj.namespace_or_default
    pods = list(pod_templates(obj))
    return [
        p
        for p in ctx.of_kind("PodDisruptionBudget", namespace=ns)
        if any(may_select(p.get("spec", "selector"), pod) for pod in pods)
    ]


def _blocks(pdb: Any, replicas: int) -> tuple[tuple, str] | None:
    spec = as_dict(pdb.get("spec"))
    mu = spec.get("maxUnavailable")
    if mu is not None and str(mu).strip() in ("0", "0%"):
        return ("spec", "maxUnavailable"), f"maxUnavailable: {mu}"
    ma = spec.get("minAvailable")
    if ma is not None:
        s = str(ma).strip()
        if s == "100%" or (s.isdigit() and int(s) >= replicas):
            return ("spec", "minAvailable"), f"minAvailable: {ma} of {replicas} replicas"
    return None


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "PodDisruptionBudget":
        yield from _check_pdb(obj, ctx)
        return
    replicas = _replicas(obj)
    if replicas is None or replicas < 2 or _single_group(obj):
        return
    if all(runs_nothing(pod) for pod in pod_templates(obj)):
        return  # pause placeholders (overprovisioning, scale tests): an eviction loses nothing
    if _pdbs_for(obj, ctx):
        return
    why = _evicted_by(obj, ctx)
    if why is None:
        return
    path = ("spec", "replicas") if obj.has(("spec", "replicas")) else ("spec",)
    yield RULE.finding(
        obj,
        path,
        f"{replicas} replicas can be evicted by {why} but no PodDisruptionBudget selects them; all can go at once",
        fix=_pdb_fix(obj, ctx),
    )


def _selector(obj: Any) -> dict[str, Any] | None:
    """A LabelSelector for exactly the workload's pods (None when there is no usable one)."""
    if obj.kind == "LeaderWorkerSet":
        return {"matchLabels": {LWS_NAME_LABEL: obj.name}} if obj.name else None
    return copyable_selector(obj.get("spec", "selector"))


def _pdb_fix(obj: Any, ctx: Any) -> Fix | None:
    """Append a PDB (maxUnavailable: 1) selecting the workload's pods, when that is unambiguous."""
    name, ns = obj.name, obj.namespace
    sel = _selector(obj)
    pods = list(pod_templates(obj))
    if not name or sel is None or not pods or not all(may_select(sel, p) for p in pods):
        return None  # the rule would not see the new PDB select the pods
    if any(o is not obj for o, _ in selected(ctx, ns or "default", sel)):
        return None  # it would also select another workload's pods
    taken = {p.name for p in ctx.of_kind("PodDisruptionBudget", namespace=ns or "default")}
    pdb_name = next((n for n in (name, f"{name}-pdb") if n not in taken and len(n) <= 253), None)
    if pdb_name is None:
        return None
    meta: dict[str, Any] = {"name": pdb_name}
    if ns:
        meta["namespace"] = ns
    doc = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta,
        "spec": {"maxUnavailable": 1, "selector": sel},
    }
    return make_fix(
        f"add PodDisruptionBudget {pdb_name} with maxUnavailable: 1", [edits.append_document(obj, doc)], unsafe=True
    )


def _check_pdb(pdb: Any, ctx: Any) -> Iterator[Finding]:
    ns = pdb.namespace_or_default
    for o in ctx.of_kind(*PDB_WORKLOAD_KINDS):
        if (o.namespace_or_default) != ns or pdb not in _pdbs_for(o, ctx):
            continue
        replicas = _replicas(o)
        if replicas is None or replicas < 2:
            continue
        blocked = _blocks(pdb, replicas)
        if blocked is None:
            continue
        why = _evicted_by(o, ctx)
        if why is None:
            continue
        path, what = blocked
        yield RULE.finding(
            pdb, path, f"{what} allows no eviction of {ctx.describe(o)}, so {why} is blocked and its nodes never drain"
        )
        return


__all__ = ["RULE", "check"]
