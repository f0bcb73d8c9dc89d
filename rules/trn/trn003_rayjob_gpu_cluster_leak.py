"""
## What it does
Checks that a RayJob which creates its own RayCluster (`spec.rayClusterSpec`, not
`clusterSelector`) cleans it up and cannot hang forever:

- (a) `shutdownAfterJobFinishes` is unset or false (the default is false) and no
  `deletionStrategy` is set;
- (b) `ttlSecondsAfterFinished` > 0 while `shutdownAfterJobFinishes` is not true;
- (c) neither `activeDeadlineSeconds` nor `preRunningDeadlineSeconds` is set.

(a) and (c) apply to RayJobs whose cluster has accelerator pods; (b) to every RayJob.
`submissionMode: InteractiveMode` (debugging sessions) is exempt from (a) and (c).

Severity: error for (b), which KubeRay rejects; a warning for (a) and (c).

## Why is this bad?
Without `shutdownAfterJobFinishes`, the RayCluster and its GPU workers keep running after
the job succeeds or fails, billing GPU hours until someone deletes it. KubeRay rejects a
RayJob that sets `ttlSecondsAfterFinished` without `shutdownAfterJobFinishes: true`
(`validation.go`: "a RayJob with shutdownAfterJobFinishes set to false cannot have
TTLSecondsAfterFinished"), so (b) is an error. With no deadline, a job that hangs or never
gets scheduled holds its GPUs forever.

## Example
```yaml
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: train
spec:
  entrypoint: python /app/train.py
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.46.0
    workerGroupSpecs:
      - groupName: gpu
        replicas: 2
        rayStartParams: {}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.46.0-gpu
                resources:
                  limits:
                    nvidia.com/gpu: 4
```

## Use instead
```yaml
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: train
spec:
  entrypoint: python /app/train.py
  shutdownAfterJobFinishes: true
  ttlSecondsAfterFinished: 300
  activeDeadlineSeconds: 86400
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.46.0
    workerGroupSpecs:
      - groupName: gpu
        replicas: 2
        rayStartParams: {}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.46.0-gpu
                resources:
                  limits:
                    nvidia.com/gpu: 4
```

## Options
- `active_deadline_seconds` (integer, default 86400): the deadline the fix for (c) adds.

## Fix
(a) and (b), safe: set `shutdownAfterJobFinishes: true` (and, for (a), `ttlSecondsAfterFinished: 300`
when no TTL is set, so logs stay readable for five minutes). (c), unsafe: add
`activeDeadlineSeconds` (the option's value; long trainings need a larger one).

## References
- https://github.com/ray-project/kuberay/blob/master/ray-operator/apis/ray/v1/rayjob_types.go
- https://github.com/ray-project/kuberay/blob/master/ray-operator/controllers/ray/utils/validation.go
- https://docs.ray.io/en/latest/cluster/kubernetes/getting-started/rayjob-quick-start.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Edit, Finding, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Option, Options, Rule, make_fix
from ailint.domain import ray
from ailint.domain.context import Context
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="TRN003",
    name="rayjob-gpu-cluster-leak",
    severity=Severity.WARNING,
    summary="A RayJob's GPU RayCluster outlives the job, or the job has no deadline",
    kinds=("RayJob",),
    fix=FixAvailability.ALWAYS,
    options={
        "active_deadline_seconds": Option(
            86400, "activeDeadlineSeconds added by the fix for a missing deadline", "integer"
        )
    },
    tags=("ray", "cost"),
)


def _gpu_summary(obj: Any) -> tuple[bool, str]:
    total, any_acc = 0.0, False
    for g in ray.groups(obj):
        per = g.gpus_per_pod()
        if per > 0:
            any_acc = True
            total += per * g.replicas * g.num_of_hosts
    if total > 0:
        return any_acc, f"{total:g} accelerator" + ("s" if total != 1 else "")
    return any_acc, "its accelerator workers"


def _join(a: Edit | None, b: Edit | None) -> Edit | None:
    """Two insertions at one point as one edit (a first)."""
    if a is None or b is None:
        return None
    return Edit(a.start, a.end, a.content + (b.content.lstrip("\r\n") if a.content.endswith("\n") else b.content))


def _set_shutdown(obj: Any, spec: dict[str, Any], add_ttl: bool) -> list[Edit | None]:
    if "shutdownAfterJobFinishes" in spec:
        out = [edits.replace_value(obj, ("spec", "shutdownAfterJobFinishes"), "true")]
        if add_ttl and "ttlSecondsAfterFinished" not in spec:
            out.append(edits.insert_key(obj, ("spec",), "ttlSecondsAfterFinished", "300"))
        return out if all(out) else []
    first = edits.insert_key(obj, ("spec",), "shutdownAfterJobFinishes", "true")
    if add_ttl and "ttlSecondsAfterFinished" not in spec:
        first = _join(first, edits.insert_key(obj, ("spec",), "ttlSecondsAfterFinished", "300"))
    return [first]


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    spec = as_dict(obj.get("spec"))
    if not spec or ray.uses_cluster_selector(obj) or not isinstance(spec.get("rayClusterSpec"), dict):
        return
    shutdown = spec.get("shutdownAfterJobFinishes") is True
    ttl = spec.get("ttlSecondsAfterFinished")
    interactive = spec.get("submissionMode") == "InteractiveMode"
    has_acc, gpus = _gpu_summary(obj)

    # (b) TTL without shutdown: KubeRay rejects the object.
    if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0 and not shutdown:
        e = _set_shutdown(obj, spec, add_ttl=False)
        yield RULE.finding(
            obj,
            ("spec", "ttlSecondsAfterFinished"),
            f"ttlSecondsAfterFinished is {ttl} but shutdownAfterJobFinishes is not true; KubeRay "
            "rejects this RayJob (the TTL only applies when the cluster is shut down)",
            severity=Severity.ERROR,
            fix=make_fix("set shutdownAfterJobFinishes: true", e),
        )
    elif not shutdown and has_acc and not interactive and not isinstance(spec.get("deletionStrategy"), dict):
        # (a) the cluster outlives the job
        where = ("spec", "shutdownAfterJobFinishes") if "shutdownAfterJobFinishes" in spec else ("spec",)
        state = "false" if "shutdownAfterJobFinishes" in spec else "unset (default false)"
        e = _set_shutdown(obj, spec, add_ttl=True)
        title = "set shutdownAfterJobFinishes: true" + (
            " and ttlSecondsAfterFinished: 300" if "ttlSecondsAfterFinished" not in spec else ""
        )
        yield RULE.finding(
            obj,
            where,
            f"shutdownAfterJobFinishes is {state}: the RayCluster and {gpus} keep running after the job finishes",
            fix=make_fix(title, e),
        )

    # (c) no deadline
    if has_acc and not interactive and "activeDeadlineSeconds" not in spec and "preRunningDeadlineSeconds" not in spec:
        secs = opts.get_int("active_deadline_seconds")
        yield RULE.finding(
            obj,
            ("spec",),
            "neither activeDeadlineSeconds nor preRunningDeadlineSeconds is set: a hung or "
            f"never-scheduled job holds {gpus} forever",
            fix=make_fix(
                f"add activeDeadlineSeconds: {secs}",
                [edits.insert_key(obj, ("spec",), "activeDeadlineSeconds", str(secs))],
                unsafe=True,
            ),
        )
