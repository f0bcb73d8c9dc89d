"""Which paths of a run are charts and overlays, and which files they own.

A folder with `Chart.yaml` is a chart; its templates, values files and vendored `charts/`
are rendered, never linted raw. A folder with `kustomization.yaml` (`.yml`,
`Kustomization`) is an overlay; the files its build reads (bases, resources, patches,
generator inputs, found by `overlays.scan`) are not linted raw either, and an overlay that
another overlay of the run uses as a base is built only through that one.

A file named on the command line (pre-commit passes staged files) that belongs to a chart
(a template, a values file, `Chart.yaml`) stands for its chart; one that an overlay reads
(a patch, a base resource, the kustomization itself) stands for that overlay.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from ailint.engine.render.probe import CHART_FILE as CHART_FILE  # moved to probe (no dataclasses to import)
from ailint.engine.render.probe import KUSTOMIZATION_FILES as KUSTOMIZATION_FILES
from ailint.engine.render.probe import chart_of as chart_of
from ailint.engine.render.probe import kustomization_of as kustomization_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SKIP = {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache"}


@dataclass(frozen=True)
class Unit:
    """One rendering: a chart with one value set, or an overlay."""

    kind: str  # "chart" | "overlay"
    root: str  # absolute folder
    display: str  # the folder as reports show it
    marker: str  # absolute Chart.yaml / kustomization.yaml
    marker_display: str
    release: str = "release"
    namespace: str = "default"
    values: tuple[str, ...] = ()  # absolute values files, in order (after the chart's values.yaml)
    sets: tuple[str, ...] = ()
    api_versions: tuple[str, ...] = ()
    kube_version: str | None = None
    label: str = ""  # the value set's name, when a chart has several
    owned: frozenset[str] = field(default_factory=frozenset)  # real paths the build reads (overlays)

    @property
    def title(self) -> str:
        return f"{self.display} [{self.label}]" if self.label else self.display


def marker_of(folder: str) -> str | None:
    """The chart or kustomization file of `folder`, or None."""
    if os.path.isfile(os.path.join(folder, CHART_FILE)):
        return os.path.join(folder, CHART_FILE)
    return kustomization_of(folder)


def walk_markers(top: str, exclude: Sequence[str], shown: Any) -> tuple[list[str], list[str]]:
    """Chart folders and kustomization folders under `top` (charts are not entered)."""
    from ailint.engine.sources import matches_any

    charts: list[str] = []
    overlays: list[str] = []
    for d, dirs, files in os.walk(top):
        rel = shown(d)
        if exclude and d != top and (matches_any(rel + "/", exclude) or matches_any(rel, exclude)):
            dirs[:] = []
            continue
        if CHART_FILE in files:
            charts.append(d)
            dirs[:] = []
            continue
        if any(n in files for n in KUSTOMIZATION_FILES):
            overlays.append(d)
        dirs[:] = sorted(x for x in dirs if x not in _SKIP)
    return charts, overlays


def chart_units(folder: str, display: str, entries: Iterable[dict[str, Any]], cli: dict[str, Any]) -> list[Unit]:
    """The renderings of one chart: one per config `charts:` entry naming it, else one."""
    marker = os.path.join(folder, CHART_FILE)
    base = Unit("chart", folder, display, marker, _join(display, CHART_FILE))
    mine = [e for e in entries if os.path.realpath(e["path"]) == os.path.realpath(folder)]
    out: list[Unit] = []
    for e in mine or [{}]:
        u = replace(
            base,
            release=str(e.get("release") or cli.get("release") or "release"),
            namespace=str(e.get("namespace") or cli.get("namespace") or "default"),
            values=tuple(e.get("values") or ()) + tuple(cli.get("values") or ()),
            sets=tuple(e.get("set") or ()) + tuple(cli.get("set") or ()),
            api_versions=tuple(e.get("api-versions") or ()),
            kube_version=e.get("kube-version"),
            label=str(e.get("name") or ("" if len(mine) <= 1 else f"#{len(out) + 1}")),
        )
        out.append(u)
    return out


def _join(display: str, name: str) -> str:
    return name if display in ("", ".") else f"{display.rstrip('/')}/{name}"
