"""
## What it does
Finds containers that request GPUs (or other accelerators) but only move files: an init
container, or a container of a `Job`/`CronJob`, whose every command is a download, copy or
conversion tool (`huggingface-cli download`, `hf download`, `snapshot_download`,
`aws s3 cp|sync`, `gsutil cp`, `s5cmd`, `rclone`, `wget`, `curl -o`, `cp`, `rsync`, `tar`,
`git lfs`, `ollama pull`, a `download*.py` script) next to shell bookkeeping (`mkdir`, `echo`,
`ls`, `cd`, `export`, `chmod`, `set`). A command ailint cannot read is never "only a copy".

## Why is this bad?
A GPU allocated through the device plugin is held for the whole life of the container; an init
container's request also counts toward the pod's effective request (the maximum of the init
containers and the sum of the app containers). A download of a 140 GB checkpoint can hold a
GPU, or a whole 8-GPU node's worth of them, for tens of minutes while nothing runs on it, and
keeps other pods pending. Copying needs CPU, memory and network, not an accelerator.

## Example
```yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: fetch-model
spec:
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - name: fetch
          image: python:3.12-slim
          command: ["sh", "-c", "pip install -U huggingface_hub && hf download Qwen/Qwen2.5-7B-Instruct --local-dir /models/qwen"]
          resources:
            limits: {nvidia.com/gpu: 1}
```

## Use instead
```yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: fetch-model
spec:
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - name: fetch
          image: python:3.12-slim
          command: ["sh", "-c", "pip install -U huggingface_hub && hf download Qwen/Qwen2.5-7B-Instruct --local-dir /models/qwen"]
          resources:
            requests: {cpu: "2", memory: 4Gi}
```

## Options
None.

## Fix
None: removing the request can change which node the pod lands on.

## References
- https://kubernetes.io/docs/concepts/workloads/pods/init-containers/#resource-sharing-within-containers
- https://huggingface.co/docs/huggingface_hub/en/guides/cli
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Finding, K8sObject, Severity, as_list
from ailint.core.rule import Options, Rule
from ailint.domain.context import Context
from ailint.domain.extract import ACCELERATOR_RESOURCES, POD_KINDS, Container, pod_templates
from ailint.domain.roles import segments

RULE = Rule(
    code="GPU008",
    name="gpu-for-file-copy",
    severity=Severity.WARNING,
    summary="A container that only downloads, copies or converts files requests GPUs",
    kinds=POD_KINDS,
    tags=("gpu", "cost"),
    precision="high",
)

_MOVE = lazy_re(
    r"^(\S*/)?(huggingface-cli download|hf download|modelscope download|aws s3 (cp|sync|mv)|gsutil( -m)? (cp|rsync)|"
    r"gcloud storage (cp|rsync)|s5cmd|rclone (copy|sync|copyto)|azcopy (copy|sync)|wget|curl|cp|rsync|mv|tar|unzip|"
    r"git lfs|git clone|ollama pull|python3? -c .*snapshot_download|python3? \S*download\S*\.py)\b"
)
_BOOKKEEPING = lazy_re(
    r"^(\S*/)?(mkdir|echo|ls|cd|export|chmod|chown|set|true|exit|du|df|test|\[|printf|touch|rm|find|"
    r"pip3? install|apt-get|apk add|huggingface-cli login|hf auth login|sync|date)\b"
)
_SHELLS = ("sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/env")
_SPLIT = lazy_re(r"\n|&&|\|\||;|\|")


def _commands(c: Container) -> list[str]:
    """The shell commands a container runs: the lines of a `sh -c` script, else its segments."""
    raw = [t for key in ("command", "args") for t in as_list(c.data.get(key)) if isinstance(t, str)]
    for i, tok in enumerate(raw[:-1]):
        if tok.startswith("-") and "c" in tok and i > 0 and raw[i - 1].rsplit("/", 1)[-1] in ("sh", "bash", "env"):
            return [s.strip() for s in _SPLIT.split(" ".join(raw[i + 1 :])) if s.strip()]
    return [s.strip() for s in segments(list(c.tokens)) if s.strip()]


def only_moves_files(c: Container) -> bool:
    """Every command is a download/copy tool or shell bookkeeping, and at least one moves files."""
    moved = False
    for seg in _commands(c):
        low = seg.lower()
        if low.startswith("#") or low in _SHELLS:
            continue
        if _MOVE.search(low):
            moved = True
        elif not _BOOKKEEPING.search(low):
            return False
    return moved


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    job = obj.kind in ("Job", "CronJob")
    for pod in pod_templates(obj):
        for c in pod.containers():
            if c.sidecar or not (c.init or job):
                continue
            acc = c.accelerators()
            if not acc or not only_moves_files(c):
                continue
            res = next(r for r in ACCELERATOR_RESOURCES if r in acc)
            which = "limits" if res in c.resources("limits") else "requests"
            what = "init container" if c.init else "Job container"
            yield RULE.finding(
                obj,
                c.path_of("resources", which, res),
                f"{what} {c.name or '?'} only downloads or copies files but requests {acc[res]:g} {res}; "
                "the accelerator sits idle while it runs and other pods wait for it; request CPU and memory instead",
            )
