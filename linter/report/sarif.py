"""`--format sarif`: SARIF 2.1.0 for GitHub code scanning, built with sarif-om.

sarif-om gives typed objects; the serializer below turns them into JSON by their schema
property names, dropping unset (None) values and values equal to a default, except the
ones GitHub reads and we set on purpose (`level`). Every rule of the registry is in
`tool.driver.rules[]`, generated from its docstring; each result has one physical
location, a logical location for the object, a fingerprint of our own, and fixes as
`artifactChanges[].replacements`.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
from urllib.parse import quote

import attr
from ailint import __version__
from ailint.core import codecache
from ailint.core.model import Finding
from ailint.core.paths import root_relative, run_root
from ailint.engine.baseline import fingerprint, fingerprints
from ailint.engine.registry import all_rules
from ailint.report.common import edit_region, redact_result
from ailint.report.explain import severity_reason

codecache.serve_attrs()  # before sarif-om defines its classes: their methods' code from the table
import sarif_om as om  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

INFORMATION_URI = "https://github.com/ailint/ailint"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_KEEP = {("Result", "level"), ("ReportingConfiguration", "level")}
_PRECISION = {"very-high", "high", "medium", "low"}


def to_json(value: Any) -> Any:
    """sarif-om objects -> plain JSON values (schema names; explicit `level` kept)."""
    plan = _PLANS.get(value.__class__)
    if plan is None and attr.has(value.__class__):
        plan = _plan(value.__class__)
    if plan is not None:
        out: dict[str, Any] = {}
        for name, schema_name, default in plan:
            v = getattr(value, name)
            if v is None or (default is not _ANY and v == default):
                continue
            out[schema_name] = to_json(v)
        return out
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value


_ANY = object()  # a field whose every value is written (no default, or one GitHub reads)
_PLANS: dict[type, tuple[tuple[str, str, Any], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, str, Any], ...]:
    """Per field of a sarif-om class: its name, its schema name, and the default a value
    equal to is left out (`_ANY`: none). Worked out once per class, not once per object: a
    report makes about ten objects a finding."""
    fields = []
    for a in attr.fields(cls):
        default = a.default
        if isinstance(default, attr.Factory):  # type: ignore[arg-type]
            default = default.factory()
        if (cls.__name__, a.name) in _KEEP or default is attr.NOTHING:
            default = _ANY
        fields.append((a.name, a.metadata.get("schema_property_name", a.name), default))
    plan = _PLANS[cls] = tuple(fields)
    return plan


def _uri(path: str) -> str:
    return quote(path.replace("\\", "/"), safe="/:@-._~")


class _Locator:
    """Artifact URIs relative to one base (`%SRCROOT%`): the repository root, else the config
    root, else the current folder; GitHub resolves them against the checkout. A file outside
    the base gets an absolute `file:` URI; standard input keeps its `--stdin-filename`."""

    def __init__(self, base: str, sources: dict[str, Any]) -> None:
        self.base = os.path.abspath(base)
        self.sources = sources
        self._memo: dict[str, om.ArtifactLocation] = {}

    def __call__(self, file: str) -> om.ArtifactLocation:
        got = self._memo.get(file)
        if got is None:
            got = self._memo[file] = self._locate(file)
        return got

    def _locate(self, file: str) -> om.ArtifactLocation:
        src = self.sources.get(file)
        if src is not None and src.is_stdin:
            return om.ArtifactLocation(uri=_uri(file), uri_base_id="%SRCROOT%")
        path = os.path.abspath(src.path if src is not None else file)
        rel = root_relative(path, self.base)
        if rel is None:
            return om.ArtifactLocation(uri=pathlib.Path(path).as_uri())
        return om.ArtifactLocation(uri=_uri(rel), uri_base_id="%SRCROOT%")

    def base_ids(self) -> dict[str, Any]:
        return {"%SRCROOT%": om.ArtifactLocation(uri=pathlib.Path(self.base).as_uri() + "/")}


def sarif_name(kebab: str) -> str:
    """`gpu-request-without-limit` -> `GpuRequestWithoutLimit`: the SARIF validator (SARIF2012)
    asks for a Pascal identifier, `^(\\p{Lu}[\\p{Ll}\\p{Nd}]+)*$`."""
    out: list[str] = []
    for part in re.split(r"[^A-Za-z0-9]+", kebab):
        if not part:
            continue
        word = part[0].upper() + part[1:].lower()
        if (len(word) == 1 or word[0].isdigit()) and out:  # cannot start a segment: join the last
            out[-1] += word.lower()
        else:
            out.append(word)
    return "".join(out)


def _region(line: int, col: int, end_line: int, end_col: int) -> om.Region:
    return om.Region(start_line=line, start_column=col, end_line=end_line, end_column=end_col)


def rule_descriptors() -> tuple[list[om.ReportingDescriptor], dict[str, int]]:
    rules, index = [], {}
    for i, reg in enumerate(all_rules().values()):
        r = reg.rule
        sections = reg.sections
        what = " ".join(sections.get("What it does", r.summary).split())
        props: dict[str, Any] = {
            "tags": sorted({r.family.lower(), *r.tags}),
            "precision": r.precision if r.precision in _PRECISION else "high",
        }
        if r.family == "SEC":
            sev = (
                r.security_severity
                if r.security_severity is not None
                else {"error": 8.0, "warning": 5.5, "info": 2.0}[r.severity.value]
            )
            props["security-severity"] = f"{sev:.1f}"
            props["tags"] = sorted({"security", *props["tags"]})
        rules.append(
            om.ReportingDescriptor(
                id=r.code,
                name=sarif_name(r.name),
                short_description=om.MultiformatMessageString(text=r.summary),
                full_description=om.MultiformatMessageString(text=what or r.summary),
                help=om.MultiformatMessageString(text=reg.doc or r.summary, markdown=reg.doc or r.summary),
                help_uri=f"{INFORMATION_URI}/blob/main/docs/rules/{r.code}.md",
                default_configuration=om.ReportingConfiguration(level=_LEVEL[r.severity.value]),
                properties=props,
            )
        )
        index[r.code] = i
    return rules, index


def _result(
    f: Finding, index: dict[str, int], sources: dict, fp: str = "", locate: _Locator | None = None
) -> om.Result:
    locate = locate or _Locator(os.getcwd(), sources)
    loc = om.Location(
        physical_location=om.PhysicalLocation(
            artifact_location=locate(f.file),
            region=_region(f.span.line, f.span.col, f.span.end_line, f.span.end_col),
        ),
    )
    if f.object_ref is not None:
        ref = f.object_ref
        fqn = "/".join(x for x in (ref.kind, ref.namespace or "", ref.name or "") if x)
        loc.logical_locations = [
            om.LogicalLocation(name=ref.name or ref.kind, fully_qualified_name=fqn, kind="resource")
        ]
    res = om.Result(
        message=om.Message(text=f.message),
        rule_id=f.code,
        level=_LEVEL[f.severity.value],
        locations=[loc],
        partial_fingerprints={"ailint/v1": fp or fingerprint(f)},
    )
    if f.code in index:
        res.rule_index = index[f.code]
    reason = severity_reason(f)
    if reason:  # the level differs from the rule's defaultConfiguration: say why
        res.properties = {"severityReason": reason}
    if f.related:  # e.g. the values-file key a chart template prints (ailint.engine.render)
        res.related_locations = [
            om.Location(
                id=i,
                physical_location=om.PhysicalLocation(
                    artifact_location=locate(r.file),
                    region=_region(r.span.line, r.span.col, r.span.end_line, r.span.end_col),
                ),
                message=om.Message(text=r.message) if r.message else None,
            )
            for i, r in enumerate(f.related)
        ]
    if f.fix is not None and f.fix.edits:
        fix_file = getattr(f.fix, "target_display", "") or f.file  # a chart fix may edit values.yaml
        src = sources.get(fix_file)
        replacements = []
        for e in f.fix.edits:
            r = edit_region(e, src)
            replacements.append(
                om.Replacement(
                    deleted_region=_region(r["line"], r["column"], r["end_line"], r["end_column"]),
                    inserted_content=om.ArtifactContent(text=e.content) if e.content else None,
                )
            )
        res.fixes = [
            om.Fix(
                description=om.Message(text=f"{f.fix.title} ({f.fix.applicability.value})"),
                artifact_changes=[
                    om.ArtifactChange(
                        artifact_location=locate(fix_file),
                        replacements=replacements,
                    )
                ],
            )
        ]
    return res


def build(result: Any, root: str | None = None) -> dict[str, Any]:
    """The SARIF log; URIs relative to the git work tree of the current folder, else `root`
    (the config file's folder), else the current folder."""
    result = redact_result(result)  # no secret value in any output
    rules, index = rule_descriptors()
    locate = _Locator(run_root(root), result.sources)
    driver = om.ToolComponent(
        name="ailint", version=__version__, semantic_version=__version__, information_uri=INFORMATION_URI, rules=rules
    )
    run = om.Run(
        tool=om.Tool(driver=driver),
        results=[
            _result(f, index, result.sources, fp, locate)
            for f, fp in zip(result.findings, fingerprints(result.findings))
        ],
        original_uri_base_ids=locate.base_ids(),
        column_kind="unicodeCodePoints",
        invocations=[om.Invocation(execution_successful=True)],
    )
    log = om.SarifLog(version="2.1.0", schema_uri="https://json.schemastore.org/sarif-2.1.0.json", runs=[run])
    return to_json(log)


def render(result: Any, root: str | None = None, **_: Any) -> str:
    return json.dumps(build(result, root), indent=2, ensure_ascii=False) + "\n"
