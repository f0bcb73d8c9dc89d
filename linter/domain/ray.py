"""KubeRay helpers: where a RayCluster lives inside RayCluster, RayJob and RayService,
its head and worker groups, their GPU counts and sizes, and the Ray code the manifests show.

Facts verified against the KubeRay CRDs (`ray.io_rayclusters.yaml`, `ray.io_rayjobs.yaml`,
`ray.io_rayservices.yaml`) and `ray-operator/controllers/ray/utils/validation.go`,
`ray-operator/controllers/ray/common/pod.go`:

- worker groups: `replicas` (default 0), `minReplicas` (default 0), `maxReplicas` (default
  maxInt32), `numOfHosts` (default 1; pods per replica);
- `headGroupSpec.resources` / `workerGroupSpecs[].resources` (a map of Ray resources,
  `CPU`/`GPU` keys case-insensitive) override `rayStartParams` and must not be combined with
  `num-cpus`/`num-gpus`/`memory`/`resources` in `rayStartParams` (validation rejects both);
- when `rayStartParams` has no `num-cpus`, KubeRay takes it from the Ray container's CPU
  limit (else request); `num-gpus` from the GPU limit;
- RayJob: `shutdownAfterJobFinishes` (default false), `ttlSecondsAfterFinished` (default 0,
  rejected when > 0 without shutdown), `deletionStrategy.deletionRules` (mutually exclusive
  with shutdown), `activeDeadlineSeconds`, `preRunningDeadlineSeconds`, `submissionMode`
  (default `K8sJobMode`), `clusterSelector` (use an existing cluster).

Custom resources that embed a RayCluster template (AIBrix RayClusterFleet and
RayClusterReplicaSet: `spec.template.spec`, declared by their adapter in
`ailint.domain.workloads.aibrix`) are Ray clusters here too: their head and worker groups,
and findings at the lines inside their manifest.

Rules import this module as `ailint.domain.ray`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ailint.core.lazyre import lazy_re
from ailint.core.model import K8sObject, Path, as_dict, as_list, iter_dicts
from ailint.domain.extract import (
    Container,
    PodTemplate,
    containers_of,
    pod_templates,
    volumes,
)
from ailint.domain.quantities import to_int
from ailint.domain.roles import what_runs
from ailint.domain.workloads.aibrix import RAY_CLUSTER_TEMPLATES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RAY_KINDS = ("RayCluster", "RayJob", "RayService")
# the kinds whose spec holds a RayCluster template (their names, and in a rule's `kinds=` notation)
TEMPLATE_KINDS = tuple(kind for _, kind in RAY_CLUSTER_TEMPLATES)
TEMPLATE_RULE_KINDS = tuple(f"{group}/{kind}" for group, kind in RAY_CLUSTER_TEMPLATES)
# RayCluster (any group, as KubeRay's older groups) plus the template holders
CLUSTER_RULE_KINDS = ("RayCluster", *TEMPLATE_RULE_KINDS)


def _kuberay_pod(obj: K8sObject) -> bool:
    """A pod of a KubeRay resource, or of an object that keeps RayClusters from its template."""
    return obj.group.startswith("ray.io") or obj.kind in RAY_KINDS or holds_cluster_template(obj)


def is_ray_pod_container(obj: K8sObject, c: Any, index: int) -> bool:
    """Whether `c` (the `index`-th main container of a pod of `obj`) is where Ray runs: the
    first container of a KubeRay pod (KubeRay's `RayContainerIndex`), or one that runs `ray
    start`."""
    if _kuberay_pod(obj):
        return index == 0
    return _RAY_START.search(" ".join(c.tokens)) is not None


def may_join_cluster(pod: Any, c: Any) -> bool:
    """Whether container `c` of `pod` can reach a Ray cluster beyond its own pod: a KubeRay
    pod (or one of a RayCluster template holder), `RAY_ADDRESS` in its env (or env it takes
    from a ConfigMap or Secret, which the linter cannot read), or a `ray start` in its command.
    Without any, `ray.init()` starts a local Ray instance that holds only the pod's GPUs."""
    if _kuberay_pod(pod.obj):
        return True
    if c.data.get("envFrom") or any(e.get("name") == "RAY_ADDRESS" for e in c.env):
        return True
    return _RAY_START.search(" ".join(c.tokens)) is not None


_RAY_START = lazy_re(r"(^|[\s;&|(/])ray\s+start\b")


def holds_cluster_template(obj: K8sObject) -> bool:
    """A custom resource whose spec is a RayCluster template (an AIBrix RayClusterFleet)."""
    return (obj.group, obj.kind) in RAY_CLUSTER_TEMPLATES


def is_cluster_like(obj: K8sObject) -> bool:
    """A RayCluster, or an object that keeps RayClusters made from its template (the Ray
    code and settings of the cluster are the object's own)."""
    return obj.kind == "RayCluster" or holds_cluster_template(obj)


def cluster_annotations(obj: K8sObject) -> dict[str, Any]:
    """The annotations of the RayCluster(s) an object makes: a template holder's RayClusters
    take the template's `metadata`; a RayCluster, RayJob or RayService has its own."""
    tpl = RAY_CLUSTER_TEMPLATES.get((obj.group, obj.kind))
    if tpl is not None:
        return as_dict(obj.get(*tpl[:-1], "metadata", "annotations"))
    return obj.annotations


def cluster_spec_path(obj: K8sObject) -> Path | None:
    """Path of the RayClusterSpec inside a Ray object, or None (RayJob with clusterSelector only)."""
    tpl = RAY_CLUSTER_TEMPLATES.get((obj.group, obj.kind))
    if tpl is not None:
        return tpl if isinstance(obj.get(*tpl), dict) else None
    if obj.kind == "RayCluster":
        return ("spec",) if isinstance(obj.get("spec"), dict) else None
    if obj.kind == "RayJob":
        return ("spec", "rayClusterSpec") if isinstance(obj.get("spec", "rayClusterSpec"), dict) else None
    if obj.kind == "RayService":
        return ("spec", "rayClusterConfig") if isinstance(obj.get("spec", "rayClusterConfig"), dict) else None
    return None


def uses_cluster_selector(obj: K8sObject) -> bool:
    """A RayJob that runs on an existing RayCluster (`spec.clusterSelector` non-empty)."""
    return obj.kind == "RayJob" and bool(as_dict(obj.get("spec", "clusterSelector")))


@dataclass(slots=True)
class RayGroup:
    """One head or worker group of a RayCluster spec.

    `path` is the group's path in the object (`headGroupSpec` or `workerGroupSpecs[i]`),
    `pod` the group's pod template (None when the template is missing).
    """

    obj: K8sObject
    path: Path
    data: dict[str, Any]
    is_head: bool
    pod: PodTemplate | None

    @property
    def name(self) -> str:
        if self.is_head:
            return "head"
        return str(self.data.get("groupName") or f"worker{self.path[-1]}")

    @property
    def ray_start_params(self) -> dict[str, Any]:
        return as_dict(self.data.get("rayStartParams"))

    @property
    def ray_resources(self) -> dict[str, Any]:
        """The group-level `resources` map (Ray logical resources)."""
        return as_dict(self.data.get("resources"))

    @property
    def replicas(self) -> int:
        """Desired replicas: `replicas`, else `minReplicas` (both default 0); 1 for the head."""
        if self.is_head:
            return 1
        r = to_int(self.data.get("replicas"))
        if r is None:
            r = to_int(self.data.get("minReplicas"))
        return max(r or 0, 0)

    @property
    def min_replicas(self) -> int:
        if self.is_head:
            return 1
        return max(to_int(self.data.get("minReplicas")) or 0, 0)

    @property
    def max_replicas(self) -> int | None:
        """Explicit `maxReplicas` (None when unset: the CRD default is maxInt32)."""
        if self.is_head:
            return 1
        return to_int(self.data.get("maxReplicas"))

    @property
    def num_of_hosts(self) -> int:
        if self.is_head:
            return 1
        n = to_int(self.data.get("numOfHosts"))
        return n if n and n > 0 else 1

    def containers(self, include_init: bool = False) -> list[Container]:
        if self.pod is None:
            return []
        return list(containers_of(self.pod, include_init))

    def ray_container(self) -> Container | None:
        """The Ray container: KubeRay uses the first container of the template."""
        cs = self.containers()
        return cs[0] if cs else None

    def accelerators(self) -> dict[str, float]:
        """Accelerators per pod of this group (sum over app containers)."""
        total: dict[str, float] = {}
        for c in self.containers():
            for k, v in c.accelerators().items():
                total[k] = total.get(k, 0) + v
        return total

    def gpus_per_pod(self) -> float:
        acc = self.accelerators()
        return sum(v for k, v in acc.items() if k != "vpc.amazonaws.com/efa")

    @property
    def has_accelerators(self) -> bool:
        return self.gpus_per_pod() > 0

    def may_scale_out(self) -> bool:
        """The group can run pods: replicas, minReplicas or an explicit maxReplicas > 0."""
        if self.is_head:
            return True
        return self.replicas > 0 or self.min_replicas > 0 or (self.max_replicas or 0) > 0 or self.num_of_hosts > 1


def groups(obj: K8sObject) -> list[RayGroup]:
    """Head first, then worker groups, of a RayCluster / RayJob / RayService."""
    base = cluster_spec_path(obj)
    if base is None:
        return []
    pods = {p.group_path: p for p in pod_templates(obj)}
    out = []
    head = obj.get(*base, "headGroupSpec")
    if isinstance(head, dict):
        hp = base + ("headGroupSpec",)
        out.append(RayGroup(obj, hp, head, True, pods.get(hp)))
    for i, g in iter_dicts(obj.get(*base, "workerGroupSpecs")):
        gp = base + ("workerGroupSpecs", i)
        out.append(RayGroup(obj, gp, g, False, pods.get(gp)))
    return out


def head_group(obj: K8sObject) -> RayGroup | None:
    for g in groups(obj):
        if g.is_head:
            return g
    return None


def worker_groups(obj: K8sObject) -> list[RayGroup]:
    return [g for g in groups(obj) if not g.is_head]


def head_model_server(head: RayGroup) -> str | None:
    """The model server (vllm, sglang, ...) a head container itself runs, by its command.
    Such a head is a rank of the engine, not only the cluster's control plane: vLLM with
    `--distributed-executor-backend ray` places its driver worker on the head and refuses to
    start when Ray allocates no GPU there ("Ray does not allocate any GPUs on the driver
    node", vllm-project/vllm vllm/executor/ray_distributed_executor.py). Ray Serve is not
    one (the head runs its controller; the replicas go to the workers)."""
    for c in head.containers():
        verdict, engine = what_runs(c)
        if verdict == "server" and engine and engine != "ray-serve":
            return engine
    return None


def ray_param(group: RayGroup, name: str) -> str | None:
    """A Ray resource as the group sets it: group `resources` (CPU/GPU/memory keys,
    case-insensitive) override `rayStartParams` (`num-cpus`, `num-gpus`, `memory`)."""
    res_key = {"num-cpus": "cpu", "num-gpus": "gpu", "memory": "memory"}.get(name)
    if res_key:
        for k, v in group.ray_resources.items():
            if str(k).lower() == res_key:
                return str(v)
    v = group.ray_start_params.get(name)
    return None if v is None else str(v)


def is_zero(value: str | None) -> bool:
    if value is None:
        return False
    s = value.strip().strip("'\"")
    try:
        return float(s) == 0
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------
# Ray code visible in the manifests
# ---------------------------------------------------------------------------------------
@dataclass(slots=True)
class CodeSource:
    """A piece of Ray application text found in or through an object.

    `path` is where the rule should point inside `obj` (the entrypoint, the runtime env, or
    the volume that mounts a ConfigMap); `label` names it for messages.
    """

    text: str
    path: Path
    label: str


def code_sources(obj: K8sObject, ctx: Any = None) -> list[CodeSource]:
    """Entrypoint, runtimeEnvYAML, Ray container commands, and ConfigMaps mounted into the
    head, submitter or worker pods (ConfigMaps resolved through `ctx` when it has them)."""
    out: list[CodeSource] = []
    if obj.kind == "RayJob":
        ep = obj.get("spec", "entrypoint")
        if isinstance(ep, str) and ep.strip():
            out.append(CodeSource(ep, ("spec", "entrypoint"), "spec.entrypoint"))
        rt = obj.get("spec", "runtimeEnvYAML")
        if isinstance(rt, str) and rt.strip():
            out.append(CodeSource(rt, ("spec", "runtimeEnvYAML"), "spec.runtimeEnvYAML"))
    for pod in pod_templates(obj):
        for c in containers_of(pod, include_init=False):
            parts = [
                str(x)
                for x in as_list(c.data.get("command")) + as_list(c.data.get("args"))
                if isinstance(x, (str, int, float))
            ]
            text = "\n".join(parts)
            if "python" in text and ("ray" in text or "Trainer" in text):
                key = "args" if c.data.get("args") else "command"
                out.append(CodeSource(text, c.path_of(key), f"container {c.name!r} command"))
    if ctx is not None and getattr(ctx, "bundle", False):
        ns = obj.namespace_or_default
        seen: set[str] = set()
        for pod in pod_templates(obj):
            for _name, (i, vol) in volumes(pod).items():
                cm_name = as_dict(vol.get("configMap")).get("name")
                if not isinstance(cm_name, str) or cm_name in seen:
                    continue
                cm = ctx.named("ConfigMap", cm_name, namespace=ns, near=obj)  # (a blueprint's own copy)
                if cm is None:
                    continue
                seen.add(cm_name)
                data = as_dict(cm.get("data"))
                text = "\n".join(str(v) for v in data.values() if isinstance(v, str))
                if text.strip():
                    out.append(CodeSource(text, pod.path("volumes", i, "configMap", "name"), ctx.describe(cm)))
    return out


_TRAIN_RE = lazy_re(
    r"\bray\.train\b|from\s+ray\s+import\s+[^\n]*\btrain\b|\b\w*Trainer\s*\(|"
    r"\bRunConfig\s*\(|\bray\.tune\b|\bTuner\s*\("
)
_RAY_IMPORT = lazy_re(r"\bimport\s+ray\b|\bfrom\s+ray\b|\bray\.")


def is_ray_train_code(text: str) -> bool:
    """Ray Train or Tune code: it imports Ray and builds a Trainer, Tuner or RunConfig."""
    return bool(_RAY_IMPORT.search(text)) and bool(_TRAIN_RE.search(text))


_STORAGE_RE = lazy_re(r"\bstorage_path\s*=\s*(?:(?P<q>[\"'])(?P<lit>[^\"'\n]*)(?P=q)|(?P<expr>[^,)\n]+))")


def storage_paths(text: str) -> list[str | None]:
    """Every `storage_path=` argument in `text`: the literal string, or None when it is an
    expression (a variable, an env lookup) the linter cannot resolve."""
    out: list[str | None] = []
    for m in _STORAGE_RE.finditer(text):
        if m.group("lit") is not None:
            out.append(m.group("lit"))
        else:
            out.append(None)
    return out


REMOTE_SCHEMES = (
    "s3://",
    "gs://",
    "gcs://",
    "abfs://",
    "abfss://",
    "az://",
    "hdfs://",
    "s3a://",
    "oss://",
)


def is_remote_uri(path: str) -> bool:
    return path.strip().lower().startswith(REMOTE_SCHEMES)


def mentions_remote_uri(text: str) -> bool:
    low = text.lower()
    return any(s in low for s in REMOTE_SCHEMES)
