"""Schema errors as findings: what an object the fast checker rejected is told.

Imported by `ailint.schema.validate` only for an object its compiled checker rejects: most
runs validate every object without ever reaching this code (a third of the validation
module, and a one-file run of a valid manifest starts without it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from ailint.core.lazyre import lazy_re
from ailint.core.model import K8sObject, Path, as_dict
from ailint.domain.patches import is_partial
from ailint.schema.validate import CODES, QUANTITY_RE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ailint.schema.validate import Collector, Compiler

_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}


def _type_of(x: Any) -> str:
    if isinstance(x, bool):
        return "a boolean"
    if isinstance(x, int):
        return "an integer"
    if isinstance(x, float):
        return "a number"
    if isinstance(x, str):
        return "a string"
    if isinstance(x, dict):
        return "a mapping"
    if isinstance(x, list):
        return "a list"
    return "null" if x is None else type(x).__name__


def dotted(path: Iterable[Any]) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            p = str(p)
            out += ("." if out else "") + (p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else f'"{p}"')
    return out


def _raw(obj: K8sObject, path: Path, value: Any) -> str:
    """The value as written in the file when it fits on one line, else a short rendering."""
    span = obj.value_span(path)
    if span.line == span.end_line and obj.has(path):
        text = obj.source.line_text(span.line)[span.col - 1 : span.end_col - 1].strip()
        if text and len(text) <= 60:
            return text
    s = json.dumps(value, default=str)
    return s if len(s) <= 60 else s[:57] + "..."


def _shown(obj: K8sObject, path: Path, value: Any) -> str:
    """A string value without its quotes; anything else as written."""
    return value if isinstance(value, str) and len(value) <= 60 else _raw(obj, path, value)


def _where(path: Path) -> str:
    return f"`{dotted(path)}`" if path else "the object"


def _suggest(name: str, candidates: Iterable[str]) -> str | None:
    cands = [c for c in candidates if isinstance(c, str)]
    low = {c.lower(): c for c in cands}
    if name.lower() in low:
        return low[name.lower()]
    import difflib  # only for a field no definition knows (a one-file run must start fast)

    m = difflib.get_close_matches(name, cands, n=1, cutoff=0.6)
    return m[0] if m else None


def report(obj: K8sObject, validator: Any, out: Collector, compiler: Compiler | None = None) -> None:
    """The findings of an object the fast checker rejected: each of `validator`'s errors as
    the SCH finding a reader can act on (a misspelt field with its likely name, a value of the
    wrong type with its quoting, a missing required field the API server would not fill)."""
    errors = list(validator.iter_errors(obj.data))
    suggested: dict[Path, set[str]] = {}
    pending_required: list[tuple[Path, str, dict[str, Any]]] = []
    for e in errors:
        _one_error(obj, e, out, suggested, pending_required, compiler)
    partial = None
    for path, name, schema in pending_required:
        if compiler is not None and compiler.defaulted(schema, name):
            continue  # defaulted by the API server before validation
        if (_generic(path), name) in _DEFAULTED_REQUIRED.get((obj.group, obj.kind), ()):
            continue  # a defaulter or the operator's mutating webhook fills it before validation
        if partial is None:
            partial = is_partial(obj, out.patch_names)
        if partial:
            continue  # a kustomize patch or a template: incomplete by design
        if (
            name == "selector"
            and path == ("spec",)
            and obj.kind in _SELECTOR_KINDS
            and not as_dict(obj.get("spec", "template", "metadata")).get("labels")
        ):
            continue  # neither selector nor pod labels: a kustomize base that commonLabels completes
        if name in suggested.get(path, ()):
            continue  # `sise:` was reported with "did you mean `size`?"; the missing `size` is the same mistake
        out.add(
            CODES["required"], obj, path, f"{_where(path)} is missing the required field `{name}`", obj.key_span(path)
        )


def _misplaced(key: str, props: dict[str, Any], compiler: Compiler | None) -> str | None:
    """The child object (one level down) whose schema has `key`, if exactly one has it."""
    if compiler is None:
        return None
    found = []
    for name, sub in props.items():
        for _ in range(10):
            if isinstance(sub, dict) and isinstance(sub.get("$ref"), str) and sub["$ref"].startswith(("#", "http")):
                try:
                    sub = compiler.resolve(sub["$ref"])
                except (KeyError, TypeError):
                    sub = None
            else:
                break
        if isinstance(sub, dict) and key in (sub.get("properties") or {}):
            found.append(name)
    return found[0] if len(found) == 1 else None


def _one_error(
    obj: K8sObject,
    e: Any,
    out: Collector,
    suggested: dict[Path, set[str]],
    pending_required: list[tuple[Path, str, dict[str, Any]]],
    compiler: Compiler | None = None,
) -> None:
    inst = e.instance
    if inst is None:
        return
    path: Path = tuple(e.absolute_path)
    kw = e.validator
    if kw not in ("additionalProperties", "required") and _placeholder(inst):
        return  # `${PORT}`, `$NUM_NODES`, `<your-bucket>`: a template to be filled in, not a value
    schema = e.schema if isinstance(e.schema, dict) else {}
    if kw == "additionalProperties":
        props = schema.get("properties") or {}
        patterns = [re.compile(p) for p in (schema.get("patternProperties") or {})]
        for key in inst:
            if key in props or any(p.search(key) for p in patterns) or key.startswith("$"):
                continue  # `$patch: delete` and friends are kustomize/strategic-merge directives
            hint = _suggest(key, props)
            moved = _MOVED.get((obj.group, obj.kind, _generic(path), key))
            below = None if hint or moved else _misplaced(key, props, compiler)
            later = out.core.added_later(e.schema, key) if out.core is not None else None
            if later and out.core is not None:  # (later is None without a core)
                ver = f"{out.core.version[0]}.{out.core.version[1]}"
                msg = (
                    f"unknown field `{key}` in {_where(path)} for Kubernetes {ver}; Kubernetes {later} "
                    "added it (set `kube-version` to the version you deploy to)"
                )
            elif moved:
                msg = f"unknown field `{key}` in {_where(path)}: {moved}"
            elif hint:
                suggested.setdefault(path, set()).add(hint)
                msg = f"unknown field `{key}` in {_where(path)}; did you mean `{hint}`?"
            elif below:
                msg = f"unknown field `{key}` in {_where(path)}; move it one level down, under `{below}`"
            elif props:
                msg = f"unknown field `{key}` in {_where(path)}"
            else:
                msg = f"unknown field `{key}`: {_where(path)} takes no fields"
            out.add(CODES["unknown-field"], obj, path + (key,), msg, obj.key_span(path + (key,)))
    elif kw == "required":
        for name in e.validator_value:
            if isinstance(inst, dict) and name not in inst:
                pending_required.append((path, name, schema))
    elif kw == "type":
        _type_finding(obj, path, inst, e.validator_value, out)
    elif kw in ("oneOf", "anyOf"):
        types: list[str] = []
        for sub in e.context or ():
            if sub.validator == "type" and not sub.relative_path:
                v = sub.validator_value
                types.extend(v if isinstance(v, list) else [v])
        if types and all(sub.validator == "type" for sub in e.context or ()):
            _type_finding(obj, path, inst, types, out)
        else:
            from jsonschema.exceptions import best_match

            best = best_match(e.context or ())
            if best is not None and best.validator not in ("oneOf", "anyOf"):
                _one_error(obj, best, out, suggested, pending_required, compiler)
    elif kw == "enum":
        allowed = [a for a in e.validator_value if a is not None]
        shown = ", ".join(f"`{a}`" for a in allowed[:12]) + (", ..." if len(allowed) > 12 else "")
        hint = _suggest(str(inst), [str(a) for a in allowed]) if isinstance(inst, str) else None
        close = f"; did you mean `{hint}`?" if hint and hint.lower() == str(inst).lower() else ""
        renamed = _RENAMED_VALUES.get((obj.group, obj.kind, _generic(path), inst)) if isinstance(inst, str) else None
        if renamed:
            close = f"; {renamed}"
        out.add(
            CODES["enum"],
            obj,
            path,
            f"{_where(path)} is `{_shown(obj, path, inst)}`, not one of the allowed values: {shown}{close}",
            obj.value_span(path),
        )
    elif kw == "format" and e.validator_value == "quantity":
        fixed = _fix_quantity(inst)
        hint = f"; did you mean `{fixed}`?" if fixed else " (e.g. `500m`, `2`, `16Gi`)"
        out.add(
            CODES["quantity"],
            obj,
            path,
            f"{_where(path)} is not a valid quantity: `{_shown(obj, path, inst)}`{hint}",
            obj.value_span(path),
        )
    elif kw == "format":
        return
    else:
        out.add(
            CODES["constraint"],
            obj,
            path,
            _constraint_message(obj, path, inst, kw, e.validator_value),
            obj.value_span(path),
        )


def _type_finding(obj: K8sObject, path: Path, inst: Any, expected: Any, out: Collector) -> None:
    types = [t for t in (expected if isinstance(expected, list) else [expected]) if t != "null"]
    if not types:
        return
    want = " or ".join(dict.fromkeys(_TYPE_NAMES.get(t, t) for t in types))
    raw = _raw(obj, path, inst)
    quote = ""
    if "string" in types and isinstance(inst, (bool, int, float)):
        quote = f'; quote it: `"{raw}"`'
    out.add(
        CODES["wrong-type"],
        obj,
        path,
        f"{_where(path)} must be {want}, not {_type_of(inst)} (`{raw}`){quote}",
        obj.value_span(path),
    )


def _fix_quantity(v: Any) -> str | None:
    if not isinstance(v, str):
        return None
    s = v.strip().replace(" ", "")
    for bad, good in (
        ("KiB", "Ki"),
        ("MiB", "Mi"),
        ("GiB", "Gi"),
        ("TiB", "Ti"),
        ("KB", "k"),
        ("kB", "k"),
        ("MB", "M"),
        ("GB", "G"),
        ("TB", "T"),
        ("gi", "Gi"),
        ("mi", "Mi"),
        ("ki", "Ki"),
        ("gb", "G"),
        ("mb", "M"),
        ("Gb", "G"),
        ("Mb", "M"),
    ):
        if s.endswith(bad):
            s = s[: -len(bad)] + good
            break
    return s if s != v and QUANTITY_RE.match(s) else None


# the bounds on a list's items and a mapping's fields: (what is counted, the bound, what it says of them)
_COUNT_BOUNDS = {
    "minItems": ("items", "at least", "required"),
    "maxItems": ("items", "at most", "allowed"),
    "minProperties": ("fields", "at least", "required"),
    "maxProperties": ("fields", "at most", "allowed"),
}


def _constraint_message(obj: K8sObject, path: Path, inst: Any, kw: str, value: Any) -> str:
    where, raw = _where(path), _shown(obj, path, inst)
    if kw == "pattern":
        pat = value if len(value) <= 70 else value[:67] + "..."
        return f"{where} is `{raw}`, which does not match the pattern `{pat}`"
    if kw in ("minimum", "exclusiveMinimum"):
        return f"{where} is {raw}; it must be {'at least' if kw == 'minimum' else 'more than'} {value}"
    if kw in ("maximum", "exclusiveMaximum"):
        return f"{where} is {raw}; it must be {'at most' if kw == 'maximum' else 'less than'} {value}"
    if kw == "minLength":
        return f"{where} is too short (at least {value} characters)"
    if kw == "maxLength":
        return f"{where} is {len(inst)} characters long; at most {value} are allowed"
    if kw in _COUNT_BOUNDS:
        what, bound, verb = _COUNT_BOUNDS[kw]
        return f"{where} has {len(inst)} {what}; {bound} {value} are {verb}"
    if kw == "uniqueItems":
        return f"{where} has duplicate items"
    return f"{where} is invalid ({kw})"


# -- objects that are incomplete on purpose ------------------------------------------------
# Required fields that Kubernetes defaulters or the operator's mutating webhook fill before
# the schema is checked: (group, kind) -> {(generic parent path, field)}.
_DEFAULTED_REQUIRED: dict[tuple[str, str], set[tuple[str, str]]] = {
    # pkg/apis/rbac/v1/defaults.go: SetDefaults_(Cluster)RoleBinding sets roleRef.apiGroup
    ("rbac.authorization.k8s.io", "RoleBinding"): {("roleRef", "apiGroup")},
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): {("roleRef", "apiGroup")},
    # jobset pkg/webhooks/jobset_webhook.go Default(): names rules "failurePolicyRule<i>"
    ("jobset.x-k8s.io", "JobSet"): {("spec.failurePolicy.rules[]", "name")},
}
# Fields that moved or went away with an API version, for the unknown-field message:
# (group, kind, generic parent path, field) -> what to do instead.
_MOVED: dict[tuple[str, str, str, str], str] = {
    (
        "karpenter.sh",
        "NodePool",
        "spec.template.spec",
        "kubelet",
    ): "karpenter.sh/v1 moved `kubelet` to the EC2NodeClass (`spec.kubelet`)",
    (
        "karpenter.sh",
        "NodePool",
        "spec.disruption",
        "expireAfter",
    ): "karpenter.sh/v1 moved `expireAfter` to `spec.template.spec.expireAfter`",
    (
        "karpenter.sh",
        "NodePool",
        "spec.template.spec.nodeClassRef",
        "apiVersion",
    ): "karpenter.sh/v1 replaced `apiVersion` with `group` (e.g. `karpenter.k8s.aws`)",
    (
        "ray.io",
        "RayService",
        "spec",
        "serveConfig",
    ): "KubeRay 1.1 removed the structured `serveConfig` from every ray.io version (kuberay#1790); "
    "put the Serve config in `serveConfigV2` (a YAML string)",
}
# Enum values an API version renamed: (group, kind, generic path, old value) -> hint.
_RENAMED_VALUES: dict[tuple[str, str, str, str], str] = {
    (
        "karpenter.sh",
        "NodePool",
        "spec.disruption.consolidationPolicy",
        "WhenUnderutilized",
    ): "karpenter.sh/v1 renamed it `WhenEmptyOrUnderutilized`",
}
_SELECTOR_KINDS = ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet")
_PLACEHOLDER_RE = lazy_re(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{|^<[^<>]+>$|^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$")


def _generic(path: Path) -> str:
    """`spec.failurePolicy.rules[]` for `spec.failurePolicy.rules[0]`."""
    return re.sub(r"\[\d+\]", "[]", dotted(path))


def _placeholder(v: Any) -> bool:
    return isinstance(v, str) and _PLACEHOLDER_RE.search(v) is not None
