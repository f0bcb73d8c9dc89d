"""The rendering stage of a run: plan, render, then point findings back at the sources.

`plan` (before files are read) finds the charts and overlays among the paths and takes
the files they own out of the raw file list. `render` turns each into a `FileResult`
whose source is the rendered text (never written: its path is `-`) with the object rules
already run, or into one finding on `Chart.yaml` / `kustomization.yaml`. After the run's
bundle rules and suppressions (comments in templates survive rendering, so
`# ailint: ignore[...]` in a template covers the rendered node), `remap` rewrites every
finding on rendered text to the template, values, patch or base file and line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ailint.core.model import FileResult, Finding, K8sObject, RelatedLocation, SourceFile, Span
from ailint.engine.render import units
from ailint.engine.render.probe import OVERLAY_LEVELS
from ailint.engine.render.units import Unit

TYPE_CHECKING = False
if TYPE_CHECKING:  # the rest is imported only when a run has a chart or an overlay
    from typing import Any

    from ailint.engine.render import sourcemap
    from ailint.engine.render.charts import Problem, Rendered

RENDER_SUFFIX = " (rendered)"


@dataclass
class RenderOptions:
    """How charts and overlays are rendered: the tools, values, release, namespace and limits."""

    helm: str | None = None
    kubectl: str | None = None
    kustomize: str | None = None
    kustomize_tool: str | None = None  # "kubectl" | "kustomize"
    values: list[str] = field(default_factory=list)
    sets: list[str] = field(default_factory=list)
    release: str | None = None
    namespace: str | None = None
    timeout: float = 60.0
    max_output: int = 64 * 1024 * 1024
    charts: list[dict[str, Any]] = field(default_factory=list)  # config `charts:` entries, paths absolute


def options(settings: Any) -> RenderOptions:
    """The render options of a run: config keys `helm`, `kustomize`, `charts`, `render`
    (in `settings.render`), then the command line's (`settings.render_cli`)."""
    raw = getattr(settings, "render", None) or {}
    root = getattr(settings, "root", ".")
    o = RenderOptions()
    helm = raw.get("helm") or {}
    kz = raw.get("kustomize") or {}
    r = raw.get("render") or {}
    o.helm = helm.get("binary")
    o.kustomize = kz.get("binary")
    o.kubectl = kz.get("kubectl")
    o.kustomize_tool = kz.get("tool")
    o.timeout = float(r.get("timeout", o.timeout))
    o.max_output = int(r.get("max-output-size", o.max_output))
    for e in raw.get("charts") or []:
        e = dict(e)
        e["path"] = os.path.normpath(os.path.join(root, e["path"]))
        e["values"] = [os.path.normpath(os.path.join(root, v)) for v in e.get("values") or []]
        o.charts.append(e)
    cli = getattr(settings, "render_cli", None) or {}
    for k in ("helm", "kubectl", "kustomize"):
        if cli.get(k):
            setattr(o, k, cli[k])
    if cli.get("kustomize") and not cli.get("kubectl"):
        o.kustomize_tool = "kustomize"
    o.values = [os.path.abspath(v) for v in cli.get("values") or []]
    o.sets = list(cli.get("sets") or [])
    o.release = cli.get("release")
    o.namespace = cli.get("namespace")
    return o


@dataclass
class Plan:
    """The charts and overlays of a run, and what rendering each gave."""

    units: list[Unit] = field(default_factory=list)
    rendered: dict[str, Rendered] = field(default_factory=dict)  # virtual display -> rendering
    objects: dict[str, list[K8sObject]] = field(default_factory=dict)
    opts: RenderOptions = field(default_factory=RenderOptions)
    shown_root: str = "."
    timings: dict[str, tuple[float, float]] = field(default_factory=dict)  # title -> (render s, lint s)


