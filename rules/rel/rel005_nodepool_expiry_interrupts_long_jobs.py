"""
## What it does
Checks Karpenter and EKS Auto Mode NodePools that host training pods or pods annotated
`karpenter.sh/do-not-disrupt` (pods in the run that the pool's taints and requirements
admit) and whose `spec.template.spec.expireAfter` is not `Never` (Karpenter defaults to
`720h`, Auto Mode to `336h`). It fires when:

- (a) pods with `do-not-disrupt` can land there and `terminationGracePeriod` is unset (Auto
  Mode defaults it to 24h, so (a) does not apply there): an expired node waits for those
  pods forever, cordoned, holding its GPUs;
- (b) a training pod without `do-not-disrupt` is expected to run longer than `expireAfter`
  (`activeDeadlineSeconds` of the pod, Job, RayJob or Kubeflow `runPolicy`, or the
  annotation `ailint.io/expected-duration`, a duration such as `96h`): expiration is
  forceful and ignores disruption budgets, so the run is killed part-way.

## Why is this bad?
Node expiry is meant for long-lived services that reschedule cheaply. A multi-day training
run on a node that expires mid-run is killed and restarts from its last checkpoint; a node
that cannot finish expiring because of a do-not-disrupt pod keeps running (and billing)
while no new pod may land on it. Budgets do not stop expiration.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: training
spec:
  template:
    spec:
      expireAfter: 24h
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: [p5]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: pretrain
spec:
  activeDeadlineSeconds: 259200
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: ghcr.io/example/trainer:2.3.0
          command: ["torchrun", "--nproc-per-node=8", "train.py"]
          resources:
            limits:
              nvidia.com/gpu: 8
```

## Use instead
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: training
spec:
  template:
    spec:
      expireAfter: Never
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: [p5]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: pretrain
spec:
  activeDeadlineSeconds: 259200
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: ghcr.io/example/trainer:2.3.0
          command: ["torchrun", "--nproc-per-node=8", "train.py"]
          resources:
            limits:
              nvidia.com/gpu: 8
```

## Options
None.

## Fix
Unsafe: sets `expireAfter: Never` on the NodePool (unsafe: nodes then only roll through
drift, so keep drift enabled for AMI updates). A `terminationGracePeriod` is not offered:
it would also let drift evict do-not-disrupt pods once it elapses.

## References
- https://karpenter.sh/docs/concepts/disruption/#expiration
- https://karpenter.sh/docs/concepts/nodepools/#spectemplatespecexpireafter
- https://docs.aws.amazon.com/eks/latest/userguide/create-node-pool.html
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.disruption import (
    DO_NOT_DISRUPT,
    NEVER,
    expected_duration,
    expire_after,
    format_duration,
    protects,
    termination_grace_period,
)
from ailint.domain.extract import is_training_pod, pod_accelerators
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="REL005",
    name="nodepool-expiry-interrupts-long-jobs",
    severity=Severity.WARNING,
    summary="A NodePool that hosts training or do-not-disrupt pods expires nodes under them",
    kinds=("karpenter.sh/NodePool",),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("reliability", "karpenter", "training"),
    precision="high",
)


class _Group:
    """The pods a finding can name that the same NodePools can host, in run order (pods
    sharing node selectors and tolerations share their pools). A pool's hosted pods are the
    pods of its groups: no list per pool, which would hold pools x pods entries."""

    __slots__ = ("dnd", "runs")

    def __init__(self) -> None:
        self.dnd: list[tuple[int, Any, Any]] = []  # (run position, object, pod): do-not-disrupt protects it
        # training pods without do-not-disrupt whose expected run time is known:
        # (run position, object, seconds, where it was read)
        self.runs: list[tuple[int, Any, float, str]] = []


def _named(pod: Any) -> tuple[bool, tuple[float, str] | None]:
    """(whether do-not-disrupt protects the pod, its expected run time and where it was read
    when it is a training pod without the annotation): the two ways a finding names a pod."""
    value = pod.annotations.get(DO_NOT_DISRUPT)
    if value is not None:
        return protects(value), None
    if not is_training_pod(pod):
        return False, None
    runtime, where = expected_duration(pod)
    return False, None if runtime is None else (runtime, where)


def _hosted(pool: Any, ctx: Any) -> list[_Group]:
    """The groups of pods this pool can host that a finding can name (all groups computed
    once per run).

    Only those pods' pools are worked out: most pods of a repository are neither protected
    by do-not-disrupt nor training runs of a known length, and matching each pod against
    the NodePools (its node requirements and tolerations) was most of this rule's time in a
    rerun after a pod changed, which runs every NodePool's call again and where no other
    rule has matched the pods to pools (a cold run's other rules do)."""

    def build() -> dict[int, list[_Group]]:
        groups: dict[tuple[int, ...], _Group] = {}
        for i, (o, pod) in enumerate(ctx.pods_in(None)):
            if pod.role == "submitter":
                continue
            protected, run = _named(pod)
            if not protected and run is None:
                continue
            pools = ctx.pools_for(pod)
            if pod_accelerators(pod):
                pools = [p for p in pools if p.can_launch_accelerators]
            if not pools:
                continue
            key = tuple(dict.fromkeys(id(p.obj) for p in pools))
            g = groups.get(key)
            if g is None:
                g = groups[key] = _Group()
            if protected:
                g.dnd.append((i, o, pod))
            if run is not None:
                g.runs.append((i, o, *run))
        by_pool: dict[int, list[_Group]] = {}
        for key, g in groups.items():
            for pid in key:
                by_pool.setdefault(pid, []).append(g)
        return by_pool

    return ctx.memo("REL005.hosted", build).get(id(pool.obj), [])


def _fix(obj: Any) -> Fix | None:
    tpath = ("spec", "template", "spec")
    if obj.has(tpath + ("expireAfter",)):
        edit = edits.replace_value(obj, tpath + ("expireAfter",), "Never")
    else:
        edit = edits.insert_key(obj, tpath, "expireAfter", "Never")
    return make_fix("set expireAfter: Never", [edit], unsafe=True)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    pool = ctx.nodepool(obj.name or "") if obj.name else None
    if pool is None or pool.obj is not obj:
        pool = next((p for p in ctx.nodepools if p.obj is obj), None)
    if pool is None:
        return
    expiry, explicit = expire_after(pool)
    if expiry is None or expiry == NEVER:
        return
    groups = _hosted(pool, ctx)
    if not groups:
        return
    path = ("spec", "template", "spec", "expireAfter") if explicit else ("spec", "template", "spec")
    exp_txt = f"expireAfter {format_duration(expiry)}" + ("" if explicit else " (default)")
    dnd = [(o, pod) for _, o, pod in heapq.merge(*(g.dnd for g in groups), key=lambda x: x[0])]
    tgp, _ = termination_grace_period(pool)
    if dnd and tgp is None:
        who = ctx.describe(dnd[0][0]) + (f" +{len(dnd) - 1} more" if len(dnd) > 1 else "")
        yield RULE.finding(
            obj,
            path,
            f"{exp_txt} without terminationGracePeriod: expired nodes running "
            f"{DO_NOT_DISRUPT} pods ({who}) stay cordoned until those pods exit",
            fix=_fix(obj),
        )
    long_runs = []
    seen = set()
    for _, o, runtime, where in heapq.merge(*(g.runs for g in groups), key=lambda x: x[0]):
        if runtime > expiry and id(o) not in seen:
            seen.add(id(o))
            long_runs.append((o, runtime, where))
    if long_runs:
        o, runtime, where = max(long_runs, key=lambda x: x[1])
        more = f" +{len(long_runs) - 1} more" if len(long_runs) > 1 else ""
        dur = format_duration(runtime)
        where = where if where.endswith("=" + dur) else f"{where} = {dur}"
        yield RULE.finding(
            obj,
            path,
            f"{exp_txt} is shorter than {ctx.describe(o)}{more} ({where}); expiry is forceful and kills the run",
            fix=_fix(obj),
        )


__all__ = ["RULE", "check"]
