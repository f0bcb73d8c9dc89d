"""
## What it does
Checks that every extended resource a container requests (`nvidia.com/gpu`,
`aws.amazon.com/neuron*`, `vpc.amazonaws.com/efa`, `hugepages-*`) is also set in `limits`
with the same value, and that accelerator quantities are whole numbers.

## Why is this bad?
Extended resources cannot be overcommitted: Kubernetes requires them in `limits`, and a
request must equal its limit. The API server rejects the pod (or the controller's pods,
long after the Deployment was accepted), so the workload never starts. A fractional GPU
(`0.5`) is rejected the same way; sharing goes through MIG or time-slicing resource names.

## Example
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: vllm
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.9.2
      resources:
        requests:
          nvidia.com/gpu: 1
```

## Use instead
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: vllm
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.9.2
      resources:
        requests:
          nvidia.com/gpu: 1
        limits:
          nvidia.com/gpu: 1
```

## Options
None.

## Fix
Safe: copies the request into `limits` (adding `limits` beside `requests` when missing).
A fractional quantity has no fix: choose a whole number or a MIG profile.

## References
- https://kubernetes.io/docs/tasks/manage-gpus/scheduling-gpus/
- https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#extended-resources
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity
from ailint.core.rule import Options, Rule, make_fix
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, all_containers
from ailint.domain.kserve import preset_supplies
from ailint.domain.quantities import parse_quantity
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="GPU002",
    name="gpu-request-without-limit",
    severity=Severity.ERROR,
    summary="An extended resource (GPU, Neuron, EFA, hugepages) is requested but not limited to the same value",
    kinds=POD_KINDS,
    fix=FixAvailability.SOMETIMES,
    tags=("gpu", "resources"),
    precision="very-high",
)

_PREFIXES = ("nvidia.com/", "amd.com/", "aws.amazon.com/neuron", "vpc.amazonaws.com/efa", "hugepages-")
_WHOLE = ("nvidia.com/", "amd.com/", "aws.amazon.com/neuron", "vpc.amazonaws.com/efa")


def _is_extended(name: str) -> bool:
    return name.startswith(_PREFIXES)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for c in all_containers(obj):
        requests, limits = c.resources("requests"), c.resources("limits")
        for res, value in list(requests.items()) + [(k, v) for k, v in limits.items() if k not in requests]:
            if not _is_extended(str(res)):
                continue
            q = parse_quantity(value)
            where = "requests" if res in requests else "limits"
            path = c.path_of("resources", where, res)
            if res.startswith(_WHOLE) and q is not None and not q.is_integer():
                yield RULE.finding(
                    obj,
                    path,
                    f"{res} is {value}: accelerators are whole devices; use an integer or a MIG/time-slicing resource",
                )
                continue
            if where == "limits":
                continue
            if res not in limits:
                if preset_supplies(c, "resources"):
                    continue  # an LLMInferenceService config the run may not show can set the limit
                yield RULE.finding(
                    obj,
                    path,
                    f"{res} is requested ({value}) but not limited; extended resources must be set in limits",
                    fix=_copy_to_limits(obj, c, res, value),
                )
            elif parse_quantity(limits[res]) != q:
                yield RULE.finding(
                    obj,
                    path,
                    f"{res} request ({value}) differs from its limit ({limits[res]}); they must be equal",
                    fix=make_fix(
                        f"set the request to the limit ({limits[res]})",
                        [edits.replace_value(obj, path, edits.scalar(limits[res]))],
                    ),
                )


def _copy_to_limits(obj: Any, c: Any, res: str, value: Any) -> Fix | None:
    limits_path = c.path_of("resources", "limits")
    current = obj.get(*limits_path)
    if isinstance(current, dict) and current and not edits.is_flow(obj, limits_path):
        edit = edits.insert_value(obj, limits_path, res, value)
    elif obj.has(limits_path):
        merged = {**(current if isinstance(current, dict) else {}), res: value}
        edit = edits.replace_value(obj, limits_path, edits.inline(merged))
    else:
        edit = edits.insert_value(obj, c.path_of("resources"), "limits", {res: value})
    return make_fix("copy the request into limits", [edit])
