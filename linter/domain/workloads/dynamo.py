"""NVIDIA Dynamo (nvidia.com): DynamoGraphDeployment and DynamoComponentDeployment.

v1alpha1: `spec.services.<name>` (DGD) or `spec` (DCD) holds `componentType`, `replicas`,
`resources{requests,limits{cpu,memory,gpu}}` (a GPU count the operator turns into the
device resource), `envs`, probes, `multinode{nodeCount}` and `extraPodSpec` (a PodSpec plus
`mainContainer`). v1beta1: `spec.components[*].podTemplate` (DGD) or `spec.podTemplate`
(DCD), full PodTemplateSpecs. Pods per component: replicas x nodeCount.
The operator's defaults (probes on :9090/:8000, /dev/shm 8Gi) are documented in its docs,
not verified in code here, so the synthesized pod holds only what the file states and is
`open` for the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from ailint.core.model import K8sObject, Path, as_dict, as_list, iter_dicts, own_copy
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import Catalog, Facts, Family, as_int, synthesized, template

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GROUP = "nvidia.com"
_SERVING = ("worker", "prefill", "decode", "main")


def _gpu_resources(res: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for which in ("requests", "limits"):
        vals = as_dict(res.get(which))
        mapped = {k: v for k, v in vals.items() if k in ("cpu", "memory", "ephemeral-storage")}
        if vals.get("gpu") not in (None, "", "0", 0):
            mapped["nvidia.com/gpu"] = str(vals["gpu"])
        if mapped:
            out[which] = mapped
    return out


def _node_count(svc: dict[str, Any]) -> int:
    """Nodes per replica: 1 without `multinode`; with it, `nodeCount`, which the CRD defaults
    to 2 (its minimum; nvidia.com_dynamographdeployments.yaml and _dynamocomponentdeployments,
    ai-dynamo/dynamo deploy/operator/config/crd/bases)."""
    if not isinstance(svc.get("multinode"), dict):
        return 1
    return as_int(svc["multinode"].get("nodeCount")) or 2


def _service_pod(obj: K8sObject, base: Path, svc: dict[str, Any], name: str) -> PodTemplate | None:
    extra = as_dict(svc.get("extraPodSpec"))
    main = as_dict(extra.get("mainContainer"))
    if not main and not extra.get("containers"):
        return None
    nodes = _node_count(svc)
    replicas = as_int(svc.get("replicas")) if "replicas" in svc else 1
    c = own_copy(main)
    c.setdefault("name", "main")
    res = _gpu_resources(as_dict(svc.get("resources")))
    if res:
        mine = as_dict(c.get("resources"))
        c["resources"] = {
            w: {**as_dict(res.get(w)), **as_dict(mine.get(w))}
            for w in ("requests", "limits")
            if res.get(w) or mine.get(w)
        }
    graph_envs = (
        [e for e in as_list(obj.get("spec", "envs")) if isinstance(e, dict)] if base[:2] == ("spec", "services") else []
    )
    envs = [*graph_envs, *[e for e in as_list(svc.get("envs")) if isinstance(e, dict)]]
    if envs:
        c["env"] = [*as_list(c.get("env")), *envs]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(svc.get(probe), dict) and probe not in c:
            c[probe] = svc[probe]
    spec = {k: v for k, v in extra.items() if k not in ("mainContainer", "containers")}
    containers = [c, *[x for _, x in iter_dicts(extra.get("containers"))]]
    spec["containers"] = containers
    ep = base + ("extraPodSpec",)
    fields: list[tuple[Path, Path, bool]] = [
        (("containers", 0), ep + ("mainContainer",), True),
        (("containers", 0, "resources"), base + ("resources",), True),
        (("containers", 0, "name"), base, False),
        ((), ep if extra else base, True),
    ]
    for i, _ in iter_dicts(extra.get("containers")):
        fields.append((("containers", 1 + i), ep + ("containers", i), True))
    own = len(as_list(main.get("env")))
    for j, _ in enumerate(graph_envs):
        fields.append((("containers", 0, "env", own + j), ("spec", "envs", j), True))
    for j, _ in enumerate(envs[len(graph_envs) :]):
        fields.append((("containers", 0, "env", own + len(graph_envs) + j), base + ("envs", j), True))
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(svc.get(probe), dict) and probe not in main:
            fields.append((("containers", 0, probe), base + (probe,), True))
    pod = synthesized(obj, base, spec, name, None if replicas is None else replicas * nodes, fields)
    pod.open = True  # the operator adds probes, ports and /dev/shm by component type
    return pod


def templates(obj: K8sObject) -> Iterator[PodTemplate]:
    spec = as_dict(obj.data.get("spec"))
    if obj.kind == "DynamoGraphDeployment":
        for name, svc in as_dict(spec.get("services")).items():
            if isinstance(svc, dict):
                t = _service_pod(obj, ("spec", "services", name), svc, str(name))
                if t:
                    yield t
        for i, comp in iter_dicts(spec.get("components")):
            nodes = _node_count(comp)
            reps = as_int(comp.get("replicas")) if "replicas" in comp else 1
            t = template(
                obj,
                ("spec", "components", i, "podTemplate"),
                str(comp.get("name") or f"component{i}"),
                None if reps is None else reps * nodes,
                ("spec", "components", i),
            )
            if t:
                yield t
    elif obj.kind == "DynamoComponentDeployment":
        if isinstance(spec.get("podTemplate"), dict):
            t = template(
                obj,
                ("spec", "podTemplate"),
                str(spec.get("componentType") or ""),
                as_int(spec.get("replicas")) or 1,
                ("spec",),
            )
            if t:
                yield t
        else:
            t2 = _service_pod(obj, ("spec",), spec, str(spec.get("componentType") or "main"))
            if t2:
                yield t2


# the operator's pod labels (ai-dynamo/dynamo deploy/operator internal/consts: KubeLabelDynamo*;
# graph.go sets the component's name and the graph's on each component's pods, as the planner's
# pod lookups `nvidia.com/dynamo-component=<service key>` rely on)
COMPONENT_LABEL = "nvidia.com/dynamo-component"
GRAPH_LABEL = "nvidia.com/dynamo-graph-deployment-name"
_OPERATOR_VARYING = (
    "nvidia.com/dynamo-namespace",  # the service's dynamoNamespace, or one the operator derives
    "nvidia.com/dynamo-component-type",  # from componentType, as the operator resolves it
    "nvidia.com/dynamo-sub-component-type",
)


def _pod_labels(pod: PodTemplate) -> tuple[dict[str, str], tuple[str, ...]]:
    """A DynamoGraphDeployment's component pods carry the component's name (the key under
    `spec.services`, or `spec.components[*].name`) and the graph's name; a hand-written
    DynamoComponentDeployment's carry the component label of its own metadata when it has
    one (its graph is not in the file)."""
    obj = pod.obj
    forced: dict[str, str] = {}
    varying = list(_OPERATOR_VARYING)
    g = pod.group_path
    component: Any = None
    if obj.kind == "DynamoGraphDeployment":
        if obj.name:
            forced[GRAPH_LABEL] = obj.name
        else:
            varying.append(GRAPH_LABEL)
        if len(g) == 3 and g[:2] == ("spec", "services"):
            component = g[2]
        elif len(g) == 3 and g[:2] == ("spec", "components"):
            component = as_dict(obj.get(*g)).get("name")
    else:
        varying.append(GRAPH_LABEL)
        component = obj.labels.get(COMPONENT_LABEL)
    if isinstance(component, str) and component:
        forced[COMPONENT_LABEL] = component
    else:
        varying.append(COMPONENT_LABEL)
    return forced, tuple(varying)


def _component_type(obj: K8sObject, pod: PodTemplate) -> str:
    comp = as_dict(obj.get(*pod.group_path))
    return str(comp.get("componentType") or comp.get("type") or "").lower()


def facts(obj: K8sObject, pods: list[PodTemplate], catalog: Catalog) -> Facts | None:
    out = Facts()
    backend = obj.get("spec", "backendFramework")
    if isinstance(backend, str) and backend:
        out.engine = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trtllm"}.get(backend, "other")
    if out.model is None:  # Dynamo 0.3 graphs: the model in DYN_DEPLOYMENT_CONFIG (JSON)
        for pod in pods:
            for c in pod.containers():
                raw = c.env_value("DYN_DEPLOYMENT_CONFIG")
                if raw:
                    try:
                        conf = json.loads(raw)
                    except ValueError:
                        continue
                    common = as_dict(as_dict(conf).get("Common"))
                    model = common.get("served_model_name") or common.get("model")
                    if isinstance(model, str) and model:
                        out.model = model
                        break
            if out.model:
                break
    roles = {"serving" if _component_type(obj, p) in _SERVING or "worker" in p.role.lower() else "infra" for p in pods}
    out.roles = sorted(roles) or ["serving"]
    return out


def _role(pod: PodTemplate) -> str | None:
    kind = _component_type(pod.obj, pod)
    if kind in _SERVING:
        return "serving"
    if kind in ("frontend", "planner", "router", "epp", "processor"):
        return "infra"
    return None


FAMILY = Family(
    "dynamo",
    ((GROUP, "DynamoGraphDeployment"), (GROUP, "DynamoComponentDeployment")),
    templates,
    facts,
    role=_role,
    serving=((GROUP, "DynamoGraphDeployment"), (GROUP, "DynamoComponentDeployment")),
    pod_labels=_pod_labels,
)
