"""RBAC resolution: which permissions reach an agent pod's ServiceAccount.

A pod runs as `spec.serviceAccountName` (or the deprecated `serviceAccount`), else
`default`, in its own namespace. A RoleBinding grants its `roleRef` (a Role of its own
namespace, or a ClusterRole scoped to that namespace) to its subjects; a ClusterRoleBinding
grants a ClusterRole cluster-wide. A ServiceAccount subject's namespace defaults to the
RoleBinding's; the groups `system:serviceaccounts`, `system:serviceaccounts:<ns>` and
`system:authenticated` include every ServiceAccount (of that namespace).

Rules are classified per spec decisions 12 and 20 (SEC001): wildcards, escalation verbs,
exec/attach/port-forward and `nodes/proxy`, `serviceaccounts/token` create, writes on
workloads, nodes, namespaces, network policies, secrets and RBAC, and secret reads are errors;
cluster-wide `pods/log` reads are warnings.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ailint.core.model import K8sObject, Severity, as_dict, as_list, iter_dicts
from ailint.domain.extract import PodTemplate, is_pod_kind, pod_templates
from ailint.domain.roles import agent_words, is_agent_pod, name_words, role_override

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RBAC_GROUP = "rbac.authorization.k8s.io"
BUILTIN_BROAD_ROLES = {
    "cluster-admin": "every verb on every resource",
    "admin": "write access to workloads, RBAC and secrets of a namespace",
    "edit": "write access to workloads and read access to secrets",
}
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
READ_VERBS = ("get", "list", "watch")
ESCALATION_VERBS = ("escalate", "bind", "impersonate")
# resource -> API groups it lives in (a write on it is an error)
SENSITIVE_WRITES = {
    "deployments": ("apps", "extensions"),
    "statefulsets": ("apps",),
    "daemonsets": ("apps", "extensions"),
    "replicasets": ("apps", "extensions"),
    "pods": ("",),
    "jobs": ("batch",),
    "cronjobs": ("batch",),
    "nodes": ("",),
    "namespaces": ("",),
    "networkpolicies": ("networking.k8s.io", "extensions"),
    "secrets": ("",),
    "serviceaccounts": ("",),
}
EXEC_SUBRESOURCES = ("pods/exec", "pods/attach", "pods/portforward", "nodes/proxy")
SANDBOX_KINDS = ("Sandbox", "SandboxTemplate")


# ---------------------------------------------------------------------------------------
# Agent workloads
# ---------------------------------------------------------------------------------------
def sandbox_templates(obj: K8sObject) -> Iterator[PodTemplate]:
    """agent-sandbox `Sandbox`/`SandboxTemplate`: `spec.podTemplate {metadata, spec}`."""
    if obj.kind in SANDBOX_KINDS and isinstance(obj.get("spec", "podTemplate", "spec"), dict):
        yield PodTemplate(obj, ("spec", "podTemplate", "spec"), ("spec", "podTemplate", "metadata"), "", 1)


def agent_templates(obj: K8sObject) -> Iterator[PodTemplate]:
    """Pod templates of `obj` that run an AI agent (spec section 0, minus node and telemetry agents)."""
    if obj.kind in SANDBOX_KINDS:
        yield from sandbox_templates(obj)
        return
    if not is_pod_kind(obj):
        return
    for pod in pod_templates(obj):
        ov = role_override(pod)
        if ov:
            if ov == "agent":
                yield pod
            continue
        if obj.kind == "DaemonSet" or not is_agent_pod(pod):
            continue
        if any(agent_words(n) for n in name_words(pod)):
            yield pod


def service_account(pod: PodTemplate) -> tuple[str, str]:
    """(namespace, name) of the ServiceAccount the pod runs as."""
    spec = pod.spec
    name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    return pod.obj.namespace_or_default, str(name)


@dataclass(frozen=True)
class AgentPod:
    """A pod that runs an agent, with the ServiceAccount it runs as."""

    obj: K8sObject
    pod: PodTemplate
    sa: tuple[str, str]

    @property
    def label(self) -> str:
        o = self.obj
        return f"{o.kind} {o.namespace + '/' if o.namespace else ''}{o.name or '<unnamed>'}"


def agent_pods(ctx: Any, namespace: str | None = None) -> list[AgentPod]:
    """The run's agents (or one namespace's), in object order. Agents are pods, so only the
    run's pod templates are read (`ctx.pods_in`): an edit elsewhere, or in another
    namespace, does not make a namespace's agents be looked for again."""
    memo = getattr(ctx, "memo", None)
    if memo is None:
        return _agents(ctx.pods_in(namespace))
    return memo(("rbac.agent_pods", namespace), lambda: _agents(ctx.pods_in(namespace)))  # type: ignore[no-any-return]


def _agents(pods: Iterable[tuple[K8sObject, PodTemplate]]) -> list[AgentPod]:
    out = []
    seen: set[int] = set()
    for o, _ in pods:
        if id(o) in seen:
            continue
        seen.add(id(o))
        for pod in agent_templates(o):  # every agent kind is a pod kind (a Sandbox too)
            out.append(AgentPod(o, pod, service_account(pod)))
    return out


