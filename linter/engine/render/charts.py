"""`helm template` for one chart value set, or the finding that says why it cannot render.

The chart is checked before helm runs: every dependency `Chart.yaml` declares must be
vendored under `charts/` (a folder or a `.tgz`; nothing is ever downloaded, so
`--dependency-update` is never passed), and each vendored archive must stay under a size
bound, compressed and uncompressed. helm then runs offline (see `tools`) with the
release name, namespace, values files and sets of the value set, `--skip-tests`, and
never a remote chart reference.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ailint.engine.render import tools
from ailint.engine.render.units import Unit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_ARCHIVE_BYTES = 20 * 1024 * 1024  # a vendored subchart .tgz, compressed
MAX_ARCHIVE_UNPACKED = 200 * 1024 * 1024
_HELM_VERSION: dict[str, tuple[int, str] | None] = {}
_LOCATION = re.compile(r"\(?([\w./-]+\.(?:yaml|yml|tpl|txt)):(\d+)(?::(\d+))?")


@dataclass
class Problem:
    """Why a unit did not render: becomes one finding on the unit's file."""

    code: str
    message: str
    file: str  # absolute path the finding names
    line: int = 1
    related: list[tuple[str, int, str]] = field(default_factory=list)  # (abs path, line, message)


@dataclass
class Rendered:
    """The output of rendering one chart or overlay, or why it could not be rendered."""

    unit: Unit
    text: str = ""
    problem: Problem | None = None
    seconds: float = 0.0
    origins: dict[int, dict[str, Any]] = field(default_factory=dict)  # overlays: doc index -> origin
    scan: Any = None  # overlays: the kustomization scan


def helm_version(binary: str) -> tuple[int, str] | None:
    """(major, text) of `helm version --short`, cached per binary; None when it does not run."""
    if binary not in _HELM_VERSION:
        out = tools.run_tool([binary, "version", "--short"], cwd=os.path.dirname(binary) or ".", timeout=15)
        m = re.search(r"v(\d+)\.(\d+)\S*", out.stdout + out.stderr)
        _HELM_VERSION[binary] = (int(m.group(1)), m.group(0)) if (out.rc == 0 and m) else None
    return _HELM_VERSION[binary]


def _yaml_at(path: str) -> tuple[Any, Any]:
    """(data, node) of a small YAML file; (None, None) when it does not parse."""
    from ailint.core.yamldata import load_data, pyyaml_compose

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(1 << 20)
        node = pyyaml_compose(text)
        return load_data(text), node
    except Exception:
        return None, None


