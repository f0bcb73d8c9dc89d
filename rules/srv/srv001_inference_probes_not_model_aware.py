"""
## What it does
Checks that every inference server container (vLLM, SGLang, TGI, Triton, llama.cpp,
LMDeploy, Ray Serve; detected by image or command, with or without a GPU request) has
probes that wait for the model:

- (a) a `readinessProbe` that asks the server (`httpGet`, `exec` or `grpc`), not none and
  not only a `tcpSocket` check;
- (b) when it has a `livenessProbe`, either a `startupProbe` or a liveness window
  (`initialDelaySeconds + failureThreshold × periodSeconds`, with Kubernetes' defaults 0,
  3 and 10) at least as long as the expected load time: 600 s by default, 1200 s when the
  model is over 30 GB or is downloaded at start (a Hugging Face or S3 id with no
  persistent volume mounted);
- (c) a `startupProbe` whose budget (`initialDelaySeconds + failureThreshold × periodSeconds`)
  is shorter than that same expected load time (the kubelet kills the container when the
  startup probe gives up). Probes a controller writes into the pods it builds are not judged.

It also checks RayClusters that run Ray Serve (`serve run|deploy|start`): KubeRay injects
readiness probes that check only the raylet and GCS there, and adds the Serve proxy check
(`/-/healthz`) only for RayService workers. RayServices are not checked.

In a LeaderWorkerSet only the leader template is checked (workers join the leader's
engine and serve no HTTP). KServe InferenceServices are checked in every deployment mode
(with the ServingRuntime container merged in when the runtime is in the run): for a
container that states no readiness probe, KServe's RawDeployment adds only a tcpSocket
check on its port and Knative (Serverless) defaults one to a tcpSocket check on the user
port, neither of which waits for the model.

Severity: error when the liveness probe restarts the container, or the startup probe gives
up, in under 300 seconds; a warning otherwise.

## Why is this bad?
Loading weights takes minutes (28 to 30+ minutes for large models fetched at start). Without
a model-aware readiness probe the pod turns Ready while the server cannot answer, and the
Service sends it traffic that fails. A liveness probe without a startup probe restarts the
container before the model has loaded, so it never becomes Ready at all (a restart loop
that costs GPU hours).

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
          ports:
            - containerPort: 8000
          livenessProbe:
            httpGet: {path: /health, port: 8000}
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
          ports:
            - containerPort: 8000
          startupProbe:
            httpGet: {path: /health, port: 8000}
            periodSeconds: 10
            failureThreshold: 180
          readinessProbe:
            httpGet: {path: /health, port: 8000}
          livenessProbe:
            httpGet: {path: /health, port: 8000}
```

## Options
- `expected-load-seconds` (integer, default 600): the load time a liveness window must cover.
- `large-model-load-seconds` (integer, default 1200): the load time for models over 30 GB
  or downloaded at start.

## Fix
Unsafe (the thresholds are a choice): adds a `readinessProbe` (`httpGet` on `/health` for
vLLM, SGLang, TGI and llama.cpp, `/v2/health/ready` for Triton, `/-/healthz` for Ray Serve)
or a `startupProbe` on the same path with `periodSeconds: 10` and `failureThreshold: 180`
(30 minutes). No fix when the port is unknown or the probe exists as a `tcpSocket` check
(replace it by hand).

## References
- https://kubernetes.io/docs/tasks/configure-pod-container/configure-liveness-readiness-startup-probes/
- https://docs.vllm.ai/en/stable/serving/openai_compatible_server.html
- https://github.com/ray-project/kuberay/blob/master/ray-operator/controllers/ray/common/pod.go
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity, as_dict, as_list, get_in
from ailint.core.rule import Option, Options, Rule, make_fix
from ailint.domain import models, serving
from ailint.domain.context import Context
from ailint.domain.extract import SERVING_KINDS, pod_templates, role_override, serving_engine
from ailint.domain.kserve import preset_supplies
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SRV001",
    name="inference-probes-not-model-aware",
    severity=Severity.WARNING,
    summary="An inference server has no model-aware readiness probe, or a liveness probe that can kill it mid-load",
    kinds=("Pod", "Deployment", "StatefulSet", "LeaderWorkerSet", "RayCluster", *SERVING_KINDS),
    fix=FixAvailability.SOMETIMES,
    options={
        "expected-load-seconds": Option(600, "load time a liveness window must cover", "integer"),
        "large-model-load-seconds": Option(1200, "load time for models over 30 GB or downloaded at start", "integer"),
    },
    tags=("serving", "probes"),
)

_SERVE_CMD = lazy_re(r"(^|\s|/)serve (run|deploy|start)\b")
_REMOTE_MODEL = lazy_re(r"^(s3|gs|hf|https?)://|^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "RayCluster":
        yield from _ray_cluster(obj)
        return
    pods = list(pod_templates(obj))
    if obj.kind == "LeaderWorkerSet" and any(p.role == "leader" for p in pods):
        pods = [p for p in pods if p.role == "leader"]
    for pod in pods:
        ov = role_override(pod)
        if ov and ov != "serving":
            continue
        for c in pod.containers(include_init=False):
            engine = serving_engine(c)
            if engine and not ("readinessProbe" not in c.data and preset_supplies(c, "readinessProbe")):
                yield from _check_container(obj, c, engine, opts)  # (a controller may add the probes)


def _probe_kind(probe: Any) -> str | None:
    p = as_dict(probe)
    for k in ("httpGet", "exec", "grpc", "tcpSocket"):
        if k in p:
            return k
    return None


def _num(probe: dict[str, Any], key: str, default: int) -> int:
    v = serving.arg_int(probe.get(key))
    return default if v is None else v


def _check_container(obj: Any, c: Any, engine: str, opts: Options) -> Iterator[Finding]:
    name = c.name or "<unnamed>"
    path = serving.data()["health_paths"].get(engine)
    port = serving.serving_port(c, engine)
    ready = c.data.get("readinessProbe")
    kind = _probe_kind(ready)
    if not isinstance(ready, dict):
        hint = f"; probe httpGet {path}" if path else ""
        yield RULE.finding(
            obj,
            c.path_of("readinessProbe"),
            f"{engine} container {name} has no readinessProbe, so the pod turns Ready before the model is loaded{hint}",
            fix=_add_probe(obj, c, "readinessProbe", path, port, 3),
        )
    elif kind == "tcpSocket":
        hint = f"httpGet {path}" if path else "an httpGet or exec probe that asks the server"
        yield RULE.finding(
            obj,
            c.path_of("readinessProbe", "tcpSocket"),
            f"{engine} container {name} has only a tcpSocket readinessProbe, which passes before the model "
            f"answers; use {hint}",
        )
    live = c.data.get("livenessProbe")
    start = c.data.get("startupProbe")
    if isinstance(start, dict) and c.pod.synthetic is None:  # a controller's own probe is not the manifest's
        period = max(_num(start, "periodSeconds", 10), 1)
        budget = _num(start, "initialDelaySeconds", 0) + _num(start, "failureThreshold", 3) * period
        expected, why = _expected_load(c, engine, opts)
        if budget < expected:
            need = -(-(expected - _num(start, "initialDelaySeconds", 0)) // period)
            yield RULE.finding(
                obj,
                c.path_of("startupProbe"),
                f"startupProbe of {name} gives up after {budget}s, shorter than the expected load time "
                f"({expected}s{why}): the kubelet kills the container before the model is loaded; "
                f"set failureThreshold to {need}",
                severity=Severity.ERROR if budget < 300 else Severity.WARNING,
                fix=make_fix(
                    f"set startupProbe.failureThreshold: {need}",
                    [edits.set_value(obj, c.path_of("startupProbe", "failureThreshold"), need)],
                ),
            )
    if isinstance(live, dict) and not isinstance(start, dict):
        window = _num(live, "initialDelaySeconds", 0) + _num(live, "failureThreshold", 3) * _num(
            live, "periodSeconds", 10
        )
        expected, why = _expected_load(c, engine, opts)
        if window < expected:
            sev = Severity.ERROR if window < 300 else Severity.WARNING
            yield RULE.finding(
                obj,
                c.path_of("livenessProbe"),
                f"livenessProbe of {name} restarts the container after {window}s with no startupProbe, shorter "
                f"than the expected load time ({expected}s{why}); add a startupProbe",
                severity=sev,
                fix=_add_probe(obj, c, "startupProbe", path, port, 180),
            )


def _expected_load(c: Any, engine: str, opts: Options) -> tuple[int, str]:
    base = opts.get_int("expected-load-seconds")
    large = opts.get_int("large-model-load-seconds")
    args = serving.engine_args(c, engine)
    model = serving.served_model(c, args)
    size = _model_bytes(c, model)
    if size is not None and size > 30e9:
        return large, f", model about {size / 1e9:.0f} GB"
    if model and _REMOTE_MODEL.search(model) and not _has_persistent_volume(c):
        return large, f", {model} is downloaded at start"
    return base, ""


def _model_bytes(c: Any, model: str | None) -> float | None:
    try:
        est = models.estimate(c, c.pod)
    except Exception:
        return None
    return est.bytes if est is not None else None


def _has_persistent_volume(c: Any) -> bool:
    vols = {str(v.get("name")): v for v in as_list(c.pod.spec.get("volumes")) if isinstance(v, dict)}
    for m in c.volume_mounts:
        v = vols.get(str(m.get("name")), {})
        if any(k in v for k in ("persistentVolumeClaim", "hostPath", "csi", "nfs", "ephemeral")):
            return True
    return False


def _add_probe(obj: Any, c: Any, key: str, path: str | None, port: Any, failures: int) -> Fix | None:
    if not path or not port or not isinstance(obj.get(*c.path), dict):
        return None
    probe = {"httpGet": {"path": path, "port": port}, "periodSeconds": 10, "failureThreshold": failures}
    what = "startupProbe (30 min)" if key == "startupProbe" else "readinessProbe"
    return make_fix(f"add a {what} on {path}", [edits.insert_value(obj, c.path, key, probe)], unsafe=True)


def _ray_cluster(obj: Any) -> Iterator[Finding]:
    pods = list(pod_templates(obj))
    runs_serve = False
    for pod in pods:
        for c in pod.containers(include_init=False):
            text = " ".join(c.tokens)
            post = as_list(get_in(c.data, ("lifecycle", "postStart", "exec", "command")))
            text += " " + " ".join(str(x) for x in post)
            if _SERVE_CMD.search(text.lower()):
                runs_serve = True
    if not runs_serve:
        return
    for pod in pods:
        if pod.role == "submitter":
            continue
        first = next(iter(pod.containers(include_init=False)), None)
        if first is None or isinstance(first.data.get("readinessProbe"), dict):
            continue
        port = None
        for p in as_list(first.data.get("ports")):
            if isinstance(p, dict) and p.get("name") == "serve":
                port = serving.arg_int(p.get("containerPort"))
        port = port or 8000
        yield RULE.finding(
            obj,
            first.path_of("readinessProbe"),
            f"RayCluster runs Ray Serve but the {pod.role or 'ray'} container {first.name or '<unnamed>'} relies on "
            "KubeRay's injected readiness probe, which checks only the raylet/GCS; probe the Serve proxy /-/healthz",
            fix=_add_probe(obj, first, "readinessProbe", "/-/healthz", port, 3),
        )
