"""
## What it does
Checks `aws.amazon.com/neuron` (device) and `aws.amazon.com/neuroncore` requests:
- a request that is not a power of two (1, 2, 4, 8, ...);
- on `trn1.32xlarge` / `trn1n.32xlarge` (when the pod's target instance set includes them),
  a device count other than 1, 4, 8 or 16;
- a pod that mixes `neuron` and `neuroncore` requests.

A request of every device (or core) of the node is fine: the scheduler extension is only
involved for requests of more than one but fewer than all. When the target instance set is
unknown, a count equal to a whole node of some Neuron type (6 or 12 devices, 12 or 24
cores) is assumed to be a whole-node request and not reported.

## Why is this bad?
Multi-device Neuron pods need the Neuron scheduler extension, which hands out connected
device sets (contiguous rings on Inf2; 1, 4, 8 or all 16 devices in the 2D torus of
Trn1). Karpenter does not know those rules: it bin-packs by plain counts, and its docs ask
for like-sized, power-of-2 requests to stay consistent with the extension. Otherwise
Karpenter launches a node on which the extension then refuses the pod, and the pod can
stay Pending for good. Mixing device and core requests in one pod confuses both counts.

## Example
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: neuron-infer
spec:
  containers:
    - name: app
      image: public.ecr.aws/neuron/pytorch-inference-neuronx:2.1.2
      resources:
        limits:
          aws.amazon.com/neuron: 3
```

## Use instead
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: neuron-infer
spec:
  containers:
    - name: app
      image: public.ecr.aws/neuron/pytorch-inference-neuronx:2.1.2
      resources:
        limits:
          aws.amazon.com/neuron: 4
```

## Options
None.

## Fix
None: the message suggests the next allowed size; the model's parallelism usually has to
change with it.

## References
- https://karpenter.sh/docs/concepts/scheduling/#aws-neuron-resources
- https://awsdocs-neuron.readthedocs-hosted.com/en/latest/containers/tutorials/k8s-neuron-scheduler.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity
from ailint.core.rule import Options, Rule, Scope
from ailint.domain import accelerators, instances
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, pod_templates
from ailint.domain.quantities import parse_quantity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="GPU006",
    name="neuron-request-not-topology-aligned",
    severity=Severity.WARNING,
    summary="A Neuron device or core request is not a power of two, not a Trn1 device set, or mixes devices and cores",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.NEVER,
    tags=("neuron", "scheduling", "karpenter"),
    precision="high",
)

DEVICE = ("aws.amazon.com/neuron", "aws.amazon.com/neurondevice")
CORE = "aws.amazon.com/neuroncore"
_TRN1_TORUS = ("trn1.32xlarge", "trn1n.32xlarge")
_TRN1_SETS = (1, 4, 8, 16)


def _pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def _next_pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _whole_counts(res: str, types: set[str] | None) -> set[int]:
    pool = types if types else {t for t, it in instances.table().items() if it.is_neuron}
    out = set()
    for t in pool:
        it = instances.get(t)
        if it is not None:
            n = accelerators.device_count(it, res)
            if n:
                out.add(n)
    return out


def _where(c: Any, res: str) -> tuple:
    where = "limits" if res in c.resources("limits") else "requests"
    return c.path_of("resources", where, res)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        types: Any = False
        seen: dict[str, Any] = {}
        for c in pod.containers():
            for res in (*DEVICE, CORE):
                raw = c.limit(res) if c.limit(res) is not None else c.request(res)
                q = parse_quantity(raw)
                if q is None or q <= 0 or q != int(q):
                    continue  # absent, or fractional (GPU002's finding)
                n = int(q)
                kind = "core" if res == CORE else "device"
                seen.setdefault(kind, (c, res, n))
                if types is False:
                    types = accelerators.target_types(ctx, pod)
                neuron_types = {t for t in (types or ()) if (info := instances.get(t)) and info.is_neuron}
                whole = _whole_counts(res, neuron_types or None)
                if neuron_types:
                    full = all(accelerators.device_count(instances.get(t), res) == n for t in neuron_types)
                    if full:
                        continue
                elif n in whole:
                    continue
                name = accelerators.container_label(c)
                if not _pow2(n):
                    up = _next_pow2(n)
                    down = up // 2
                    msg = (
                        f"{name} requests {n} {res}, not a power of two; Karpenter bin-packs Neuron "
                        f"pods as power-of-2 requests, so use {down} or {up}"
                    )
                    yield RULE.finding(obj, _where(c, res), msg)
                elif kind == "device" and neuron_types & set(_TRN1_TORUS) and n not in _TRN1_SETS:
                    on = ", ".join(sorted(neuron_types & set(_TRN1_TORUS)))
                    msg = (
                        f"{name} requests {n} {res} but can land on {on}, where the Neuron scheduler "
                        f"only allocates 1, 4, 8 or 16 connected devices"
                    )
                    yield RULE.finding(obj, _where(c, res), msg)
        if "core" in seen and "device" in seen:
            first, (c, res, n) = list(seen.values())[:2]
            other = first
            msg = f"pod mixes {other[1]} and {res} requests; request either whole devices or cores, not both"
            yield RULE.finding(obj, _where(c, res), msg)
