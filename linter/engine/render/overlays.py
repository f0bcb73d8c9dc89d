"""Kustomize overlays: read the kustomization tree before building, then build it offline.

`scan` walks `resources`/`bases`/`components` and every file entry (patches, generators,
replacements, crds, configurations) from the overlay down, without running kustomize: it
collects the files the build reads (they are not linted raw), the patches (for the source
map), and the entries ailint refuses to build: remote bases and resources (URLs, git
references), `helmCharts` (never `--enable-helm`). A refused overlay is one finding on the
kustomization entry, and kustomize never runs for it.

`build` runs `kubectl kustomize` (or `kustomize build`) on a temporary wrapper
kustomization that names the overlay by relative path and adds
`buildMetadata: [originAnnotations]`: each object then says which file (or which
generator of which kustomization) it came from. The annotation is stripped from the text
that is linted. No `--enable-helm`, no `--enable-alpha-plugins`, and the default load
restrictor (files outside an overlay's root are refused by kustomize itself).
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field

from ailint.engine.render import tools
from ailint.engine.render.charts import Problem, Rendered
from ailint.engine.render.units import Unit, kustomization_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ORIGIN = "config.kubernetes.io/origin"
_REMOTE = re.compile(
    r"^(?:[a-z][a-z0-9+.-]*://|git@|github\.com/|gitlab\.com/|bitbucket\.org/)|//.*\?ref=|\?ref=", re.I
)
_FILE_LISTS = ("patchesStrategicMerge", "crds", "configurations", "transformers", "generators", "validators")


@dataclass
class Patch:
    """One patch a kustomization applies: where it is listed, its file or inline text, and its target."""

    kustomization: str  # absolute kustomization file that lists it
    line: int  # the entry's line there
    file: str | None  # absolute patch file, or None for an inline patch
    text: str | None  # inline patch text
    text_line: int  # 1-based line in `kustomization` where inline text starts (block scalar)
    target: dict[str, Any] | None
    json6902: bool | None = None  # None: decided from the content


@dataclass
class Scan:
    """What a kustomization build reads: its kustomizations, files, folders and patches."""

    kustomizations: list[str] = field(default_factory=list)  # absolute files, overlay first
    files: set[str] = field(default_factory=set)  # real paths the build reads
    dirs: set[str] = field(default_factory=set)  # kustomization folders reached (real paths)
    patches: list[Patch] = field(default_factory=list)
    refused: list[Problem] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)  # kustomization file -> parsed data
    nodes: dict[str, Any] = field(default_factory=dict)  # kustomization file -> composed node
    component: bool = False


def is_remote(entry: str) -> bool:
    return bool(_REMOTE.search(entry.strip()))


def _load(path: str) -> tuple[Any, Any]:
    from ailint.core.yamldata import load_data, pyyaml_compose

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(4 << 20)
        return load_data(text), pyyaml_compose(text)
    except Exception:
        return None, None


def node_at(node: Any, *keys: Any) -> Any:
    """The composed node at `keys` (mapping keys, list indexes), or None."""
    import yaml

    for key in keys:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
            node = node.value[key]
        else:
            return None
    return node


def line_of(node: Any, *keys: Any) -> int:
    n = node_at(node, *keys)
    return int(n.start_mark.line) + 1 if n is not None else 1


def scan(folder: str) -> Scan:
    out = Scan()
    _scan(os.path.abspath(folder), out, 0)
    return out


def _scan(folder: str, out: Scan, depth: int) -> None:
    real = os.path.realpath(folder)
    if real in out.dirs or depth > 30:
        return
    out.dirs.add(real)
    kfile = kustomization_of(folder)
    if kfile is None:
        return
    out.kustomizations.append(kfile)
    out.files.add(os.path.realpath(kfile))
    data, node = _load(kfile)
    if not isinstance(data, dict):
        return
    out.data[kfile] = data
    out.nodes[kfile] = node
    if depth == 0 and data.get("kind") == "Component":
        out.component = True
    for key in ("resources", "bases", "components"):
        for i, entry in enumerate(data.get(key) or [] if isinstance(data.get(key), list) else []):
            if not isinstance(entry, str):
                continue
            line = line_of(node, key, i)
            if is_remote(entry):
                out.refused.append(
                    Problem(
                        "YML023",
                        f"remote {key[:-1] if key != 'bases' else 'base'} `{entry}`: ailint builds only local "
                        "overlays and never downloads (vendor it, or lint the rendered output)",
                        kfile,
                        line,
                    )
                )
                continue
            where = os.path.normpath(os.path.join(folder, entry))
            if os.path.isdir(where):
                _scan(where, out, depth + 1)
            else:
                out.files.add(os.path.realpath(where))
    if data.get("helmCharts") or data.get("helmChartInflationGenerator"):
        key = "helmCharts" if data.get("helmCharts") else "helmChartInflationGenerator"
        out.refused.append(
            Problem(
                "YML023",
                f"`{key}` needs `kustomize --enable-helm`, which ailint never passes (it may download "
                "charts); lint the chart folder itself",
                kfile,
                line_of(node, key),
            )
        )
    for key in _FILE_LISTS:
        items = data.get(key)
        for i, entry in enumerate(items if isinstance(items, list) else []):
            if isinstance(entry, str) and "\n" not in entry and not is_remote(entry):
                p = os.path.normpath(os.path.join(folder, entry))
                if os.path.isfile(p):
                    out.files.add(os.path.realpath(p))
                    if key == "patchesStrategicMerge":
                        out.patches.append(Patch(kfile, line_of(node, key, i), p, None, 0, None))
            elif isinstance(entry, str) and key == "patchesStrategicMerge":
                n = node_at(node, key, i)
                out.patches.append(Patch(kfile, line_of(node, key, i), None, entry, _text_line(n), None))
    for key, j6902 in (("patches", None), ("patchesJson6902", True)):
        items = data.get(key)
        for i, entry in enumerate(items if isinstance(items, list) else []):
            if not isinstance(entry, dict):
                continue
            target = entry.get("target") if isinstance(entry.get("target"), dict) else None
            if isinstance(entry.get("path"), str):
                p = os.path.normpath(os.path.join(folder, entry["path"]))
                if os.path.isfile(p):
                    out.files.add(os.path.realpath(p))
                    out.patches.append(Patch(kfile, line_of(node, key, i), p, None, 0, target, j6902))
            elif isinstance(entry.get("patch"), str):
                n = node_at(node, key, i, "patch")
                out.patches.append(
                    Patch(kfile, line_of(node, key, i), None, entry["patch"], _text_line(n), target, j6902)
                )
    for key in ("configMapGenerator", "secretGenerator"):
        items = data.get(key)
        for gen in items if isinstance(items, list) else []:
            if not isinstance(gen, dict):
                continue
            for f in (
                list(gen.get("files") or []) + list(gen.get("envs") or []) + ([gen["env"]] if gen.get("env") else [])
            ):
                if isinstance(f, str):
                    p = os.path.normpath(os.path.join(folder, f.split("=", 1)[-1]))
                    if os.path.isfile(p):
                        out.files.add(os.path.realpath(p))
    reps = data.get("replacements")
    for r in reps if isinstance(reps, list) else []:
        if isinstance(r, dict) and isinstance(r.get("path"), str):
            p = os.path.normpath(os.path.join(folder, r["path"]))
            if os.path.isfile(p):
                out.files.add(os.path.realpath(p))
    api = data.get("openapi")
    if isinstance(api, dict) and isinstance(api.get("path"), str):
        out.files.add(os.path.realpath(os.path.normpath(os.path.join(folder, api["path"]))))


def _text_line(n: Any) -> int:
    """The first line of a block scalar's content (the line after `patch: |`)."""
    if n is None:
        return 1
    line = int(n.start_mark.line) + 1
    return line + 1 if getattr(n, "style", None) in ("|", ">") else line


