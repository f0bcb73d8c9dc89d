"""
## What it does
Compares a pod's `vpc.amazonaws.com/efa` request with the EFA interfaces of the instance
types it can land on (its target instance set: node selectors and affinity intersected
with the NodePools that would host it; maxima from the instance table, for example
p5/p5e.48xlarge 32, p5en 16, p6-b200 8, p4d/p4de 4, trn1.32xlarge 8, trn1n/trn2 16):

- a full-node pod (it requests every GPU or Neuron device of the type) asks for fewer EFA
  interfaces than the type has (warning);
- the request is above the maximum of every target type, or every target type has no EFA
  at all (g5/g6/g6e up to 4xlarge, inf2): the pod can never schedule (error);
- a container requests EFA without `hugepages-2Mi` (and does not set
  `FI_EFA_USE_HUGE_PAGE=0`): info, worth a review.

Severity: error when the EFA count is above the maximum of every target instance type (the
pod can never schedule); info for an EFA container without hugepages-2Mi.

## Why is this bad?
EFA interfaces are not shared between pods on a node through the device plugin: a pod
that takes all 8 GPUs of a p5.48xlarge but 4 EFA interfaces (the p4d number, as in many
copied manifests) leaves 28 of the 32 NICs idle and runs its collectives on an eighth of
the network bandwidth the instance was bought for. A request above the type's maximum, or
on a type without EFA, leaves the pod `Pending` forever. The AWS samples also give each
EFA container hugepages (`hugepages-2Mi: 5120Mi`), which libfabric uses for its buffers
unless `FI_EFA_USE_HUGE_PAGE=0`.

## Example
```yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: nccl-allreduce
spec:
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      nodeSelector:
        node.kubernetes.io/instance-type: p5.48xlarge
      containers:
        - name: worker
          image: public.ecr.aws/hpc-cloud/nccl-tests:latest
          resources:
            limits:
              nvidia.com/gpu: 8
              vpc.amazonaws.com/efa: 4
              hugepages-2Mi: 5120Mi
              memory: 32000Mi
```

## Use instead
```yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: nccl-allreduce
spec:
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      nodeSelector:
        node.kubernetes.io/instance-type: p5.48xlarge
      containers:
        - name: worker
          image: public.ecr.aws/hpc-cloud/nccl-tests:latest
          resources:
            limits:
              nvidia.com/gpu: 8
              vpc.amazonaws.com/efa: 32
              hugepages-2Mi: 5120Mi
              memory: 32000Mi
```

## Options
None.

## Fix
Safe, when the target set has exactly one type and one container requests EFA: sets the
EFA request and limit to that type's maximum. With several types (p4d and p5 in one pool)
the right number depends on where the pod lands: split the pool, or pin the type. No fix
for hugepages (the size is a workload choice). Pods whose target types are unknown are
only checked for hugepages.

## References
- https://karpenter.sh/docs/reference/instance-types/ (`vpc.amazonaws.com/efa`)
- https://github.com/aws-samples/awsome-distributed-training/blob/main/micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml
- https://docs.aws.amazon.com/eks/latest/userguide/node-efa.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import instances
from ailint.domain.context import Context
from ailint.domain.extract import GPU_RESOURCES, POD_KINDS, pod_accelerators, pod_templates
from ailint.domain.quantities import parse_quantity
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="NET002",
    name="efa-count-below-instance-max",
    severity=Severity.WARNING,
    summary="A pod's EFA request does not match the EFA interfaces of the instance types it lands on",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("efa", "network", "training"),
)

EFA = "vpc.amazonaws.com/efa"


def _full_node(acc: dict[str, float], it: Any) -> bool:
    """Does the pod take every accelerator of this type?"""
    gpus = sum(acc.get(r, 0) for r in GPU_RESOURCES)
    if it.is_gpu:
        return gpus > 0 and gpus >= it.count
    if it.is_neuron:
        if acc.get("aws.amazon.com/neuron", 0) or acc.get("aws.amazon.com/neurondevice", 0):
            return max(acc.get("aws.amazon.com/neuron", 0), acc.get("aws.amazon.com/neurondevice", 0)) >= it.count
        cores = acc.get("aws.amazon.com/neuroncore", 0)
        return bool(cores) and it.neuron_cores is not None and cores >= it.neuron_cores
    return False


def _names(types: list[str], limit: int = 3) -> str:
    shown = ", ".join(types[:limit])
    return shown + (f" and {len(types) - limit} more" if len(types) > limit else "")


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        acc = pod_accelerators(pod)
        efa = acc.get(EFA, 0)
        if efa <= 0:
            continue
        efa_containers = [c for c in pod.containers() if EFA in c.accelerators() and not (c.init and not c.sidecar)]
        if not efa_containers:
            efa_containers = [c for c in pod.containers() if EFA in c.accelerators()]
        first = efa_containers[0]
        where = "requests" if EFA in first.resources("requests") else "limits"
        path = first.path_of("resources", where, EFA)
        n = int(efa)
        types = ctx.target_types(pod) if ctx.bundle else None
        # (unknown types dropped before sorting by name: sorting a None would raise)
        infos = [i for i in (instances.get(t) for t in types or ()) if i is not None] if types else []
        infos.sort(key=lambda i: i.type)
        if infos:
            if all(i.efa_max < n for i in infos):
                if all(i.efa_max == 0 for i in infos):
                    msg = (
                        f"{EFA} is {n} but the target instance types have no EFA interfaces "
                        f"({_names([i.type for i in infos])}); the pod can never schedule"
                    )
                else:
                    best = max(infos, key=lambda i: i.efa_max)
                    msg = (
                        f"{EFA} is {n}, above the maximum of every target type (at most {best.efa_max} on "
                        f"{best.type}); the pod can never schedule"
                    )
                fix = _fix(obj, efa_containers, infos) if len(infos) == 1 and infos[0].efa_max > 0 else None
                yield RULE.finding(obj, path, msg, severity=Severity.ERROR, fix=fix)
            else:
                below = [i for i in infos if _full_node(acc, i) and n < i.efa_max]
                if below:
                    shown = ", ".join(f"{i.type} has {i.efa_max}" for i in below[:3])
                    msg = (
                        f"{EFA} is {n} for a pod that takes every accelerator of its node, but {shown}; "
                        "the unused EFA interfaces cut its inter-node bandwidth"
                    )
                    fix = _fix(obj, efa_containers, infos) if len(infos) == 1 else None
                    yield RULE.finding(obj, path, msg, fix=fix)
        for c in efa_containers:
            if c.init and not c.sidecar:
                continue
            if any(k.startswith("hugepages-") for k in list(c.resources("requests")) + list(c.resources("limits"))):
                continue
            if (c.env_value("FI_EFA_USE_HUGE_PAGE") or "").strip() in ("0", "false", "no"):
                continue
            res = c.path_of("resources", "limits") if c.resources("limits") else c.path_of("resources")
            yield RULE.finding(
                obj,
                res,
                f"container {c.name} requests EFA without hugepages-2Mi; libfabric "
                "uses huge pages for EFA buffers (AWS samples request 5120Mi) unless "
                "FI_EFA_USE_HUGE_PAGE=0",
                severity=Severity.INFO,
            )


def _fix(obj: Any, containers: list[Any], infos: list[Any]) -> Fix | None:
    if len(containers) != 1 or len(infos) != 1:
        return None
    c, target = containers[0], infos[0].efa_max
    out = []
    for which in ("requests", "limits"):
        if EFA in c.resources(which):
            cur = parse_quantity(c.resources(which)[EFA])
            if cur != target:
                out.append(edits.replace_scalar(obj, c.path_of("resources", which, EFA), target))
    if any(e is None for e in out):
        return None
    return make_fix(f"set {EFA} to {target} ({infos[0].type})", out)
