"""
## What it does
Finds Karpenter NodePools that can launch exactly one instance type: a
`node.kubernetes.io/instance-type In [<one type>]` requirement (requirements are ANDed, so
no other requirement can add types back), or a Spot-only pool whose family and size
requirements resolve to a single type of the accelerator table. Pools on reserved capacity
(`karpenter.sh/capacity-type: reserved`, capacity-reservation requirements) are skipped:
ODCRs and Capacity Blocks are bought for one type.

## Why is this bad?
When that one type has no capacity in the pool's zones (common for GPU types, and
routine for Spot), every pod that needs the pool stays Pending: there is nothing to fall
back to. Allowing a range (same GPU or more GPU memory through `instance-gpu-name` and
`instance-gpu-memory`, or a few sizes and families) keeps scale-out working; pin a type
only where GPU memory is a hard constraint.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: node.kubernetes.io/instance-type
          operator: In
          values: ["g6e.2xlarge"]
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
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: karpenter.k8s.aws/instance-gpu-name
          operator: In
          values: ["l40s", "h100"]
        - key: karpenter.k8s.aws/instance-gpu-count
          operator: In
          values: ["1"]
```

## Options
- `max_alternatives` (integer, default 4): how many alternative types the fix adds.

## Fix
Unsafe, for types in the accelerator table: adds the nearest alternatives with the same
number of GPUs (of any model: the spec's "same or more GPU memory") or of Neuron devices
of the same chip, and at least the same memory per device, vCPUs, RAM and EFA interfaces;
a multi-GPU P type (NVLink/NVSwitch) gets only P types, never a PCIe-only G type; types
with the same accelerator model come first. For example g6e.2xlarge (1 L40S) gets g6e.4xlarge,
g6e.8xlarge, g6e.16xlarge and p5.4xlarge (1 H100); the message names the other GPU models.
Review the cost before applying.

## References
- https://karpenter.sh/docs/concepts/nodepools/#spectemplatespecrequirements
- https://aws.amazon.com/blogs/containers/ (Ramp: a g6e.2xlarge-only capacity provider as a single point of failure)
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Edit, Finding, Fix, FixAvailability, K8sObject, Severity
from ailint.core.rule import Option, Options, Rule, make_fix
from ailint.domain import instances, karpenter
from ailint.domain.context import Context
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="KRP001",
    name="nodepool-single-instance-type",
    severity=Severity.WARNING,
    summary="A NodePool allows a single instance type, so one capacity shortage blocks all scale-out",
    kinds=("karpenter.sh/NodePool",),
    fix=FixAvailability.SOMETIMES,
    options={"max_alternatives": Option(4, "alternative instance types the fix adds", "integer")},
    tags=("karpenter", "availability"),
)


def alternatives(type_name: str, limit: int) -> list[str]:
    """Table types that can replace `type_name`: the same number of GPUs (any GPU model) or of
    Neuron devices of the same chip (a model compiled for one Neuron generation does not run
    on another), with at least the same memory per device, vCPUs, RAM and EFA interfaces,
    and NVLink-joined GPUs where the original has them; the same accelerator model first,
    then the nearest size."""
    it = instances.get(type_name)
    if it is None:
        return []
    out = []
    for other in instances.table().values():
        if other.type == it.type or other.is_gpu != it.is_gpu or other.count != it.count:
            continue
        if not it.is_gpu and other.accelerator_name != it.accelerator_name:
            continue
        if _nvlinked(it) and not _nvlinked(other):
            continue  # GPUs joined by NVLink/NVSwitch: a PCIe-only type would slow collectives
        if (
            other.memory_mib_per_device < it.memory_mib_per_device
            or other.vcpu < it.vcpu
            or other.memory_gib < it.memory_gib
            or other.efa_max < it.efa_max
        ):
            continue
        out.append(other)
    out.sort(key=lambda o: (_model(o) != _model(it), o.vcpu, o.memory_gib, o.memory_mib_per_device, o.type))
    return [o.type for o in out[: max(limit, 0)]]


def _nvlinked(it: Any) -> bool:
    """Several GPUs joined by NVLink/NVSwitch: EC2's P families (p3 to p6), unlike the G
    families, whose GPUs talk over PCIe. Training sized for one does not fit the other."""
    return it.is_gpu and it.count > 1 and it.family.startswith("p")


def _model(it: Any) -> str:
    """The accelerator model as Karpenter labels it (`a100`, `l40s`, `inferentia2`)."""
    return it.gpu_name or it.accelerator_name or ""


def _hint(single: str, alts: list[str]) -> str:
    """What the alternatives share with `single`, true for every one the fix adds: a type
    with another accelerator model is named with it (`p5.4xlarge (H100)`)."""
    it = instances.get(single)
    if it is None or not alts:
        return "allow a range of families or sizes"
    names = []
    for a in alts[:4]:
        o = instances.get(a)
        model = _model(o) if o is not None else ""
        same = model == _model(it)
        names.append(a if same or not model else f"{a} ({model.upper() if o is not None and o.is_gpu else model})")
    more = f" and {len(alts) - 4} more" if len(alts) > 4 else ""
    gib = round(it.memory_mib_per_device / 1024, 2)
    unit = (
        ("GPU" if it.count == 1 else "GPUs")
        if it.is_gpu
        else f"{it.accelerator_name} device{'s' if it.count > 1 else ''}"
    )
    verb = "has" if len(alts) == 1 else "have"
    return f"{', '.join(names)}{more} also {verb} {it.count} {unit} with >= {gib:g} GiB"


def _fix(obj: Any, index: int, single: str, alts: list[str]) -> Fix | None:
    vpath = ("spec", "template", "spec", "requirements", index, "values")
    title = "also allow " + ", ".join(alts)
    if edits.is_flow(obj, vpath):
        p = obj.value_span(vpath)
        quoted = '"' in obj.source.line_text(p.line)
        text = (
            "[" + ", ".join(edits.quoted(v) for v in [single, *alts]) + "]" if quoted else edits.inline([single, *alts])
        )
        return make_fix(title, [edits.replace_value(obj, vpath, text)], unsafe=True)
    parts = [edits.append_item(obj, vpath, a) for a in alts]
    built = [p for p in parts if p is not None]
    if not parts or len(built) != len(parts):
        return None
    return make_fix(
        title,
        [Edit(built[0].start, built[0].end, "".join(p.content for p in built))],
        unsafe=True,
    )


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if karpenter.uses_reserved_capacity(obj):
        return
    ct = karpenter.capacity_types(obj)
    spot_only = ct == ("spot",)
    spot = " (Spot only)" if spot_only else ""
    req = karpenter.instance_type_requirement(obj)
    if req is not None:
        index, _, values = req
        if len(set(values)) != 1:
            return
        single = values[0]
        limit = opts.get_int("max_alternatives")
        alts = alternatives(single, limit)
        yield RULE.finding(
            obj,
            ("spec", "template", "spec", "requirements", index, "values"),
            f"NodePool {obj.name!r} allows only {single}{spot}: a capacity shortage blocks every "
            f"pending pod; {_hint(single, alts)}",
            fix=_fix(obj, index, single, alts) if alts else None,
        )
        return
    if spot_only:
        resolved = karpenter.single_type_family_resolution(obj)
        if resolved:
            yield RULE.finding(
                obj,
                ("spec", "template", "spec", "requirements"),
                f"NodePool {obj.name!r} is Spot-only and its family and size requirements resolve to "
                f"{resolved} alone: a Spot shortage of that one type blocks every pending pod",
            )