def find_kustomize(kubectl: str | None, kustomize: str | None, prefer: str | None) -> list[str] | None:
    """The build command prefix: `kubectl kustomize` or `kustomize build`."""
    k1 = tools.find_tool("kubectl", kubectl)
    k2 = tools.find_tool("kustomize", kustomize)
    if prefer == "kustomize" or (kustomize and not kubectl):
        order = [(k2, "build"), (k1, "kustomize")]
    else:
        order = [(k1, "kustomize"), (k2, "build")]
    for binary, sub in order:
        if binary:
            return [binary, sub]
    return None


def build(unit: Unit, cmd: list[str] | None, sc: Scan, timeout: float, max_output: int) -> Rendered:
    out = Rendered(unit, scan=sc)
    if sc.refused:
        out.problem = sc.refused[0]
        return out
    if cmd is None:
        out.problem = Problem(
            "YML021",
            "neither kubectl nor kustomize found: install one on PATH, or give --kubectl / --kustomize "
            "(config `kustomize.binary`); the overlay was not built",
            unit.marker,
        )
        return out
    with tempfile.TemporaryDirectory(prefix="ailint-kz-") as wrap:
        rel = os.path.relpath(os.path.realpath(unit.root), os.path.realpath(wrap))
        with open(os.path.join(wrap, "kustomization.yaml"), "w", encoding="utf-8") as fh:
            fh.write(f"resources:\n- {_quote(rel)}\nbuildMetadata: [originAnnotations]\n")
        run = tools.run_tool([*cmd, wrap], cwd=wrap, timeout=timeout, max_output=max_output)
        out.seconds = run.seconds
        real_wrap = os.path.realpath(wrap)
        if run.timed_out:
            out.problem = Problem("YML022", f"kustomize did not finish within {timeout:g} s; not linted", unit.marker)
        elif run.too_big:
            out.problem = Problem("YML022", f"kustomize wrote more than {max_output} bytes; stopped", unit.marker)
        elif run.rc != 0:
            # the wrapper's own folder and its way to the overlay are ailint's, not the user's
            err = run.stderr.replace(f"'{rel}'", f"'{unit.root}'")
            msg = tools.tool_message(err.replace(real_wrap, "<overlay>").replace(wrap, "<overlay>"))
            out.problem = Problem("YML020", f"kustomize build failed: {msg or f'exit status {run.rc}'}", unit.marker)
        else:
            out.text, origins = strip_origins(run.stdout)
            for i, o in origins.items():
                o = dict(o)
                for k in ("path", "configuredIn"):
                    if isinstance(o.get(k), str):
                        o[k] = os.path.normpath(os.path.join(real_wrap, o[k]))
                out.origins[i] = o
    return out


