"""
## What it does
Checks EFA and NCCL environment variables against the pod's EFA request. Variables are
read from `env`, from ConfigMaps in `envFrom`, and from ConfigMap scripts the command
sources (`source /etc/nccl/nccl-env.sh` with that file mounted from a ConfigMap).

- (a) `FI_PROVIDER=efa`, `NCCL_NET=ofi` (or `AWS Libfabric`) or any `FI_EFA_*` variable in
  a multi-pod workload where no pod requests `vpc.amazonaws.com/efa` (warning).
- (b) EFA is requested, but the environment pins knobs the AWS EFA cheat sheet says to drop
  on current stacks (info): `NCCL_PROTO=simple` and `FI_PROVIDER=efa` (only for
  aws-ofi-nccl <= 1.5.0), `FI_EFA_USE_DEVICE_RDMA=1` (not needed on libfabric >= 1.18 /
  aws-ofi-nccl >= 1.7), `NCCL_BUFFSIZE` and `NCCL_MIN_CHANNELS` (leave at the default; the
  cheat sheet's spelling, read together with NCCL's own `NCCL_MIN_NCHANNELS`),
  and any `RDMAV_*` ("do not use"). `NCCL_ALGO` is not listed. Those version gates are for
  NCCL on GPUs: a Trainium or Inferentia workload (Neuron devices, no GPU) keeps
  `FI_PROVIDER=efa` and `FI_EFA_USE_DEVICE_RDMA=1`, which the Neuron SDK's multi-node
  recipes set for its collectives.

Severity: info for a variable that is obsolete with the installed plugin or libfabric (it
does nothing on EFA pods); a warning for a mismatch.

## Why is this bad?
Without an EFA device in the pod, NCCL finds no libfabric provider and silently falls back
to TCP sockets: the job runs, at a fraction of the bandwidth, and the EFA settings make it
look configured. On an EFA pod, the old pins cost performance on current aws-ofi-nccl:
`NCCL_PROTO=simple` disables the LL/LL128 protocols, extra channels split messages so
small that EFA starves, and `RDMAV_FORK_SAFE=1` can break things on newer kernels.

## Example
```yaml
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: llama-pretrain
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers:
            - name: pytorch
              image: nvcr.io/nvidia/pytorch:24.07-py3
              env:
                - name: FI_PROVIDER
                  value: efa
                - name: FI_EFA_USE_DEVICE_RDMA
                  value: "1"
              resources:
                limits:
                  nvidia.com/gpu: 8
```

## Use instead
```yaml
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: llama-pretrain
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers:
            - name: pytorch
              image: nvcr.io/nvidia/pytorch:24.07-py3
              resources:
                limits:
                  nvidia.com/gpu: 8
                  vpc.amazonaws.com/efa: 32
                  hugepages-2Mi: 5120Mi
                  memory: 512Gi
```

## Options
None.

## Fix
Unsafe, for (b) variables set literally in `env`: removes the variable (review it first if
the image ships aws-ofi-nccl 1.5 or older). Variables from ConfigMaps are reported at the
`envFrom` entry or the `source` command, without a fix. For (a) there is no fix: request
`vpc.amazonaws.com/efa` (see `efa-count-below-instance-max`) or drop the EFA settings.
Images whose tag names aws-ofi-nccl 1.5 or older are not flagged for the pins they need.

## References
- https://github.com/aws-samples/awsome-distributed-training/blob/main/1.architectures/efa-cheatsheet.md
- https://docs.aws.amazon.com/eks/latest/userguide/node-efa.html
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, FixAvailability, K8sObject, Path, Severity, as_dict, as_list, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.extract import (
    GPU_RESOURCES,
    NEURON_RESOURCES,
    POD_KINDS,
    Container,
    PodTemplate,
    pod_accelerators,
    pod_templates,
    shell_split,
)
from ailint.domain.storage import mount_for_path, volume_for_mount
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="NET003",
    name="efa-nccl-env-mismatch",
    severity=Severity.WARNING,
    summary="EFA/NCCL environment variables contradict the pod's EFA request or pin obsolete knobs",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("efa", "nccl", "network", "training"),
)

EFA = "vpc.amazonaws.com/efa"
_OFI_VERSION = lazy_re(r"ofi[-_]?nccl[-_:v]*(\d+)\.(\d+)", re.I)
_EXPORT = lazy_re(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


@dataclass(slots=True)
class EnvVar:
    """An environment variable as the container gets it, with where it is set."""

    name: str
    value: str | None
    path: Path  # where to point
    literal_index: int | None  # index in `env` when set literally
    source: str  # "env", "ConfigMap x", "script x"


def _strip(v: str) -> str:
    v = v.strip()
    try:
        parts = shell_split(v)
    except ValueError:
        return v.strip("'\"")
    return parts[0] if parts else ""


def _env(ctx: Any, pod: PodTemplate, c: Container) -> list[EnvVar]:
    out: list[EnvVar] = []
    ns = pod.obj.namespace_or_default
    for i, e in iter_dicts(c.data.get("env")):
        name = e.get("name")
        if isinstance(name, str):
            v = e.get("value")
            out.append(
                EnvVar(
                    name, None if v is None else str(v), c.path_of("env", i, "name"), i if "value" in e else None, "env"
                )
            )
    for i, ef in iter_dicts(c.data.get("envFrom")):
        ref = as_dict(ef.get("configMapRef"))
        cm = ctx.named("ConfigMap", ref.get("name"), namespace=ns, near=pod.obj) if ref else None
        if cm is None:
            continue
        prefix = str(ef.get("prefix") or "")
        for k, v in as_dict(cm.data.get("data")).items():
            out.append(
                EnvVar(
                    prefix + str(k),
                    None if v is None else str(v),
                    c.path_of("envFrom", i),
                    None,
                    ctx.describe(cm),
                )
            )
    toks = c.tokens
    # `mpirun -x NAME=value` sets NAME on every rank; `-x NAME` exports the launcher's value
    if any(t.rsplit("/", 1)[-1] in ("mpirun", "mpiexec") for t in toks):
        known = {v.name: v.value for v in out}
        for j, t in enumerate(toks[:-1]):
            if t != "-x":
                continue
            name, eq, val = toks[j + 1].partition("=")
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                continue
            value = _strip(val) if eq else known.get(name)
            if not eq and name in known:
                continue  # the container's own env entry, already counted
            out.append(EnvVar(name, value, _token_path(c, toks[j + 1]), None, "mpirun -x"))
    # scripts sourced from a ConfigMap volume
    for j, t in enumerate(toks):
        if t not in ("source", ".") or j + 1 >= len(toks) or not toks[j + 1].startswith("/"):
            continue
        target = toks[j + 1].rstrip(";")
        mount = mount_for_path(c, target)
        vol = volume_for_mount(pod, mount)
        if not vol or not isinstance(vol.get("configMap"), dict):
            continue
        cm = ctx.named("ConfigMap", vol["configMap"].get("name"), namespace=ns, near=pod.obj)
        if cm is None:
            continue
        rel = target[len(str(mount.get("mountPath")).rstrip("/")) + 1 :] if mount else ""
        if mount and mount.get("subPath"):
            rel = str(mount.get("subPath"))
        key = rel
        for _, item in iter_dicts(vol["configMap"].get("items")):
            if item.get("path") == rel:
                key = str(item.get("key"))
        script = as_dict(cm.data.get("data")).get(key)
        if not isinstance(script, str):
            continue
        where = _token_path(c, target)
        for line in script.splitlines():
            m = _EXPORT.match(line)
            if m:
                out.append(EnvVar(m.group(1), _strip(m.group(2)), where, None, f"{target} of {ctx.describe(cm)}"))
    return out


def _token_path(c: Container, needle: str) -> Path:
    for key in ("args", "command"):
        for i, tok in enumerate(as_list(c.data.get(key))):
            if isinstance(tok, str) and needle in tok:
                return c.path_of(key, i)
    return c.path_of("command") if "command" in c.data else c.path


def _is_efa_intent(v: EnvVar) -> bool:
    val = (v.value or "").strip().lower()
    if v.name == "FI_PROVIDER":
        return val == "efa"
    if v.name == "NCCL_NET":
        return val in ("ofi", "aws libfabric")
    return v.name.startswith("FI_EFA_")


def _obsolete(v: EnvVar, ofi: tuple[int, int] | None, neuron: bool = False) -> str | None:
    """Why this variable should be dropped on an EFA pod (None: keep it)."""
    val = (v.value or "").strip().lower()
    old15 = ofi is not None and ofi <= (1, 5)
    old16 = ofi is not None and ofi <= (1, 6)
    if v.name == "NCCL_PROTO" and val == "simple" and not old15:
        return "is only needed for aws-ofi-nccl <= 1.5.0 and disables NCCL's LL/LL128 protocols"
    # The cheat sheet's version gates are for NVIDIA NCCL with aws-ofi-nccl on p4/p5; the
    # Neuron SDK's own multi-node recipes (Trainium/Inferentia) still export FI_PROVIDER=efa
    # and FI_EFA_USE_DEVICE_RDMA=1 for Neuron collectives, so those pods keep them.
    if v.name == "FI_PROVIDER" and val == "efa" and not old15 and not neuron:
        return "is only needed for aws-ofi-nccl <= 1.5.0"
    if v.name == "FI_EFA_USE_DEVICE_RDMA" and val == "1" and not old16 and not neuron:
        return "is not needed on libfabric >= 1.18 / aws-ofi-nccl >= 1.7"
    if v.name in ("NCCL_BUFFSIZE", "NCCL_MIN_CHANNELS", "NCCL_MIN_NCHANNELS"):
        return "should be left at NCCL's default on EFA"
    if v.name.startswith("RDMAV_"):
        if v.name not in _RDMA_CORE_VARIABLES:
            import difflib

            near = difflib.get_close_matches(v.name, _RDMA_CORE_VARIABLES, n=1, cutoff=0.85)
            if near:
                return f"is no rdma-core variable (a misspelling of {near[0]}?), so it does nothing"
        return "is an rdma-core knob the EFA cheat sheet says not to use (prefer FI_EFA_FORK_SAFE)"
    return None


# What libibverbs reads (rdma-core libibverbs/init.c `ibverbs_init`; libfabric's EFA provider)
_RDMA_CORE_VARIABLES = ("RDMAV_FORK_SAFE", "RDMAV_HUGEPAGES_SAFE")


def _requests_efa(pod: PodTemplate) -> bool:
    """EFA in requests or limits with any value but 0 (placeholders such as
    `PLACEHOLDER_NUM_EFA` count: the author meant EFA)."""
    for c in pod.containers():
        for which in ("requests", "limits"):
            v = c.resources(which).get(EFA)
            if v is not None and str(v).strip() not in ("0", ""):
                return True
    return False


def _neuron_only(pods: list[PodTemplate]) -> bool:
    """Some pod requests AWS Neuron devices and none a GPU: a Trainium/Inferentia workload
    (its launcher or head included)."""
    held = {r for pod in pods for r, n in pod_accelerators(pod).items() if n}
    return any(r in NEURON_RESOURCES for r in held) and not any(r in GPU_RESOURCES for r in held)


def _ofi_version(c: Container) -> tuple[int, int] | None:
    m = _OFI_VERSION.search(c.image)
    return (int(m.group(1)), int(m.group(2))) if m else None


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    pods = list(pod_templates(obj))
    if not pods:
        return
    efa_anywhere = any(_requests_efa(p) for p in pods)
    neuron = _neuron_only(pods)
    counts = [p.replicas for p in pods]
    known = [n for n in counts if n is not None]
    total = sum(known) if len(known) == len(counts) else None
    if not efa_anywhere and (total is None or total < 2):
        return  # one pod without EFA: no environment to judge (asked before any is read)
    for pod in pods:
        for c in pod.containers():
            env = _env(ctx, pod, c)
            if not env:
                continue
            if not efa_anywhere:
                hits = [v for v in env if _is_efa_intent(v)]
                if hits:
                    v = hits[0]
                    names = ", ".join(sorted({h.name for h in hits}))
                    src = "" if v.source == "env" else f" (from {v.source})"
                    yield RULE.finding(
                        obj,
                        v.path,
                        f"container {c.name} sets {names}{src} but no pod of this "
                        f"{obj.kind} requests {EFA}; NCCL silently falls back to "
                        "TCP sockets between nodes",
                    )
                continue
            ofi = _ofi_version(c)
            literal = [v for v in env if v.literal_index is not None]
            drop = {v.literal_index for v in literal if _obsolete(v, ofi, neuron)}
            all_env = len(as_list(c.data.get("env")))
            for v in env:
                why = _obsolete(v, ofi, neuron)
                if why is None:
                    continue
                shown = f"{v.name}={v.value}" if v.value not in (None, "") else v.name
                src = "" if v.source == "env" else f" (from {v.source})"
                fix = None
                if v.literal_index is not None:
                    edit = (
                        edits.delete_key(obj, c.path_of("env"))
                        if len(drop) == all_env and all_env > 0
                        else edits.delete_item(obj, c.path_of("env"), v.literal_index)
                    )
                    fix = make_fix(f"remove {v.name}", [edit], unsafe=True)
                yield RULE.finding(
                    obj, v.path, f"{shown}{src} {why}; drop it on EFA pods", severity=Severity.INFO, fix=fix
                )
