"""Baselines: fingerprints of accepted findings, so a team can adopt ailint gradually.

A fingerprint ignores line numbers (edits above a finding must not resurrect it): it hashes
the code, the file, the object's identity and the JSON path. SARIF carries it under
`partialFingerprints["ailint/v1"]`.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable

from ailint.core.model import Finding
from ailint.report.common import json_pointer


def fingerprint(f: Finding) -> str:
    ref = f.object_ref
    ident = f"{ref.api_version}|{ref.kind}|{ref.namespace}|{ref.name}|{ref.document}" if ref else f"line:{f.span.line}"
    raw = f"{f.code}|{f.file}|{ident}|{json_pointer(f.path)}"
    if not f.path:
        raw += f"|{f.message}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def read(path: str) -> set[str]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict) or not isinstance(data.get("fingerprints"), list):
        raise ValueError('not an ailint baseline (expected {"fingerprints": [...]})')
    return {str(x) for x in data["fingerprints"]}


def write(path: str, findings: Iterable[Finding]) -> int:
    fps = sorted({fingerprint(f) for f in findings})
    doc = json.dumps({"version": 1, "tool": "ailint", "fingerprints": fps}, indent=1) + "\n"
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ailint-baseline-", dir=d)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(doc)
    os.replace(tmp, path)
    return len(fps)
