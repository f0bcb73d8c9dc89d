"""
## What it does
Checks Gateway API Inference Extension `InferencePool`s against their API version and the
objects around them:

- (a) the selector matches no pod template in the namespace (checked only when the run
  has inference server pods there), or matches pods of more than one model or image. Pods
  carry the labels their controller adds (an LWS set name, a KServe component, a KubeRay
  cluster: `pod_labels`). An object of the namespace that ailint has no adapter for (an
  operator's custom resource such as a production-stack `VLLMRuntime`) may own pods the
  manifests never show: when the selector points at it (a label value equal to its name, or a
  label it carries; `domain.selectors.unknown_owner`), "matches no pod" is not reported;
- (b) a target port is not a port of the selected pods (declared `containerPort`s, the
  server's `--port`, or the engine default when neither is written);
- (c) the field names disagree with the apiVersion: `inference.networking.k8s.io/v1` uses
  `selector.matchLabels`, `targetPorts[].number` and `endpointPickerRef` (`port.number`),
  while `inference.networking.x-k8s.io/v1alpha2` uses a plain `selector` map,
  `targetPortNumber` and `extensionRef` (`portNumber`);
- (d) no endpoint picker reference, a reference to an EPP Service that is not in the
  namespace (checked when the run has Services there), or, with the default
  `failureMode: FailClose`, an EPP Deployment with one replica and no
  PodDisruptionBudget.

Severity: warning for an InferencePool with no endpoint picker reference, an endpoint picker
Service outside the pool's namespace, or a single-replica endpoint picker with failureMode
FailClose and no PodDisruptionBudget.

## Why is this bad?
The API server drops unknown fields of a CRD, so a v1alpha2 `targetPortNumber` in a v1
pool leaves the pool without ports and the gateway routes nothing. A selector that matches
nothing, or the wrong port, gives a pool with no endpoints; one that spans two models
sends requests to a server that does not have the requested model. With `FailClose`
every request fails while the single EPP pod restarts or is evicted, so one pod is a
full outage of the model.

## Example
```yaml
apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata:
  name: llama
spec:
  selector:
    app: vllm-llama
  targetPortNumber: 8000
  extensionRef:
    name: llama-epp
```

## Use instead
```yaml
apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata:
  name: llama
spec:
  selector:
    matchLabels:
      app: vllm-llama
  targetPorts:
    - number: 8000
  endpointPickerRef:
    name: llama-epp
    port:
      number: 9002
```

## Options
None.

## Fix
Safe for (c): renames the fields to the apiVersion's spelling (`targetPortNumber: N` <->
`targetPorts: [{number: N}]`, `extensionRef` <-> `endpointPickerRef` with `portNumber` <->
`port.number`, 9002 when unset, and the selector map <-> `matchLabels`). Unsafe for (b)
when the pods have exactly one port: sets the target port to it. No fix for (a) and (d).

## References
- https://gateway-api-inference-extension.sigs.k8s.io/api-types/inferencepool/
- https://github.com/kubernetes-sigs/gateway-api-inference-extension/blob/main/api/v1/inferencepool_types.go
- https://github.com/kubernetes-sigs/gateway-api-inference-extension/blob/main/api/v1alpha2/inferencepool_types.go
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Edit, Finding, Fix, FixAvailability, K8sObject, Severity, as_dict, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import serving
from ailint.domain.context import Context
from ailint.domain.extract import pod_templates
from ailint.domain.pod_labels import may_select, pod_labels
from ailint.domain.selectors import unknown_owner
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SRV008",
    name="inferencepool-misconfigured",
    severity=Severity.ERROR,
    summary="An InferencePool selects no or mixed model servers, targets a wrong port, mixes API versions or has a fragile EPP",
    kinds=("InferencePool",),
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("serving", "gateway", "inference-extension"),
)

V1 = "inference.networking.k8s.io/v1"
V1A2 = "inference.networking.x-k8s.io/v1alpha2"
DEFAULT_EPP_PORT = 9002


def _selector_labels(spec: dict[str, Any]) -> dict[str, str] | None:
    sel = spec.get("selector")
    if not isinstance(sel, dict) or not sel:
        return None
    if "matchLabels" in sel:
        ml = sel.get("matchLabels")
        return {str(k): str(v) for k, v in ml.items()} if isinstance(ml, dict) and ml else None
    if any(isinstance(v, (dict, list)) for v in sel.values()):
        return None
    return {str(k): str(v) for k, v in sel.items()}


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    version = obj.api_version
    yield from _version_fields(obj, spec, version)
    if ctx is None or not getattr(ctx, "bundle", False):
        return
    ns = obj.namespace_or_default
    labels = _selector_labels(spec)
    if labels is not None:
        yield from _selection(obj, ctx, ns, spec, labels)
    yield from _epp(obj, ctx, ns, spec, version)


# -- (c) field names against the apiVersion --------------------------------------------------
def _version_fields(obj: Any, spec: dict[str, Any], version: str) -> Iterator[Finding]:
    if version == V1:
        if "targetPortNumber" in spec:
            yield RULE.finding(
                obj,
                ("spec", "targetPortNumber"),
                f"targetPortNumber is the v1alpha2 field; {V1} uses targetPorts[].number, so this pool "
                "has no target port",
                fix=_ports_to_v1(obj, spec),
            )
        if "extensionRef" in spec:
            yield RULE.finding(
                obj,
                ("spec", "extensionRef"),
                f"extensionRef is the v1alpha2 field; {V1} uses endpointPickerRef, so this pool has no endpoint picker",
                fix=_ref_to_v1(obj, spec),
            )
        sel = spec.get("selector")
        if isinstance(sel, dict) and sel and "matchLabels" not in sel and "matchExpressions" not in sel:
            yield RULE.finding(
                obj,
                ("spec", "selector"),
                f"selector is a plain label map (v1alpha2); {V1} requires selector.matchLabels",
                fix=_selector_fix(obj, sel, wrap=True),
            )
    elif version == V1A2:
        if "targetPorts" in spec:
            yield RULE.finding(
                obj,
                ("spec", "targetPorts"),
                f"targetPorts is the v1 field; {V1A2} uses targetPortNumber",
                fix=_ports_to_v1a2(obj, spec),
            )
        if "endpointPickerRef" in spec:
            yield RULE.finding(
                obj,
                ("spec", "endpointPickerRef"),
                f"endpointPickerRef is the v1 field; {V1A2} uses extensionRef",
                fix=_ref_to_v1a2(obj, spec),
            )
        sel = spec.get("selector")
        if isinstance(sel, dict) and "matchLabels" in sel:
            yield RULE.finding(
                obj,
                ("spec", "selector"),
                f"selector.matchLabels is the v1 form; {V1A2} takes a plain label map under selector",
                fix=_selector_fix(obj, as_dict(sel.get("matchLabels")), wrap=False),
            )


def _entry_range(obj: Any, path: tuple) -> tuple[int, int] | None:
    """Offsets of a whole `key: value` entry (from the key to the end of its block)."""
    loc = obj.location(path)
    if loc is None:
        return None
    start = loc.key_start
    text = obj.source.text
    ls = text.rfind("\n", 0, start) + 1
    if text[ls:start].strip():
        return None
    if loc.value.end_line == loc.key.line:  # value on the key's line
        return start, loc.value_end
    end = edits.end_of_block(obj, path)
    if end is None:
        return None
    while end > start and text[end - 1] in "\r\n":
        end -= 1
    return start, end


def _replace_entry(obj: Any, path: tuple, new: str) -> Edit | None:
    rng = _entry_range(obj, path)
    if rng is None:
        return None
    old = obj.source.text[rng[0] : rng[1]]
    if "#" in old or "&" in old or "*" in old:
        return None  # comments or anchors inside: leave it to a human
    return Edit(rng[0], rng[1], new)


def _ports_to_v1(obj: Any, spec: dict[str, Any]) -> Fix | None:
    n = serving.arg_int(spec.get("targetPortNumber"))
    if n is None or "targetPorts" in spec:
        return None
    return make_fix(
        "rename targetPortNumber to targetPorts",
        [_replace_entry(obj, ("spec", "targetPortNumber"), f"targetPorts: [{{number: {n}}}]")],
    )


def _ports_to_v1a2(obj: Any, spec: dict[str, Any]) -> Fix | None:
    ports = [serving.arg_int(p.get("number")) for _, p in iter_dicts(spec.get("targetPorts"))]
    if len(ports) != 1 or ports[0] is None or "targetPortNumber" in spec:
        return None
    return make_fix(
        "rename targetPorts to targetPortNumber",
        [_replace_entry(obj, ("spec", "targetPorts"), f"targetPortNumber: {ports[0]}")],
    )


def _ref_fields(ref: dict[str, Any], keys: tuple[str, ...]) -> list[str]:
    return [f"{k}: {edits.scalar(ref[k])}" for k in keys if k in ref and not isinstance(ref[k], (dict, list))]


def _ref_to_v1(obj: Any, spec: dict[str, Any]) -> Fix | None:
    ref = spec.get("extensionRef")
    if not isinstance(ref, dict) or "endpointPickerRef" in spec or not isinstance(ref.get("name"), str):
        return None
    port = serving.arg_int(ref.get("portNumber")) or DEFAULT_EPP_PORT
    parts = (
        _ref_fields(ref, ("group", "kind", "name")) + [f"port: {{number: {port}}}"] + _ref_fields(ref, ("failureMode",))
    )
    return make_fix(
        "rename extensionRef to endpointPickerRef",
        [_replace_entry(obj, ("spec", "extensionRef"), "endpointPickerRef: {" + ", ".join(parts) + "}")],
    )


def _ref_to_v1a2(obj: Any, spec: dict[str, Any]) -> Fix | None:
    ref = spec.get("endpointPickerRef")
    if not isinstance(ref, dict) or "extensionRef" in spec or not isinstance(ref.get("name"), str):
        return None
    parts = _ref_fields(ref, ("group", "kind", "name"))
    port = serving.arg_int(as_dict(ref.get("port")).get("number"))
    if port is not None:
        parts.append(f"portNumber: {port}")
    parts += _ref_fields(ref, ("failureMode",))
    return make_fix(
        "rename endpointPickerRef to extensionRef",
        [_replace_entry(obj, ("spec", "endpointPickerRef"), "extensionRef: {" + ", ".join(parts) + "}")],
    )


def _selector_fix(obj: Any, labels: dict[str, Any], wrap: bool) -> Fix | None:
    if not labels or any(isinstance(v, (dict, list)) for v in labels.values()):
        return None
    inner = "{" + ", ".join(f"{edits.scalar(str(k))}: {edits.scalar(str(v))}" for k, v in labels.items()) + "}"
    new = f"selector: {{matchLabels: {inner}}}" if wrap else f"selector: {inner}"
    title = "wrap the selector in matchLabels" if wrap else "unwrap selector.matchLabels"
    return make_fix(title, [_replace_entry(obj, ("spec", "selector"), new)])


# -- (a) and (b): the pods it selects ---------------------------------------------------------
def _serving_pods(ctx: Any, ns: str) -> list[tuple[Any, Any, list[Any]]]:
    """(object, pod template, its serving containers) of the namespace, in object order;
    once per namespace and run, for every pool there."""
    got: list[tuple[Any, Any, list[Any]]] = ctx.memo(
        ("SRV008.serving_pods", ns), lambda: [(o, pod, list(serving.iter_serving(pod))) for o, pod in ctx.pods_in(ns)]
    )
    return got


def _selection(obj: Any, ctx: Any, ns: str, spec: dict[str, Any], labels: dict[str, str]) -> Iterator[Finding]:
    matched = []
    any_serving = False
    for o, pod, servers in _serving_pods(ctx, ns):
        if servers:
            any_serving = True
        if may_select(labels, pod) or (
            pod_labels(pod).get("kserve.io/component") == "workload"
            and o.get("spec", "router", "scheduler", "pool", "ref", "name") == obj.name
        ):
            matched.append((o, pod, servers))  # KServe copies a referenced pool's selector onto its pods
    sel_path = (
        ("spec", "selector", "matchLabels") if "matchLabels" in as_dict(spec.get("selector")) else ("spec", "selector")
    )
    shown = ", ".join(f"{k}={v}" for k, v in labels.items())
    if not matched:
        if any_serving and unknown_owner(labels, ctx, ns, obj) is None:
            yield RULE.finding(
                obj,
                sel_path,
                f"selector {shown} matches no pod template in namespace {ns} and no custom resource there could "
                "own such pods; the pool has no endpoints",
            )
        return
    models_seen: dict[str, str] = {}
    images: dict[str, str] = {}
    ports: set[int] = set()
    for o, pod, servers in matched:
        for c, engine in servers:
            args = serving.engine_args(c, engine)
            m = serving.served_model(c, args)
            if m:
                models_seen.setdefault(m, o.name or "")
        if servers and servers[0][0].image:
            images.setdefault(servers[0][0].image, o.name or "")
            served = serving.serving_port(c, engine)
            if isinstance(served, int):
                ports.add(served)
        app = list(pod.containers(include_init=False))
        for c in app:
            ports |= serving.container_ports(c)
        if not servers and app and app[0].image:
            images.setdefault(app[0].image, o.name or "")
    if len(models_seen) > 1:
        yield RULE.finding(
            obj,
            sel_path,
            f"selector {shown} matches servers of {len(models_seen)} models ("
            f"{', '.join(sorted(models_seen))[:120]}); a pool must serve one base model",
        )
    elif len(images) > 1:
        yield RULE.finding(
            obj,
            sel_path,
            f"selector {shown} matches pods with {len(images)} different images ("
            f"{', '.join(sorted(images))[:120]}); keep one model server per pool",
        )
    if not ports:
        return
    targets: list[tuple[tuple, int]] = []
    if obj.api_version == V1A2 or "targetPortNumber" in spec:
        n = serving.arg_int(spec.get("targetPortNumber"))
        if n is not None:
            targets.append((("spec", "targetPortNumber"), n))
    for i, p in iter_dicts(spec.get("targetPorts")):
        n = serving.arg_int(p.get("number"))
        if n is not None:
            targets.append((("spec", "targetPorts", i, "number"), n))
    for path, n in targets:
        if n not in ports:
            fix = None
            if len(ports) == 1 and len(targets) == 1:
                port = next(iter(ports))
                fix = make_fix(f"target port {port}", [edits.replace_value(obj, path, str(port))], unsafe=True)
            yield RULE.finding(
                obj,
                path,
                f"target port {n} is not a port of the selected pods ({', '.join(str(x) for x in sorted(ports))})",
                fix=fix,
            )


# -- (d) the endpoint picker ------------------------------------------------------------------
def _epp(obj: Any, ctx: Any, ns: str, spec: dict[str, Any], version: str) -> Iterator[Finding]:
    key = "endpointPickerRef" if "endpointPickerRef" in spec else "extensionRef" if "extensionRef" in spec else None
    if key is None:
        want = "extensionRef" if version == V1A2 else "endpointPickerRef"
        yield RULE.finding(
            obj,
            ("spec",),
            f"InferencePool has no {want}: no endpoint picker scores the model servers",
            severity=Severity.WARNING,
        )
        return
    ref = spec.get(key)
    if not isinstance(ref, dict):
        return
    name = ref.get("name")
    if not isinstance(name, str) or (ref.get("kind") or "Service") != "Service" or ref.get("group"):
        return
    services = list(ctx.of_kind("Service", namespace=ns))
    if not services:
        return
    svc = ctx.named("Service", name, namespace=ns, near=obj)
    if svc is None:
        yield RULE.finding(
            obj,
            ("spec", key, "name"),
            f"endpoint picker Service {name} is not in namespace {ns}",
            severity=Severity.WARNING,
        )
        return
    if (ref.get("failureMode") or "FailClose") != "FailClose":
        return
    sel = svc.get("spec", "selector")
    if not isinstance(sel, dict) or not sel:
        return
    for dep in ctx.of_kind("Deployment", namespace=ns):
        for pod in pod_templates(dep):
            if not may_select(sel, pod):
                continue
            replicas = serving.arg_int(dep.get("spec", "replicas")) if dep.has(("spec", "replicas")) else 1
            if replicas != 1:
                continue
            pdbs = [
                p
                for p in ctx.of_kind("PodDisruptionBudget", namespace=ns)
                if may_select(p.get("spec", "selector"), pod)
            ]
            if pdbs:
                continue
            yield RULE.finding(
                obj,
                ("spec", key),
                f"endpoint picker {ctx.describe(dep)} runs 1 replica with no "
                "PodDisruptionBudget and failureMode FailClose: every EPP restart "
                "or eviction is a full outage of the pool",
                severity=Severity.WARNING,
            )
            return
