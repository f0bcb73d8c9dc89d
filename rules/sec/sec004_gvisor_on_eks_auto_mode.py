"""
## What it does
Flags pods that use a gVisor RuntimeClass (handler `runsc`, or a RuntimeClass named
`gvisor`/`runsc` that the files do not define) and can only schedule onto EKS Auto Mode
nodes: the pod (or its RuntimeClass's `scheduling.nodeSelector`) requires
`eks.amazonaws.com/compute-type: auto`, or every NodePool in the files that could host it
uses `nodeClassRef.group: eks.amazonaws.com`.

## Why is this bad?
EKS Auto Mode nodes are managed instances with an AWS-built AMI: you cannot install
software on them, and they ship no gVisor (`runsc`) shim. A pod whose RuntimeClass handler
is `runsc` therefore never starts there (`RunContainerError`/`FailedCreatePodSandBox`),
and an agent sandbox that looked isolated in review is simply down. Run sandboxed pods on
a self-managed Karpenter NodePool (an `EC2NodeClass` whose AMI or user data installs
gVisor) and keep Auto Mode for the rest.

## Example
```yaml
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: gvisor
handler: runsc
---
apiVersion: v1
kind: Pod
metadata:
  name: sandbox
spec:
  runtimeClassName: gvisor
  nodeSelector:
    eks.amazonaws.com/compute-type: auto
  containers:
    - name: runtime
      image: registry.k8s.io/agent-sandbox/python-runtime-sandbox:v0.4.6
```

## Use instead
```yaml
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: gvisor
handler: runsc
scheduling:
  nodeSelector:
    karpenter.sh/nodepool: gvisor
---
apiVersion: v1
kind: Pod
metadata:
  name: sandbox
spec:
  runtimeClassName: gvisor
  containers:
    - name: runtime
      image: registry.k8s.io/agent-sandbox/python-runtime-sandbox:v0.4.6
```

## Options
None.

## Fix
None: route the pod to a self-managed Karpenter NodePool whose nodes run gVisor (via the
RuntimeClass's `scheduling.nodeSelector` and tolerations), or use a runtime Auto Mode
supports.

## References
- https://docs.aws.amazon.com/eks/latest/userguide/automode.html
- https://docs.aws.amazon.com/eks/latest/userguide/associate-workload.html
- https://gvisor.dev/docs/user_guide/containerd/quick_start/
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, iter_dicts
from ailint.core.rule import Options, Rule, Scope
from ailint.domain.agents import is_gvisor_handler, runtime_class_of
from ailint.domain.context import Context
from ailint.domain.extract import (
    POD_KINDS,
    Requirement,
    effective_tolerations,
    pod_node_requirements,
    pod_templates,
    untolerated,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SEC004",
    name="gvisor-on-eks-auto-mode",
    severity=Severity.ERROR,
    summary="A gVisor (runsc) pod can only land on EKS Auto Mode nodes, which do not support gVisor",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    fix=FixAvailability.NEVER,
    tags=("security", "agents", "eks-auto-mode"),
    precision="high",
    security_severity=3.0,
)

COMPUTE_TYPE = "eks.amazonaws.com/compute-type"


def _requires_auto(terms: list[list[Requirement]]) -> bool:
    """Every nodeSelector term pins compute-type to `auto`."""
    if not terms:
        return False
    for term in terms:
        if not any(r.key == COMPUTE_TYPE and r.operator == "In" and set(r.values) == {"auto"} for r in term):
            return False
    return True


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        rc = runtime_class_of(pod, ctx)
        if rc is None:
            continue
        handler = rc.handler if rc.obj is not None else rc.name
        if not handler or not is_gvisor_handler(handler):
            continue
        rc_sel = [Requirement(str(k), "In", (str(v),)) for k, v in rc.node_selector.items()]
        terms = [t + rc_sel for t in pod_node_requirements(pod)]
        path = pod.spec_path + ("runtimeClassName",)
        what = f"{ctx.describe(rc.obj)} (handler {handler})" if rc.obj is not None else f"gVisor RuntimeClass {rc.name}"
        if _requires_auto(terms):
            yield RULE.finding(
                obj,
                path,
                f"the pod uses {what} but requires {COMPUTE_TYPE}: auto; EKS Auto Mode "
                "nodes cannot run gVisor, so it never starts",
            )
            continue
        pools = _pools(pod, ctx, terms, rc)
        if pools and all(p.is_auto_mode for p in pools):
            names = ", ".join(sorted(p.name for p in pools)[:3])
            yield RULE.finding(
                obj,
                path,
                f"the pod uses {what} but only EKS Auto Mode NodePools ({names}) can host "
                "it; Auto Mode cannot run gVisor: add a self-managed Karpenter NodePool "
                "with a gVisor AMI",
            )


def _pools(pod: Any, ctx: Any, terms: list, rc: Any) -> list:
    tols = effective_tolerations(pod, ctx.profile.flag("extendedResourceToleration"))
    if rc.obj is not None:
        tols += [t for _, t in iter_dicts(rc.obj.get("scheduling", "tolerations"))]
    out = []
    for pool in ctx.nodepools:
        if not any(_compatible(pool, t) for t in terms):
            continue
        if untolerated(pool.taints, tols):
            continue
        out.append(pool)
    return out


def _compatible(pool: Any, term: list) -> bool:
    for r in term:
        if r.key == COMPUTE_TYPE and r.operator == "In" and ("auto" in r.values) != pool.is_auto_mode:
            return False
    return pool.compatible_with(term)
