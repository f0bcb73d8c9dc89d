"""Agent sandboxes (agents.x-k8s.io, extensions.agents.x-k8s.io): Sandbox and SandboxTemplate
`spec.podTemplate`."""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import K8sObject
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import Family, template


def templates(obj: K8sObject) -> Iterator[PodTemplate]:
    if "agents.x-k8s.io" not in obj.group:
        return
    t = template(obj, ("spec", "podTemplate"), "", 1 if obj.kind == "Sandbox" else None)
    if t:
        yield t


FAMILY = Family("sandbox", ((None, "Sandbox"), (None, "SandboxTemplate")), templates)
