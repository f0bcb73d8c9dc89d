"""Fixes of rendered output, re-expressed as edits of the files a person keeps."""

from __future__ import annotations

from typing import Any

from ailint.core.model import Fix, K8sObject


def remap_fix(fix: Fix, obj: K8sObject, loc: Any, mapper: Any, rd: Any) -> Fix | None:
    return None
