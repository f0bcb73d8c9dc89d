"""ValidatingAdmissionPolicy, offline: evaluate the policies and bindings of a run (and of the
policy files named by `--policies` / config `policies:`) against every object they match, as
the API server would on create.

Semantics followed (admissionregistration.k8s.io/v1):
- a policy acts only through a binding (`spec.policyName`); a binding without its policy is ignored;
- a request is matched by the policy's `matchConstraints` and, when set, the binding's
  `matchResources`: `resourceRules` (apiGroups, apiVersions, resources, operations, scope,
  resourceNames), `excludeResourceRules`, `objectSelector`, `namespaceSelector` (against the
  Namespace objects of the run; a namespace not in the run is assumed to match, and the
  finding says so);
- `paramKind` + the binding's `paramRef` (name or selector, namespace, parameterNotFoundAction)
  are resolved against the objects of the run; the policy is evaluated once per param;
- `matchConditions` must all be true; `variables` are evaluated in order into `variables`;
- a false validation is POL001, with `messageExpression` (when it gives a non-empty single line),
  else `message`, else "failed expression: ..."; `validationActions` give the severity
  (Deny: error, Warn: warning, Audit: info);
- what cannot be evaluated offline (a missing param, `authorizer`, an unsupported function, a
  runtime error such as a field the API server would have defaulted) is POL002; an expression
  that does not compile is POL003 on the policy. `auditAnnotations` are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import lru_cache

from ailint.core.model import Finding, K8sObject, Severity, Span, as_dict, as_list
from ailint.domain.resources import ResourceNames, as_served

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ailint.policy import cel


def _cel() -> Any:
    """The CEL engine, imported when an expression is compiled or run: a rerun whose every
    verdict is remembered (`findings`' memo) loads none of it."""
    from ailint.policy import cel

    return cel


GROUP = "admissionregistration.k8s.io"
VARIABLES = ("object", "oldObject", "request", "params", "namespaceObject", "variables", "authorizer")
_ACTION_SEVERITY = {"Deny": Severity.ERROR, "Warn": Severity.WARNING, "Audit": Severity.INFO}


@dataclass
class Expr:
    """A CEL expression of a policy: its source, where it is written, and its compiled program or error."""

    source: str
    path: tuple[Any, ...]  # where the expression is in its policy object
    program: cel.Program | None = None
    error: cel.CelCompileError | None = None


@dataclass
class Policy:
    """A ValidatingAdmissionPolicy as ailint evaluates it: its expressions and the errors they
    had. The expressions are compiled when first needed (`compile`): matching an object reads
    only the spec, so a run (a rerun after an edit, most of all) whose objects no binding of
    a policy matches never compiles that policy, nor imports the CEL engine for it."""

    obj: K8sObject
    name: str
    spec: dict[str, Any]
    failure_policy: str
    validations: list[tuple[Expr, str, Expr | None, str]] = field(
        default_factory=list
    )  # expr, message, messageExpression, reason
    conditions: list[tuple[str, Expr]] = field(default_factory=list)
    variables: list[tuple[str, Expr]] = field(default_factory=list)
    errors: list[Expr] = field(default_factory=list)
    compiled: bool = False

    def compile(self) -> Policy:
        """The policy with its expressions compiled (once); CelUnavailable when the engine
        cannot be imported."""
        if not self.compiled:
            missing = _cel().available()
            if missing:
                raise CelUnavailable(missing)
            _compile(self)
            self.compiled = True
        return self


@dataclass
class Binding:
    """A ValidatingAdmissionPolicyBinding: the policy it binds, its actions, params and match rules."""

    obj: K8sObject
    name: str
    policy: str
    actions: list[str]
    param_ref: dict[str, Any] | None
    match: dict[str, Any] | None


def is_policy(obj: K8sObject) -> bool:
    return obj.group == GROUP and obj.kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


def _expr(obj: K8sObject, source: Any, path: tuple[Any, ...]) -> Expr:
    e = Expr(source if isinstance(source, str) else "", path)
    try:
        e.program = _cel().compile_expression(e.source, VARIABLES)
    except _cel().CelCompileError as exc:
        e.error = exc
    return e


def build_policy(obj: K8sObject) -> Policy:
    """The policy as its spec says, its expressions not compiled yet (`Policy.compile`)."""
    spec = as_dict(obj.data.get("spec"))
    return Policy(obj, obj.name or "", spec, str(spec.get("failurePolicy") or "Fail"))


def _compile(p: Policy) -> None:
    spec, obj = p.spec, p.obj
    for i, v in enumerate(as_list(spec.get("variables"))):
        v = as_dict(v)
        e = _expr(obj, v.get("expression"), ("spec", "variables", i, "expression"))
        p.variables.append((str(v.get("name") or ""), e))
    for i, c in enumerate(as_list(spec.get("matchConditions"))):
        c = as_dict(c)
        p.conditions.append(
            (str(c.get("name") or i), _expr(obj, c.get("expression"), ("spec", "matchConditions", i, "expression")))
        )
    for i, v in enumerate(as_list(spec.get("validations"))):
        v = as_dict(v)
        e = _expr(obj, v.get("expression"), ("spec", "validations", i, "expression"))
        me = None
        if isinstance(v.get("messageExpression"), str):
            me = _expr(obj, v["messageExpression"], ("spec", "validations", i, "messageExpression"))
        message = v.get("message")
        msg = message if isinstance(message, str) else ""
        p.validations.append((e, msg, me, str(v.get("reason") or "Invalid")))
    for _, e in p.variables + p.conditions:
        if e.error and not e.error.unsupported:
            p.errors.append(e)
    for e, _, me, _ in p.validations:
        for x in (e, me):
            if x is not None and x.error and not x.error.unsupported:
                p.errors.append(x)


def build_binding(obj: K8sObject) -> Binding:
    spec = as_dict(obj.data.get("spec"))
    actions = [a for a in as_list(spec.get("validationActions")) if isinstance(a, str)]
    pr = spec.get("paramRef")
    mr = spec.get("matchResources")
    return Binding(
        obj,
        obj.name or "",
        str(spec.get("policyName") or ""),
        actions,
        pr if isinstance(pr, dict) else None,
        mr if isinstance(mr, dict) else None,
    )


# -- matching --------------------------------------------------------------------------------
def selector_matches(selector: Any, labels: dict[str, Any]) -> bool:
    """A metav1.LabelSelector against labels (an empty selector matches everything)."""
    sel = as_dict(selector)
    for k, v in as_dict(sel.get("matchLabels")).items():
        if str(labels.get(k)) != str(v) or k not in labels:
            return False
    for expr in as_list(sel.get("matchExpressions")):
        expr = as_dict(expr)
        key, op = expr.get("key"), expr.get("operator")
        values = [str(x) for x in as_list(expr.get("values"))]
        # a key that is not a string (bad YAML) selects nothing; a list would not even hash
        label = str(labels[key]) if isinstance(key, str) and key in labels else None
        present = label is not None
        if op == "In" and not (present and label in values):
            return False
        if op == "NotIn" and present and label in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def _rule_matches(rule: dict[str, Any], group: str, version: str, resource: str, namespaced: bool, name: str) -> bool:
    def has(values: Any, want: str) -> bool:
        vals = [str(v) for v in as_list(values)]
        return "*" in vals or want in vals

    if not has(rule.get("apiGroups"), group) or not has(rule.get("apiVersions"), version):
        return False
    ops = [str(o) for o in as_list(rule.get("operations"))]
    if ops and "*" not in ops and "CREATE" not in ops:
        return False
    resources = [str(r) for r in as_list(rule.get("resources"))]
    if not any(r in (resource, "*", "*/*") for r in resources):
        return False
    scope = rule.get("scope") or "*"
    if (scope == "Cluster" and namespaced) or (scope == "Namespaced" and not namespaced):
        return False
    names = [str(n) for n in as_list(rule.get("resourceNames"))]
    return not names or name in names


def _may_match_resource(mr: dict[str, Any], key: tuple[str, str, str, bool]) -> bool:
    """Whether `mr`'s resourceRules can match a request of `key` whatever the object's name
    (a rule with resourceNames counts as a possible match; `_match_resources` decides)."""
    rules = [as_dict(r) for r in as_list(mr.get("resourceRules"))]
    group, version, resource, namespaced = key
    return not rules or any(
        _rule_matches({**r, "resourceNames": None}, group, version, resource, namespaced, "") for r in rules
    )


@dataclass
class Request:
    """The admission request an object in the run would make: its resource and namespace."""

    obj: K8sObject
    group: str
    version: str
    resource: str
    namespaced: bool
    namespace: str | None
    namespace_obj: dict[str, Any] | None
    namespace_known: bool


class AssumedNamespace(str):
    """A note that the match assumed a namespace not in the run matches a namespaceSelector:
    a violation found on that assumption is a warning at most (a Deny may not apply)."""

    __slots__ = ()


def _match_resources(mr: dict[str, Any], req: Request, notes: list[str]) -> bool:
    obj = req.obj
    rules = [as_dict(r) for r in as_list(mr.get("resourceRules"))]
    name = obj.name or ""
    if rules and not any(_rule_matches(r, req.group, req.version, req.resource, req.namespaced, name) for r in rules):
        return False
    for r in as_list(mr.get("excludeResourceRules")):
        if _rule_matches(as_dict(r), req.group, req.version, req.resource, req.namespaced, name):
            return False
    if not selector_matches(mr.get("objectSelector"), obj.labels):
        return False
    ns_sel = mr.get("namespaceSelector")
    if as_dict(ns_sel) and (req.namespaced or obj.kind == "Namespace"):
        if obj.kind == "Namespace":
            return selector_matches(ns_sel, obj.labels)
        if req.namespace_obj is not None:
            labels = dict(as_dict(as_dict(req.namespace_obj.get("metadata")).get("labels")))
            labels.setdefault("kubernetes.io/metadata.name", req.namespace or "")
            return selector_matches(ns_sel, labels)
        notes.append(
            AssumedNamespace(
                f"namespace {req.namespace or 'default'} is not in the run: assumed to match the namespaceSelector"
            )
        )
    return True


# -- evaluation --------------------------------------------------------------------------------
_OBJECT_PATH = re.compile(r"\bobject((?:\s*\.\s*\??\s*[A-Za-z_]\w*|\s*\[\s*\??\s*(?:'[^']*'|\"[^\"]*\"|\d+)\s*\])+)")
_STEP = re.compile(r"\.\s*\??\s*([A-Za-z_]\w*)|\[\s*\??\s*(?:'([^']*)'|\"([^\"]*)\"|(\d+))\s*\]")


@lru_cache(maxsize=4096)
def object_paths(source: str) -> tuple[tuple[Any, ...], ...]:
    """The field paths an expression reads from `object` (`object.spec.?replicas` -> spec,
    replicas), read once per expression (each object a policy denies asks again)."""
    return tuple(_object_paths(source))


def _object_paths(source: str) -> list[tuple[Any, ...]]:
    out = []
    for m in _OBJECT_PATH.finditer(source):
        path: list[Any] = []
        chain = m.group(1)
        for s in _STEP.finditer(chain):
            if s.group(1):
                if chain[s.end() :].lstrip().startswith("(") or source[m.start(1) + s.end() :].lstrip().startswith("("):
                    break  # a function call (`.all(`, `.size(`), not a field
                path.append(s.group(1))
            elif s.group(4) is not None:
                path.append(int(s.group(4)))
            else:
                path.append(s.group(2) if s.group(2) is not None else s.group(3))
        if path:
            out.append(tuple(path))
    return out


def failing_path(obj: K8sObject, sources: Iterable[str]) -> tuple[Any, ...]:
    """The deepest existing field on the paths the expressions read (else the object)."""
    best: tuple[Any, ...] = ()
    for src in sources:
        for path in object_paths(src):
            got = obj.existing_prefix(path) if obj.positions else _data_prefix(obj, path)
            if len(got) > len(best):
                best = got
    return best


def _data_prefix(obj: K8sObject, path: tuple[Any, ...]) -> tuple[Any, ...]:
    cur: Any = obj.data
    out: list[Any] = []
    for step in path:
        if (isinstance(cur, dict) and step in cur) or (
            isinstance(cur, list) and isinstance(step, int) and 0 <= step < len(cur)
        ):
            cur = cur[step]
            out.append(step)
        else:
            break
    return tuple(out)


@dataclass
class Verdict:
    """What a policy says of an object: the finding it becomes."""

    code: str  # POL001 | POL002
    severity: Severity
    message: str
    path: tuple[Any, ...]
    severity_reason: str | None = None  # why the severity is not the binding's action's


if TYPE_CHECKING:
    Match = tuple[Policy, Binding, Request, list[str]]  # a binding that selects an object, and its notes


class Evaluator:
    """All policies and bindings of a run, and the objects they can read (params, namespaces)."""

    def __init__(self, objects: Sequence[K8sObject]) -> None:
        self.policies: dict[str, Policy] = {}
        self.bindings: list[Binding] = []
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.by_kind: dict[tuple[str, str], list[K8sObject]] = {}
        self.names = ResourceNames(objects)
        # one binding per name, as one cluster holds it (the last file wins, as for policies):
        # two files that define the same binding are alternatives, not two bindings
        bindings: dict[str, Binding] = {}
        for obj in objects:
            if obj.group == GROUP and obj.kind == "ValidatingAdmissionPolicy" and obj.name:
                self.policies[obj.name] = build_policy(obj)
            elif obj.group == GROUP and obj.kind == "ValidatingAdmissionPolicyBinding":
                bindings[obj.name or f"#{len(bindings)}"] = build_binding(obj)
            elif obj.kind == "Namespace" and obj.api_version == "v1" and obj.name:
                self.namespaces[obj.name] = obj.data
            self.by_kind.setdefault((obj.api_version, obj.kind), []).append(obj)
        self.bindings = list(bindings.values())
        # (group, version, resource, namespaced) -> the bindings whose resource rules can match
        self._candidates: dict[tuple[str, str, str, bool], list[Binding]] = {}
        self._unbound: set[tuple[str, str]] = set()  # (apiVersion, kind) no binding can match

    @property
    def active(self) -> bool:
        return any(b.policy in self.policies for b in self.bindings)

    @property
    def unbound(self) -> set[tuple[str, str]]:
        """The (apiVersion, kind) pairs `matches` found that no binding's resource rules can
        take: a function of the policies, the bindings and the CRDs' names and scopes alone
        (`_bindings_for`), what `environment` digests."""
        return self._unbound

    def policy_errors(self) -> list[tuple[Policy, Expr]]:
        return [(p, e) for p in self.policies.values() for e in p.compile().errors]

    def request_for(self, obj: K8sObject) -> Request:
        group, version = (
            (obj.api_version.rsplit("/", 1) + [""])[:2] if "/" in obj.api_version else ("", obj.api_version)
        )
        namespaced = self.names.namespaced(group, obj.kind)
        ns = obj.namespace if namespaced else None
        ns_obj = self.namespaces.get(ns or "default") if namespaced else None
        return Request(
            obj, group, version, self.names.resource(group, obj.kind), namespaced, ns, ns_obj, ns_obj is not None
        )

    def evaluate(self, obj: K8sObject) -> list[Verdict]:
        return self.judge(self.matches(obj))

    def matches(self, obj: K8sObject) -> list[Match]:
        """The (policy, binding) pairs whose match rules select `obj`, found from the specs
        alone: no expression is compiled or run (`judge` does that)."""
        if not self.bindings or is_policy(obj):
            return []
        kind = (obj.api_version, obj.kind)
        if kind in self._unbound:  # (no binding's resource rules take this kind: no request built)
            return []
        req = self.request_for(obj)
        candidates = self._bindings_for(req)
        if not candidates:
            self._unbound.add(kind)
        out: list[Match] = []
        for b in candidates:
            p = self.policies[b.policy]
            notes: list[str] = []
            mc = as_dict(p.spec.get("matchConstraints"))
            if not mc or not _match_resources(mc, req, notes):
                continue
            if b.match is not None and not _match_resources(b.match, req, notes):
                continue
            out.append((p, b, req, notes))
        return out

    def judge(self, matches: list[Match]) -> list[Verdict]:
        """The verdicts of the pairs `matches` found for one object."""
        out: list[Verdict] = []
        for p, b, req, notes in matches:
            out.extend(self._evaluate_binding(p, b, req, notes))
        return out

    def _bindings_for(self, req: Request) -> list[Binding]:
        """The bindings with a policy whose resource rules (the policy's and the binding's)
        can match a request of this group, version, resource and scope, worked out once per
        such key: the names, selectors and conditions are still checked per object."""
        key = (req.group, req.version, req.resource, req.namespaced)
        got = self._candidates.get(key)
        if got is None:
            got = self._candidates[key] = [
                b
                for b in self.bindings
                if (p := self.policies.get(b.policy)) is not None  # else ignored, as by the API server
                and (mc := as_dict(p.spec.get("matchConstraints")))
                and _may_match_resource(mc, key)
                and (b.match is None or _may_match_resource(b.match, key))
            ]
        return got

    # -- one (policy, binding) -----------------------------------------------------------------
    def _severity(self, b: Binding) -> Severity:
        sevs = [_ACTION_SEVERITY[a] for a in b.actions if a in _ACTION_SEVERITY]
        return max(sevs, key=lambda s: s.rank) if sevs else Severity.ERROR

    def _params(self, p: Policy, b: Binding, req: Request) -> tuple[list[Any] | None, str | None]:
        """The params to evaluate with ([None] without paramKind), or (None, why not)."""
        pk = as_dict(p.spec.get("paramKind"))
        if not pk:
            return [None], None
        api, kind = str(pk.get("apiVersion") or ""), str(pk.get("kind") or "")
        if b.param_ref is None:
            return None, f"binding {b.name} has no paramRef for the policy's paramKind {kind}"
        ref = b.param_ref
        group = api.rsplit("/", 1)[0] if "/" in api else ""
        namespaced = self.names.namespaced(group, kind)
        ns = str(ref.get("namespace") or (req.namespace if namespaced else "") or ("default" if namespaced else ""))
        cands = [o for o in self.by_kind.get((api, kind), []) if not namespaced or (o.namespace_or_default) == ns]
        if isinstance(ref.get("name"), str):
            cands = [o for o in cands if o.name == ref["name"]]
            what = f"{kind} {ns + '/' if namespaced else ''}{ref['name']}"
        else:
            cands = [o for o in cands if selector_matches(ref.get("selector"), o.labels)]
            what = f"{kind} objects{' in ' + ns if namespaced else ''} matching the binding's paramRef.selector"
        if cands:
            return [o.data for o in cands], None
        action = ref.get("parameterNotFoundAction") or "Deny"
        if action == "Allow":
            return [], None  # no params: the binding passes
        return (
            None,
            f"param {what} is not in the run (parameterNotFoundAction: Deny, so the API server applies failurePolicy {p.failure_policy})",
        )

    def _evaluate_binding(self, p: Policy, b: Binding, req: Request, notes: list[str]) -> list[Verdict]:
        obj = req.obj
        label = f"policy {p.name}"
        suffix = f" ({'; '.join(notes)})" if notes else ""
        params, missing = self._params(p, b, req)
        if params is None:
            return [Verdict("POL002", Severity.INFO, f"{label} not evaluated offline: {missing}{suffix}", ())]
        if params:
            p.compile()
        out: list[Verdict] = []
        sev = self._severity(b)
        # the message says which namespace; the severity's reason says only why it is lowered
        assumed = "a namespaceSelector match assumed" if any(isinstance(n, AssumedNamespace) for n in notes) else None
        served = as_served(obj)  # as the API server decodes it (empty `resources: {}` and the like)
        for param in params:
            data = {
                "object": served,
                "oldObject": None,
                "params": param,
                "namespaceObject": req.namespace_obj,
                "request": self._request_data(req),
                "variables": {},
                "authorizer": None,
            }
            variables: dict[str, Any] = {}
            var_errors: dict[str, str] = {}
            for name, e in p.variables:
                ok, value, why = self._run(e, data, variables, var_errors)
                if ok:
                    variables[name] = value
                else:
                    var_errors[name] = why or "error"
            data["variables"] = variables
            act = _cel().activation(VARIABLES, data)
            skip = False
            for cname, e in p.conditions:
                ok, value, why = self._run(e, data, variables, var_errors, act)
                if not ok:
                    out.append(
                        Verdict(
                            "POL002",
                            Severity.INFO,
                            f"{label}: matchCondition {cname} not evaluable offline: {why}{suffix}",
                            (),
                        )
                    )
                    skip = True
                    break
                if value is not True:
                    skip = True
                    break
            if skip:
                continue
            for e, message, me, reason in p.validations:
                if e.error is not None and not e.error.unsupported:
                    continue  # POL003 on the policy
                ok, value, why = self._run(e, data, variables, var_errors, act)
                sources = [e.source] + [v.source for n, v in p.variables if f"variables.{n}" in e.source]
                where = failing_path(obj, sources)
                if not ok:
                    out.append(
                        Verdict(
                            "POL002",
                            Severity.INFO,
                            f"{label}: validation `{_short(e.source)}` not evaluable offline: {why}"
                            f"{self._on_error(p)}{suffix}",
                            where,
                        )
                    )
                    continue
                if value is True:
                    continue
                if value is not False:
                    out.append(
                        Verdict(
                            "POL002",
                            Severity.INFO,
                            f"{label}: validation `{_short(e.source)}` gave {_cel().describe(value)}, not a bool{suffix}",
                            where,
                        )
                    )
                    continue
                text = ""
                if me is not None and me.error is None:
                    mok, mval, _ = self._run(me, data, variables, var_errors, act)
                    if mok and isinstance(mval, str) and mval.strip() and "\n" not in mval:
                        text = mval
                text = text or message or f"failed expression: {e.source.strip()}"
                if reason != "Invalid":  # the HTTP reason of the rejection (Forbidden, Unauthorized ...)
                    text = f"{text} [{reason}]"
                if assumed and sev.rank > Severity.WARNING.rank:
                    out.append(Verdict("POL001", Severity.WARNING, f"{label}: {text}{suffix}", where, assumed))
                else:
                    out.append(Verdict("POL001", sev, f"{label}: {text}{suffix}", where))
        return out

    @staticmethod
    def _on_error(p: Policy) -> str:
        if p.failure_policy == "Ignore":
            return " (failurePolicy Ignore: the API server would admit the object)"
        return ""

    def _request_data(self, req: Request) -> dict[str, Any]:
        obj = req.obj
        gvk = {"group": req.group, "version": req.version, "kind": obj.kind}
        gvr = {"group": req.group, "version": req.version, "resource": req.resource}
        return {
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": obj.name or "",
            "namespace": req.namespace or "",
            "operation": "CREATE",
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        }

    def _run(
        self,
        e: Expr,
        data: dict[str, Any],
        variables: dict[str, Any],
        var_errors: dict[str, str],
        act: Any = None,
    ) -> tuple[bool, Any, str | None]:
        if e.error is not None:
            if e.error.unsupported:
                return False, None, f"uses {e.error.unsupported}, which ailint does not evaluate"
            return False, None, f"does not compile: {e.error.message}"
        assert e.program is not None
        for name, why in var_errors.items():
            if re.search(rf"\bvariables\s*\.\s*{re.escape(name)}\b", e.source):
                return False, None, f"variable {name}: {why}"
        if _reads_user_info(e.source):
            return False, None, "reads request.userInfo (who applies the object is not known offline)"
        if act is None:
            act = _cel().activation(VARIABLES, {**data, "variables": variables})
        res = _cel().evaluate(e.program, act)
        if not res.ok:
            return False, None, res.error
        return True, res.value, None


@lru_cache(maxsize=4096)
def _reads_user_info(source: str) -> bool:
    return re.search(r"\brequest\s*\.\s*userInfo\b", source) is not None


def _short(src: str) -> str:
    one = " ".join(src.split())
    return one if len(one) <= 80 else one[:77] + "..."


# -- findings ----------------------------------------------------------------------------------
def expression_span(obj: K8sObject, path: tuple[Any, ...], line: int, col: int) -> Span:
    """The file position of (line, col) inside the expression at `path` of `obj`."""
    if not obj.has(path):
        return obj.span(path)
    vs = obj.value_span(path)
    text = obj.source.line_text(vs.line) if obj.source.text else ""
    start = text[vs.col - 1 : vs.col] if text else ""
    if start in ("|", ">"):
        first = obj.source.line_text(vs.line + 1) if obj.source.text else ""
        indent = len(first) - len(first.lstrip(" "))  # the block's indentation
        return Span.point(vs.line + line, indent + col)
    quote = 1 if start in ("'", '"') else 0
    if line == 1:
        return Span.point(vs.line, vs.col + quote + col - 1)
    return Span.point(vs.line + line - 1, col)


class CelUnavailable(RuntimeError):
    """The CEL engine cannot be imported, and a verdict must be worked out (not remembered)."""


def environment(objects: Sequence[K8sObject]) -> bytes | None:
    """A digest of what an object's verdicts depend on besides the object: the policies and
    bindings (and where they are: POL003 and their findings point there), the Namespaces,
    the CRDs' names and scopes (`ResourceNames`) and the objects of the policies' param
    kinds. None when some of it is not plain data. (marshal's version 0: the later versions
    write back-references and interning flags that depend on who else holds an object,
    so equal data could digest differently.)"""
    import marshal

    from ailint.core.digest import blake2b

    param_kinds = set()
    for o in objects:
        if o.group == GROUP and o.kind == "ValidatingAdmissionPolicy":
            pk = as_dict(as_dict(o.data.get("spec")).get("paramKind"))
            if pk:
                param_kinds.add((str(pk.get("apiVersion") or ""), str(pk.get("kind") or "")))
    h = blake2b(digest_size=20)
    for o in objects:
        part: tuple[Any, ...]
        if is_policy(o) or (o.kind == "Namespace" and o.api_version == "v1") or (o.api_version, o.kind) in param_kinds:
            part = (o.file, o.doc_index, o.api_version, o.kind, o.data)
        elif o.kind == "CustomResourceDefinition" and o.group == "apiextensions.k8s.io":
            spec = as_dict(o.data.get("spec"))
            names = as_dict(spec.get("names"))
            part = ("crd", spec.get("group"), names.get("kind"), names.get("plural"), spec.get("scope"))
        else:
            continue
        try:
            h.update(marshal.dumps(part, 0))
        except ValueError:
            return None
    return h.digest()


def _span_row(span: Span) -> tuple[int, int, int, int]:
    return (span.line, span.col, span.end_line, span.end_col)


def _data_key(env: bytes, obj: K8sObject) -> bytes | None:
    import marshal

    from ailint.core.digest import blake2b

    try:
        return blake2b(env + marshal.dumps((obj.api_version, obj.kind, obj.data), 0), digest_size=20).digest()
    except ValueError:
        return None


def findings(
    objects: Sequence[K8sObject],
    targets: Iterable[K8sObject],
    rules: dict[str, tuple[str, Severity]],
    context_objects: Sequence[K8sObject] = (),
    memo: Any = None,
    judged: Callable[[K8sObject], bool] | None = None,
    judged_key: bytes | None = None,
) -> list[Finding]:
    """POL findings: POL003 for each policy expression that does not compile, POL001/POL002
    for each object a bound policy matches. `rules` maps the enabled codes to (name, severity).
    `judged(obj)`, asked only of objects with a verdict, says whether they are reported (a
    kustomize patch is not).

    `memo` (`get(key)`/`put(key, value)`, the results cache's) keeps the verdicts of each
    object under a digest of its file's bytes and place (`memo.digest`) and of its
    environment (`environment`), with where they point and `judged`'s answer under
    `judged_key` (what that answer depends on besides the object): a rerun evaluates only the
    objects whose data or environment changed, and compiles no policy when none did. The
    verdicts of an object a binding selects are kept under its data's digest too, so an edit
    that leaves its data as it was (a comment) evaluates nothing; a policy is compiled, and
    the CEL engine imported, only for an object a binding of it selects."""
    everything = [*objects, *context_objects]
    env = environment(everything) if memo is not None else None
    ev: Evaluator | None = None

    def evaluator() -> Evaluator:
        nonlocal ev
        if ev is None:  # (the CEL engine is imported by the first policy compiled)
            ev = Evaluator(everything)
        return ev

    out: list[Finding] = []
    meta = memo.get(env + b"meta") if env is not None else None
    if not (isinstance(meta, tuple) and len(meta) == 2):
        e = evaluator()
        errors = [
            (p.obj.file, p.obj.doc_index, e.path, e.error.line, e.error.col, e.error.message, p.name)
            for p, e in e.policy_errors()
            if e.error is not None
        ]
        meta = (e.active, errors)
        if env is not None:
            memo.put(env + b"meta", meta)
    active, errors = meta
    if "POL003" in rules:
        name, sev = rules["POL003"]
        where = {(o.file, o.doc_index): o for o in everything if is_policy(o)}
        for file, doc, path, line, col, message, policy in errors:
            obj = where.get((file, doc))
            if obj is None:
                continue
            path = tuple(path)
            span = expression_span(obj, path, line, col)
            msg = f"policy {policy}: `{'.'.join(str(x) for x in path)}` does not compile: {message}"
            out.append(Finding("POL003", name, sev, msg, obj.file, span, obj.ref, path))
    if not active or not ({"POL001", "POL002"} & set(rules)):
        return out
    # the rest are matched from the policies' specs; only what a binding selects needs CEL,
    # unless the memo knows its data (a comment edit changes its file's bytes, not its data).
    # Kept: only the objects with verdicts or verdicts to work out (a large run's objects
    # mostly have none, and a record each would grow the pass by one per object).
    # The kinds no binding can take (`Evaluator.unbound`) are remembered once for the
    # environment, not as an empty verdict per object: their objects are passed over (on the
    # 100 MB tree, 25,938 of the memo's 29,599 records were such verdicts; it took 23 ms to
    # read and 20 ms to write back after an edit)
    got = memo.get(env + b"unbound") if env is not None else None
    unbound = {(k[0], k[1]) for k in got if isinstance(k, tuple) and len(k) == 2} if isinstance(got, list) else set()
    kept: list[_Recalled] = []
    selected: list[_Recalled] = []  # (matched again to be judged: a match holds a request)
    needed: dict[str, Policy] = {}  # the policies of their matches, compiled before they are judged
    for obj in targets:
        if unbound and (obj.api_version, obj.kind) in unbound:
            continue
        r = _recall(memo, env, obj, judged_key) if env is not None else _Recalled(obj)
        if r.rows is None:
            matched = evaluator().matches(obj)
            if matched and env is not None and r.data_key is None:
                r.data_key = _data_key(env, obj)
                known = memo.get(r.data_key) if r.data_key is not None else None
                if isinstance(known, list):
                    r.rows = known
            if r.rows is None:
                if matched:
                    selected.append(r)
                    needed.update((p.name, p) for p, *_ in matched)
                else:
                    r.rows = []
        if r.rows is None or r.rows:
            kept.append(r)
        elif r.fresh and r.key is not None and not (ev is not None and (obj.api_version, obj.kind) in ev.unbound):
            memo.put(r.key, r.entry(judged_key))  # no verdict: nothing to report
    if env is not None and ev is not None and not ev.unbound <= unbound:
        memo.put(env + b"unbound", sorted(unbound | ev.unbound))
    for p in needed.values():
        p.compile()  # (before the memory guard, as the engine's import: CelUnavailable)
    with _cel().memory_guard() if selected else nullcontext():  # once for the pass, not per evaluation
        for r in selected:
            r.rows = [
                (v.code, v.severity.value, v.message, v.path, v.severity_reason) for v in evaluator().evaluate(r.obj)
            ]
            if r.data_key is not None and r.data_key != r.key:
                memo.put(r.data_key, r.rows)
    for r in kept:
        assert r.rows is not None
        if r.rows and r.reported is None:
            r.reported, r.fresh = judged is None or judged(r.obj), True
        if r.rows and r.reported and r.spans is None:
            r.spans, r.fresh = [_span_row(r.obj.span(tuple(row[3]))) for row in r.rows], True
        if r.fresh and r.key is not None:
            memo.put(r.key, r.entry(judged_key))
        if not (r.rows and r.reported):
            continue
        assert r.spans is not None
        for (code, level, message, at, reason), (line, col, end_line, end_col) in zip(r.rows, r.spans, strict=True):
            if code in rules:
                out.append(
                    Finding(
                        code,
                        rules[code][0],
                        Severity(level),
                        message,
                        r.obj.file,
                        Span(line, col, end_line, end_col),
                        r.obj.ref,
                        tuple(at),
                        severity_reason=reason,
                    )
                )
    return out


if TYPE_CHECKING:
    Row = tuple[str, str, str, tuple[Any, ...], str | None]  # a verdict as the memo keeps it


@dataclass(slots=True)
class _Recalled:
    """What `findings` knows of one object's verdicts before it works any out: the rows (None:
    to be worked out), and, remembered under the key of the object's file bytes (`key`), where
    they point (`spans`, the same bytes' positions) and whether they are reported (`reported`,
    `judged`'s answer under the same `judged_key`). `data_key`: the key of its data alone,
    under which the rows of an object a binding selects are kept too, for bytes that change
    and data that does not."""

    obj: K8sObject
    key: bytes | None = None
    rows: list[Row] | None = None
    data_key: bytes | None = None
    spans: list[tuple[int, int, int, int]] | None = None
    reported: bool | None = None
    fresh: bool = True  # the entry under `key` is to be written

    def entry(self, judged_key: bytes | None) -> Any:
        if self.data_key is None or self.data_key == self.key:
            return self.rows  # (an object no binding selects, or one kept under its data only)
        return (self.rows, self.data_key, self.spans, judged_key if self.reported is not None else None, self.reported)


def _recall(memo: Any, env: bytes, obj: K8sObject, judged_key: bytes | None) -> _Recalled:
    own = memo.digest(obj) if hasattr(memo, "digest") else None  # the file's bytes stand for it
    if own is None:
        key = _data_key(env, obj)
        r = _Recalled(obj, key, data_key=key)
    else:
        r = _Recalled(obj, env + own)  # (the data's key is worked out only when needed)
    known = memo.get(r.key) if r.key is not None else None
    if isinstance(known, list):
        r.rows, r.fresh = known, False
    elif isinstance(known, tuple) and len(known) == 5 and isinstance(known[0], list):
        rows, data_key, spans, asked, reported = known
        r.rows, r.data_key, r.fresh = rows, data_key, False
        if isinstance(data_key, bytes):
            memo.get(data_key)  # (kept for the next run: the memo keeps what a run reads)
        if isinstance(spans, list) and len(spans) == len(rows):
            r.spans = spans
        if judged_key is not None and asked == judged_key and isinstance(reported, bool):
            r.reported = reported
    return r
