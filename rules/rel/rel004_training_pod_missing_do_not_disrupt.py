"""
## What it does
Finds training and batch pod templates (Job, CronJob, PyTorchJob and other Kubeflow jobs,
TrainJob/JobSet, RayJob head and workers, templates annotated `ailint.io/role: training`,
or pods running torchrun/DeepSpeed/`accelerate launch`) that can land on a Karpenter or EKS
Auto Mode NodePool in the run whose consolidation is on (`WhenEmptyOrUnderutilized` or
`Balanced`, `consolidateAfter` not `Never`) or whose budgets allow drift, and whose template
lacks `karpenter.sh/do-not-disrupt: "true"` (a duration counts when it covers the job's
`activeDeadlineSeconds`). It also reports the v1alpha5 annotations
`karpenter.sh/do-not-evict` and `karpenter.sh/do-not-consolidate`, which Karpenter v1 ignores.

Severity is warning, error for multi-node GPU jobs (more than one GPU pod in the job).

## Why is this bad?
Consolidation and drift move pods to cheaper or newer nodes by evicting them. A training
pod has no replica to fail over to: eviction kills the step in progress and, for a
distributed job, every rank with it; the job restarts from its last checkpoint (or from
zero) on freshly provisioned GPUs. Nodes running a pod with `karpenter.sh/do-not-disrupt`
are excluded from consolidation and drift.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: training
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: [p5]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune
spec:
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
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: [p5]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune
spec:
  template:
    metadata:
      annotations:
        karpenter.sh/do-not-disrupt: "true"
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
Safe: adds `karpenter.sh/do-not-disrupt: "true"` to the pod template's annotations (creating
`annotations` or `metadata` when missing), or renames `karpenter.sh/do-not-evict` /
`karpenter.sh/do-not-consolidate` to `karpenter.sh/do-not-disrupt`.

## References
- https://karpenter.sh/docs/concepts/disruption/#pod-level-controls
- https://karpenter.sh/docs/upgrading/v1-migration/
- https://karpenter.sh/docs/reference/annotations/
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Edit, Finding, Fix, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.disruption import (
    DO_NOT_DISRUPT,
    REMOVED_ANNOTATIONS,
    disrupting_reasons,
    expected_duration,
    protects,
)
from ailint.domain.extract import POD_KINDS, is_training_pod, pod_accelerators, pod_templates
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="REL004",
    name="training-pod-missing-do-not-disrupt",
    severity=Severity.WARNING,
    summary="A training pod can land on a consolidating or drifting NodePool without karpenter.sh/do-not-disrupt",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("reliability", "karpenter", "training"),
    precision="high",
)


def _training_templates(obj: Any) -> list[Any]:
    out = []
    for pod in pod_templates(obj):
        if pod.role == "submitter":
            continue
        if obj.kind in ("RayCluster", "RayService") and not (
            pod.annotations.get("ailint.io/role") == "training" or obj.annotations.get("ailint.io/role") == "training"
        ):
            continue
        if obj.kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
            continue
        if is_training_pod(pod):
            out.append(pod)
    return out


def _gpu_pods(obj: Any, pods: list[Any]) -> float:
    total = 0.0
    for pod in pods:
        gpus = sum(
            v
            for k, v in pod_accelerators(pod).items()
            if k in ("nvidia.com/gpu", "amd.com/gpu", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore")
        )
        if gpus > 0:
            total += pod.replicas if pod.replicas is not None else 1
    return total


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    pods = _training_templates(obj)
    if not pods:
        return
    multi_node = _gpu_pods(obj, pods) > 1
    for pod in pods:
        pools = ctx.pools_for(pod)
        if pod_accelerators(pod):
            pools = [p for p in pools if p.can_launch_accelerators]
        reasons: list[str] = []
        pool_name = ""
        for pool in pools:
            r = disrupting_reasons(pool)
            if r:
                reasons, pool_name = r, ctx.describe(pool.obj)
                break
        if not reasons:
            continue
        sev = Severity.ERROR if multi_node and pod_accelerators(pod) else Severity.WARNING
        ann = pod.annotations
        meta = pod.meta_path if pod.meta_path is not None else ("metadata",)
        old = [k for k in REMOVED_ANNOTATIONS if k in ann]
        value = ann.get(DO_NOT_DISRUPT)
        runtime, _ = expected_duration(pod)
        if value is not None and protects(value, runtime):
            continue
        what = " and ".join(reasons)
        if old and value is None:
            key = old[0]
            path = meta + ("annotations", key)
            yield RULE.finding(
                obj,
                path,
                f"{key} was removed in Karpenter v1; {what} on {pool_name} can evict this training pod",
                severity=sev,
                fix=_rename(obj, path, key),
            )
            continue
        if value is not None:
            path = meta + ("annotations", DO_NOT_DISRUPT)
            yield RULE.finding(
                obj,
                path,
                f"{DO_NOT_DISRUPT}: {value} does not cover the run; {what} on {pool_name} can evict this training pod",
                severity=sev,
                fix=make_fix(f'set {DO_NOT_DISRUPT}: "true"', [edits.replace_value(obj, path, '"true"')]),
            )
            continue
        path = meta + ("annotations",)
        yield RULE.finding(
            obj,
            path,
            f'training pod lacks {DO_NOT_DISRUPT}: "true"; {what} on {pool_name} can evict it mid-run',
            severity=sev,
            fix=_add(obj, pod),
        )


def _rename(obj: Any, path: tuple, key: str) -> Fix | None:
    loc = obj.location(path)
    if loc is None:
        return None
    raw = obj.source.text[loc.key_start : loc.key_end]
    if raw.strip("\"'") != key:
        return None
    new = raw.replace(key, DO_NOT_DISRUPT)
    edit = Edit(loc.key_start, loc.key_end, new)
    vpath = path
    v = obj.get(*vpath)
    extra = []
    if not (v is True or (isinstance(v, str) and v.strip().lower() == "true")):
        extra.append(edits.replace_value(obj, vpath, '"true"'))
    return make_fix(f"rename {key} to {DO_NOT_DISRUPT}", [edit, *extra])


def _add(obj: Any, pod: Any) -> Fix | None:
    meta = pod.meta_path
    entry = {DO_NOT_DISRUPT: "true"}
    if meta is None:  # a bare Pod: object metadata
        meta = ("metadata",)
    ann = obj.get(*meta, "annotations")
    if isinstance(ann, dict) and ann:
        if edits.is_flow(obj, meta + ("annotations",)):
            merged = {**{str(k): v for k, v in ann.items()}, **entry}
            edit = edits.replace_value(obj, meta + ("annotations",), edits.inline(merged))
        else:
            edit = edits.insert_key(obj, meta + ("annotations",), DO_NOT_DISRUPT, '"true"')
    elif isinstance(obj.get(*meta), dict) and edits.is_flow(obj, meta):
        merged = {**{str(k): v for k, v in obj.get(*meta).items()}, "annotations": entry}
        edit = edits.replace_value(obj, meta, edits.inline(merged))
    elif isinstance(obj.get(*meta), dict) and obj.get(*meta):
        if "annotations" in as_dict(obj.get(*meta)):
            edit = edits.replace_value(obj, meta + ("annotations",), edits.inline(entry))
        else:
            edit = _insert_annotations(obj, meta)
    elif obj.get(*meta) is None and not obj.has(meta):
        parent = meta[:-1]
        unit = edits.indent_unit(obj)
        edit = edits.insert_key(
            obj, parent, "metadata", [" " * unit + "annotations:", " " * unit * 2 + f'{DO_NOT_DISRUPT}: "true"']
        )
    else:
        edit = None
    return make_fix(f'add {DO_NOT_DISRUPT}: "true" to the pod template', [edit])


def _insert_annotations(obj: Any, meta: tuple) -> Edit | None:
    unit = edits.indent_unit(obj)
    return edits.insert_key(obj, meta, "annotations", [" " * unit + f'{DO_NOT_DISRUPT}: "true"'])


__all__ = ["RULE", "check"]
