"""The bounds on the work any input can cause (`limits:` in the config). Apart from the
YAML reading (`ailint.core.yamldata`) so the config and a cached run need no YAML parser."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on the work any input can cause; each has a `YML` finding when exceeded."""

    max_file_bytes: int = 10 * 1024 * 1024
    max_documents: int = 5000
    max_depth: int = 200
    max_alias_expansion: int = 100_000
    max_scalar_chars: int = 1024 * 1024