def _dep_lines(node: Any) -> list[int]:
    """1-based line of each `dependencies:` item of a composed Chart.yaml."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return []
    for k, v in node.value:
        if getattr(k, "value", None) == "dependencies" and isinstance(v, yaml.SequenceNode):
            return [int(item.start_mark.line) + 1 for item in v.value]
    return []


def vendored(chart_dir: str) -> dict[str, str]:
    """Chart name -> folder or archive under `charts/`."""
    out: dict[str, str] = {}
    sub = os.path.join(chart_dir, "charts")
    try:
        entries = sorted(os.scandir(sub), key=lambda e: e.name)
    except OSError:
        return out
    for e in entries:
        if e.is_dir():
            data, _ = _yaml_at(os.path.join(e.path, "Chart.yaml"))
            name = data.get("name") if isinstance(data, dict) else None
            out[str(name or e.name)] = e.path
        elif e.name.endswith(".tgz"):
            m = re.match(r"(.+?)-v?\d+\.\d+.*\.tgz$", e.name)
            out[m.group(1) if m else e.name[:-4]] = e.path
    return out


def check_chart(unit: Unit) -> Problem | None:
    """A problem found without running helm: undeclared or oversized dependencies, values files."""
    data, node = _yaml_at(unit.marker)
    if not isinstance(data, dict):
        return Problem("YML020", "Chart.yaml does not parse as a mapping; the chart cannot render", unit.marker)
    deps = data.get("dependencies")
    lines = _dep_lines(node)
    req = os.path.join(unit.root, "requirements.yaml")
    if not deps and os.path.isfile(req):  # Helm 2 style
        rdata, rnode = _yaml_at(req)
        deps = rdata.get("dependencies") if isinstance(rdata, dict) else None
        lines = _dep_lines(rnode)
    have = vendored(unit.root)
    missing: list[tuple[str, int]] = []
    for i, d in enumerate(deps if isinstance(deps, list) else []):
        if not isinstance(d, dict) or not d.get("name"):
            continue
        name = str(d["name"])
        if name not in have:
            missing.append((f"{name} ({d.get('repository') or 'no repository'})", lines[i] if i < len(lines) else 1))
    if missing:
        names = ", ".join(m[0] for m in missing)
        return Problem(
            "YML024",
            f"chart dependencies not vendored under charts/: {names}; ailint never downloads them "
            "(run `helm dependency build` and commit charts/, or lint a chart without them)",
            unit.marker,
            missing[0][1],
        )
    for path in have.values():
        if path.endswith(".tgz"):
            why = _archive_too_big(path)
            if why:
                return Problem("YML022", f"vendored subchart {os.path.basename(path)} {why}; not rendered", unit.marker)
    for v in unit.values:
        if not os.path.isfile(v):
            return Problem("YML020", f"values file {v} not found", unit.marker)
    return None


def _archive_too_big(path: str) -> str | None:
    import gzip
    import tarfile
    import zlib

    try:
        size = os.path.getsize(path)
        if size > MAX_ARCHIVE_BYTES:
            return f"is {size} bytes, over the limit of {MAX_ARCHIVE_BYTES}"
        total = 0
        # gzip.open reads the FEXTRA header helm writes (tarfile's own "r|gz" does not)
        with gzip.open(path, "rb") as gz, tarfile.open(fileobj=gz, mode="r|") as tf:
            for member in tf:
                total += max(member.size, 0)
                if total > MAX_ARCHIVE_UNPACKED:
                    return f"unpacks to over {MAX_ARCHIVE_UNPACKED} bytes"
    except (OSError, tarfile.TarError, EOFError, zlib.error) as exc:
        return f"is not a readable .tgz ({exc})"
    return None


def render_chart(unit: Unit, binary: str | None, timeout: float, max_output: int) -> Rendered:
    out = Rendered(unit)
    if binary is None:
        out.problem = Problem(
            "YML021",
            "helm not found: install Helm 3 or 4 on PATH, or give --helm PATH (config `helm.binary`); "
            "the chart was not rendered",
            unit.marker,
        )
        return out
    version = helm_version(binary)
    if version is None or version[0] < 3:
        shown = version[1] if version else "no version"
        out.problem = Problem(
            "YML021", f"{binary} is not a usable Helm 3 or 4 ({shown}); the chart was not rendered", unit.marker
        )
        return out
    problem = check_chart(unit)
    if problem is not None:
        out.problem = problem
        return out
    cmd = [binary, "template", unit.release, os.path.abspath(unit.root), "--namespace", unit.namespace, "--skip-tests"]
    for v in unit.values:
        cmd += ["--values", os.path.abspath(v)]
    for s in unit.sets:
        cmd += ["--set", s]
    for a in unit.api_versions:
        cmd += ["--api-versions", a]
    if unit.kube_version:
        cmd += ["--kube-version", unit.kube_version]
    run = tools.run_tool(cmd, cwd=unit.root, timeout=timeout, max_output=max_output)
    out.seconds = run.seconds
    if run.timed_out:
        out.problem = Problem("YML022", f"helm template did not finish within {timeout:g} s; not linted", unit.marker)
    elif run.too_big:
        out.problem = Problem(
            "YML022", f"helm template wrote more than {max_output} bytes; stopped, not linted", unit.marker
        )
    elif run.rc != 0:
        msg = tools.tool_message(run.stderr) or f"helm exited with status {run.rc}"
        out.problem = Problem("YML020", f"helm template failed: {msg}", unit.marker)
        m = _LOCATION.search(msg)
        if m:
            rel = m.group(1).split("/", 1)[1] if "/" in m.group(1) else m.group(1)
            path = os.path.join(unit.root, rel)
            if os.path.isfile(path) and "YAML parse error" not in msg:  # those lines count rendered output
                out.problem.related.append((path, int(m.group(2)), "helm stopped here"))
    else:
        out.text = run.stdout
    return out
