"""
## What it does
Compares the GPU memory a KAITO inference preset needs with the GPU memory of the nodes a
`Workspace` (or `InferenceSet`) asks for: `resource.count` (default 1) nodes of
`resource.instanceType`.

- The preset's size is KAITO's own (`TotalSafeTensorFileSize`, the weights, in the
  preset's `model.go`; a few older presets only state `TotalGPUMemoryRequirement`); the
  node's GPU memory is KAITO's SKU table for Azure sizes, the EC2 table for AWS GPU types.
- A preset that does not fit the GPU memory of one node, and that KAITO cannot spread over
  several nodes (`SupportDistributedInference` false), is an error: no node count helps.
- A warning when KAITO can distribute the preset but it does not fit `count` nodes. KAITO's
  node estimator sizes the node count from the model and provisions more nodes than
  `count` says (releases before it reject the Workspace instead).

Presets and instance types outside these tables, custom pod templates, tuning workspaces
and GPU partitions (MIG, BYO nodes without an instance type) are not judged.

## Why is this bad?
The weights alone do not fit: vLLM fails to load the model after KAITO has provisioned the
GPU node and downloaded the checkpoint, or KAITO's estimator refuses the workspace ("models
with disabled support distributed inference cannot be distributed across more than 1 GPU
node"). For a distributed preset, the node count in the manifest understates the GPU nodes,
and the bill, that KAITO will create.

## Example
```yaml
apiVersion: kaito.sh/v1beta1
kind: Workspace
metadata:
  name: workspace-qwen-coder-32b
resource:
  instanceType: Standard_NV36ads_A10_v5
  labelSelector:
    matchLabels:
      apps: qwen-coder
inference:
  preset:
    name: qwen2.5-coder-32b-instruct
```

## Use instead
```yaml
apiVersion: kaito.sh/v1beta1
kind: Workspace
metadata:
  name: workspace-qwen-coder-32b
resource:
  instanceType: Standard_NC24ads_A100_v4
  labelSelector:
    matchLabels:
      apps: qwen-coder
inference:
  preset:
    name: qwen2.5-coder-32b-instruct
```

## Options
None.

## Fix
None: pick an instance type with more GPU memory (the message names the preset's size),
or, for a distributed preset, set `count` to the nodes it needs.

## References
- https://github.com/kaito-project/kaito/blob/main/pkg/workspace/estimator/nodesestimator/estimator.go
- https://github.com/kaito-project/kaito/blob/main/api/v1beta1/workspace_validation.go
- https://github.com/kaito-project/kaito/blob/main/pkg/sku/azure_sku_handler.go
- https://github.com/kaito-project/kaito/tree/main/presets/workspace/models
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from ailint.core.model import Finding, K8sObject, Severity, as_dict
from ailint.core.rule import Options, Rule
from ailint.domain.context import Context
from ailint.domain.quantities import to_int
from ailint.domain.workloads import kaito

RULE = Rule(
    code="GPU009",
    name="kaito-preset-exceeds-gpu-memory",
    severity=Severity.ERROR,
    summary="A KAITO preset needs more GPU memory than resource.count nodes of resource.instanceType have",
    kinds=("kaito.sh/Workspace", "kaito.sh/InferenceSet"),
    tags=("gpu", "kaito", "serving"),
    precision="high",
)


def _gib(x: float) -> str:
    return f"{x:.0f}" if abs(x - round(x)) < 0.05 else f"{x:.1f}"


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    paths = kaito.inference_preset_paths(obj)
    if paths is None:
        return
    res_path, preset_path = paths
    res = as_dict(obj.get(*res_path))
    name = as_dict(obj.get(*preset_path)).get("name")
    need = kaito.preset_need(name)
    node = kaito.node_gpus(res.get("instanceType"))
    if need is None or node is None or as_dict(res.get("partition")):
        return
    count = to_int(res["count"]) if "count" in res else 1
    if count is None or count < 1:
        return
    itype = res["instanceType"]
    gpus = f"{node.count} {node.model}"
    if need.gib > node.gib and not need.distributed:
        yield RULE.finding(
            obj,
            preset_path + ("name",),
            f"preset {name} needs {_gib(need.gib)} GiB of GPU memory but one {itype} has {_gib(node.gib)} GiB "
            f"({gpus}), and KAITO cannot spread it over nodes: use a larger instance type",
            anchor="value",
        )
        return
    total = count * node.gib
    if need.gib > total and need.distributed:
        nodes = math.ceil(need.gib / node.gib)
        where = res_path + ("count",) if "count" in res else res_path + ("instanceType",)
        yield RULE.finding(
            obj,
            where,
            f"preset {name} needs {_gib(need.gib)} GiB of GPU memory but count {count} x {itype} has "
            f"{_gib(total)} GiB: KAITO provisions at least {nodes} nodes (older releases reject it)",
            severity=Severity.WARNING,
            anchor="value",
        )
