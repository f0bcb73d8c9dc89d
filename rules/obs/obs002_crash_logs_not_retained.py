"""
## What it does
Flags accelerator containers, and the first (main) container of training pods, that do
not set `terminationMessagePolicy`. The default is `File`: the termination message is whatever
the app wrote to `/dev/termination-log`, usually nothing. Containers that set `File`
explicitly are left alone (the app writes its own message). One finding per pod template, on
its first such container, names them all; the fix sets every one.

Opt-in: not in the default selection; `--extend-select OBS002` (or `extend-select: [OBS002]`
in the config) runs it. It is an info-level best practice that applies to nearly every GPU
pod of a repository (about a quarter of all findings on real manifests), so by default it
buried the findings that change what runs; a team that wants crash logs kept everywhere
turns it on once and applies its safe fix.

## Why is this bad?
A crashed training rank or model server takes its own error output down with it: once the
pod restarts or is deleted, `kubectl logs --previous` is gone too, and the status shows
only an exit code. With `FallbackToLogsOnError`, the kubelet copies the last lines of the
log (at most 80 lines or 2 KiB) into the container status when it fails, where
`kubectl describe`, events exporters and Kueue/JobSet failure reasons can still see the
CUDA OOM or NCCL error.

## Example
```yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.05-py3
          command: ["torchrun", "--nproc_per_node=8", "train.py"]
          resources:
            limits:
              nvidia.com/gpu: 8
```

## Use instead
```yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: finetune
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.05-py3
          command: ["torchrun", "--nproc_per_node=8", "train.py"]
          terminationMessagePolicy: FallbackToLogsOnError
          resources:
            limits:
              nvidia.com/gpu: 8
```

## Options
None.

## Fix
Safe: adds `terminationMessagePolicy: FallbackToLogsOnError` to the container.

## References
- https://kubernetes.io/docs/tasks/debug/debug-application/determine-reason-pod-failure/
- https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#lifecycle
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity
from ailint.core.rule import Options, Rule, make_fix
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, Container, is_training_pod, pod_templates
from ailint.domain.kserve import preset_supplies
from ailint.fix import edits

RULE = Rule(
    code="OBS002",
    name="crash-logs-not-retained",
    severity=Severity.INFO,
    summary="An accelerator or training container keeps no log tail when it crashes (terminationMessagePolicy)",
    kinds=POD_KINDS,
    fix=FixAvailability.ALWAYS,
    tags=("observability", "debugging"),
    precision="high",
    default=False,  # opt-in: info-level, on nearly every GPU pod (see the docstring)
)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    # one finding per pod template (its first such container), the fix sets every container:
    # the advice is the same for each container of a workload
    for pod in pod_templates(obj):
        training = is_training_pod(pod)
        found: list[tuple[Container, str]] = []
        for i, c in enumerate(pod.containers(include_init=False)):
            if "terminationMessagePolicy" in c.data or preset_supplies(c, "terminationMessagePolicy"):
                continue  # set here, or by a controller preset (KServe LLMInferenceService)
            accel = c.accelerators()
            if not accel and not (training and i == 0):
                continue  # sidecars of training pods (log forwarders) are not the crash to keep
            found.append((c, "accelerator" if accel else "training"))
        if not found:
            continue
        c, why = found[0]
        names = ", ".join(x.name or "?" for x, _ in found)
        what = f"{why} container {names} uses" if len(found) == 1 else f"{why} containers {names} use"
        yield RULE.finding(
            obj,
            c.path_of("terminationMessagePolicy"),
            f"{what} the default terminationMessagePolicy (File): a crash leaves no log tail in its status; "
            "set FallbackToLogsOnError",
            fix=make_fix(
                "set terminationMessagePolicy: FallbackToLogsOnError",
                [
                    edits.insert_value(obj, x.path, "terminationMessagePolicy", "FallbackToLogsOnError")
                    for x, _ in found
                ],
            ),
        )
