"""
## What it does
Finds GPU workload pods that show GPUDirect Storage (GDS) or FSx for Lustre fast-load signs
and run privileged. The signs are: a PVC on an `fsx.csi.aws.com` StorageClass or
PersistentVolume (or an inline `fsx.csi.aws.com` CSI volume); a hostPath of `/dev`,
`/run/nvidia-fs`, `/etc/cufile.json` or `/usr/local/cuda/gds`; a `CUFILE_*` environment
variable; vLLM `--load-format instanttensor` or `fastsafetensors`; or an image whose name
mentions gds or cufile. It reports each of `securityContext.privileged: true`,
`capabilities.add` with `SYS_ADMIN` or `ALL`, `allowPrivilegeEscalation: true`, and
`hostPID`, `hostIPC` or `hostNetwork: true`.

Node-agent DaemonSets in `gpu-operator`, `kube-system` or `nvidia-*` namespaces are
skipped: that is where the nvidia-fs driver belongs.

## Why is this bad?
GDS needs the `nvidia-fs` kernel module on the node. Samples that build and load it from the
serving pod run that pod privileged, so every model server, and anything that compromises
it, owns the GPU node: host devices, host processes and every other tenant's weights.
`hostIPC` is often added for NCCL shared memory; a `/dev/shm` `emptyDir` with
`medium: Memory` gives the same without sharing the host's IPC namespace.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm-gds
  namespace: inference
spec:
  replicas: 1
  selector:
    matchLabels: {app: vllm-gds}
  template:
    metadata:
      labels: {app: vllm-gds}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "/fsx/llama", "--load-format", "fastsafetensors"]
          securityContext:
            privileged: true
          resources:
            limits:
              nvidia.com/gpu: 1
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm-gds
  namespace: inference
spec:
  replicas: 1
  selector:
    matchLabels: {app: vllm-gds}
  template:
    metadata:
      labels: {app: vllm-gds}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "/fsx/llama", "--load-format", "fastsafetensors"]
          securityContext:
            allowPrivilegeEscalation: false
          resources:
            limits:
              nvidia.com/gpu: 1
```

## Options
None.

## Fix
Unsafe: sets `privileged`, `allowPrivilegeEscalation`, `hostPID` or `hostNetwork` to
`false`. Review before applying: move the nvidia-fs module build and load to the node image
or the GPU Operator (`gds.enabled: true`) first, or the pod loses GDS. No fix for
capabilities or for `hostIPC` (mount a `/dev/shm` `emptyDir` with `medium: Memory` instead).

## References
- https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-rdma.html
- https://docs.nvidia.com/gpudirect-storage/
- https://kubernetes.io/docs/concepts/security/pod-security-standards/
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity, as_dict, as_list
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context, nearest
from ailint.domain.extract import POD_KINDS, flag_value, pod_accelerators, pod_templates, volumes
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SEC002",
    name="privileged-gds-pod",
    severity=Severity.ERROR,
    summary="A GPU pod with GPUDirect Storage or FSx fast-load signs runs privileged or with host namespaces",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("security", "gpu", "storage"),
    precision="high",
    security_severity=8.1,
)

FSX_DRIVER = "fsx.csi.aws.com"
GDS_HOSTPATHS = ("/dev", "/run/nvidia-fs", "/etc/cufile.json", "/usr/local/cuda/gds")
FAST_LOAD_FORMATS = ("instanttensor", "fastsafetensors")
_GDS_IMAGE = lazy_re(r"(^|[^a-z0-9])(gds|cufile|nvidia-fs|gpudirect)([^a-z0-9]|$)", re.I)
_NODE_AGENT_NS = lazy_re(r"^(gpu-operator|kube-system|nvidia-.*|nvidia)$")


def _fsx_claims(ctx: Any, namespace: str) -> dict[str, list[tuple[Any, str | None]]]:
    """PVC name -> each copy of that claim in `namespace` with how it reaches FSx (None: it
    does not), for `nearest` to choose the copy a pod beside it mounts (once per run and
    namespace: every privileged pod of the namespace asks)."""
    got: dict[str, list[tuple[Any, str | None]]] = ctx.memo(
        ("SEC002.fsx_claims", namespace), lambda: _find_fsx_claims(ctx, namespace)
    )
    return got


def _find_fsx_claims(ctx: Any, namespace: str) -> dict[str, list[tuple[Any, str | None]]]:
    classes = {sc.name for sc in ctx.of_kind("StorageClass") if sc.get("provisioner") == FSX_DRIVER}
    pvs: dict[str, list[Any]] = {}
    bound: dict[str, list[Any]] = {}  # claim name -> the FSx PersistentVolumes whose claimRef names it
    for pv in ctx.of_kind("PersistentVolume"):
        pvs.setdefault(pv.name, []).append(pv)
        ref = as_dict(pv.get("spec", "claimRef"))
        if (
            pv.get("spec", "csi", "driver") == FSX_DRIVER
            and ref.get("name")
            and (ref.get("namespace") or "default") == namespace
        ):
            bound.setdefault(str(ref["name"]), []).append(pv)
    out: dict[str, list[tuple[Any, str | None]]] = {}
    for pvc in ctx.of_kind("PersistentVolumeClaim"):
        if (pvc.namespace_or_default) != namespace or not pvc.name:
            continue
        sc = pvc.get("spec", "storageClassName")
        vol = pvc.get("spec", "volumeName")
        pv = nearest(pvc, pvs[vol])[0] if isinstance(vol, str) and vol in pvs else None  # (read above)
        how: str | None = None
        if isinstance(sc, str) and sc in classes:
            how = f"FSx {ctx.describe(pvc)} (StorageClass {sc})"
        elif pv is not None and pv.get("spec", "csi", "driver") == FSX_DRIVER:
            how = f"FSx {ctx.describe(pvc)} ({ctx.describe(pv)})"
        elif pvc.name in bound:  # a static FSx volume bound to it by its claimRef
            how = f"FSx PVC {pvc.name} ({ctx.describe(nearest(pvc, bound[pvc.name])[0])})"
        out.setdefault(pvc.name, []).append((pvc, how))
    for name, fsx_pvs in bound.items():
        if name not in out:  # the claim is not in the run: the FSx volume that names it
            out[name] = [(pv, f"FSx PVC {name} ({ctx.describe(pv)})") for pv in fsx_pvs[:1]]
    return out


def gds_signs(obj: Any, pod: Any, ctx: Any) -> list[str]:
    signs: list[str] = []
    fsx = _fsx_claims(ctx, obj.namespace_or_default) if ctx.bundle else {}
    for name, (_, v) in volumes(pod).items():
        claim = as_dict(v.get("persistentVolumeClaim")).get("claimName")
        if isinstance(claim, str) and claim in fsx:
            how = nearest(obj, fsx[claim], lambda copy: copy[0])[0][1]  # (a blueprint's own copy)
            if how is not None:
                signs.append(how)
        if as_dict(v.get("csi")).get("driver") == FSX_DRIVER:
            signs.append(f"inline FSx volume {name}")
        hp = as_dict(v.get("hostPath")).get("path")
        if isinstance(hp, str):
            p = hp.rstrip("/") or "/"
            if any(p == g or (g != "/dev" and p.startswith(g + "/")) for g in GDS_HOSTPATHS):
                signs.append(f"hostPath {hp}")
    for c in pod.containers():
        for e in c.env:
            if str(e.get("name", "")).startswith("CUFILE_"):
                signs.append(f"env {e.get('name')}")
                break
        fmt = flag_value(c.tokens, "--load-format")
        if fmt and fmt.lower() in FAST_LOAD_FORMATS:
            signs.append(f"--load-format {fmt}")
        if _GDS_IMAGE.search(c.image.rsplit("/", 1)[-1]) or _GDS_IMAGE.search(c.image):
            signs.append(f"image {c.image}")
    return list(dict.fromkeys(signs))


def _bool_fix(obj: Any, path: tuple, field: str) -> Fix | None:
    return make_fix(
        f"set {field}: false (load nvidia-fs on the node first)", [edits.replace_value(obj, path, "false")], unsafe=True
    )


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "DaemonSet" and _NODE_AGENT_NS.match(obj.namespace_or_default):
        return
    for pod in pod_templates(obj):
        acc = pod_accelerators(pod)
        if not any(k in acc for k in ("nvidia.com/gpu", "amd.com/gpu")):
            continue
        signs = gds_signs(obj, pod, ctx)
        if not signs:
            continue
        why = signs[0] + (f" +{len(signs) - 1} more" if len(signs) > 1 else "")
        spec = pod.spec
        for field in ("hostPID", "hostIPC", "hostNetwork"):
            if spec.get(field) is True:
                path = pod.path(field)
                if field == "hostIPC":
                    msg = (
                        f"GDS pod ({why}) shares the host IPC namespace; mount a /dev/shm emptyDir with "
                        "medium: Memory for NCCL instead"
                    )
                    yield RULE.finding(obj, path, msg)
                else:
                    yield RULE.finding(
                        obj,
                        path,
                        f"GDS pod ({why}) sets {field}: true; it sees the node's "
                        f"{'processes' if field == 'hostPID' else 'network'}",
                        fix=_bool_fix(obj, path, field),
                    )
        for c in pod.containers():
            sc = as_dict(c.data.get("securityContext"))
            if sc.get("privileged") is True:
                path = c.path_of("securityContext", "privileged")
                yield RULE.finding(
                    obj,
                    path,
                    f"container {c.name} runs privileged for GDS ({why}); load nvidia-fs "
                    "on the node (GPU Operator gds) and drop privileged",
                    fix=_bool_fix(obj, path, "privileged"),
                )
            if sc.get("allowPrivilegeEscalation") is True:
                path = c.path_of("securityContext", "allowPrivilegeEscalation")
                yield RULE.finding(
                    obj,
                    path,
                    f"container {c.name} allows privilege escalation in a GDS pod ({why})",
                    fix=_bool_fix(obj, path, "allowPrivilegeEscalation"),
                )
            for i, cap in enumerate(as_list(as_dict(sc.get("capabilities")).get("add"))):
                name = str(cap).upper()
                if name in ("SYS_ADMIN", "CAP_SYS_ADMIN", "ALL"):
                    yield RULE.finding(
                        obj,
                        c.path_of("securityContext", "capabilities", "add", i),
                        f"container {c.name} adds capability {cap} in a GDS pod ({why}); that is root on the node",
                        anchor="value",
                    )


__all__ = ["RULE", "check", "gds_signs"]
