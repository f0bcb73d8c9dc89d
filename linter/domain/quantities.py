"""Numbers as manifests write them: Kubernetes quantities (`500m`, `16Gi`), integers that
may be strings, byte counts for messages. One definition each; every module and rule reads
numbers through these."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from ailint.core.lazyre import lazy_re


def to_int(v: Any) -> int | None:
    """An integer field as manifests write it: an int, an integral float (`2.0`) or a string
    of digits with an optional sign (`"3"`, `" -1 "`); None for anything else (booleans
    included: YAML's `true` is not 1)."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v) if v.is_integer() else None
    if isinstance(v, str):
        s = v.strip()
        if s and _INT_RE.fullmatch(s):
            return int(s)
    return None


_INT_RE = lazy_re(r"[-+]?[0-9]+")


_SUFFIX: dict[str, int | Decimal] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}
_QTY_RE = lazy_re(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|K|M|G|T|P|E)?\s*$")


@lru_cache(maxsize=4096)
def _parse_quantity_str(s: str) -> float | None:
    m = _QTY_RE.match(s)
    if not m:
        return None
    try:
        num = Decimal(m.group(1))
    except InvalidOperation:
        return None
    value = float(num * Decimal(_SUFFIX[m.group(2) or ""]))
    if value != value or value in (float("inf"), float("-inf")):
        return None  # 1e309 and the like: not a quantity the API server accepts
    return value


def parse_quantity(v: Any) -> float | None:
    """A Kubernetes quantity (`500m`, `16Gi`, `1e3`, 2) as a float; None when not one."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        try:
            f = float(v)
        except OverflowError:
            return None
        return f if f == f and f not in (float("inf"), float("-inf")) else None
    if isinstance(v, str):
        return _parse_quantity_str(v)
    return None


def format_bytes(n: float) -> str:
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
        if n >= size:
            v = n / size
            return f"{v:.0f}{unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f}{unit}"
    return f"{n:.0f}"
