"""Volcano Job (batch.volcano.sh): one pod template per task."""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import K8sObject, iter_dicts
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import Family, as_int, template


def templates(obj: K8sObject) -> Iterator[PodTemplate]:
    for i, task in iter_dicts(obj.get("spec", "tasks")):
        t = template(
            obj,
            ("spec", "tasks", i, "template"),
            str(task.get("name") or f"task{i}"),
            as_int(task.get("replicas")),
            ("spec", "tasks", i),
        )
        if t:
            yield t


FAMILY = Family("volcano", (("batch.volcano.sh", "Job"),), templates)
