"""Baselines: fingerprints of accepted findings, so a team can adopt ailint gradually.

A fingerprint ignores line numbers (edits above a finding must not resurrect it): it hashes
the code, the file, the object's identity, the JSON path and the message with its numbers
blanked out (two findings of one rule on one field differ by what they say; a count that
changes does not make a finding new). Findings that still share a fingerprint in one run
(the same words on the same field) get an occurrence suffix, in report order, from
`fingerprints()`: every finding of a run has its own. SARIF carries it under
`partialFingerprints["ailint/v1"]`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Sequence

from ailint.core.model import Finding
from ailint.report.common import json_pointer, umask_mode

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def fingerprint(f: Finding) -> str:
    """The finding's identity, without its line (see `fingerprints` for one run's unique set)."""
    ref = f.object_ref
    ident = f"{ref.api_version}|{ref.kind}|{ref.namespace}|{ref.name}|{ref.document}" if ref else f"line:{f.span.line}"
    raw = f"{f.code}|{f.file}|{ident}|{json_pointer(f.path)}|{_NUMBER.sub('#', f.message)}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def fingerprints(findings: Sequence[Finding]) -> list[str]:
    """One fingerprint per finding, unique within the run: a repeat gets `-2`, `-3`...
    in the findings' report order (file, line, column, code, message)."""
    order = sorted(range(len(findings)), key=lambda i: findings[i].sort_key())
    seen: dict[str, int] = {}
    out = [""] * len(findings)
    for i in order:
        base = fingerprint(findings[i])
        n = seen[base] = seen.get(base, 0) + 1
        out[i] = base if n == 1 else f"{base}-{n}"
    return out


def read(path: str) -> set[str]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict) or not isinstance(data.get("fingerprints"), list):
        raise ValueError('not an ailint baseline (expected {"fingerprints": [...]})')
    return {str(x) for x in data["fingerprints"]}


def write(path: str, findings: Iterable[Finding]) -> int:
    fps = sorted(set(fingerprints(list(findings))))
    doc = json.dumps({"version": 1, "tool": "ailint", "fingerprints": fps}, indent=1) + "\n"
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ailint-baseline-", dir=d)
    os.fchmod(fd, umask_mode())  # as any new file here (mkstemp makes it 0600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(doc)
    os.replace(tmp, path)
    return len(fps)