def plan(paths: Sequence[str], candidates: list[Any], settings: Any, shown_root: str) -> tuple[Plan, list[Any]]:
    """The charts and overlays of `paths`, and the candidates left to lint raw."""
    from ailint.engine.sources import display_path

    p = Plan(opts=options(settings), shown_root=shown_root)

    def shown(x: str) -> str:
        return display_path(x, shown_root)

    chart_dirs: dict[str, None] = {}
    overlay_dirs: dict[str, None] = {}
    for given in paths:
        if given == "-":
            continue
        if os.path.isdir(given):
            top = os.path.abspath(given)
            owner = units.chart_of(top)
            if owner and owner != top and os.path.basename(os.path.dirname(top)) in ("charts", "templates"):
                chart_dirs[owner] = None
                continue
            c, o = units.walk_markers(top, list(settings.exclude), shown)
            chart_dirs.update(dict.fromkeys(c))
            overlay_dirs.update(dict.fromkeys(o))
        elif os.path.isfile(given):
            owner = units.chart_of(given)
            if owner:
                chart_dirs[owner] = None
                continue
            k = _overlay_of(given)
            if k:
                overlay_dirs[k] = None
    if not chart_dirs and not overlay_dirs:
        return p, candidates
    from ailint.engine.render import overlays  # here: most runs have no chart and no overlay

    scans = {d: overlays.scan(d) for d in overlay_dirs}
    used: set[str] = set()
    for d, sc in scans.items():
        used.update(x for x in sc.dirs if x != os.path.realpath(d))
    cli = {"values": p.opts.values, "set": p.opts.sets, "release": p.opts.release, "namespace": p.opts.namespace}
    for d in chart_dirs:
        p.units.extend(units.chart_units(d, shown(d), p.opts.charts, cli))
    owned: set[str] = set()
    for d, sc in scans.items():
        if sc.component or os.path.realpath(d) in used:
            owned.update(sc.files)
            continue
        marker = units.kustomization_of(d) or os.path.join(d, "kustomization.yaml")
        p.units.append(Unit("overlay", d, shown(d), marker, shown(marker), owned=frozenset(sc.files)))
        owned.update(sc.files)
    roots = [os.path.realpath(d) + os.sep for d in chart_dirs]
    kept = []
    for c in candidates:
        if c.path == "-":
            kept.append(c)
            continue
        real = os.path.realpath(c.path)
        if real in owned or any(real.startswith(r) for r in roots):
            continue
        kept.append(c)
    return p, kept


def _overlay_of(path: str) -> str | None:
    """The nearest folder above `path` whose kustomization reads it (or is it)."""
    from ailint.engine.render import overlays

    real = os.path.realpath(path)
    if os.path.basename(path) in units.KUSTOMIZATION_FILES:
        return os.path.dirname(os.path.abspath(path))
    cur = os.path.dirname(os.path.abspath(path))
    for _ in range(OVERLAY_LEVELS):
        if units.kustomization_of(cur):
            sc = overlays.scan(cur)
            if real in sc.files and not sc.component:
                return cur
        if os.path.isdir(os.path.join(cur, ".git")):
            return None
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent
    return None


def render(p: Plan, settings: Any, engine: Any) -> list[FileResult]:
    """Render every unit; object rules run on the rendered objects."""
    from ailint.domain.context import Context
    from ailint.engine.load import load_text
    from ailint.engine.render import charts, overlays, tools

    out: list[FileResult] = []
    helm = tools.find_tool("helm", p.opts.helm) if any(u.kind == "chart" for u in p.units) else None
    kz = (
        overlays.find_kustomize(p.opts.kubectl, p.opts.kustomize, p.opts.kustomize_tool)
        if any(u.kind == "overlay" for u in p.units)
        else None
    )
    for u in p.units:
        outside = _outside_the_project(u, settings)
        if outside is not None:  # helm and kustomize would follow the link: not rendered
            out.append(_problem_result(u, outside, p.shown_root))
            continue
        if u.kind == "chart":
            rd = charts.render_chart(u, helm, p.opts.timeout, p.opts.max_output)
        else:
            rd = overlays.build(u, kz, overlays.scan(u.root), p.opts.timeout, p.opts.max_output)
        t0 = time.monotonic()
        if rd.problem is not None:
            out.append(_problem_result(u, rd.problem, p.shown_root))
            p.timings[u.title] = (rd.seconds, time.monotonic() - t0)
            continue
        display = u.title + RENDER_SUFFIX
        p.rendered[display] = rd
        fr = load_text(SourceFile("-", display, rd.text), settings.limits)
        ctx = Context(profile=settings.profile, bundle=False)
        kept = []
        for obj in fr.objects:
            if obj.kind == "" and not obj.data:
                continue
            kept.append(obj)
            for reg in engine.rules_for(obj):
                fr.findings.extend(engine.check(reg, obj, ctx))
        fr.objects = kept
        p.objects[display] = kept
        out.append(fr)
        p.timings[u.title] = (rd.seconds, time.monotonic() - t0)
    return out


