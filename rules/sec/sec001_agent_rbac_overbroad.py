"""
## What it does
Traces the ServiceAccount of every AI agent pod (the `default` ServiceAccount when none is
set) through RoleBindings and ClusterRoleBindings to the Roles and ClusterRoles they grant,
and reports each rule that gives the agent more than it should have:

- error: `*` in verbs or resources; the escalation verbs `escalate`, `bind`,
  `impersonate`; any verb on `pods/exec`, `pods/attach`, `pods/portforward` or
  `nodes/proxy`; `create` on `serviceaccounts/token`; write verbs (create, update, patch,
  delete, deletecollection) on deployments, statefulsets, daemonsets, replicasets,
  `*/scale`, pods, jobs, cronjobs, nodes, namespaces, networkpolicies, secrets,
  serviceaccounts or anything in `rbac.authorization.k8s.io`; get/list/watch on
  `secrets`; a binding to the built-in `cluster-admin`, `admin` or `edit` ClusterRole;
- warning: get/list/watch on `pods/log` granted cluster-wide (ClusterRoleBinding);
- info: an agent pod whose ServiceAccount has no binding at all in the run but still
  mounts an API token (`automountServiceAccountToken` not `false` on the pod or its
  ServiceAccount).

The finding sits on the offending rule of the Role (or on the binding's `roleRef` for
built-in roles) and names the agent workloads that receive it, once per rule.

Severity: warning for reads on pods/log; info for an agent pod that mounts the token of a
ServiceAccount with no binding in these files.

## Why is this bad?
An agent acts on text it reads: a prompt-injected log line or web page can make it call
any API its token allows. Only the RBAC boundary stops it. Write access to workloads or
exec into pods is remote code execution in the cluster; secret reads hand out every
credential of the namespace; escalation verbs and token creation lead to cluster-admin.
The usual "can it read logs" review gives a false yes: check the `pods/log` subresource
explicitly, and keep log access namespaced.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: sre-agent
  namespace: agents
spec:
  replicas: 1
  selector:
    matchLabels: {app: sre-agent}
  template:
    metadata:
      labels: {app: sre-agent}
    spec:
      serviceAccountName: sre-agent
      containers:
        - name: agent
          image: ghcr.io/example/sre-agent-langgraph:1.4.0
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: sre-agent
rules:
  - apiGroups: [""]
    resources: [pods, pods/log, secrets]
    verbs: [get, list, watch]
  - apiGroups: [apps]
    resources: [deployments]
    verbs: [get, list, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: sre-agent
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: sre-agent
subjects:
  - kind: ServiceAccount
    name: sre-agent
    namespace: agents
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: sre-agent
  namespace: agents
spec:
  replicas: 1
  selector:
    matchLabels: {app: sre-agent}
  template:
    metadata:
      labels: {app: sre-agent}
    spec:
      serviceAccountName: sre-agent
      containers:
        - name: agent
          image: ghcr.io/example/sre-agent-langgraph:1.4.0
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: sre-agent
  namespace: agents
rules:
  - apiGroups: [""]
    resources: [pods, pods/log, events]
    verbs: [get, list, watch]
  - apiGroups: [apps]
    resources: [deployments]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: sre-agent
  namespace: agents
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: sre-agent
subjects:
  - kind: ServiceAccount
    name: sre-agent
    namespace: agents
```

## Options
None.

## Fix
None for the RBAC findings: write a least-privilege Role (get/list/watch on the resources the
agent really reads) and review it; ailint never edits permissions. For the info finding, an
unsafe fix sets `automountServiceAccountToken: false` on the pod (unsafe: the agent may call
the API through a binding that lives outside the linted files).

## References
- https://kubernetes.io/docs/reference/access-authn-authz/rbac/
- https://kubernetes.io/docs/concepts/security/rbac-good-practices/
- https://kubernetes.io/docs/reference/access-authn-authz/rbac/#privilege-escalation-prevention-and-bootstrapping
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, iter_dicts
from ailint.core.rule import Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS
from ailint.domain.rbac import (
    BUILTIN_BROAD_ROLES,
    AgentPod,
    Grant,
    agent_templates,
    agents_of_binding,
    automount_disabled,
    bindings_for,
    classify_rule,
    is_binding,
    is_role,
    resolve_role,
    role_ref,
    service_account,
)
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="SEC001",
    name="agent-rbac-overbroad",
    severity=Severity.ERROR,
    summary="An AI agent's ServiceAccount is bound to write, exec, escalation or secret-read permissions",
    kinds=("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", *POD_KINDS, "Sandbox", "SandboxTemplate"),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    tags=("security", "rbac", "agents"),
    precision="high",
    security_severity=8.8,
)


def _who(agents: list[AgentPod], ctx: Any) -> str:
    labels = list(dict.fromkeys(ctx.describe(a.obj) for a in agents))
    sas = list(dict.fromkeys(a.sa[1] for a in agents))
    head = labels[0] + (f" +{len(labels) - 1} more" if len(labels) > 1 else "")
    return f"agent {head} (SA {sas[0]}{' +' + str(len(sas) - 1) if len(sas) > 1 else ''})"


def _agents_by_binding(ctx: Any, bindings: list[Any]) -> list[tuple[Any, list[AgentPod]]]:
    out = []
    for b in bindings:
        got = agents_of_binding(ctx, b)
        if got:
            out.append((b, got))
    return out


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if not ctx.bundle:
        return
    if is_role(obj):
        yield from _check_role(obj, ctx)
    elif is_binding(obj):
        yield from _check_builtin_binding(obj, ctx)
    else:
        yield from _check_unbound_agent(obj, ctx)


def _check_role(role: Any, ctx: Any) -> Iterator[Finding]:
    from ailint.domain.rbac import bindings_of_role

    # what the role grants first, from the role alone: most roles grant nothing overbroad,
    # and then their bindings and the pods these bind are never looked up (nor is the call run
    # again by a rerun after a pod changed, since it read none)
    grants = [(i, found) for i, rule in iter_dicts(role.get("rules")) if (found := classify_rule(rule))]
    if not grants:
        return
    granted = _agents_by_binding(ctx, bindings_of_role(ctx, role))
    if not granted:
        return
    for i, found in grants:
        best: tuple[Grant, Any, list[AgentPod]] | None = None
        for grant in found:
            for b, agents in granted:
                if grant.cluster_scope_only and b.kind != "ClusterRoleBinding":
                    continue
                if best is None or grant.severity.rank > best[0].severity.rank:
                    best = (grant, b, agents)
        if best is None:
            continue
        grant, b, agents = best
        scope = "cluster-wide" if b.kind == "ClusterRoleBinding" else f"in namespace {b.namespace or 'default'}"
        all_agents = [a for _, ag in granted for a in ag]
        yield RULE.finding(
            role,
            ("rules", i, grant.field),
            f"grants {grant.what} {scope} to {_who(all_agents, ctx)} via {ctx.describe(b)}",
            severity=grant.severity,
        )


def _check_builtin_binding(binding: Any, ctx: Any) -> Iterator[Finding]:
    kind, name = role_ref(binding)
    if kind != "ClusterRole" or name not in BUILTIN_BROAD_ROLES or resolve_role(ctx, binding) is not None:
        return
    granted = _agents_by_binding(ctx, [binding])
    if not granted:
        return
    scope = "cluster-wide" if binding.kind == "ClusterRoleBinding" else f"in namespace {binding.namespace or 'default'}"
    yield RULE.finding(
        binding,
        ("roleRef", "name"),
        f"binds the built-in ClusterRole {name} ({BUILTIN_BROAD_ROLES[name]}) {scope} to {_who(granted[0][1], ctx)}",
    )


def _check_unbound_agent(obj: Any, ctx: Any) -> Iterator[Finding]:
    for pod in agent_templates(obj):
        sa = service_account(pod)
        if bindings_for(ctx, sa) or automount_disabled(pod, ctx):
            continue
        spec = pod.spec
        path = pod.path("serviceAccountName") if "serviceAccountName" in spec else pod.spec_path
        fix = None
        if "automountServiceAccountToken" in spec:
            fix = make_fix(
                "set automountServiceAccountToken: false",
                [edits.replace_value(obj, pod.path("automountServiceAccountToken"), "false")],
                unsafe=True,
            )
        else:
            fix = make_fix(
                "set automountServiceAccountToken: false",
                [edits.insert_value(obj, pod.spec_path, "automountServiceAccountToken", False)],
                unsafe=True,
            )
        yield RULE.finding(
            obj,
            path,
            f"agent pod mounts a token for ServiceAccount {sa[0]}/{sa[1]}, which has no binding in "
            "these files; set automountServiceAccountToken: false if it needs no API access",
            severity=Severity.INFO,
            fix=fix,
        )
