"""Custom rules from the config: `custom-rules:` (code -> rule) and `custom-rules-files:` (globs
of policy packs, each a YAML file with its own `custom-rules:` mapping), turned into rules
registered like the built-in ones.

A rule is CEL over one subject: the object, each pod template, or each container
(`for-each`). `match` (optional) selects subjects, `validate` must be true, `message` or
`message-expression` says what is wrong, `field` says where the finding points. Every
expression is compiled when the config is read: an error is a config error naming the file,
the line and column, the rule's code and the position inside the expression.
"""

from __future__ import annotations

import glob as globmod
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ailint.core.model import Finding, K8sObject, Severity
from ailint.core.rule import Rule, Scope
from ailint.policy import cel

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

VARIABLES = ("object", "template", "container", "kind", "name", "namespaceName")
FOR_EACH = ("object", "pod-template", "container")
KEYS = {
    "name",
    "severity",
    "summary",
    "for-each",
    "kinds",
    "match",
    "validate",
    "message",
    "message-expression",
    "field",
    "description",
}


class Where:
    """Line and column of a config path, from the YAML nodes (TOML: a text search)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.text = ""
        self.root: Any = None
        try:
            with open(path, encoding="utf-8") as fh:
                self.text = fh.read()
        except OSError:
            return
        if not path.endswith(".toml"):
            from ailint.core.yamldata import pyyaml_compose

            try:
                self.root = pyyaml_compose(self.text)
            except Exception:
                self.root = None

    def node(self, keys: tuple[Any, ...], key_node: bool = False) -> Any:
        import yaml

        node = self.root
        for n, key in enumerate(keys):
            if isinstance(node, yaml.MappingNode):
                pair = next(((k, v) for k, v in node.value if getattr(k, "value", None) == key), None)
                if pair is None:
                    return None
                node = pair[0] if key_node and n == len(keys) - 1 else pair[1]
            else:
                return None
        return node

    def line_col(self, keys: tuple[Any, ...], key_node: bool = False) -> tuple[int, int]:
        node = self.node(keys, key_node) if self.root is not None else None
        if node is not None:
            return node.start_mark.line + 1, node.start_mark.column + 1
        needle = str(keys[-1]) if keys else ""
        for i, line in enumerate(self.text.splitlines(), 1):
            if needle and needle in line and not line.lstrip().startswith("#"):
                return i, line.find(needle) + 1
        return 1, 1

    def expression_position(self, keys: tuple[Any, ...], line: int, col: int) -> tuple[int, int]:
        """File line and column of (line, col) inside the expression at `keys`."""
        node = self.node(keys) if self.root is not None else None
        if node is None:
            return self.line_col(keys)
        style = getattr(node, "style", None)
        start_line = node.start_mark.line + 1
        if style in ("|", ">"):
            lines = self.text.splitlines()
            first = lines[start_line] if start_line < len(lines) else ""  # the block's first line
            return start_line + line, len(first) - len(first.lstrip(" ")) + col
        quote = 1 if style in ("'", '"') else 0
        if line == 1:
            return start_line, node.start_mark.column + 1 + quote + col - 1
        return start_line + line - 1, col


@dataclass(frozen=True)
class Spec:
    """One custom rule as configured (picklable: worker processes recompile its expressions)."""

    code: str
    name: str
    severity: str
    summary: str
    for_each: str
    kinds: tuple[str, ...]
    match: str | None
    validate: str
    message: str | None
    message_expression: str | None
    field: tuple[Any, ...] | None
    field_base: str  # "object" | "template" | "container": what `field` is relative to
    defined_in: str  # file:line
    description: str = ""


def parse_field(text: str) -> tuple[str, tuple[Any, ...]]:
    """`metadata.labels`, `spec.containers[0].image`, `container.resources`, `metadata.labels['app']`."""
    base = "object"
    steps: list[Any] = []
    for m in re.finditer(r"([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]", text):
        if m.group(1) is not None:
            steps.append(m.group(1))
        elif m.group(2) is not None:
            steps.append(int(m.group(2)))
        else:
            steps.append(m.group(3) if m.group(3) is not None else m.group(4))
    if steps and steps[0] in ("object", "template", "container"):
        base = steps.pop(0)
    return base, tuple(steps)


def load_specs(data: dict[str, Any], path: str | None) -> list[Spec]:
    """The custom rules of a config (and its policy packs); ValueError on any problem."""
    if not path:
        return []
    out: list[Spec] = []
    rules = data.get("custom-rules")
    if rules is not None:
        out.extend(_specs_from(rules, path, ("custom-rules",)))
    files = data.get("custom-rules-files")
    if files is not None:
        if isinstance(files, str):
            files = [files]
        if not isinstance(files, list):
            raise ValueError(_at(Where(path), ("custom-rules-files",), "`custom-rules-files` must be a list of globs"))
        root = os.path.dirname(os.path.abspath(path))
        for i, pattern in enumerate(files):
            full = os.path.join(root, str(pattern))
            matched = sorted(globmod.glob(full, recursive=True)) if globmod.has_magic(str(pattern)) else [full]
            matched = [m for m in matched if os.path.isfile(m)]
            if not matched:
                w = Where(path)
                line, _ = w.line_col(("custom-rules-files",))
                raise ValueError(
                    f"{path}:{line + i + 1 if w.root is not None else line}: `custom-rules-files[{i}]`: no file matches {pattern!r}"
                )
            for f in matched:
                out.extend(_specs_from_file(f))
    return out


def _specs_from_file(path: str) -> list[Spec]:
    import yaml
    from ailint.core.yamldata import load_data

    try:
        with open(path, encoding="utf-8") as fh:
            doc = load_data(fh)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the custom rules: {exc.strerror}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        at = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        raise ValueError(f"{at}: invalid YAML: {exc.problem}") from None
    except Exception as exc:
        raise ValueError(f"{path}: invalid YAML: {exc}") from None
    if isinstance(doc, dict) and "custom-rules" in doc:
        return _specs_from(doc["custom-rules"], path, ("custom-rules",))
    raise ValueError(f"{path}:1: a custom rules file holds a `custom-rules:` mapping of codes to rules")


def _at(w: Where, keys: tuple[Any, ...], msg: str, key_node: bool = False) -> str:
    line, col = w.line_col(keys, key_node)
    return f"{w.path}:{line}:{col}: {msg}"


def _specs_from(rules: Any, path: str, base: tuple[Any, ...]) -> list[Spec]:
    w = Where(path)
    if not isinstance(rules, dict):
        raise ValueError(_at(w, base, "`custom-rules` must map rule codes to rules"))
    out = []
    for code, body in rules.items():
        code_s = str(code)
        keys = (*base, code)
        where = f"custom rule {code_s}"
        if not isinstance(body, dict):
            raise ValueError(_at(w, keys, f"{where}: must be a mapping (name, summary, validate, message ...)"))
        unknown = sorted(set(map(str, body)) - KEYS)
        if unknown:
            raise ValueError(
                _at(
                    w,
                    (*keys, unknown[0]),
                    f"{where}: unknown key `{unknown[0]}` (keys: {', '.join(sorted(KEYS))})",
                    True,
                )
            )
        for req in ("name", "summary", "validate"):
            if not isinstance(body.get(req), str) or not body[req].strip():
                raise ValueError(_at(w, keys, f"{where}: `{req}` is required (a string)", True))
        if ("message" in body) == ("message-expression" in body):
            raise ValueError(_at(w, keys, f"{where}: give exactly one of `message` and `message-expression`", True))
        severity = str(body.get("severity", "warning"))
        if severity not in ("error", "warning", "info"):
            raise ValueError(
                _at(w, (*keys, "severity"), f"{where}: `severity` must be error, warning or info, not {severity!r}")
            )
        for_each = str(body.get("for-each", "object"))
        if for_each not in FOR_EACH:
            raise ValueError(
                _at(
                    w,
                    (*keys, "for-each"),
                    f"{where}: `for-each` must be one of {', '.join(FOR_EACH)}, not {for_each!r}",
                )
            )
        kinds = body.get("kinds", [])
        if isinstance(kinds, str):
            kinds = [kinds]
        if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
            raise ValueError(_at(w, (*keys, "kinds"), f"{where}: `kinds` must be a list of kinds"))
        field_base, field_path = "object", None
        if body.get("field") is not None:
            if not isinstance(body["field"], str) or not body["field"].strip():
                raise ValueError(
                    _at(w, (*keys, "field"), f"{where}: `field` must be a dotted path such as metadata.labels")
                )
            field_base, field_path = parse_field(body["field"].strip())
            if (field_base == "template" and for_each == "object") or (
                field_base == "container" and for_each != "container"
            ):
                raise ValueError(
                    _at(w, (*keys, "field"), f"{where}: `field` starts with {field_base} but for-each is {for_each}")
                )
        for key in ("match", "validate", "message-expression"):
            src = body.get(key)
            if src is None:
                continue
            if not isinstance(src, str):
                raise ValueError(_at(w, (*keys, key), f"{where}: `{key}` must be a CEL expression (a string)"))
            try:
                prog = cel.compile_expression(src, VARIABLES)
            except cel.CelCompileError as exc:
                line, col = w.expression_position((*keys, key), exc.line, exc.col)
                what = f"uses {exc.unsupported}, which ailint does not support" if exc.unsupported else exc.message
                raise ValueError(
                    f"{path}:{line}:{col}: {where}: `{key}` (expression line {exc.line}, column {exc.col}): {what}"
                ) from None
            want = "string" if key == "message-expression" else "bool"
            if prog.returns not in (want, "dyn"):
                line, col = w.line_col((*keys, key))
                raise ValueError(f"{path}:{line}:{col}: {where}: `{key}` gives {prog.returns}, not {want}")
        if "message" in body and not isinstance(body["message"], str):
            raise ValueError(_at(w, (*keys, "message"), f"{where}: `message` must be a string"))
        line, _ = w.line_col(keys, key_node=True)
        out.append(
            Spec(
                code=code_s,
                name=str(body["name"]),
                severity=severity,
                summary=str(body["summary"]).strip().rstrip("."),
                for_each=for_each,
                kinds=tuple(kinds),
                match=body.get("match"),
                validate=body["validate"],
                message=body.get("message"),
                message_expression=body.get("message-expression"),
                field=field_path,
                field_base=field_base,
                defined_in=f"{path}:{line}",
                description=str(body.get("description") or ""),
            )
        )
    return out


# -- running ---------------------------------------------------------------------------------------
class CustomCheck:
    """The check function of one custom rule (`check(obj, ctx, opts)`, like a built-in rule)."""

    def __init__(self, spec: Spec, rule: Rule) -> None:
        self.spec = spec
        self.rule = rule
        self._programs: tuple[Any, Any, Any] | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        return (CustomCheck, (self.spec, self.rule))

    def programs(self) -> tuple[Any, Any, Any]:
        if self._programs is None:
            s = self.spec
            comp = cel.compile_expression
            self._programs = (
                comp(s.match, VARIABLES) if s.match else None,
                comp(s.validate, VARIABLES),
                comp(s.message_expression, VARIABLES) if s.message_expression else None,
            )
        return self._programs

    def subjects(self, obj: K8sObject) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
        """(path of the subject, its CEL variables) for each subject of `obj`."""
        from ailint.domain.extract import pod_templates

        base = {"object": obj.data, "kind": obj.kind, "name": obj.name or "", "namespaceName": obj.namespace or ""}
        if self.spec.for_each == "object":
            yield (), {**base, "template": None, "container": None}
            return
        for pt in pod_templates(obj):
            template = {"metadata": pt.metadata, "spec": pt.spec}
            tpath = pt.meta_path[:-1] if pt.meta_path else pt.spec_path[:-1]
            if self.spec.for_each == "pod-template":
                yield tpath, {**base, "template": template, "container": None}
                continue
            for c in pt.containers():
                yield c.path, {**base, "template": template, "container": c.data}

    def __call__(self, obj: K8sObject, ctx: Any = None, opts: Any = None) -> Iterator[Finding]:
        with cel.memory_guard():  # set once for the object, not once per evaluation
            return iter(list(self._check(obj)))

    def _check(self, obj: K8sObject) -> Iterator[Finding]:
        s = self.spec
        match, validate, message = self.programs()
        for path, variables in self.subjects(obj):
            act = cel.activation(VARIABLES, variables)
            if match is not None:
                m = cel.evaluate(match, act)
                if not m.ok:
                    yield self._error(obj, path, "match", m.error)
                    continue
                if m.value is not True:
                    continue
            v = cel.evaluate(validate, act)
            if not v.ok:
                yield self._error(obj, path, "validate", v.error)
                continue
            if v.value is True:
                continue
            if v.value is not False:
                yield self._error(obj, path, "validate", f"gave {cel.describe(v.value)}, not a bool")
                continue
            text = s.message or ""
            if message is not None:
                mv = cel.evaluate(message, act)
                text = mv.value if mv.ok and isinstance(mv.value, str) and mv.value.strip() else ""
                text = text or f"{s.summary} (message-expression failed: {mv.error or 'not a string'})"
            yield self.rule.finding(obj, self._where(obj, path), text)

    def _where(self, obj: K8sObject, subject: tuple[Any, ...]) -> tuple[Any, ...]:
        s = self.spec
        if s.field is None:
            return subject
        if s.field_base == "object":
            return s.field
        if s.field_base == "container":
            return subject + s.field
        # template-relative: the template is the parent of the PodSpec path
        return (subject + s.field) if subject else s.field

    def _error(self, obj: K8sObject, path: tuple[Any, ...], key: str, error: str | None) -> Finding:
        return self.rule.finding(
            obj, path, f"{self.spec.code} `{key}` could not be evaluated: {error}", severity=Severity.INFO
        )


def documentation(spec: Spec) -> str:
    """The rule's docs in the fixed sections (`ailint rule ORG001`, SARIF `help`)."""
    exprs = []
    for label, value in (
        ("match", spec.match),
        ("validate", spec.validate),
        ("message-expression", spec.message_expression),
    ):
        if value:
            exprs.append(f"- `{label}`: `{' '.join(value.split())}`")
    if spec.message:
        exprs.append(f"- `message`: {spec.message}")
    if spec.field is not None:
        exprs.append(f"- `field`: `{'.'.join(str(x) for x in spec.field)}` (relative to the {spec.field_base})")
    kinds = f" of kind {', '.join(spec.kinds)}" if spec.kinds else ""
    return f"""
## What it does
{spec.summary}. A custom rule defined in `{spec.defined_in}`, checked for each
{spec.for_each.replace("-", " ")}{kinds}.
{spec.description}

## Why is this bad?
Your organisation's policy; see the description in the config that defines it.

## Example
The CEL expressions of this rule:

{chr(10).join(exprs)}

## Use instead
An object for which `validate` is true.

## Options
None (`severity` in `rules.{spec.code}` overrides the configured one).

## Fix
None.

## References
- Defined in `{spec.defined_in}`.
- docs/custom-rules.md
"""


def registered(specs: list[Spec]) -> list[Any]:
    """RegisteredRule objects for the registry (checked against the built-in codes)."""
    from ailint.engine.registry import RegisteredRule, all_rules, check_extra_code, set_config_rules

    set_config_rules([])
    known = dict(all_rules())
    out = []
    for s in specs:
        check_extra_code(s.code, s.name, known, f"{s.defined_in}: custom rule {s.code}")
        rule = Rule(
            code=s.code,
            name=s.name,
            severity=Severity.parse(s.severity),
            summary=s.summary,
            kinds=s.kinds or ("*",),
            scope=Scope.OBJECT,
            tags=("custom",),
        )
        reg = RegisteredRule(rule, CustomCheck(s, rule), documentation(s).strip(), f"config:{s.defined_in}")
        known[s.code] = reg
        out.append(reg)
    return out
