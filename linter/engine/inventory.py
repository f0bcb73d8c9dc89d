"""`ailint inventory`: what ailint understood in the files, one entry per workload object.

The workload adapters (ailint.domain.workloads) say which kinds are workloads, which are
catalogue entries that feed their facts (runtimes, base models, resource claims), and what
each workload runs; every object of another custom resource is listed as `unrecognized`.
The JSON shape is `schemas/inventory.schema.json` (docs/output.md).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ailint.core.model import K8sObject
from ailint.engine.config import Settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1


def _pointer(path: Sequence[Any]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _builtin(group: str) -> bool:
    """An API group of Kubernetes itself (core, apps, batch, *.k8s.io)."""
    return "." not in group or group.endswith(".k8s.io") or group == "k8s.io"


def _known_kinds() -> set[tuple[str, str]]:
    """(group or "", kind) that some rule names in its `kinds`."""
    from ailint.engine.registry import all_rules

    out: set[tuple[str, str]] = set()
    for reg in all_rules().values():
        for target in reg.rule.kinds:
            if target == "*":
                continue
            group, _, kind = target.rpartition("/")
            out.add((group, kind))
    return out


def entry(obj: K8sObject, catalog: Any) -> dict[str, Any]:
    from ailint.core.model import real_path
    from ailint.domain import workloads

    facts, pods = workloads.workload_facts(obj, catalog)
    templates = []
    for pod in pods:
        templates.append(
            {
                "pointer": _pointer(real_path(pod.spec_path)),
                "synthesized": pod.synthetic is not None,
                "role": pod.role or None,
                "replicas": pod.replicas,
                "containers": [{"name": c.name, "image": c.image or None, "init": c.init} for c in pod.containers()],
            }
        )
    acc = {k: (int(v) if float(v).is_integer() else v) for k, v in (facts.accelerators or {}).items()} or None
    return {
        "file": obj.file,
        "line": obj.key_span(()).line,
        "apiVersion": obj.api_version,
        "kind": obj.kind,
        "name": obj.name,
        "namespace": obj.namespace,
        "roles": facts.roles,
        "engine": facts.engine,
        "model": facts.model,
        "accelerators": acc,
        "replicas": facts.replicas,
        "parallelism": facts.parallelism or None,
        "pod_templates": templates,
    }


def build(paths: Sequence[str], settings: Settings, problems: list[str] | None = None) -> dict[str, Any]:
    """The inventory of `paths` (files and folders, as `ailint check` finds them). Files that
    cannot be read or parsed are left out; `problems` collects `file:line: message` for them."""
    from ailint.domain import workloads
    from ailint.engine.run import read_candidate
    from ailint.engine.sources import discover

    root = settings.root if settings.config_path else os.getcwd()
    objects: list[K8sObject] = []
    for cand in discover(list(paths) or ["."], root, settings.exclude, settings.respect_gitignore):
        fr = read_candidate(cand, settings)
        objects.extend(fr.objects)
        if problems is not None:
            problems.extend(f"{f.file}:{f.span.line}: {f.code} {f.message}" for f in fr.findings)
    catalog = workloads.Catalog(o for o in objects if workloads.is_catalogue(o))
    known = _known_kinds()
    found: list[dict[str, Any]] = []
    unrecognized: list[dict[str, Any]] = []
    for obj in objects:
        if not obj.kind:
            continue
        if workloads.is_inventory_workload(obj):
            found.append(entry(obj, catalog))
        elif (
            workloads.is_catalogue(obj)
            or _builtin(obj.group)
            or (obj.group, obj.kind) in known
            or ("", obj.kind) in known
        ):
            continue
        else:
            unrecognized.append(
                {
                    "file": obj.file,
                    "line": obj.key_span(()).line,
                    "apiVersion": obj.api_version,
                    "kind": obj.kind,
                    "name": obj.name,
                    "namespace": obj.namespace,
                }
            )
    return {"version": SCHEMA_VERSION, "workloads": found, "unrecognized": unrecognized}


def _fmt_acc(acc: dict[str, Any] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in acc.items()) if acc else "-"


def render_text(inv: dict[str, Any]) -> str:
    lines: list[str] = []
    for w in inv["workloads"]:
        ns = f"{w['namespace']}/" if w["namespace"] else ""
        lines.append(f"{w['file']}:{w['line']}: {w['kind']} {ns}{w['name'] or '<unnamed>'}")
        lines.append(
            f"  roles={','.join(w['roles']) or '-'} engine={w['engine'] or '-'} model={w['model'] or '-'} "
            f"accelerators={_fmt_acc(w['accelerators'])} replicas={'-' if w['replicas'] is None else w['replicas']}"
        )
        for t in w["pod_templates"]:
            ctrs = ", ".join(f"{c['name']}={c['image'] or '-'}" for c in t["containers"])
            mark = " (synthesized)" if t["synthesized"] else ""
            lines.append(f"  {t['pointer'] or '/'}{mark}: {ctrs or 'no containers'}")
    if inv["unrecognized"]:
        lines.append("")
        lines.append("unrecognized (ailint reads no pods or facts from these kinds):")
        for u in inv["unrecognized"]:
            lines.append(f"  {u['file']}:{u['line']}: {u['apiVersion']} {u['kind']} {u['name'] or '<unnamed>'}")
    lines.append("")
    lines.append(f"{len(inv['workloads'])} workloads, {len(inv['unrecognized'])} unrecognized objects")
    return "\n".join(lines) + "\n"
