"""`ailint init [PATH ...]`: a starter `.ailint.yaml`, filled from what the manifests show.

Every profile key (`ailint.domain.extract.Profile`) is written, commented, with what it
means. Where the given paths show the answer it is filled in and the comment says where it
came from: the GPU taints of accelerator NodePools, Auto Mode NodeClasses, a descheduler
policy, the NVIDIA GPU Operator, and the Karpenter, vLLM and External Secrets versions in
container images. What the files cannot show (admission plugins, database limits, fleet
size) stays commented, and the command says so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ailint.core.model import K8sObject

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# what each profile key means, for the comment above it (the keys are Profile.DEFAULTS)
MEANING = {
    "extendedResourceToleration": "the ExtendedResourceToleration admission plugin adds GPU tolerations (EKS: on)",
    "deschedulerInstalled": "a descheduler runs in the cluster",
    "autoMode": "the cluster is EKS Auto Mode (its NodePools and NodeClasses are eks.amazonaws.com)",
    "karpenterVersion": "the Karpenter controller version",
    "vllmVersion": "the vLLM version the serving images run",
    "esoVersion": "the External Secrets Operator version",
    "db.maxConnections": "max_connections of the database LiteLLM and friends share",
    "gpuNodeTaints": "taints on GPU nodes (key[=value]:effect), also those not set by NodePools in these files",
    "podSparseNodes": "nodes run few pods each (large GPU instances), so spare IP prefixes are wasted",
    "largeScaleNodes": "the fleet is large enough that subnet addresses run out",
    "gpuOperatorInstalled": "the NVIDIA GPU Operator manages drivers and the device plugin",
    "productionNamespaces": "namespaces that serve production traffic",
}

_VERSION = re.compile(r":v?(\d+\.\d+(?:\.\d+)?)(?:[-@].*)?$")


@dataclass
class Seen:
    """What the manifests told: profile values with where each came from, and what they could not."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)
    files: int = 0
    objects: int = 0

    def set(self, key: str, value: Any, source: str) -> None:
        if key not in self.values:
            self.values[key] = value
            self.sources[key] = source


def _where(obj: K8sObject) -> str:
    return f"{obj.kind} {obj.name or '<unnamed>'} ({obj.file})"


def _images(obj: K8sObject) -> Iterable[tuple[str, str]]:
    """(container name, image) of every container of the object's pod templates."""
    from ailint.domain.extract import pod_templates

    try:
        for pod in pod_templates(obj):
            for c in pod.containers():
                if isinstance(c.image, str) and c.image:
                    yield c.name, c.image
    except Exception:  # a shape the extractors do not know: no images from it
        return


def _version(image: str) -> str | None:
    m = _VERSION.search(image.split("@", 1)[0] if "@" in image and ":" in image.split("@", 1)[0] else image)
    return m.group(1) if m else None


