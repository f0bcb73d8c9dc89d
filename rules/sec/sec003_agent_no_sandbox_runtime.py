"""
## What it does
Checks that code-executing agent pods run under a sandboxed runtime. A code-executing
agent is an agent pod (see the role heuristics; `ailint.io/role: agent` overrides them)
that runs a code-interpreter, Jupyter-kernel or sandbox-exec image or entrypoint, or any
`agent-sandbox` Sandbox/SandboxTemplate; `ailint.io/code-execution: "true"|"false"` on
the pod template or object overrides the detection. The rule fires when such a pod has no
`runtimeClassName`, when its RuntimeClass uses a runc-style handler (`runc`, `crun`,
`nvidia`) instead of gVisor (`runsc`), Kata or another VM-isolated runtime, and (info)
when it names a RuntimeClass the files do not define while they define another sandbox
RuntimeClass.

Severity: error when the pod also has a privileged container or a hostPath volume; info when
the RuntimeClass it names is not defined in files that define a sandbox RuntimeClass.

## Why is this bad?
Model-generated code is untrusted input. Under runc it shares the node's kernel with every
other pod: one kernel exploit or container escape turns a prompt injection into node
compromise, with the node's IAM role and the GPU neighbours' data in reach. gVisor or Kata
put a second isolation boundary between the generated code and the host. The cost (the
first sandbox on a node takes 60 to 90 s to start) is the reason it is often skipped.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: code-interpreter
  labels:
    app: agent-code-interpreter
spec:
  template:
    metadata:
      labels:
        app: agent-code-interpreter
    spec:
      containers:
        - name: interpreter
          image: ghcr.io/example/code-interpreter:1.4.0
```

## Use instead
```yaml
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: gvisor
handler: runsc
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: code-interpreter
  labels:
    app: agent-code-interpreter
spec:
  template:
    metadata:
      labels:
        app: agent-code-interpreter
    spec:
      runtimeClassName: gvisor
      containers:
        - name: interpreter
          image: ghcr.io/example/code-interpreter:1.4.0
```

## Options
None.

## Fix
Unsafe, when `runtimeClassName` is missing: sets it to the sandbox RuntimeClass defined in
the files (or `gvisor`). Create that RuntimeClass (`handler: runsc`) and a node pool whose
nodes run gVisor, and add its `nodeSelector`/tolerations (or the RuntimeClass's
`scheduling`); a pod that names a missing RuntimeClass is rejected.

## References
- https://gvisor.dev/docs/user_guide/containerd/quick_start/
- https://kubernetes.io/docs/concepts/containers/runtime-class/
- https://github.com/kubernetes-sigs/agent-sandbox
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.agents import (
    executes_code,
    is_runc_handler,
    is_sandbox_handler,
    runtime_class_of,
    sandbox_runtime_classes,
)
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, pod_templates
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SEC003",
    name="agent-no-sandbox-runtime",
    severity=Severity.WARNING,
    summary="A code-executing agent pod runs under runc instead of a sandboxed runtime (gVisor, Kata)",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("security", "agents", "isolation"),
    precision="medium",
    security_severity=7.0,
)


def _escalated(pod: Any) -> str | None:
    """Why the missing sandbox is worse here: privileged containers or hostPath volumes."""
    for _, v in iter_dicts(pod.spec.get("volumes")):
        if isinstance(v.get("hostPath"), dict):
            return f"hostPath volume {v.get('name')}"
    for c in pod.containers():
        if as_dict(c.data.get("securityContext")).get("privileged") is True:
            return f"privileged container {c.name}"
    return None


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        if not executes_code(pod):
            continue
        worse = _escalated(pod)
        sev = Severity.ERROR if worse else Severity.WARNING
        extra = f" (with {worse})" if worse else ""
        what = f"code-executing agent pod{f' ({pod.role})' if pod.role else ''}"
        rc = runtime_class_of(pod, ctx)
        sandboxes = sandbox_runtime_classes(ctx)
        if rc is None:
            target = sandboxes[0].name if sandboxes else "gvisor"
            fix = make_fix(
                f"set runtimeClassName: {target} (the RuntimeClass and a gVisor node pool must exist)",
                [edits.insert_value(obj, pod.spec_path, "runtimeClassName", target)],
                unsafe=True,
            )
            yield RULE.finding(
                obj,
                pod.spec_path + ("runtimeClassName",),
                f"{what} has no runtimeClassName, so generated code runs under runc{extra}; use a "
                f"sandboxed RuntimeClass such as {target} (gVisor runsc or Kata)",
                severity=sev,
                fix=fix,
            )
            continue
        path = pod.spec_path + ("runtimeClassName",)
        if rc.obj is not None:
            if rc.handler is not None and not is_sandbox_handler(rc.handler):
                yield RULE.finding(
                    obj,
                    path,
                    f"{what} uses {ctx.describe(rc.obj)} whose handler "
                    f"{rc.handler or '(empty)'} is not a sandbox{extra}; use gVisor "
                    "(runsc) or Kata",
                    severity=sev,
                )
            continue
        if is_sandbox_handler(rc.name):
            if sandboxes:
                yield RULE.finding(
                    obj,
                    path,
                    f"RuntimeClass {rc.name} is not defined in these files, which define "
                    f"the sandbox {ctx.describe(sandboxes[0])}; the pod is rejected "
                    "if it does not exist",
                    severity=Severity.INFO,
                )
        elif is_runc_handler(rc.name):
            yield RULE.finding(
                obj,
                path,
                f"{what} uses RuntimeClass {rc.name}, a runc-style runtime, not a "
                f"sandbox{extra}; use gVisor (runsc) or Kata",
                severity=sev,
            )
        else:
            yield RULE.finding(
                obj,
                path,
                f"{what} uses RuntimeClass {rc.name}, which is not defined in these "
                "files; make sure its handler is gVisor (runsc) or Kata",
                severity=Severity.INFO,
            )
