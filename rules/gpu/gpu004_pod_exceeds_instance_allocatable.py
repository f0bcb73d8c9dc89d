"""
## What it does
Compares a pod's effective request with Karpenter's allocatable for every instance type in
its target instance set, for `cpu`, `memory`, `nvidia.com/gpu`, `aws.amazon.com/neuron`,
`aws.amazon.com/neuroncore` and `vpc.amazonaws.com/efa`. The effective request is the sum
of the app containers and native sidecars (init containers with `restartPolicy: Always`),
or the largest init container plus the sidecars started before it if that is bigger, plus
the pod `overhead`; a limit counts as the request when the request is unset.

The target instance set is the set of types the pod can land on: the types its own
`nodeSelector`/required node affinity allows, intersected with the requirements of every
NodePool whose taints it tolerates. The rule only judges sets pinned to instance families
the built-in table covers completely (`instance-type`, `instance-family`,
`instance-gpu-name` or `instance-accelerator-name` lists); otherwise it stays silent.

It is an error when no type fits. When the pod's own `instance-type` list names types
that can never fit it (while others do), those are dead requirements (info).

Severity: info when an instance type of the pod's list can never fit it (a dead entry) while
other types can.

## Why is this bad?
Karpenter only launches a node whose allocatable covers the pod's requests. If no allowed
type is big enough, the pod stays Pending forever with a "no instance type satisfied
resources" event; Deployments look healthy until someone notices zero ready replicas.
Allocatable is well below the instance's vCPU and RAM (kube-reserved, system-reserved,
eviction threshold): a g5.xlarge has 4 vCPU / 16 GiB but 3920m / 14162Mi allocatable.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - key: node.kubernetes.io/instance-type
          operator: In
          values: ["g5.xlarge"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm-inference-cost-optimized
spec:
  selector:
    matchLabels: {app: llm}
  template:
    metadata:
      labels: {app: llm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          resources:
            requests: {cpu: "4", memory: 16Gi, nvidia.com/gpu: 1}
            limits: {nvidia.com/gpu: 1}
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
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - key: node.kubernetes.io/instance-type
          operator: In
          values: ["g5.xlarge", "g5.2xlarge"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm-inference-cost-optimized
spec:
  selector:
    matchLabels: {app: llm}
  template:
    metadata:
      labels: {app: llm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          resources:
            requests: {cpu: "4", memory: 16Gi, nvidia.com/gpu: 1}
            limits: {nvidia.com/gpu: 1}
```

## Options
None.

## Fix
None: lower the requests, or allow a larger instance type (the message names the largest
allocatable in the set).

## References
- https://karpenter.sh/docs/reference/instance-types/
- https://karpenter.sh/docs/concepts/scheduling/#resource-requests
- https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/#resource-sharing-within-containers
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, get_in, iter_dicts
from ailint.core.rule import Options, Rule, Scope
from ailint.domain import accelerators, instances
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, pod_templates
from ailint.domain.quantities import format_bytes, parse_quantity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="GPU004",
    name="pod-exceeds-instance-allocatable",
    severity=Severity.ERROR,
    summary="A pod requests more than any instance type it can land on can allocate",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.NEVER,
    tags=("gpu", "resources", "karpenter"),
    precision="high",
)

RESOURCES = (
    "cpu",
    "memory",
    "nvidia.com/gpu",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "vpc.amazonaws.com/efa",
)


def effective_request(pod: Any) -> tuple[dict[str, float], dict[str, Any]]:
    """(request per resource, the container contributing most per resource)."""
    regular: dict[str, float] = {}
    sidecars_before: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    top: dict[str, tuple[float, Any]] = {}
    for c in pod.containers():
        vals = {}
        for r, v in c.requested(RESOURCES).items():
            q = parse_quantity(v)
            if q is not None and q > 0:
                vals[r] = q
                if r not in top or q > top[r][0]:
                    top[r] = (q, c)
        if not c.init or c.sidecar:
            for r, q in vals.items():
                regular[r] = regular.get(r, 0) + q
            if c.sidecar:
                for r, q in vals.items():
                    sidecars_before[r] = sidecars_before.get(r, 0) + q
        else:
            for r in set(vals) | set(sidecars_before):
                need = vals.get(r, 0) + sidecars_before.get(r, 0)
                init_peak[r] = max(init_peak.get(r, 0), need)
    total = {r: max(regular.get(r, 0), init_peak.get(r, 0)) for r in set(regular) | set(init_peak)}
    for r, v in as_dict(pod.spec.get("overhead")).items():
        q = parse_quantity(v)
        if r in RESOURCES and q:
            total[r] = total.get(r, 0) + q
    return {r: v for r, v in total.items() if v > 0}, {r: c for r, (_, c) in top.items()}


def allocatable(it: Any, res: str) -> float:
    if res == "cpu":
        return it.allocatable_cpu_m / 1000
    if res == "memory":
        return it.allocatable_memory_mib * 2**20
    return float(accelerators.device_count(it, res))


def fmt(res: str, v: float) -> str:
    if res == "cpu":
        return str(int(v)) if v == int(v) else f"{round(v * 1000)}m"
    if res == "memory":
        mib = v / 2**20
        return f"{mib:.0f}Mi" if mib == int(mib) and mib % 1024 else format_bytes(v)
    return str(int(v)) if v == int(v) else str(v)


@lru_cache(maxsize=1)
def _floor() -> dict[str, float]:
    """Per resource, the smallest allocatable of any table type (a request at or under it
    fits every type that offers the resource at all)."""
    its = list(instances.table().values())
    return {r: min(allocatable(it, r) for it in its) for r in RESOURCES}


def _may_exceed(req: dict[str, float]) -> bool:
    floor = _floor()
    return any(v > floor[r] for r, v in req.items())


def _exceeds(req: dict[str, float], it: Any) -> list[str]:
    return [r for r in RESOURCES if r in req and req[r] > allocatable(it, r) + 1e-9]


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        req, top = effective_request(pod)
        if not req or not _may_exceed(req):
            continue
        types = accelerators.target_types(ctx, pod)
        if not types:
            continue
        table = {
            t: instances.get(t)
            for t in sorted(types, key=accelerators.instance_type_order)
            if instances.get(t) is not None
        }
        if not table:
            continue
        over = {t: _exceeds(req, it) for t, it in table.items()}
        fitting = [t for t, dims in over.items() if not dims]
        if not fitting:
            yield _no_fit(obj, pod, req, top, table, over)
        else:
            yield from _dead_types(obj, pod, req, over)


def _no_fit(
    obj: Any, pod: Any, req: dict[str, float], top: dict[str, Any], table: dict[str, Any], over: dict[str, list[str]]
) -> Finding:
    always = [r for r in RESOURCES if all(r in dims for dims in over.values())]
    n = len(table)
    if always:
        parts = []
        for r in always:
            best = max(table.values(), key=lambda it: allocatable(it, r))
            parts.append((r, best))
        need = ", ".join(f"{r} {fmt(r, req[r])}" for r, _ in parts)
        if n == 1:
            it = next(iter(table.values()))
            have = ", ".join(f"{r} {fmt(r, allocatable(it, r))}" for r, _ in parts)
            msg = f"pod requests {need} but {it.type}, the only type it can land on, allocates {have}"
        else:
            have = ", ".join(f"{r} {fmt(r, allocatable(best, r))} on {best.type}" for r, best in parts)
            msg = f"pod requests {need}, more than any of the {n} types it can land on allocates (at most {have})"
        res = always[0]
    else:
        shown = sorted(over.items(), key=lambda kv: accelerators.instance_type_order(kv[0]))[:3]
        detail = "; ".join(f"{t} lacks {', '.join(d)}" for t, d in shown)
        more = f"; {n - 3} more" if n > 3 else ""
        msg = f"pod fits none of the {n} types it can land on: {detail}{more}"
        res = min((d for dims in over.values() for d in dims), key=RESOURCES.index)
    c = top.get(res)
    if c is not None:
        where = "requests" if res in c.resources("requests") else "limits"
        path = c.path_of("resources", where, res)
    else:
        path = pod.path("overhead")
    return RULE.finding(obj, path, msg)


def _dead_types(obj: Any, pod: Any, req: dict[str, float], over: dict[str, list[str]]) -> Iterator[Finding]:
    """Info: types the pod's own instance-type list names that can never fit it."""
    spec = pod.spec
    for key in accelerators.TYPE_KEYS:
        v = as_dict(spec.get("nodeSelector")).get(key)
        listed: list[tuple[tuple, list[str]]] = []
        if isinstance(v, str):
            listed.append((pod.path("nodeSelector", key), [v]))
        aff = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
        for ti, term in iter_dicts(get_in(spec, aff)):
            for ei, e in iter_dicts(term.get("matchExpressions")):
                if e.get("key") == key and e.get("operator") == "In" and isinstance(e.get("values"), list):
                    listed.append((pod.path(*aff, ti, "matchExpressions", ei, "values"), [str(x) for x in e["values"]]))
        for path, names in listed:
            dead = [t for t in names if over.get(t)]
            alive = [t for t in names if t in over and not over[t]]
            if dead and alive:
                dims = sorted({d for t in dead for d in over[t]}, key=RESOURCES.index)
                need = ", ".join(f"{d} {fmt(d, req[d])}" for d in dims)
                one = len(dead) == 1
                msg = (
                    f"{accelerators.describe_types(dead)} can never fit this pod ({need}); "
                    f"{'it is a dead entry' if one else 'they are dead entries'} in its instance-type list"
                )
                yield RULE.finding(obj, path, msg, severity=Severity.INFO)