def survey(objects: list[K8sObject]) -> Seen:
    """Fill what the objects show; note what they cannot."""
    from ailint.domain import accelerators, karpenter
    from ailint.domain.context import Context
    from ailint.domain.extract import Profile

    seen = Seen(objects=len(objects), files=len({o.file for o in objects}))
    ctx = Context(objects=objects, profile=Profile(), bundle=True)
    taints: list[str] = []
    taint_from: list[str] = []
    for pool in ctx.nodepools:
        if accelerators.pool_capability(pool) != "yes":
            continue
        for _, t in karpenter.scheduling_taints(pool):
            key, value, effect = t.get("key"), t.get("value"), t.get("effect")
            if not key:
                continue
            s = f"{key}={value}:{effect}" if value not in (None, "") else f"{key}:{effect}"
            if s not in taints:
                taints.append(s)
                taint_from.append(f"NodePool {pool.name}")
    if taints:
        seen.set("gpuNodeTaints", taints, "taints of accelerator " + ", ".join(dict.fromkeys(taint_from)))
    for o in objects:
        if o.group == karpenter.AUTO_MODE_GROUP and o.kind in ("NodeClass", "NodePool"):
            seen.set("autoMode", True, f"{_where(o)} is an Auto Mode object")
        if o.kind == "DeschedulerPolicy" or (
            o.kind == "ConfigMap" and any("DeschedulerPolicy" in str(v) for v in (o.get("data") or {}).values())
        ):
            seen.set("deschedulerInstalled", True, f"descheduler policy in {_where(o)}")
        if o.kind == "ClusterPolicy" and o.group == "nvidia.com":
            seen.set("gpuOperatorInstalled", True, f"{_where(o)}")
        for name, image in _images(o):
            low = image.lower()
            ver = _version(low)
            if "karpenter" in low and "controller" in low and ver:
                seen.set("karpenterVersion", ver, f"image {image} of {_where(o)}")
            elif "vllm" in low and ("vllm-openai" in low or "/vllm:" in low or low.startswith("vllm:")) and ver:
                seen.set("vllmVersion", ver, f"image {image} of {_where(o)}")
            elif "external-secrets" in low and ver:
                seen.set("esoVersion", ver, f"image {image} of {_where(o)}")
            elif "gpu-operator" in low:
                seen.set("gpuOperatorInstalled", True, f"image {image} of {_where(o)}")
            elif "descheduler" in low:
                seen.set("deschedulerInstalled", True, f"image {image} of {_where(o)}")
            del name
    not_shown = {
        "extendedResourceToleration": "admission plugins are API-server flags, not manifests",
        "db.maxConnections": "the database's max_connections is not in Kubernetes objects",
        "podSparseNodes": "how many pods a node runs depends on the live cluster",
        "largeScaleNodes": "the fleet size and subnet sizes are not in the manifests",
        "productionNamespaces": "which namespaces serve production is your call",
    }
    for key in Profile.DEFAULTS:
        if key not in seen.values:
            seen.unknown[key] = not_shown.get(key, "nothing in these files shows it")
    return seen


def _yaml_value(value: Any) -> str:
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(value)


def render(seen: Seen, paths: list[str]) -> str:
    """The starter config: filled keys set, the others commented with their default."""
    from ailint.domain.extract import Profile

    shown = ", ".join(paths) or "."
    lines = [
        "# .ailint.yaml written by `ailint init` from " + shown,
        f"# ({seen.files} file{'s' if seen.files != 1 else ''}, {seen.objects} objects read).",
        "# Settings: https://github.com/ailint/ailint#configuration ; rules: `ailint rules`.",
        "",
        "# select: [ALL]              # codes, prefixes or names; unknown ones are an error",
        "# ignore: []",
        "# fail-on: warning            # error, warning, info or never",
        "# exclude: []                 # gitignore-style patterns",
        "",
        "profile:  # what the manifests cannot always show about the cluster",
    ]
    for key, default in Profile.DEFAULTS.items():
        lines.append(f"  # {key}: {MEANING.get(key, '')}".rstrip())
        if key in seen.values:
            lines.append(f"  #   from {seen.sources[key]}")
            lines.append(f"  {key}: {_yaml_value(seen.values[key])}")
        else:
            lines.append(f"  #   not known from these files: {seen.unknown.get(key, '')}; default shown")
            lines.append(f"  # {key}: {_yaml_value(default)}")
    return "\n".join(lines) + "\n"


def collect(paths: list[str], settings: Any) -> list[K8sObject]:
    """Parse the files under `paths` (no rule runs); unparseable files are skipped."""
    from ailint.engine.run import read_candidate
    from ailint.engine.sources import discover

    objects: list[K8sObject] = []
    for c in discover(paths or ["."], os.getcwd(), settings.exclude, settings.respect_gitignore):
        if c.path == "-":
            continue
        objects.extend(read_candidate(c, settings).objects)
    return objects
