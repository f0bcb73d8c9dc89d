"""
## What it does
Finds a PersistentVolumeClaim that only one node (`ReadWriteOnce`, or an EBS class) or one
pod (`ReadWriteOncePod`) can use, mounted by `claimName` from a template that runs more
than one pod: Deployment, ReplicaSet or StatefulSet `replicas` > 1 or an HPA/KEDA maximum
> 1, LeaderWorkerSet groups x size, RayCluster groups, a Job with `parallelism` > 1, a
DaemonSet. It also finds one such claim mounted by two or more long-running workloads.

Severity: error when the claim is ReadWriteOncePod, or when the replicas are spread across
nodes (all but one hang).

## Why is this bad?
A `ReadWriteOnce` volume attaches to a single node. The first replica starts; every
replica scheduled to another node hangs in `ContainerCreating` with a `Multi-Attach
error`, which shows up only when the workload scales, a node drains, or a rollout puts the
new pod elsewhere. `ReadWriteOncePod` admits exactly one pod, so the second never starts.
GPU replicas rarely share a node, so for serving and training this is an outage waiting
for the next scale-out.

## Example
```yaml
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: model-cache
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: gp3
  resources:
    requests:
      storage: 200Gi
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  replicas: 3
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.10.1
          volumeMounts:
            - name: cache
              mountPath: /root/.cache/huggingface
      volumes:
        - name: cache
          persistentVolumeClaim:
            claimName: model-cache
```

## Use instead
```yaml
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: model-cache
spec:
  accessModes: [ReadWriteMany]
  storageClassName: efs-sc
  resources:
    requests:
      storage: 200Gi
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  replicas: 3
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.10.1
          volumeMounts:
            - name: cache
              mountPath: /root/.cache/huggingface
      volumes:
        - name: cache
          persistentVolumeClaim:
            claimName: model-cache
```

## Options
None.

## Fix
None: the remedy is a choice. Give each replica its own volume (`volumeClaimTemplates` on
a StatefulSet or LeaderWorkerSet), move shared data to an RWX class (EFS, FSx for Lustre)
or `ReadOnlyMany`, or pin the replicas to one node on purpose (then suppress the finding).
Claims not in the run are skipped; Jobs that run one after another are not counted as
sharing.

## References
- https://kubernetes.io/docs/concepts/storage/persistent-volumes/#access-modes
- https://docs.aws.amazon.com/eks/latest/userguide/ebs-csi.html
- https://docs.aws.amazon.com/eks/latest/userguide/efs-csi.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, as_list, get_in, iter_dicts
from ailint.core.rule import Options, Rule, Scope
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, PodTemplate, pod_templates
from ailint.domain.storage import EBS, provisioner_of, pvc_named, scaling_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="STO002",
    name="rwo-pvc-shared-by-replicas",
    severity=Severity.WARNING,
    summary="A ReadWriteOnce or ReadWriteOncePod claim is mounted by several replicas or workloads",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    fix=FixAvailability.NEVER,
    tags=("storage", "availability"),
)

_LONG_RUNNING = (
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "ReplicationController",
    "LeaderWorkerSet",
    "RayCluster",
    "RayService",
    "Pod",
    "InferenceService",
    "LLMInferenceService",
)


def _claims(pod: PodTemplate) -> Iterator[tuple[int, str]]:
    for i, vol in iter_dicts(pod.spec.get("volumes")):
        name = as_dict(vol.get("persistentVolumeClaim")).get("claimName")
        if isinstance(name, str) and name:
            yield i, name


def _mode(ctx: Any, pvc: Any) -> str | None:
    """`ReadWriteOncePod`, `ReadWriteOnce`, or None when the claim can be shared."""
    spec = as_dict(pvc.data.get("spec"))
    modes = {str(m) for m in as_list(spec.get("accessModes"))}
    if modes & {"ReadWriteMany", "ReadOnlyMany"}:
        return None
    if "ReadWriteOncePod" in modes:
        return "ReadWriteOncePod"
    if "ReadWriteOnce" in modes:
        return "ReadWriteOnce"
    if provisioner_of(ctx, spec) in EBS:
        return "ReadWriteOnce"
    return None


def _pods_of(ctx: Any, obj: Any, pod: PodTemplate) -> int | None:
    """How many pods this template can run at once (None: unknown)."""
    if obj.kind == "DaemonSet":
        return 2  # one per node
    n = pod.replicas
    group = as_dict(obj.get(*pod.group_path)) if pod.group_path else {}
    if obj.kind in ("RayCluster", "RayJob", "RayService") and pod.role != "head":
        hi = group.get("maxReplicas")
        if isinstance(hi, int) and not isinstance(hi, bool):
            raw_hosts = group.get("numOfHosts")
            hosts = raw_hosts if isinstance(raw_hosts, int) else 1
            n = max(n or 0, hi * hosts)
    if obj.kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        sc = scaling_of(ctx, obj)
        if sc is not None and sc.max_replicas is not None:
            n = max(n or 0, sc.max_replicas)
    return n


def _spread(obj: Any, pod: PodTemplate) -> bool:
    """Replicas are forced onto different nodes (anti-affinity or a hard spread on hostname,
    or a multi-node LeaderWorkerSet group)."""
    if obj.kind == "LeaderWorkerSet":
        size = get_in(obj.data, ("spec", "leaderWorkerTemplate", "size"))
        if isinstance(size, int) and not isinstance(size, bool) and size >= 2:
            return True
    spec = pod.spec
    for _, term in iter_dicts(
        get_in(spec, ("affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"))
    ):
        if term.get("topologyKey") == "kubernetes.io/hostname":
            return True
    for _, tsc in iter_dicts(spec.get("topologySpreadConstraints")):
        if (
            tsc.get("topologyKey") == "kubernetes.io/hostname"
            and tsc.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
        ):
            return True
    return False


def _mounters(ctx: Any, namespace: str, claim: str, skip: Any) -> list[Any]:
    out = []
    for other, pods in ctx.pod_owners(namespace):
        if other is skip or other.kind not in _LONG_RUNNING:
            continue
        if other.kind == skip.kind and other.name == skip.name and other.file != skip.file:
            continue  # the same object in another file: an alternative version of it, not a second workload
        if any(name == claim for p in pods for _, name in _claims(p)):
            out.append(other)
    return out


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    ns = obj.namespace_or_default
    pods = list(pod_templates(obj))
    total: dict[str, int | None] = {}
    for pod in pods:
        for _, claim in _claims(pod):
            n = _pods_of(ctx, obj, pod)
            prev = total.get(claim, 0)
            total[claim] = None if n is None or prev is None else prev + n
    reported: set[str] = set()
    for pod in pods:
        for i, claim in _claims(pod):
            if claim in reported:
                continue
            pvc = pvc_named(ctx, ns, claim)
            if pvc is None:
                continue
            mode = _mode(ctx, pvc)
            if mode is None:
                continue
            path = pod.path("volumes", i, "persistentVolumeClaim", "claimName")
            n = total.get(claim)
            dup = (
                sum(1 for o in ctx.of_kind("PersistentVolumeClaim") if o.name == claim and o.namespace_or_default == ns)
                > 1
            )
            others = _mounters(ctx, ns, claim, obj) if obj.kind in _LONG_RUNNING and not dup else []
            spread = any(_spread(obj, p) for p in pods)
            if n is not None and n > 1:
                severity = Severity.ERROR if mode == "ReadWriteOncePod" or spread else None
                sc = scaling_of(ctx, obj) if obj.kind in ("Deployment", "StatefulSet", "ReplicaSet") else None
                via = (
                    f" ({ctx.describe(sc.source)} max {sc.max_replicas})"
                    if sc is not None and sc.max_replicas == n
                    else ""
                )
                if mode == "ReadWriteOncePod":
                    tail = "only one pod can use it"
                elif spread:
                    tail = "they are placed on different nodes, so all but one hang in ContainerCreating (Multi-Attach error)"
                else:
                    tail = "replicas on other nodes hang in ContainerCreating (Multi-Attach error)"
                msg = f"{ctx.describe(pvc)} is {mode} but {obj.kind} {obj.name} runs up to {n} pods mounting it{via}; {tail}"
            elif others:
                severity = Severity.ERROR if mode == "ReadWriteOncePod" else None
                names = ", ".join(ctx.describe(o) for o in others[:3])
                msg = f"{ctx.describe(pvc)} is {mode} and also mounted by {names}; " + (
                    "only one pod can use it"
                    if mode == "ReadWriteOncePod"
                    else "pods on different nodes cannot attach it at the same time"
                )
            else:
                continue
            reported.add(claim)
            yield RULE.finding(obj, path, msg, severity=severity)