def _outside_the_project(u: Unit, settings: Any) -> Problem | None:
    """A link in the chart or overlay folder, or a values file the config names, that leads
    out of the project (issue 19): helm's `.Files.Get` and kustomize read through links, so a
    pull request could render `~/.git-credentials` into a ConfigMap. `--follow-external-symlinks`
    allows links; values files given with `--values` are the user's choice."""
    from ailint.engine.boundary import Boundary
    from ailint.engine.render.charts import Problem

    config_root = settings.root if getattr(settings, "config_path", None) else None
    b = Boundary.for_paths([u.root], config_root)
    if not getattr(settings, "follow_external_symlinks", False):
        for dirpath, dirnames, filenames in os.walk(u.root):  # linked folders are not entered
            dirnames[:] = [d for d in dirnames if d not in (".git",)]
            for name in sorted(dirnames + filenames):
                full = os.path.join(dirpath, name)
                refused = b.refuse_read(full) if os.path.islink(full) else None
                if refused is not None:
                    return Problem("YML013", f"{refused[1]}; the {u.kind} is not rendered", full)
    given = {os.path.abspath(v) for v in (getattr(settings, "render_cli", None) or {}).get("values") or ()}
    for v in u.values:
        if os.path.abspath(v) not in given and not b.inside(os.path.realpath(v)):
            return Problem("YML013", f"values file {v} lies outside the project; the chart is not rendered", u.marker)
    return None


def _problem_result(u: Unit, pr: Problem, shown_root: str) -> FileResult:
    from ailint.engine.load import yml_finding
    from ailint.engine.sources import display_path

    file = display_path(pr.file, shown_root)
    f = yml_finding(pr.code, file, Span(pr.line, 1, pr.line, 2), pr.message)
    if pr.related:
        f = replace(
            f,
            related=tuple(
                RelatedLocation(display_path(a, shown_root), Span(ln, 1, ln, 2), msg) for a, ln, msg in pr.related
            ),
        )
    src = _source(pr.file, file)
    return FileResult(path=file, findings=[f], source=src)


def _source(path: str, display: str) -> SourceFile | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return SourceFile(path, display, fh.read(8 << 20))
    except (OSError, UnicodeDecodeError):
        return None


# -- back to the source ----------------------------------------------------------------------
@dataclass
class Stats:
    """How many findings of a rendered run went back to each kind of source."""

    template: int = 0
    values: int = 0
    file_only: int = 0
    patch_or_base: int = 0


def remap(result: Any, p: Plan, settings: Any) -> dict[str, Stats]:
    """Rewrite the findings on rendered text to source locations (in place)."""
    stats: dict[str, Stats] = {}
    if not p.rendered:
        return stats
    mapper = _Mapper(p, result)
    result.findings = sorted((mapper.map(f, stats) for f in result.findings), key=Finding.sort_key)
    result.suppressed = [mapper.map(f, stats, count=False) for f in result.suppressed]
    # config per-file-ignores against the source paths now
    if settings.per_file_ignores:
        from ailint.engine.registry import selector_matches
        from ailint.engine.sources import matches_any

        kept: list[Finding] = []
        for f in result.findings:
            drop = f.file != mapper.shown_of.get(f.file, f.file) or any(
                matches_any(f.file, [pat]) and any(selector_matches(c, f) for c in codes)
                for pat, codes in settings.per_file_ignores.items()
            )
            (result.suppressed if drop else kept).append(f)
        result.findings = kept
    # the file list names the charts and overlays, not their rendered text
    for fs in result.files:
        if fs.path in p.rendered:
            fs.path = fs.path[: -len(RENDER_SUFFIX)]
    for display in p.rendered:
        result.sources.pop(display, None)
    result.sources.update(mapper.sources)
    return stats


