"""
## What it does
Flags serving images on a base that will not get fixes:

- (a) an AWS Deep Learning Container for vLLM or SGLang (registry
  `763104351884.dkr.ecr.<region>.amazonaws.com` or `public.ecr.aws/deep-learning-containers/`)
  whose tag names an Ubuntu base (`...-ubuntu22.04-...`);
- (b) a TorchServe image (`pytorch/torchserve*`, or a DLC repository with `torchserve` in
  its name), in pods and in KServe `ServingRuntime`/`ClusterServingRuntime` containers.

The registry patterns and the tag pattern are data (`linter/data/serving.json`), since
DLC naming changes.

## Why is this bad?
AWS cannot guarantee security patches for the Ubuntu-based vLLM and SGLang DLCs and
recommends the Amazon Linux 2023 images. TorchServe is in limited maintenance with no
new releases, so CVEs in it and its dependencies stay open. Either way the serving tier
runs on a base whose vulnerabilities will not be fixed.

## Example
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: vllm
spec:
  containers:
    - name: vllm
      image: 763104351884.dkr.ecr.us-west-2.amazonaws.com/vllm:0.9.2-gpu-py312-cu128-ubuntu22.04-ec2
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
      image: 763104351884.dkr.ecr.us-west-2.amazonaws.com/vllm:server-cuda-v1.3
```

## Options
None.

## Fix
None: choose the Amazon Linux 2023 DLC of the same engine (for vLLM the `server-cuda-v*`
tags), or move a
TorchServe model to vLLM, Ray Serve or Triton.

## References
- https://docs.aws.amazon.com/deep-learning-containers/latest/devguide/
- https://aws.github.io/deep-learning-containers/vllm/
- https://github.com/pytorch/serve
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, iter_dicts
from ailint.core.rule import Options, Rule
from ailint.domain import serving
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, all_containers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SRV003",
    name="serving-image-unsupported-base",
    severity=Severity.WARNING,
    summary="A serving image is an Ubuntu-based vLLM/SGLang DLC or TorchServe, which will not get security fixes",
    kinds=(*POD_KINDS, "ServingRuntime", "ClusterServingRuntime"),
    fix=FixAvailability.NEVER,
    tags=("serving", "images", "security"),
)


def _containers(obj: Any) -> Iterator[tuple[tuple, dict[str, Any]]]:
    if obj.kind in ("ServingRuntime", "ClusterServingRuntime"):
        for i, c in iter_dicts(obj.get("spec", "containers")):
            yield ("spec", "containers", i), c
        return
    for cont in all_containers(obj):
        yield cont.path, cont.data


@cache
def _ubuntu_tag() -> re.Pattern[str]:
    """The DLC tag that names an Ubuntu base (compiled once, not once per object)."""
    return re.compile(serving.data()["dlc_ubuntu_tag"], re.I)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    ubuntu = _ubuntu_tag()
    for path, data in _containers(obj):
        image = data.get("image")
        ref = serving.parse_image(image)
        if ref is None:
            continue
        name = data.get("name") or "<unnamed>"
        engine = serving.dlc_engine(ref)
        if engine in ("vllm", "sglang", "vllm-omni") and ref.tag and ubuntu.search(ref.tag):
            yield RULE.finding(
                obj,
                path + ("image",),
                f"{engine} DLC image of container {name} is Ubuntu-based ({ref.tag}); AWS does not guarantee "
                f"security patches for it: use the Amazon Linux 2023 {engine} DLC"
                + (" (server-cuda tags)" if engine == "vllm" else ""),
                anchor="value",
            )
        elif serving.is_torchserve(ref):
            yield RULE.finding(
                obj,
                path + ("image",),
                f"container {name} runs TorchServe ({image}), which is no longer maintained; serve the model "
                "with vLLM, Ray Serve or Triton",
                anchor="value",
            )