def _quote(s: str) -> str:
    import json

    return json.dumps(s)


def strip_origins(text: str) -> tuple[str, dict[int, dict[str, Any]]]:
    """The build output without origin annotations, and each document's origin."""
    import yaml

    origins: dict[int, dict[str, Any]] = {}
    docs = re.split(r"(?m)^---[ \t]*\n", text)
    kept: list[str] = []
    index = 0
    for doc in docs:
        if not doc.strip():
            continue
        lines = doc.splitlines(keepends=True)
        res: list[str] = []
        i = 0
        while i < len(lines):
            line = lines[i]
            m = re.match(r"^(\s*)(['\"]?)config\.kubernetes\.io/origin\2:\s*(.*)$", line.rstrip("\n"))
            if m:
                ind = len(m.group(1))
                block = [m.group(3)] if m.group(3) and m.group(3) not in ("|", "|-", "|+", ">") else []
                j = i + 1
                while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip(" ")) > ind):
                    block.append(lines[j][ind + 2 :] if len(lines[j]) > ind + 2 else "")
                    j += 1
                try:
                    o = yaml.safe_load("".join(x if x.endswith("\n") else x + "\n" for x in block))
                except yaml.YAMLError:
                    o = None
                if isinstance(o, dict):
                    origins[index] = o
                # an `annotations:` left empty goes too
                if res and res[-1].strip() == "annotations:":
                    a_ind = len(res[-1]) - len(res[-1].lstrip(" "))
                    nxt = lines[j] if j < len(lines) else ""
                    if not nxt.strip() or len(nxt) - len(nxt.lstrip(" ")) <= a_ind:
                        res.pop()
                i = j
                continue
            res.append(line)
            i += 1
        kept.append("".join(res))
        index += 1
    return "".join(f"---\n{d}" for d in kept), origins