class _Mapper:
    def __init__(self, p: Plan, result: Any) -> None:
        from ailint.engine.render import sourcemap as sm

        self.sm = sm
        self.p = p
        self.result = result
        self.sources: dict[str, SourceFile] = {}
        self.shown_of: dict[str, str] = {}
        self.by_doc: dict[str, dict[int, list[K8sObject]]] = {}
        for display, objs in p.objects.items():
            d: dict[int, list[K8sObject]] = {}
            for o in objs:
                d.setdefault(o.doc_index, []).append(o)
            self.by_doc[display] = d
        self.charts: dict[str, sourcemap.ChartMap] = {}

    def shown(self, path: str) -> str:
        from ailint.engine.sources import display_path

        s = display_path(path, self.p.shown_root)
        if s not in self.sources:
            src = _source(path, s)
            if src is not None:
                self.sources[s] = src
        return s

    def chart_map(self, rd: Rendered) -> sourcemap.ChartMap:
        u = rd.unit
        cm = self.charts.get(u.title)
        if cm is None:
            data = self.sm.file_docs(u.marker)
            name = data[0].data.get("name") if data and isinstance(data[0].data, dict) else None
            cm = self.charts[u.title] = self.sm.ChartMap(u.root, str(name or ""), list(u.values))
        return cm

    def map(self, f: Finding, stats: dict[str, Stats], count: bool = True) -> Finding:
        rd = self.p.rendered.get(f.file)
        if rd is None:
            return f
        st = stats.setdefault(rd.unit.title, Stats())
        obj = None if f.code.startswith("AIL") else self._object(f)  # suppressions: by their text
        src_text = self.result.sources.get(f.file)
        if obj is None:
            loc = self._comment_or_doc(rd, f, src_text)
        else:
            path = _rendered_path(obj, f)
            found: sourcemap.Located | None = None
            if rd.unit.kind == "chart":
                if obj.template:
                    cm = self.chart_map(rd)
                    try:
                        found = self.sm.locate_chart(cm, obj.template, obj.kind, obj.data, obj.positions, path)
                    except (RecursionError, ValueError, IndexError, KeyError):
                        found = None
                    if found is None:
                        tfile = cm.template_file(obj.template)
                        note = (
                            f"`{_dotted(path)}` was not found in this template"
                            if tfile
                            else f"rendered from {obj.template}, which is inside a packaged subchart"
                        )
                        found = self.sm.Located(tfile or rd.unit.marker, 1, 1, 2, note=note)
                else:
                    found = self.sm.Located(rd.unit.marker, 1, 1, 2, note="helm named no template for this object")
            else:
                origin = rd.origins.get(obj.doc_index)
                found = self.sm.locate_overlay(rd.scan, origin, obj.kind, obj.data, path)
                if found is None:
                    found = self.sm.Located(rd.unit.marker, 1, 1, 2, note=f"`{_dotted(path)}`: source not found")
            loc = found
        if count:
            if loc.line == 1 and loc.note:
                st.file_only += 1
            elif rd.unit.kind == "overlay":
                st.patch_or_base += 1
            else:
                st.template += 1
                if loc.related:
                    st.values += 1
        file = self.shown(loc.file)
        related = tuple(
            RelatedLocation(self.shown(r.file), Span(r.line, r.col, r.line, r.end_col), r.message) for r in loc.related
        )
        message = f.message + (f" [{loc.note}]" if loc.note else "")
        ref = f.object_ref
        if ref is not None and obj is not None and rd.unit.kind == "overlay":
            origin = rd.origins.get(obj.doc_index) or {}
            where = origin.get("path") or origin.get("configuredIn")
            if isinstance(where, str):
                ref = replace(ref, template=self.shown(where))
        fix = None
        if f.fix is not None and obj is not None:
            from ailint.engine.render import fixes

            fix = fixes.remap_fix(f.fix, obj, loc, self, rd)
            keys = [r.message.removeprefix("values key ") for r in loc.related if r.message.startswith("values key")]
            if fix is None and keys:
                # the rendered fix cannot be carried to a source line: say which values key to set
                message += f" [to fix ({f.fix.title}): set {' or '.join(keys)} in the values]"
        out = replace(
            f,
            file=file,
            span=Span(loc.line, loc.col, loc.line, max(loc.end_col, loc.col + 1)),
            message=message,
            related=related,
            object_ref=ref,
            fix=fix,
        )
        self.shown_of[file] = file
        return out

    def _object(self, f: Finding) -> K8sObject | None:
        docs = self.by_doc.get(f.file) or {}
        if f.object_ref is not None:
            objs = docs.get(f.object_ref.document) or []
            if len(objs) == 1:
                return objs[0]
            for o in objs:
                if o.kind == f.object_ref.kind and o.name == f.object_ref.name:
                    return o
        best = None
        for objs in docs.values():
            for o in objs:
                root = o.positions.get(o.base)
                if root and root[4] <= f.span.line <= root[6]:
                    best = o
        return best

    def _comment_or_doc(self, rd: Rendered, f: Finding, src: SourceFile | None) -> sourcemap.Located:
        """A finding with no object (a suppression comment, a YML finding): by its text."""
        line_text = src.line_text(f.span.line).strip() if src is not None else ""
        template = None
        if src is not None and rd.unit.kind == "chart":
            import re

            for m in re.finditer(r"(?m)^# Source: (\S+)", src.text[: src.offset(f.span.line, 1)]):
                template = m.group(1)
        files = []
        if template:
            t = self.chart_map(rd).template_file(template)
            if t:
                files.append(t)
        elif rd.unit.kind == "overlay" and rd.scan is not None:
            files = sorted(rd.scan.files)
        if line_text:
            hits = []
            for path in files:
                s = _source(path, path)
                if s is None:
                    continue
                for i, ln in enumerate(s.text.split("\n"), 1):
                    if ln.strip() == line_text:
                        same = src is not None and ln == src.line_text(f.span.line)
                        col = f.span.col if same else ln.find(line_text) + 1
                        end = f.span.end_col if same else col + len(line_text)
                        hits.append((path, i, col, end))
            if len(hits) == 1:
                path, i, col, end = hits[0]
                return self.sm.Located(path, i, col, end)
        return self.sm.Located(
            files[0] if len(files) == 1 else rd.unit.marker,
            1,
            1,
            2,
            note=f"rendered line {f.span.line} of {rd.unit.title}",
        )


def _dotted(path: tuple[Any, ...]) -> str:
    return ".".join(str(x) for x in path) or "the object"


def _rendered_path(obj: K8sObject, f: Finding) -> tuple[Any, ...]:
    """The key path of the object that the finding's line holds."""
    line = f.span.line
    pos = obj.positions
    base = obj.base
    if f.path:
        q = tuple(f.path)
        while q:
            p = pos.get(base + q)
            if p is not None and (p[0] == line or p[4] == line):
                return q
            q = q[:-1]
    on_line = [k for k, p in pos.items() if k[: len(base)] == base and p[0] == line and len(k) > len(base)]
    if on_line:
        return min(on_line, key=len)[len(base) :]
    inside = [k for k, p in pos.items() if k[: len(base)] == base and p[4] <= line <= p[6]]
    if inside:
        return max(inside, key=len)[len(base) :]
    return ()