def agents_of_binding(ctx: Any, binding: K8sObject) -> list[AgentPod]:
    """The agents `binding` grants to, in object order: read from the one namespace its
    subjects can name when there is one (a RoleBinding's own, a ClusterRoleBinding's
    ServiceAccounts of one namespace), else from the whole run. Once per binding and run:
    SEC001 asks for every binding of every role that the binding's roleRef names."""
    memo = getattr(ctx, "memo", None)
    if memo is None:
        return _agents_of_binding(ctx, binding)
    got: list[AgentPod] = memo(("rbac.agents_of_binding", id(binding)), lambda: _agents_of_binding(ctx, binding))
    return list(got)  # objects outlive the run's memos, so an id stays its object's


def _agents_of_binding(ctx: Any, binding: K8sObject) -> list[AgentPod]:
    namespaces = subject_namespaces(binding)
    if namespaces is not None and not namespaces:
        return []
    pool = (
        agent_pods(ctx, next(iter(namespaces))) if namespaces is not None and len(namespaces) == 1 else agent_pods(ctx)
    )
    return [a for a in pool if binding_grants_to(binding, a.sa)]


def subject_namespaces(binding: K8sObject) -> set[str] | None:
    """The namespaces of the ServiceAccounts `binding` can grant to (`subject_covers`);
    None: any namespace (a group of every ServiceAccount, or of everyone authenticated)."""
    if binding.kind == "RoleBinding":
        return {binding.namespace_or_default}
    out: set[str] = set()
    for _, s in iter_dicts(binding.get("subjects")):
        kind, name = s.get("kind"), str(s.get("name"))
        if kind == "ServiceAccount":
            if s.get("namespace"):
                out.add(str(s.get("namespace")))
        elif kind == "Group":
            if name in ("system:serviceaccounts", "system:authenticated"):
                return None
            if name.startswith("system:serviceaccounts:"):
                out.add(name.removeprefix("system:serviceaccounts:"))
        elif kind == "User" and name.startswith("system:serviceaccount:"):
            out.add(name.removeprefix("system:serviceaccount:").rpartition(":")[0])
    return out


# ---------------------------------------------------------------------------------------
# Bindings
# ---------------------------------------------------------------------------------------
def is_binding(obj: K8sObject) -> bool:
    return obj.kind in ("RoleBinding", "ClusterRoleBinding") and obj.group == RBAC_GROUP


def is_role(obj: K8sObject) -> bool:
    return obj.kind in ("Role", "ClusterRole") and obj.group == RBAC_GROUP


def subject_covers(binding: K8sObject, subject: dict[str, Any], sa: tuple[str, str]) -> bool:
    ns, name = sa
    kind = subject.get("kind")
    if kind == "ServiceAccount":
        sns = subject.get("namespace") or (binding.namespace_or_default if binding.kind == "RoleBinding" else None)
        return str(subject.get("name")) == name and sns == ns
    if kind == "Group":
        g = str(subject.get("name"))
        return g in ("system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated")
    if kind == "User":
        return str(subject.get("name")) == f"system:serviceaccount:{ns}:{name}"
    return False


def binding_grants_to(binding: K8sObject, sa: tuple[str, str]) -> bool:
    if binding.kind == "RoleBinding" and (binding.namespace_or_default) != sa[0]:
        return False
    return any(subject_covers(binding, s, sa) for _, s in iter_dicts(binding.get("subjects")))


def bindings_for(ctx: Any, sa: tuple[str, str]) -> list[K8sObject]:
    memo = getattr(ctx, "memo", None)
    if memo is None:
        return _bindings_for(ctx, sa)
    # once per ServiceAccount per run (SEC001 asks for every agent of every binding); a memo
    # per ServiceAccount, so the results cache notes the bindings read for every later reader
    got: list[K8sObject] = memo(("rbac.bindings_for", sa), lambda: _bindings_for(ctx, sa))
    return list(got)


def _bindings_for(ctx: Any, sa: tuple[str, str]) -> list[K8sObject]:
    return [b for b in ctx.of_kind("RoleBinding", "ClusterRoleBinding") if is_binding(b) and binding_grants_to(b, sa)]


def role_ref(binding: K8sObject) -> tuple[str, str]:
    ref = as_dict(binding.get("roleRef"))
    return str(ref.get("kind") or ""), str(ref.get("name") or "")


def resolve_role(ctx: Any, binding: K8sObject) -> K8sObject | None:
    kind, name = role_ref(binding)
    if kind == "Role":
        ns = binding.namespace_or_default
        for r in ctx.of_kind("Role"):
            if is_role(r) and r.name == name and (r.namespace_or_default) == ns:
                return r
    elif kind == "ClusterRole":
        for r in ctx.of_kind("ClusterRole"):
            if is_role(r) and r.name == name:
                return r
    return None


