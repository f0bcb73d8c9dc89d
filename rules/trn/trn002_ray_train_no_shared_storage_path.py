"""
## What it does
Finds multi-node Ray Train (or Tune) runs whose checkpoints stay on one node: a RayJob or
RayCluster (or an AIBrix RayClusterFleet's RayCluster template) with an accelerator worker
group that can run pods, whose visible Ray code
(RayJob `entrypoint`, `runtimeEnvYAML`, container commands, or ConfigMaps mounted into its
pods) builds a Trainer, Tuner or `RunConfig` and either leaves `storage_path` unset (Ray's
default is `~/ray_results` on the head) or sets a local path that is not on a shared volume.
It stays silent when an `s3://` (or other object-store) URI appears in the code or env, when
`storage_path` is an expression it cannot resolve, or (for an unset path) when a shared
volume (NFS, EFS/FSx CSI, a PVC) is mounted on the head and every accelerator worker group.

## Why is this bad?
For multi-node runs Ray requires `storage_path` to be shared storage (S3, NFS): workers
upload checkpoints there and a restarted run restores from it. With a local path the
checkpoints live on the head's disk (or each worker's), so losing the head, a Spot worker
or the RayCluster loses the training progress, and `FailureConfig` retries start over.

## Example
```yaml
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: train
spec:
  entrypoint: |
    python -c "
    import ray.train
    from ray.train.torch import TorchTrainer
    trainer = TorchTrainer(train_loop, scaling_config=ray.train.ScalingConfig(num_workers=4, use_gpu=True),
                           run_config=ray.train.RunConfig(name='llm'))
    trainer.fit()
    "
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.46.0
    workerGroupSpecs:
      - groupName: gpu
        replicas: 4
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.46.0-gpu
                resources:
                  limits:
                    nvidia.com/gpu: 1
```

## Use instead
```yaml
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: train
spec:
  entrypoint: |
    python -c "
    import ray.train
    from ray.train.torch import TorchTrainer
    trainer = TorchTrainer(train_loop, scaling_config=ray.train.ScalingConfig(num_workers=4, use_gpu=True),
                           run_config=ray.train.RunConfig(name='llm', storage_path='s3://my-bucket/ray'))
    trainer.fit()
    "
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.46.0
    workerGroupSpecs:
      - groupName: gpu
        replicas: 4
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.46.0-gpu
                resources:
                  limits:
                    nvidia.com/gpu: 1
```

## Options
None.

## Fix
None: choose a bucket or a shared file system, then set
`RunConfig(storage_path="s3://...")` (or a path on an EFS/FSx volume mounted on every node).

## References
- https://docs.ray.io/en/latest/train/user-guides/persistent-storage.html
- https://github.com/ray-project/ray/blob/master/python/ray/train/v2/api/config.py
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_list
from ailint.core.rule import Options, Rule, Scope
from ailint.domain import ray
from ailint.domain.context import Context
from ailint.domain.extract import volumes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="TRN002",
    name="ray-train-no-shared-storage-path",
    severity=Severity.WARNING,
    summary="Multi-node Ray Train keeps checkpoints on local disk (storage_path unset or local)",
    kinds=("RayJob", "RayCluster", *ray.TEMPLATE_RULE_KINDS),
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.NEVER,
    tags=("ray", "training", "storage"),
)

_SHARED_DRIVERS = (
    "efs.csi.aws.com",
    "fsx.csi.aws.com",
    "nfs.csi.k8s.io",
    "filestore.csi.storage.gke.io",
    "s3.csi.aws.com",
    "lustre",
    "nfs",
)


def _pvc_shared(obj: K8sObject, ctx: Any, claim: str) -> bool:
    pvc = ctx.named("PersistentVolumeClaim", claim, namespace=obj.namespace_or_default, near=obj)
    if pvc is not None:
        modes = [str(m) for m in as_list(pvc.get("spec", "accessModes"))]
        sc = str(pvc.get("spec", "storageClassName") or "")
        return "ReadWriteMany" in modes or any(k in sc.lower() for k in ("efs", "fsx", "nfs", "lustre"))
    return True  # a claim outside the run: shared by head and workers, it must be RWX to work


def _shared_mounts(obj: K8sObject, ctx: Any, group: ray.RayGroup) -> set[str]:
    if group.pod is None:
        return set()
    shared_vols = set()
    for name, (_, vol) in volumes(group.pod).items():
        if "nfs" in vol or (
            isinstance(vol.get("csi"), dict) and str(vol["csi"].get("driver", "")).startswith(_SHARED_DRIVERS)
        ):
            shared_vols.add(name)
        elif isinstance(vol.get("persistentVolumeClaim"), dict):
            claim = vol["persistentVolumeClaim"].get("claimName")
            if isinstance(claim, str) and _pvc_shared(obj, ctx, claim):
                shared_vols.add(name)
    out = set()
    for c in group.containers():
        for m in c.volume_mounts:
            if m.get("name") in shared_vols and isinstance(m.get("mountPath"), str):
                out.add(posixpath.normpath(m["mountPath"]))
    return out


def _on_mount(path: str, mounts: set[str]) -> bool:
    p = posixpath.normpath(path)
    return any(p == m or p.startswith(m.rstrip("/") + "/") for m in mounts)


def _env_text(obj: K8sObject) -> str:
    parts = []
    for g in ray.groups(obj):
        for c in g.containers():
            parts += [str(e.get("value")) for e in c.env if isinstance(e.get("value"), (str, int))]
    return "\n".join(parts)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    groups = ray.groups(obj)
    gpu_groups = [g for g in groups if not g.is_head and g.has_accelerators and g.may_scale_out()]
    if not gpu_groups:
        return
    sources = ray.code_sources(obj, ctx)
    train = [s for s in sources if ray.is_ray_train_code(s.text)]
    if not train:
        return
    everything = "\n".join(s.text for s in sources) + "\n" + _env_text(obj)
    if ray.mentions_remote_uri(everything):
        return
    paths: list[str | None] = []
    for s in train:
        paths += ray.storage_paths(s.text)
    if any(p is None for p in paths):
        return  # an expression (env var, variable): cannot resolve
    head = ray.head_group(obj)
    node_groups = ([head] if head else []) + gpu_groups
    shared: set[str] | None = None
    for g in node_groups:
        m = _shared_mounts(obj, ctx, g)
        shared = m if shared is None else shared & m
    shared = shared or set()
    src = train[0]
    nodes = sum(g.replicas * g.num_of_hosts for g in gpu_groups)
    scale = f"{nodes} GPU worker pod{'s' if nodes != 1 else ''}" if nodes else "autoscaled GPU workers"
    if not paths:
        if shared:
            return
        yield RULE.finding(
            obj,
            src.path,
            f"Ray Train code in {src.label} leaves RunConfig(storage_path=...) unset: checkpoints go to "
            f"~/ray_results on the head, not shared with {scale}; use s3:// or an EFS/FSx volume",
        )
        return
    for p in paths:
        assert p is not None
        if ray.is_remote_uri(p) or _on_mount(p, shared):
            continue
        yield RULE.finding(
            obj,
            src.path,
            f"Ray Train storage_path {p!r} in {src.label} is local to each node (no shared volume is "
            f"mounted there on the head and {scale}); checkpoints are lost with the node",
        )
        return
