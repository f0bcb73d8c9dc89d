"""
## What it does
Checks multi-node LeaderWorkerSets (`leaderWorkerTemplate.size` of 2 or more): it flags
`leaderWorkerTemplate.restartPolicy: None` or the deprecated `Default` (its old name),
under which only the failed pod restarts. It also notes (info) a group whose workers join
a Ray head on the leader with a bare `ray start --address=$(LWS_LEADER_ADDRESS)` (no retry
loop, unlike vLLM's `multi-node-serving.sh`) under the default
`startupPolicy: LeaderCreated`, which starts workers before the head is ready.

Severity: info when workers join the Ray head on the leader but startupPolicy is not
LeaderReady.

## Why is this bad?
A multi-node vLLM, SGLang or Ray group is one tensor/pipeline-parallel process group.
When one pod dies and only it restarts, the survivors still hold the old NCCL
communicator: the group hangs or errors until someone deletes it by hand, while the GPUs
stay allocated. `RecreateGroupOnPodRestart` (the default) restarts the whole group so it
forms again. Workers started before the Ray head is ready crash-loop and delay the group;
`LeaderReady` starts them once the leader pod is Ready.

## Example
```yaml
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: vllm-405b
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    restartPolicy: None
    workerTemplate:
      spec:
        containers:
          - name: vllm
            image: vllm/vllm-openai:v0.9.2
            resources:
              limits:
                nvidia.com/gpu: 8
```

## Use instead
```yaml
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: vllm-405b
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    restartPolicy: RecreateGroupOnPodRestart
    workerTemplate:
      spec:
        containers:
          - name: vllm
            image: vllm/vllm-openai:v0.9.2
            resources:
              limits:
                nvidia.com/gpu: 8
```

## Options
None.

## Fix
Safe: sets `restartPolicy: RecreateGroupOnPodRestart`. For the Ray-head case, unsafe: adds
`startupPolicy: LeaderReady` (the leader needs a readiness probe that means "head up").

## References
- https://github.com/kubernetes-sigs/lws/blob/main/api/leaderworkerset/v1/leaderworkerset_types.go
- https://lws.sigs.k8s.io/docs/concepts/
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict
from ailint.core.rule import Options, Rule, make_fix
from ailint.domain.context import Context
from ailint.domain.extract import pod_templates
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="REL007",
    name="lws-restart-policy-none-multinode",
    severity=Severity.WARNING,
    summary="A multi-node LeaderWorkerSet restarts only the failed pod, leaving a broken parallel group",
    kinds=("leaderworkerset.x-k8s.io/LeaderWorkerSet",),
    fix=FixAvailability.SOMETIMES,
    tags=("reliability", "lws", "distributed"),
    precision="high",
)

_RAY_WORKER = lazy_re(r"ray\s+start\b[^\n]*--address[= ]\S*LWS_LEADER_ADDRESS")
_RAY_HEAD = lazy_re(r"ray\s+start\b[^\n]*--head|multi-node-serving\.sh\s+leader")
_RETRY = lazy_re(r"\b(until|while|retry|retries|multi-node-serving\.sh)\b")


def _size(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().isdigit():
        return int(v)
    return None


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    lwt = as_dict(obj.get("spec", "leaderWorkerTemplate"))
    size = _size(lwt.get("size", 1))
    if size is None or size < 2:
        return
    base = ("spec", "leaderWorkerTemplate")
    policy = lwt.get("restartPolicy")
    if policy in ("None", "Default"):
        label = "None" if policy == "None" else "Default (the deprecated name of None)"
        yield RULE.finding(
            obj,
            base + ("restartPolicy",),
            f"restartPolicy {label} on a {size}-pod group restarts only the failed pod; the "
            "survivors keep a broken TP/PP process group: use RecreateGroupOnPodRestart",
            fix=make_fix(
                "set restartPolicy: RecreateGroupOnPodRestart",
                [edits.replace_scalar(obj, base + ("restartPolicy",), "RecreateGroupOnPodRestart")],
            ),
        )
    startup = obj.get("spec", "startupPolicy")
    if startup in (None, "LeaderCreated") and _workers_join_ray_head(obj):
        path = ("spec", "startupPolicy")
        if obj.has(path):
            edit = edits.replace_scalar(obj, path, "LeaderReady")
        else:
            edit = edits.insert_value(obj, ("spec",), "startupPolicy", "LeaderReady")
        yield RULE.finding(
            obj,
            path,
            f"workers join the Ray head on the leader but startupPolicy is "
            f"{startup or 'LeaderCreated (default)'}, so they start before the head is "
            "up; consider LeaderReady",
            severity=Severity.INFO,
            fix=make_fix("set startupPolicy: LeaderReady", [edit], unsafe=True),
        )


def _workers_join_ray_head(obj: Any) -> bool:
    leader = worker = False
    for pod in pod_templates(obj):
        for c in pod.containers(include_init=False):
            text = " ".join(c.tokens)
            if pod.role == "leader" and _RAY_HEAD.search(text):
                leader = True
            if pod.role == "worker" and _RAY_WORKER.search(text) and not _RETRY.search(text):
                worker = True
    return leader and worker
