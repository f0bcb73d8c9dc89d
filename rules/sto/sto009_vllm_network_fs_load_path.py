"""
## What it does
Finds vLLM containers whose `--model` path, `--download-dir` (or Hugging Face cache, for a
Hub id) sits on a network file system: a PersistentVolumeClaim on FSx for Lustre
(`fsx.csi.aws.com`), EFS (`efs.csi.aws.com`) or an NFS provisioner, or an inline `nfs`/CSI
volume. It fires when:

- (a) the load path is the default lazy mmap: no `--load-format` of `instanttensor`,
  `runai_streamer`, `tensorizer` or `fastsafetensors`, and no `--safetensors-load-strategy`
  `eager` or `prefetch` (info; skipped for vLLM images older than 0.11, which lack the flag);
- (b) the pod shows GPUDirect Storage intent on FSx (`CUFILE_*` env, nvidia-fs or cuFile
  host paths) and loads with `--load-format fastsafetensors` at tensor parallelism > 1
  (warning).

Severity: warning when vLLM loads with fastsafetensors over GPUDirect Storage at tensor
parallelism above 1 (that split falls back to the CPU path).

## Why is this bad?
safetensors' default memory-mapped loading reads weights in small random chunks. On local
NVMe that is fast; on Lustre or NFS every page fault is a network round trip and a 70B
model can take many minutes to load. vLLM documents `eager` as the strategy for network
file systems, and InstantTensor as the distributed, direct-I/O loader. With GDS on FSx,
only InstantTensor keeps the GPUDirect path when weights are split across GPUs; the other
GDS loader falls back to the CPU path with a tensor-parallel split, silently, and the
expensive FSx throughput buys little.

## Example
```yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fsx
provisioner: fsx.csi.aws.com
parameters:
  subnetId: subnet-0123456789abcdef0
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: models
spec:
  accessModes: [ReadWriteMany]
  storageClassName: fsx
  resources:
    requests:
      storage: 1200Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: vllm
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.11.0
      args: [--model, /models/llama-3.1-70b, --tensor-parallel-size, "4"]
      volumeMounts:
        - {name: models, mountPath: /models}
  volumes:
    - name: models
      persistentVolumeClaim:
        claimName: models
```

## Use instead
```yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fsx
provisioner: fsx.csi.aws.com
parameters:
  subnetId: subnet-0123456789abcdef0
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: models
spec:
  accessModes: [ReadWriteMany]
  storageClassName: fsx
  resources:
    requests:
      storage: 1200Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: vllm
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.11.0
      args: [--model, /models/llama-3.1-70b, --tensor-parallel-size, "4", --safetensors-load-strategy, eager]
      volumeMounts:
        - {name: models, mountPath: /models}
  volumes:
    - name: models
      persistentVolumeClaim:
        claimName: models
```

## Options
None.

## Fix
Unsafe, when the flags are plain `args` items: (a) appends `--safetensors-load-strategy=eager`
(it needs CPU RAM for the whole checkpoint; review the memory limit); (b) sets
`--load-format` to `instanttensor`, which needs a vLLM release that ships it.

## References
- https://github.com/vllm-project/vllm/blob/main/vllm/config/load.py (`safetensors_load_strategy`, `instanttensor`)
- https://github.com/vllm-project/vllm/pull/24469
- https://docs.aws.amazon.com/fsx/latest/LustreGuide/performance.html
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_list, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, flag_token_index, flag_value, model_id, pod_templates, serving_engine
from ailint.domain.storage import is_hub_id, mount_for_path, network_fs_of_volume, volume_for_mount
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="STO009",
    name="vllm-network-fs-load-path",
    severity=Severity.INFO,
    summary="vLLM loads weights from a network file system with the default lazy mmap path",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("storage", "model-loading", "vllm", "fsx"),
)

_FAST = ("instanttensor", "runai_streamer", "runai_streamer_sharded", "tensorizer", "fastsafetensors")
_GDS_PATHS = ("/run/nvidia-fs", "/etc/cufile.json", "/usr/local/cuda/gds", "/dev/nvidia-fs")
_VERSION = lazy_re(r":v?(\d+)\.(\d+)(?:\.(\d+))?")


def _version(image: str, profile: Any) -> tuple[int, int] | None:
    m = _VERSION.search(image)
    if m and "vllm" in image.lower():
        return int(m.group(1)), int(m.group(2))
    v = profile.get("vllmVersion") if profile is not None else None
    m = re.match(r"v?(\d+)\.(\d+)", str(v)) if v else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def _gds_intent(pod: Any, c: Any) -> bool:
    if any(str(e.get("name", "")).startswith("CUFILE_") for e in c.env):
        return True
    for _, v in iter_dicts(pod.spec.get("volumes")):
        hp = v.get("hostPath")
        path = str(hp.get("path", "")) if isinstance(hp, dict) else ""
        if path.startswith(_GDS_PATHS):
            return True
    return False


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        for c in pod.containers(include_init=False):
            if serving_engine(c) != "vllm":
                continue
            toks = c.tokens
            model = model_id(c)
            ddir = flag_value(toks, "--download-dir")
            paths = [p for p in (ddir, model) if isinstance(p, str) and p.startswith("/")]
            if not paths and is_hub_id(model):
                paths = [c.env_value("HF_HOME") or "/root/.cache/huggingface"]
            fs = None
            for p in paths:
                vol = volume_for_mount(pod, mount_for_path(c, p)) if p else None
                if vol is not None:
                    fs = network_fs_of_volume(ctx, pod, vol)
                    if fs:
                        break
            if not fs:
                continue
            fmt = (flag_value(toks, "--load-format") or "auto").lower()
            strategy = (flag_value(toks, "--safetensors-load-strategy") or "").lower()
            tp_raw = flag_value(toks, "--tensor-parallel-size", "-tp")
            tp = int(tp_raw) if tp_raw and tp_raw.isdigit() else 1
            if fs == "FSx for Lustre" and _gds_intent(pod, c) and fmt == "fastsafetensors" and tp > 1:
                hit = flag_token_index(c.data, "--load-format")
                fix = None
                if hit and hit[0] == "args":
                    items = as_list(c.data.get("args"))
                    i = hit[1]
                    if items[i] == "--load-format" and i + 1 < len(items):
                        fix = make_fix(
                            "load with --load-format instanttensor",
                            [edits.replace_scalar(obj, c.path_of("args", i + 1), "instanttensor")],
                            unsafe=True,
                        )
                    elif str(items[i]).startswith("--load-format="):
                        fix = make_fix(
                            "load with --load-format instanttensor",
                            [edits.replace_scalar(obj, c.path_of("args", i), "--load-format=instanttensor")],
                            unsafe=True,
                        )
                where = c.path_of(*hit) if hit else c.path
                yield RULE.finding(
                    obj,
                    where,
                    f"container {c.name} loads from FSx with GPUDirect Storage via "
                    f"fastsafetensors at tensor parallelism {tp}; that split falls back to "
                    "the CPU path, only --load-format instanttensor keeps GDS",
                    severity=Severity.WARNING,
                    fix=fix,
                )
                continue
            if fmt in _FAST or strategy in ("eager", "prefetch"):
                continue
            ver = _version(c.image, ctx.profile)
            if ver is not None and ver < (0, 11):
                continue
            fix = None
            args = c.data.get("args")
            if (
                isinstance(args, list)
                and args
                and all(isinstance(a, str) for a in args)
                and not any(" " in a for a in args)
            ):
                fix = make_fix(
                    "add --safetensors-load-strategy=eager",
                    [edits.append_item(obj, c.path_of("args"), "--safetensors-load-strategy=eager")],
                    unsafe=True,
                )
            hit = flag_token_index(c.data, "--model", "--download-dir")
            where = c.path_of(*hit) if hit else (c.path_of("args") if "args" in c.data else c.path)
            yield RULE.finding(
                obj,
                where,
                f"container {c.name} loads weights from {fs} with lazy mmap, which does "
                "random reads over the network; add --safetensors-load-strategy eager "
                "(or a streaming --load-format)",
                fix=fix,
            )
