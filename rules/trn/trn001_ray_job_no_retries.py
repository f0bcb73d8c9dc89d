"""
## What it does
Finds Ray training jobs that end at the first failure:
- (a) a `RayJob` (`ray.io/v1`) whose `spec.backoffLimit` is unset or 0. RayJobs with a
  `clusterSelector` (they run on an existing RayCluster, which a retry would delete) and
  `submissionMode: InteractiveMode` (KubeRay rejects `backoffLimit > 0` there) are skipped;
- (b) Ray Train code visible in the manifests (a RayJob `entrypoint` with inline
  `python -c` code, its `runtimeEnvYAML`, or a ConfigMap mounted into the head or submitter
  pod of a RayJob, RayCluster or AIBrix RayClusterFleet in the run) that builds a
  `RunConfig` or a Ray Train trainer (`TorchTrainer`, `LightningTrainer`, ...) without
  `failure_config=FailureConfig(max_failures=...)`, or with `max_failures=0`.

The finding is a warning, and an error when the job has 2 or more accelerator worker pods
or its workers can run on Spot capacity (they require it, or every NodePool that could host
them allows it).

## Why is this bad?
`backoffLimit` defaults to 0: when the Ray job fails (a lost node, a Spot reclaim, an OOM on
one worker) the RayJob is Failed and no new RayCluster is created. Ray Train's own
`FailureConfig.max_failures` also defaults to 0, so even when the platform replaces the
node within a minute, the run is over and hours of GPU time are lost unless someone
resubmits it by hand.

## Example
```yaml
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: finetune
spec:
  entrypoint: python /app/train.py
  shutdownAfterJobFinishes: true
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.40.0
    workerGroupSpecs:
      - groupName: gpu
        replicas: 4
        rayStartParams: {}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.40.0-gpu
                resources:
                  limits: {nvidia.com/gpu: 1}
```

## Use instead
```yaml
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: finetune
spec:
  entrypoint: python /app/train.py
  shutdownAfterJobFinishes: true
  backoffLimit: 2
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.40.0
    workerGroupSpecs:
      - groupName: gpu
        replicas: 4
        rayStartParams: {}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.40.0-gpu
                resources:
                  limits: {nvidia.com/gpu: 1}
```

## Options
- `backoff_limit` (default 2): the `backoffLimit` the fix sets.

## Fix
Unsafe, for (a): sets `spec.backoffLimit` to `backoff_limit`. Each retry creates a new
RayCluster, so for fail-fast CI jobs the value is a choice. For (b) there is no fix: add
`failure_config=FailureConfig(max_failures=N)` (or `-1` for unlimited) to the `RunConfig`
and resume from the latest checkpoint (`ray.train.get_checkpoint()`).

## References
- https://docs.ray.io/en/latest/cluster/kubernetes/getting-started/rayjob-quick-start.html
- https://docs.ray.io/en/latest/train/user-guides/fault-tolerance.html
- https://github.com/ray-project/kuberay/blob/master/ray-operator/apis/ray/v1/rayjob_types.go
- https://github.com/ray-project/kuberay/blob/master/ray-operator/controllers/ray/utils/validation.go
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity, as_dict, iter_dicts
from ailint.core.rule import Option, Options, Rule, Scope, make_fix
from ailint.domain import accelerators
from ailint.domain import ray as ray_domain
from ailint.domain.context import Context
from ailint.domain.extract import ACCELERATOR_RESOURCES, pod_accelerators, pod_templates
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="TRN001",
    name="ray-job-no-retries",
    severity=Severity.WARNING,
    summary="A RayJob or Ray Train run has no retries (backoffLimit or FailureConfig.max_failures is 0)",
    kinds=("RayJob", "ConfigMap"),
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    options={"backoff_limit": Option(2, "backoffLimit the fix sets on a RayJob", "integer")},
    tags=("ray", "training", "reliability"),
    precision="high",
)

_RAY_IMPORT = lazy_re(r"\bray\.(train|air)\b|from\s+ray\s+import\s+[^\n]*\b(train|air)\b")
_TRAINERS = (
    "TorchTrainer",
    "TensorflowTrainer",
    "DataParallelTrainer",
    "LightningTrainer",
    "HorovodTrainer",
    "XGBoostTrainer",
    "LightGBMTrainer",
    "JaxTrainer",
    "TransformersTrainer",
    "AccelerateTrainer",
    "GBDTTrainer",
    "SklearnTrainer",
    "MosaicTrainer",
)
_BUILD = lazy_re(r"\b(RunConfig|" + "|".join(_TRAINERS) + r")\s*\(")
_FAILURE = lazy_re(r"\bFailureConfig\s*\(")
_MAX_FAILURES = lazy_re(r"\bmax_failures\s*=\s*")


# ---------------------------------------------------------------------------------------
# Ray Train code
# ---------------------------------------------------------------------------------------
def _call_args(code: str, open_paren: int) -> str:
    depth, i = 0, open_paren
    while i < len(code):
        ch = code[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return code[open_paren + 1 : i]
        i += 1
    return code[open_paren + 1 :]


def _arg_value(args: str, start: int) -> str:
    depth, i = 0, start
    while i < len(args):
        ch = args[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            break
        i += 1
    return args[start:i].strip()


def train_problem(code: object) -> tuple[str, str] | None:
    """(message, text to point at) when the code builds a Ray Train run without retries."""
    if not isinstance(code, str) or "ray" not in code or not _RAY_IMPORT.search(code):
        return None
    build = _BUILD.search(code)
    if build is None:
        return None
    calls = list(_FAILURE.finditer(code))
    zero_at = None
    for m in calls:
        args = _call_args(code, m.end() - 1)
        mf = _MAX_FAILURES.search(args)
        if mf is None:
            zero_at = zero_at or m.group(0)
            continue
        value = _arg_value(args, mf.end())
        if value in ("0", "+0"):
            zero_at = "max_failures"
            continue
        return None  # a non-zero or computed max_failures: retries are configured
    if calls:
        if zero_at == "max_failures":
            return (
                "FailureConfig(max_failures=0) disables Ray Train retries: one node failure ends the run; "
                "use N > 0 or -1 and resume from a checkpoint",
                "max_failures",
            )
        return (
            "FailureConfig() without max_failures keeps Ray Train's default of 0: one node failure ends the "
            "run; set max_failures=N or -1",
            "FailureConfig",
        )
    if "failure_config" in code or _MAX_FAILURES.search(code):
        return None  # configured through a variable or kwargs the linter cannot follow
    run_config = re.search(r"\bRunConfig\s*\(", code)
    at = run_config or build
    what = "RunConfig" if run_config else build.group(1)
    return (
        f"{what}(...) has no failure_config and Ray Train's max_failures defaults to 0: one node failure "
        f"ends the run; add FailureConfig(max_failures=N or -1)",
        at.group(0),
    )


# ---------------------------------------------------------------------------------------
# Severity context
# ---------------------------------------------------------------------------------------
def _escalation(obj: K8sObject, ctx: Any) -> str | None:
    """Why a failure is costly enough for an error: GPU worker pods, or Spot capacity."""
    workers = [p for p in pod_templates(obj) if p.role not in ("head", "submitter")]
    acc_workers = [p for p in workers if any(r in ACCELERATOR_RESOURCES for r in pod_accelerators(p))]
    count = sum(p.replicas or 0 for p in acc_workers)
    if count >= 2:
        return f"{count} accelerator worker pods"
    for p in acc_workers or workers:
        if accelerators.pod_may_use_spot(ctx, p):
            return "workers on Spot capacity"
    return None


def _finish(msg: str, why: str | None) -> tuple[str, Severity | None]:
    if why:
        return f"{msg} ({why})", Severity.ERROR
    return msg, None


# ---------------------------------------------------------------------------------------
# check
# ---------------------------------------------------------------------------------------
def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "RayJob" and obj.group == "ray.io":
        yield from _check_rayjob(obj, ctx, opts)
    elif obj.kind == "ConfigMap" and not obj.group:
        yield from _check_configmap(obj, ctx)


def _check_rayjob(obj: K8sObject, ctx: Any, opts: Options) -> Iterator[Finding]:
    spec = as_dict(obj.data.get("spec"))
    if not spec:
        return
    why = None
    why_done = False
    if (
        obj.api_version == "ray.io/v1"
        and not as_dict(spec.get("clusterSelector"))
        and spec.get("submissionMode") != "InteractiveMode"
    ):
        limit = spec.get("backoffLimit")
        if limit is None or (isinstance(limit, int) and not isinstance(limit, bool) and limit == 0) or limit == "0":
            why, why_done = _escalation(obj, ctx), True
            state = "is 0" if "backoffLimit" in spec and limit is not None else "is unset (default 0)"
            msg, sev = _finish(
                f"RayJob backoffLimit {state}: any failure ends the job and KubeRay creates no new RayCluster", why
            )
            yield RULE.finding(obj, ("spec", "backoffLimit"), msg, severity=sev, fix=_fix(obj, spec, opts))
    for key in ("entrypoint", "runtimeEnvYAML"):
        problem = train_problem(spec.get(key))
        if problem is None:
            continue
        if not why_done:
            why, why_done = _escalation(obj, ctx), True
        text, needle = problem
        msg, sev = _finish(f"{key}: {text}", why)
        span = accelerators.line_span_in_value(obj, ("spec", key), needle)
        yield RULE.finding(obj, ("spec", key), msg, severity=sev, span=span)


def _fix(obj: K8sObject, spec: dict[str, Any], opts: Options) -> Fix | None:
    value = opts.get_int("backoff_limit")
    if value <= 0:
        return None
    if "backoffLimit" in spec:
        edit = edits.replace_value(obj, ("spec", "backoffLimit"), str(value))
    else:
        edit = edits.insert_key(obj, ("spec",), "backoffLimit", str(value))
    return make_fix(f"set backoffLimit: {value}", [edit], unsafe=True)


def _mounted_configmaps(pod: Any) -> set[str]:
    names = set()
    for _, v in iter_dicts(pod.spec.get("volumes")):
        cm = as_dict(v.get("configMap"))
        if isinstance(cm.get("name"), str):
            names.add(cm["name"])
        for _, src in iter_dicts(as_dict(v.get("projected")).get("sources")):
            cm = as_dict(src.get("configMap"))
            if isinstance(cm.get("name"), str):
                names.add(cm["name"])
    return names


def _check_configmap(obj: K8sObject, ctx: Any) -> Iterator[Finding]:
    data = as_dict(obj.data.get("data"))
    if not data or not obj.name:
        return
    problems = [(key, p) for key, p in ((k, train_problem(v)) for k, v in data.items()) if p is not None]
    if not problems:
        return
    ns = obj.namespace_or_default
    users = []
    for ray in ctx.of_kind("RayJob", "RayCluster", *ray_domain.TEMPLATE_KINDS, namespace=ns):
        if ray.group != "ray.io" and not ray_domain.holds_cluster_template(ray):
            continue
        for pod in pod_templates(ray):
            if pod.role in ("head", "submitter") and obj.name in _mounted_configmaps(pod):
                users.append(ray)
                break
    if not users:
        return
    why = next((w for w in (_escalation(u, ctx) for u in users) if w), None)
    who = ctx.describe(users[0])
    for key, (text, needle) in problems:
        msg, sev = _finish(f"{key} (mounted by {who}): {text}", why)
        span = accelerators.line_span_in_value(obj, ("data", key), needle)
        yield RULE.finding(obj, ("data", key), msg, severity=sev, span=span)
