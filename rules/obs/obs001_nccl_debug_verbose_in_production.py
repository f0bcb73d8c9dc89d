"""
## What it does
Finds verbose collective-communication debugging left on: `NCCL_DEBUG=INFO` or `TRACE`
(with `NCCL_DEBUG_SUBSYS=ALL` it is worse) and `TORCH_DISTRIBUTED_DEBUG=DETAIL`. It looks
at container `env`, at `VAR=value` in the command (`export NCCL_DEBUG=INFO && torchrun …`),
at ConfigMap keys pulled in with `envFrom`/`configMapKeyRef`, and at ConfigMap scripts
that the command sources (`source /etc/nccl/nccl-env.sh`). A warning in long-running
workloads (Deployment, StatefulSet, DaemonSet, LeaderWorkerSet, RayService, and the
custom resources whose pods are model servers: KServe, KAITO, KubeAI, AIBrix StormService,
Dynamo, NIM, llmaz, OME), info in Jobs, RayClusters and other batch kinds. Workloads labeled or annotated for debugging (a label
or annotation key or value containing `debug`) and NCCL test runs (`all_reduce_perf` …)
are skipped, and so is a model server of one rank (vLLM, SGLang or TGI with TP × PP × DP of
1 on at most one GPU, and no NCCL KV connector), which runs no collective to trace.

## Why is this bad?
At `INFO`, NCCL logs every communicator init, ring and tree, per rank; with
`NCCL_DEBUG_SUBSYS=ALL` and `TRACE` it logs per operation. On a 64-GPU job this is
gigabytes of logs per hour, slows the collectives it is tracing, and floods the log
pipeline (and its bill) for a problem nobody is debugging. `TORCH_DISTRIBUTED_DEBUG=DETAIL`
adds extra collective checks that synchronize ranks and cost throughput. AWS's EFA
guidance: leave it off unless you suspect an NCCL issue.

## Example
```yaml
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: vllm-tp8
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "8"]
          env:
            - name: NCCL_DEBUG
              value: INFO
          resources:
            limits:
              nvidia.com/gpu: 8
```

## Use instead
```yaml
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: vllm-tp8
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args: ["--model", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "8"]
          env:
            - name: NCCL_DEBUG
              value: WARN
          resources:
            limits:
              nvidia.com/gpu: 8
```

## Options
None.

## Fix
Safe: sets `NCCL_DEBUG` to `WARN` (in env, in the command string or in the ConfigMap),
removes a `NCCL_DEBUG_SUBSYS: ALL` env entry next to it, and sets
`TORCH_DISTRIBUTED_DEBUG` to `OFF`.

## References
- https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-debug
- https://github.com/aws-samples/awsome-distributed-training/blob/main/1.architectures/efa-cheatsheet.md
- https://pytorch.org/docs/stable/distributed.html#torch-distributed-debug
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Edit, Finding, FixAvailability, K8sObject, Severity, as_dict, as_list, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import serving
from ailint.domain.agents import delete_seq_item, text_occurrences
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, SERVING_KINDS, pod_templates
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="OBS001",
    name="nccl-debug-verbose-in-production",
    severity=Severity.WARNING,
    summary="NCCL_DEBUG=INFO/TRACE or TORCH_DISTRIBUTED_DEBUG=DETAIL is left on in a workload",
    kinds=(*POD_KINDS, "ConfigMap"),
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("observability", "nccl", "cost"),
    precision="high",
)

LONG_RUNNING = (
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "ReplicationController",
    "LeaderWorkerSet",
    "RayService",
    "InferenceService",
    "LLMInferenceService",
)
_VERBOSE = ("INFO", "TRACE")
_NCCL_TESTS = lazy_re(
    r"\b(all_reduce_perf|all_gather_perf|reduce_scatter_perf|alltoall_perf|broadcast_perf|"
    r"sendrecv_perf|nccl-tests|nccl_tests)\b"
)
_CMD_SET = lazy_re(r"\bNCCL_DEBUG=(['\"]?)(INFO|TRACE)\1", re.I)
_TORCH_SET = lazy_re(r"\bTORCH_DISTRIBUTED_DEBUG=(['\"]?)DETAIL\1", re.I)


def _debug_labeled(obj: Any, pod: Any) -> bool:
    meta = {**obj.labels, **obj.annotations, **pod.labels, **pod.annotations}
    return any(
        "debug" in str(k).lower() or "debug" in str(v).lower()
        for k, v in meta.items()
        if not str(k).startswith("kubectl.kubernetes.io/")
    )


def _nccl_test(pod: Any) -> bool:
    return any(_NCCL_TESTS.search(" ".join(c.tokens)) for c in pod.containers())


def _single_rank_server(c: Any) -> bool:
    """A vLLM, SGLang or TGI server of one rank (TP x PP x DP = 1) on at most one GPU, with
    no NCCL KV connector: it runs no collective (vLLM's GroupCoordinator builds a device
    communicator only when its world size is above 1), so the debug settings trace nothing."""
    args = serving.engine_args(c)
    if args is None or args.unresolved or args.tp * args.pp * args.dp != 1:
        return False
    if (serving.gpu_limit(c) or 0) > 1:
        return False
    return _NCCL_CONNECTOR.search(" ".join(c.tokens)) is None


_NCCL_CONNECTOR = lazy_re(r"nccl\w*connector", re.I)  # vLLM's PyNcclConnector, P2pNcclConnector


def _sets_either(c: Any) -> bool:
    """Whether the container names NCCL_DEBUG or TORCH_DISTRIBUTED_DEBUG in its env or sets
    either in its command (most do neither): what may be reported, before the costlier
    reasons to skip it are worked out."""
    for _, e in iter_dicts(c.data.get("env")):
        if str(e.get("name")) in ("NCCL_DEBUG", "TORCH_DISTRIBUTED_DEBUG"):
            return True
    for key in ("command", "args"):
        for tok in as_list(c.data.get(key)):
            if isinstance(tok, str) and ("=" in tok) and any(n in tok.lower() for n in _SET_NAMES):
                return True
    return False


_SET_NAMES = ("nccl_debug=", "torch_distributed_debug=")  # (what `_CMD_SET` and `_TORCH_SET` need)


def _skip(obj: Any, pod: Any) -> bool:
    return _debug_labeled(obj, pod) or _nccl_test(pod)


def _severity(obj: Any) -> Severity:
    return Severity.WARNING if _long_running(obj) else Severity.INFO


def _long_running(obj: Any) -> bool:
    """A kind whose pods run until replaced: the core controllers', LWS, Ray Serve, and the
    custom resources whose pods the workload adapters call model servers."""
    return obj.kind in LONG_RUNNING or f"{obj.group}/{obj.kind}" in SERVING_KINDS


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "ConfigMap":
        yield from _config_map(obj, ctx)
        return
    sev = _severity(obj)
    where = "long-running workload" if sev == Severity.WARNING else obj.kind
    for pod in pod_templates(obj):
        setting = [c for c in pod.containers() if _sets_either(c)]
        if not setting or _skip(obj, pod):
            continue
        for c in setting:
            if _single_rank_server(c):
                continue
            env = {str(e.get("name")): (i, e) for i, e in iter_dicts(c.data.get("env"))}
            subsys = env.get("NCCL_DEBUG_SUBSYS")
            subsys_all = subsys is not None and str(subsys[1].get("value", "")).upper() == "ALL"
            if "NCCL_DEBUG" in env and str(env["NCCL_DEBUG"][1].get("value", "")).upper() in _VERBOSE:
                i, e = env["NCCL_DEBUG"]
                path = c.path_of("env", i, "value")
                ed = [edits.replace_scalar(obj, path, "WARN")]
                extra = ""
                if subsys_all and subsys is not None:  # (subsys_all implies the entry)
                    extra = " with NCCL_DEBUG_SUBSYS=ALL"
                    ed.append(delete_seq_item(obj, c.path_of("env", subsys[0])))
                fix = (
                    make_fix("set NCCL_DEBUG=WARN" + (" and drop NCCL_DEBUG_SUBSYS" if subsys_all else ""), ed)
                    if all(x is not None for x in ed)
                    else None
                )
                yield RULE.finding(
                    obj,
                    path,
                    f"NCCL_DEBUG={e.get('value')}{extra} in container {c.name or '?'} of "
                    f"a {where} logs every communicator and slows collectives; use WARN",
                    severity=sev,
                    fix=fix,
                )
            tdd = env.get("TORCH_DISTRIBUTED_DEBUG")
            if tdd is not None and str(tdd[1].get("value", "")).upper() == "DETAIL":
                path = c.path_of("env", tdd[0], "value")
                yield RULE.finding(
                    obj,
                    path,
                    f"TORCH_DISTRIBUTED_DEBUG=DETAIL in container {c.name or '?'} of a "
                    f"{where} adds synchronizing collective checks; use OFF",
                    severity=sev,
                    fix=make_fix("set TORCH_DISTRIBUTED_DEBUG=OFF", [edits.replace_scalar(obj, path, "OFF")]),
                )
            yield from _command(obj, c, sev, where)


def _command(obj: Any, c: Any, sev: Severity, where: str) -> Iterator[Finding]:
    for key in ("command", "args"):
        for i, tok in enumerate(as_list(c.data.get(key))):
            if not isinstance(tok, str):
                continue
            path = c.path_of(key, i)
            for rx, _name, new in (
                (_CMD_SET, "NCCL_DEBUG", "NCCL_DEBUG=WARN"),
                (_TORCH_SET, "TORCH_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG=OFF"),
            ):
                m = rx.search(tok)
                if not m:
                    continue
                fix = make_fix(f"set {new}", _text_edits(obj, path, m.group(0), new))
                yield RULE.finding(
                    obj,
                    path,
                    f"container {c.name or '?'} sets {m.group(0)} in its {key} ({where}); use {new}",
                    severity=sev,
                    fix=fix,
                )


def _text_edits(obj: Any, path: tuple, old: str, new: str) -> list[Edit]:
    offs = text_occurrences(obj, path, old)
    if not offs:
        return []
    return [Edit(o, o + len(old), new) for o in offs]


# ---------------------------------------------------------------------------------------
# ConfigMaps: env keys pulled in by pods, and scripts sourced by their commands
# ---------------------------------------------------------------------------------------
def _consumers(cm: Any, ctx: Any) -> list[tuple[Any, Any, str]]:
    """(object, pod, how) for pods in the run that read this ConfigMap as env or source it."""
    out = []
    ns = cm.namespace_or_default
    for o, pod in ctx.pods_in(None):
        if (o.namespace_or_default) != ns:
            continue
        mounts = {}
        for _, v in iter_dicts(pod.spec.get("volumes")):
            if as_dict(v.get("configMap")).get("name") == cm.name:
                mounts[str(v.get("name"))] = v
        for c in pod.containers():
            how = None
            for _, ef in iter_dicts(c.data.get("envFrom")):
                if as_dict(ef.get("configMapRef")).get("name") == cm.name:
                    how = "env"
            for _, e in iter_dicts(c.data.get("env")):
                if as_dict(as_dict(e.get("valueFrom")).get("configMapKeyRef")).get("name") == cm.name:
                    how = "env"
            text = " ".join(str(x) for x in as_list(c.data.get("command")) + as_list(c.data.get("args")))
            for m in c.volume_mounts:
                mp = str(m.get("mountPath") or "")
                if (
                    str(m.get("name")) in mounts
                    and mp
                    and re.search(rf"(\bsource|(^|[;&|\s])\.)\s+{re.escape(mp.rstrip('/'))}/", text)
                ):
                    how = how or "script"
            if how:
                out.append((o, pod, how))
                break
    return out


def _config_map(cm: Any, ctx: Any) -> Iterator[Finding]:
    data = as_dict(cm.data.get("data"))
    hits = []
    for key, value in data.items():
        if not isinstance(value, str):
            continue
        if str(key) == "NCCL_DEBUG" and value.strip().upper() in _VERBOSE:
            hits.append(("env", key, value.strip(), "NCCL_DEBUG"))
        elif str(key) == "TORCH_DISTRIBUTED_DEBUG" and value.strip().upper() == "DETAIL":
            hits.append(("env", key, value.strip(), "TORCH_DISTRIBUTED_DEBUG"))
        else:
            low = value.lower()  # the patterns ignore case; most values hold neither name
            for rx, name in ((_CMD_SET, "NCCL_DEBUG"), (_TORCH_SET, "TORCH_DISTRIBUTED_DEBUG")):
                m = rx.search(value) if f"{name.lower()}=" in low else None
                if m:
                    hits.append(("script", key, m.group(0), name))
    if not hits:
        return
    users = [(o, p, how) for o, p, how in _consumers(cm, ctx) if not _skip(o, p)]
    for kind, key, shown, name in hits:
        readers = [(o, p) for o, p, how in users if how == kind]
        if not readers:
            continue
        sev = Severity.WARNING if any(_long_running(o) for o, _ in readers) else Severity.INFO
        o = readers[0][0]
        new = "WARN" if name == "NCCL_DEBUG" else "OFF"
        path = ("data", key)
        if kind == "env":
            fix = make_fix(f"set {name}={new}", [edits.replace_scalar(cm, path, new)])
            msg = f"ConfigMap key {name}={shown} is loaded into {ctx.describe(o)}"
        else:
            fix = make_fix(f"set {name}={new}", _text_edits(cm, path, shown, f"{name}={new}"))
            msg = f"script {key} sets {shown} and is sourced by {ctx.describe(o)}"
        yield RULE.finding(
            cm, path, f"{msg}; verbose collective logging slows jobs and floods logs: use {new}", severity=sev, fix=fix
        )
