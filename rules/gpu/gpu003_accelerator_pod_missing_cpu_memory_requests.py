"""
## What it does
Flags containers that request an accelerator (`nvidia.com/gpu`, `amd.com/gpu`,
`aws.amazon.com/neuron*`, `vpc.amazonaws.com/efa`) but set no `cpu` or no `memory`
request. A limit counts as the request, since Kubernetes copies a limit into an unset
request. `pause` containers (placeholders that only hold devices) and containers in a
namespace whose `LimitRange` (in the run) gives container
defaults for the missing resource are skipped.

## Why is this bad?
Karpenter sizes nodes from requests only, and the scheduler packs by requests. A GPU pod
that asks for no memory can land on the smallest instance that has a GPU, or next to other
pods that already took the host RAM. Loading tens of gigabytes of weights then runs the node
out of memory: the pod is OOM-killed or evicted and the GPU sits idle while it restarts.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
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
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
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
            requests:
              cpu: "3"
              memory: 12Gi
            limits:
              nvidia.com/gpu: 1
```

## Options
None.

## Fix
Unsafe, offered when the pod's target instance set is known (its selectors, or the
NodePools that can host it, pin instance types): adds the missing requests as the
container's share of the smallest fitting type's allocatable (its devices over the type's
devices), rounded down to whole cores and GiB. Review the values: DaemonSets and
sidecars need room too.

## References
- https://karpenter.sh/docs/concepts/scheduling/#resource-requests
- https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/
- https://kubernetes.io/docs/concepts/policy/limit-range/
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import accelerators, instances
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, pod_templates
from ailint.domain.kserve import preset_supplies

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="GPU003",
    name="accelerator-pod-missing-cpu-memory-requests",
    severity=Severity.WARNING,
    summary="An accelerator container has no cpu or no memory request, so nodes are sized without host RAM for it",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("gpu", "resources", "karpenter"),
    precision="high",
)


def _limitrange_defaults(ctx: Any, namespace: str) -> set[str]:
    """Resources a LimitRange of the run defaults for containers in `namespace`."""
    out: set[str] = set()
    for lr in ctx.of_kind("LimitRange"):
        if (lr.namespace_or_default) != namespace:
            continue
        for _, item in iter_dicts(lr.get("spec", "limits")):
            if item.get("type") not in (None, "Container"):
                continue
            for key in ("defaultRequest", "default"):
                out |= set(as_dict(item.get(key)))
    return out


def _share(c: Any, types: set[str]) -> dict[str, str] | None:
    """The container's share of the smallest type (by allocatable) that has its devices."""
    acc = c.accelerators()
    best = None

    def by_allocatable(x: str) -> tuple[int, str]:
        info = instances.get(x)
        return (info.allocatable_cpu_m, x) if info else (0, x)

    for t in sorted(types, key=by_allocatable):
        it = instances.get(t)
        if it is None:
            continue
        fractions: list[float] = []
        fits = True
        for res, n in acc.items():
            total = accelerators.device_count(it, res)
            if res == "vpc.amazonaws.com/efa":
                continue
            if total < n:
                fits = False
                break
            fractions.append(n / total)
        if not fits:
            continue
        frac = max(fractions) if fractions else None
        if frac is None:
            continue
        best = (it, frac)
        break
    if best is None:
        return None
    it, frac = best
    cores = it.allocatable_cpu_m * frac / 1000
    cpu = str(int(cores)) if cores >= 1 else f"{int(cores * 10) * 100}m"
    mem_gi = math.floor(it.allocatable_memory_mib * frac / 1024)
    if cpu in ("0", "0m") or mem_gi < 1:
        return None
    return {"cpu": cpu, "memory": f"{mem_gi}Gi", "_type": it.type}


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    defaults = _limitrange_defaults(ctx, obj.namespace_or_default)
    for pod in pod_templates(obj):
        types: set[str] | bool | None = False  # computed lazily
        for c in pod.containers():
            acc = c.accelerators()
            if not acc or accelerators.is_placeholder(c):
                continue
            missing = [r for r in ("cpu", "memory") if c.request(r) in (None, "") and r not in defaults]
            if not missing or preset_supplies(c, "resources"):
                continue  # (an LLMInferenceService config the run may not show can set them)
            if types is False:
                types = accelerators.target_types(ctx, pod)
            res = accelerators.main_resource(acc)
            count = acc[res]
            count_text = str(int(count)) if count == int(count) else str(count)
            what = " or ".join(missing)
            name = accelerators.container_label(c)
            needs = " and ".join({"cpu": "CPU", "memory": "host RAM"}[r] for r in missing)
            msg = (
                f"{name} requests {count_text} {res} but no {what} request; nodes are sized "
                f"from requests, so its {needs} {'are' if len(missing) > 1 else 'is'} not reserved"
            )
            fix = None
            share = _share(c, types) if isinstance(types, set) and types else None
            if share:
                values = {r: share[r] for r in missing}
                edits_ = accelerators.set_map_values(obj, c.path_of("resources", "requests"), values)
                if edits_:
                    desc = ", ".join(f"{k} {v}" for k, v in values.items())
                    fix = make_fix(f"request {desc} (the container's share of {share['_type']})", edits_, unsafe=True)
            path = c.path_of("resources", "requests") if isinstance(c.data.get("resources"), dict) else c.path
            yield RULE.finding(obj, path, msg, fix=fix)