def bindings_of_role(ctx: Any, role: K8sObject) -> list[K8sObject]:
    memo = getattr(ctx, "memo", None)
    if memo is None:
        return _bindings_of_role(ctx.of_kind("RoleBinding", "ClusterRoleBinding"), role)

    def index() -> dict[tuple[str, str], list[K8sObject]]:
        by_ref: dict[tuple[str, str], list[K8sObject]] = {}
        for b in ctx.of_kind("RoleBinding", "ClusterRoleBinding"):
            if is_binding(b):
                by_ref.setdefault(role_ref(b), []).append(b)
        return by_ref

    # bindings indexed by roleRef once per run, instead of a scan per Role
    return _bindings_of_role(memo("rbac.bindings_by_role_ref", index).get((role.kind, str(role.name or "")), ()), role)


def _bindings_of_role(bindings: Any, role: K8sObject) -> list[K8sObject]:
    out = []
    for b in bindings:
        if not is_binding(b):
            continue
        kind, name = role_ref(b)
        if kind != role.kind or name != role.name:
            continue
        if kind == "Role" and (b.namespace_or_default) != (role.namespace_or_default):
            continue
        out.append(b)
    return out


# ---------------------------------------------------------------------------------------
# Classifying a rule
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Grant:
    """One overbroad permission in a rule: severity, what it allows, the field it comes from."""

    severity: Severity
    what: str  # "`*` verbs on `*`", "create on pods/exec", ...
    field: str  # "verbs" or "resources"
    cluster_scope_only: bool = False  # only overbroad when granted cluster-wide (pods/log)


def _strs(v: Any) -> list[str]:
    return [str(x) for x in as_list(v) if isinstance(x, (str, int, float)) and not isinstance(x, bool)]


def _in_group(groups: list[str], wanted: tuple[str, ...]) -> bool:
    return "*" in groups or any(g in wanted for g in groups)


def classify_rule(rule: dict[str, Any]) -> list[Grant]:
    """Overbroad grants of one PolicyRule, most severe first (pods/log last)."""
    verbs = [v.lower() for v in _strs(rule.get("verbs"))]
    resources = _strs(rule.get("resources"))
    groups = _strs(rule.get("apiGroups")) if "apiGroups" in rule else [""]
    names = _strs(rule.get("resourceNames"))
    if not resources or not verbs:
        return []  # nonResourceURLs rules and empty rules
    out: list[Grant] = []
    vtext = ", ".join(verbs)
    if "*" in verbs:
        out.append(Grant(Severity.ERROR, f"`*` verbs on {', '.join(resources)}", "verbs"))
    if "*" in resources:
        out.append(Grant(Severity.ERROR, f"{vtext} on `*` resources", "resources"))
    esc = [v for v in verbs if v in ESCALATION_VERBS]
    if esc:
        out.append(Grant(Severity.ERROR, f"the escalation verb{'s' if len(esc) > 1 else ''} {', '.join(esc)}", "verbs"))
    for sub in EXEC_SUBRESOURCES:
        if sub in resources and _in_group(groups, ("",)):
            out.append(Grant(Severity.ERROR, f"{vtext} on {sub}", "resources"))
    if "serviceaccounts/token" in resources and ("create" in verbs or "*" in verbs):
        out.append(Grant(Severity.ERROR, "create on serviceaccounts/token", "resources"))
    writes = [v for v in verbs if v in WRITE_VERBS]
    if writes:
        hit = []
        for res in resources:
            base, _, sub = res.partition("/")
            if sub in ("log", "status", "token", "exec", "attach", "portforward", "proxy"):
                continue
            if (base == "*" and sub == "scale") or (
                base in SENSITIVE_WRITES and _in_group(groups, SENSITIVE_WRITES[base])
            ):
                hit.append(res)
        if RBAC_GROUP in groups:
            hit.extend(r for r in resources if r not in hit)
        if hit:
            out.append(Grant(Severity.ERROR, f"{', '.join(writes)} on {', '.join(dict.fromkeys(hit))}", "verbs"))
    reads = [v for v in verbs if v in READ_VERBS]
    if reads and "secrets" in resources and _in_group(groups, ("",)) and not (names and set(reads) <= {"get"}):
        out.append(Grant(Severity.ERROR, f"{', '.join(reads)} on secrets", "resources"))
    if reads and "pods/log" in resources and _in_group(groups, ("",)):
        out.append(Grant(Severity.WARNING, f"{', '.join(reads)} on pods/log", "resources", cluster_scope_only=True))
    return out


def automount_disabled(pod: PodTemplate, ctx: Any) -> bool:
    """The pod gets no API token: `automountServiceAccountToken: false` on the pod, or on its
    ServiceAccount when the pod does not set it."""
    v = pod.spec.get("automountServiceAccountToken")
    if v is not None:
        return v is False
    ns, name = service_account(pod)
    sa = ctx.named("ServiceAccount", name, namespace=ns, near=pod.obj)  # (a blueprint's own copy)
    return sa is not None and sa.get("automountServiceAccountToken") is False


__all__ = [
    "BUILTIN_BROAD_ROLES",
    "AgentPod",
    "Grant",
    "agent_pods",
    "agent_templates",
    "agents_of_binding",
    "automount_disabled",
    "binding_grants_to",
    "bindings_for",
    "bindings_of_role",
    "classify_rule",
    "is_binding",
    "is_role",
    "resolve_role",
    "role_ref",
    "sandbox_templates",
    "service_account",
]
