"""
## What it does
Compares the parallelism a vLLM or SGLang server is told to use with the GPUs it gets:

- Single pod: tensor parallel × pipeline parallel × local data parallel (vLLM
  `--tensor-parallel-size`/`-tp`, `--pipeline-parallel-size`/`-pp`, `--data-parallel-size`/`-dp`
  or `--data-parallel-size-local`/`-dpl`; SGLang `--tp`/`--tp-size`, `--pp-size`, `--dp`/`--dp-size`,
  where `--enable-dp-attention` runs DP inside TP) against the container's `nvidia.com/gpu`
  limit. More than the limit is an error (the engine fails to start); fewer is a warning
  (GPUs sit idle). Also an error when TP exceeds the largest GPU count of every instance
  type the pod can land on (the target instance set).
- Multi-node: a LeaderWorkerSet group (`size` N) whose leader runs one engine over the
  group (vLLM over Ray, SGLang `--nnodes`) must have TP × PP (× DP) equal to the group's
  GPUs (leader + N-1 workers).
- RayService Ray Serve LLM configs: `engine_kwargs.tensor_parallel_size ×
  pipeline_parallel_size` above all the GPUs the worker groups can have is an error; TP
  above the GPUs of one worker pod is a warning (TP traffic then crosses the network).
- A pod outside a LeaderWorkerSet started with `--distributed-executor-backend ray`: its Ray
  cluster is not visible, so only what one pod knows is judged: TP above the pod's GPUs is a
  warning (the TP group crosses the network). When the pod can join no Ray cluster at all
  (not a KubeRay pod, no `RAY_ADDRESS` and no `envFrom`, no `ray start` in its command),
  `ray.init()` starts a Ray instance inside the pod that holds only its GPUs: TP × PP × DP
  above them is an error, since the placement group never forms. `vllm serve --omni` (vLLM-Omni, one
  parallelism per stage) is skipped.

Flags are read from `command`/`args`, `sh -c` scripts and `$(VAR)` references; values the
linter cannot resolve (shell variables) skip the check, and so do pods without a GPU
resource (MIG, CPU, TPU, Neuron).

Severity: warning when the parallelism leaves GPUs idle or tensor parallelism crosses pods
(the engine starts, but wastes or slows GPUs); an error when it cannot start.

## Why is this bad?
vLLM and SGLang refuse to start when TP × PP × DP needs more GPUs than the container sees,
so the pod crash-loops on an expensive node. With fewer, the extra GPUs are reserved and
billed but never used: a 4-GPU pod running TP 1 wastes three quarters of a g5.12xlarge.

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
          args: ["--model", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "8"]
          resources:
            limits:
              nvidia.com/gpu: 4
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
          args: ["--model", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "4"]
          resources:
            limits:
              nvidia.com/gpu: 4
```

## Options
None.

## Fix
Unsafe: sets TP to GPUs / (PP × DP) when that divides evenly and the flag is a literal
(a list item, `--flag=N`, a flag in an `sh -c` string, or a `$(VAR)` with a literal env
value); adds `--tensor-parallel-size=N` to a plain args list when TP is unset. No fix for
multi-node groups or RayServices: choose between more GPUs and a smaller TP.

## References
- https://docs.vllm.ai/en/stable/serving/parallelism_scaling.html
- https://docs.vllm.ai/en/stable/configuration/engine_args.html
- https://github.com/kubernetes-sigs/lws/blob/main/api/leaderworkerset/v1/leaderworkerset_types.go
- https://docs.ray.io/en/latest/serve/llm/index.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, Fix, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain import instances, serving
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, pod_templates

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SRV004",
    name="vllm-parallelism-gpu-mismatch",
    severity=Severity.ERROR,
    summary="vLLM/SGLang tensor x pipeline x data parallelism does not match the GPUs the pod gets",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    tags=("serving", "gpu", "vllm"),
)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "RayService":
        yield from _rayservice(obj)
        return
    pods = list(pod_templates(obj))
    size = 1
    if obj.kind == "LeaderWorkerSet":
        lwt = as_dict(obj.get("spec", "leaderWorkerTemplate"))
        size = serving.arg_int(lwt.get("size")) or 1
        if any(p.role == "leader" for p in pods):
            leader = [p for p in pods if p.role == "leader"]
            workers = [p for p in pods if p.role == "worker"]
        else:
            leader, workers = pods, pods
    else:
        leader, workers = pods, []
    for pod in leader:
        for c, engine in serving.iter_serving(pod):
            if engine not in ("vllm", "sglang"):
                continue
            yield from _check_container(obj, ctx, pod, c, engine, size, workers)


def _dp_local(args: serving.EngineArgs) -> int | None:
    """Data-parallel ranks this pod runs (None when the linter cannot tell)."""
    if args.engine == "sglang":
        return 1 if args.has("dp") and "--enable-dp-attention" in args.tokens else args.dp
    local = args.int("dp_local")
    if local is not None:
        return local
    if args.has("dp_rank"):
        return 1  # external load-balancer mode: one rank per process
    if args.dp > 1 and any(
        t.startswith(("--data-parallel-address", "-dpa", "--data-parallel-start-rank")) for t in args.tokens
    ):
        return None
    return args.dp


def _formula(args: serving.EngineArgs, dp: int) -> str:
    """`TP 8` or `TP 8 x PP 2`."""
    parts = [f"TP {args.tp}"]
    if args.pp > 1:
        parts.append(f"PP {args.pp}")
    if dp > 1:
        parts.append(f"DP {dp}")
    return " x ".join(parts)


def _may_join_ray_cluster(pod: Any, c: Any) -> bool:
    # imported here: the Ray domain indexes the Ray cluster templates of every family
    from ailint.domain.ray import may_join_cluster

    return may_join_cluster(pod, c)


def _check_container(
    obj: Any, ctx: Any, pod: Any, c: Any, engine: str, size: int, workers: list[Any]
) -> Iterator[Finding]:
    args = serving.engine_args(c, engine)
    if args is None or args.unresolved:
        return
    if "--omni" in c.tokens:
        return  # vLLM-Omni: each stage of the pipeline sets its own parallelism in its stage config
    gpus = serving.gpu_limit(c)
    if not gpus:
        return
    dp = _dp_local(args)
    if dp is None:
        return
    tp_path = serving.flag_path(c, args.flag_names("tp"))
    where = tp_path or serving.gpu_path(c)
    span = serving.flag_span(obj, c, args.flag_names("tp")) if tp_path else None
    name = c.name or "<unnamed>"
    per_pod = args.has("dp_local") or args.has("dp_rank")
    ray = (args.raw("executor") or "").lower() == "ray"
    group = (size > 1 and not per_pod) or (args.has("nnodes") and not per_pod)
    if group:
        if size <= 1 and obj.kind != "LeaderWorkerSet":
            nodes = args.int("nnodes")
            if not nodes:
                return
            total, how = nodes * gpus, f"{nodes} nodes of {gpus} GPUs"
        else:
            worker_gpus = max(
                (serving.gpu_limit(w) or 0 for p in workers for w in p.containers(include_init=False)), default=0
            )
            if pod in workers:  # no leader template: every pod of the group is alike
                worker_gpus = gpus
            total = gpus + (size - 1) * worker_gpus
            how = f"group of {size} pods"
        need = args.tp * args.pp * dp
        if need == total:
            return
        if need > total:
            yield RULE.finding(
                obj,
                where,
                f"{engine} in container {name}: {_formula(args, dp)} needs {need} GPUs but its {how} has {total}; "
                "the engine fails to start",
                span=span,
            )
        else:
            yield RULE.finding(
                obj,
                where,
                f"{engine} in container {name}: {_formula(args, dp)} uses {need} of the {total} GPUs of its {how}; "
                f"{total - need} sit idle",
                severity=Severity.WARNING,
                span=span,
            )
        return
    # no Ray cluster to join: `ray.init()` starts one inside the pod, with its GPUs only, so
    # the pod is judged as a pod of its own
    alone = ray and obj.kind != "LeaderWorkerSet" and not _may_join_ray_cluster(pod, c)
    if ray and obj.kind != "LeaderWorkerSet" and not alone:
        # the engine may place PP stages on Ray nodes the linter cannot see, but what one
        # pod knows still holds: a TP group larger than the pod spans the network
        if args.tp > gpus:
            yield RULE.finding(
                obj,
                where,
                f"{engine} in container {name}: tensor parallel size {args.tp} exceeds the {gpus} GPUs of this pod; "
                "with the Ray backend the TP group spans other nodes over the network (all-reduce on every layer); "
                "keep TP within one pod and use pipeline parallelism across nodes",
                severity=Severity.WARNING,
                span=span,
            )
        return
    need = args.tp * args.pp * dp
    if need > gpus:
        yield RULE.finding(
            obj,
            where,
            f"{engine} in container {name}: {_formula(args, dp)} needs {need} GPUs but is "
            f"limited to {gpus} nvidia.com/gpu"
            + (
                " and joins no Ray cluster (no RAY_ADDRESS, no `ray start`, not a KubeRay pod): the Ray "
                "instance it starts never has the GPUs for the placement group, and"
                if alone
                else ";"
            )
            + " the engine fails to start",
            fix=_fix(obj, c, args, dp, gpus, tp_path is not None),
            span=span,
        )
        return
    if need < gpus:
        yield RULE.finding(
            obj,
            where,
            f"{engine} in container {name}: {_formula(args, dp)} uses {need} of its "
            f"{gpus} GPUs; {gpus - need} sit idle (raise TP or lower the limit)",
            severity=Severity.WARNING,
            fix=_fix(obj, c, args, dp, gpus, tp_path is not None),
            span=span,
        )
        return
    types = ctx.target_types(pod) if ctx is not None and getattr(ctx, "bundle", False) else None
    counts = [it.count for t in (types or ()) if (it := instances.get(t)) is not None and it.is_gpu]
    if counts and args.tp > max(counts):
        yield RULE.finding(
            obj,
            where,
            f"TP {args.tp} in container {name} exceeds the largest GPU count ({max(counts)}) "
            f"of the instance types it can run on ({', '.join(sorted(types or ()))[:80]})",
            span=span,
        )


def _fix(obj: Any, c: Any, args: serving.EngineArgs, dp: int, gpus: int, has_tp: bool) -> Fix | None:
    denom = args.pp * dp
    if gpus % denom:
        return None
    new_tp = gpus // denom
    if new_tp < 1 or new_tp == args.tp:
        return None
    if has_tp:
        edit = serving.set_flag_edit(obj, c, args.flag_names("tp"), new_tp)
    elif args.engine == "vllm":
        edit = serving.set_flag_edit(obj, c, args.flag_names("tp"), new_tp) or serving.append_arg_edit(
            obj, c, f"--tensor-parallel-size={new_tp}"
        )  # the first: LLMInferenceService
    else:
        edit = serving.append_arg_edit(obj, c, f"--tp-size={new_tp}")
    why = "the GPU limit" if denom == 1 else f"{gpus} GPUs / {denom} PP x DP"
    return make_fix(f"set tensor parallelism to {new_tp} ({why})", [edit], unsafe=True)


def _rayservice(obj: Any) -> Iterator[Finding]:
    configs = serving.llm_configs(obj)
    if not configs:
        return
    workers = serving.ray_worker_gpus(list(pod_templates(obj)))
    if not workers:
        return
    per_pod = max(g for _, g, _ in workers)
    counts = [(g, n) for _, g, n in workers if n is not None]
    total = sum(g * n for g, n in counts) if len(counts) == len(workers) else None
    for cfg in configs:
        tp, pp = cfg.tp, cfg.pp
        need = tp * pp
        label = f"llm_config {cfg.model_id or cfg.index}"
        span = (
            serving.span_in_scalar(obj, ("spec", "serveConfigV2"), r"tensor_parallel_size:\s*\d+")
            if len(configs) == 1 and "tensor_parallel_size" in cfg.engine_kwargs
            else None
        )
        if total is not None and need > total:
            yield RULE.finding(
                obj,
                ("spec", "serveConfigV2"),
                f"{label}: TP {tp}"
                + (f" x PP {pp}" if pp > 1 else "")
                + f" needs {need} GPUs but the worker groups have at most "
                f"{total}; the replica can never be placed",
                span=span,
            )
        elif tp > per_pod:
            yield RULE.finding(
                obj,
                ("spec", "serveConfigV2"),
                f"{label} sets TP {tp} but a worker pod has at most {per_pod} GPUs; tensor parallel "
                f"traffic crosses pods (set TP to {per_pod} and use pipeline parallelism across pods)",
                severity=Severity.WARNING,
                span=span,
            )
