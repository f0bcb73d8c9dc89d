"""JobSet (jobset.x-k8s.io): one pod template per replicated job."""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import K8sObject
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import Family, jobset_templates


def templates(obj: K8sObject) -> Iterator[PodTemplate]:
    yield from jobset_templates(obj, ("spec",))


FAMILY = Family("jobset", ((None, "JobSet"),), templates)
