"""Numbers as manifests write them: Kubernetes quantities (`500m`, `16Gi`), integers that
may be strings, byte counts for messages. One definition each; every module and rule reads
numbers through these."""

from __future__ import annotations

from functools import lru_cache

from ailint.core.lazyre import lazy_re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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


# A suffix as (power of 2, power of 10): `Ki` is 2**10, `m` 10**-3 (Kubernetes' suffixes).
_SCALE: dict[str, tuple[int, int]] = {
    "Ki": (10, 0),
    "Mi": (20, 0),
    "Gi": (30, 0),
    "Ti": (40, 0),
    "Pi": (50, 0),
    "Ei": (60, 0),
    "n": (0, -9),
    "u": (0, -6),
    "m": (0, -3),
    "": (0, 0),
    "k": (0, 3),
    "K": (0, 3),
    "M": (0, 6),
    "G": (0, 9),
    "T": (0, 12),
    "P": (0, 15),
    "E": (0, 18),
}
_QTY_RE = lazy_re(
    r"^\s*([+-]?)(?:(\d+)\.?(\d*)|\.(\d+))(?:[eE]([+-]?\d+))?\s*(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|K|M|G|T|P|E)?\s*$"
)
_MAX_DIGITS = 330  # past 10**330 a quantity is no float (the API server rejects it too)


@lru_cache(maxsize=4096)
def _parse_quantity_str(s: str) -> float | None:
    """The quantity's value, rounded once from the exact number (integers, no `decimal`):
    digits times a power of 10 (its exponent, its fraction, a decimal suffix) and of 2."""
    m = _QTY_RE.match(s)
    if not m:
        return None
    sign, whole, fraction, bare_fraction, exponent, suffix = m.groups()
    fraction = fraction or bare_fraction or ""
    digits = (whole or "").lstrip("0") + fraction
    twos, tens = _SCALE[suffix or ""]
    tens += (int(exponent) if exponent else 0) - len(fraction)
    n = int(digits) if digits.strip("0") else 0
    if n == 0:
        return -0.0 if sign == "-" else 0.0
    size = len(str(n)) + tens  # the number is below 10**size (before the power of 2)
    if size > _MAX_DIGITS:
        return None
    if size < -_MAX_DIGITS:
        value = 0.0  # below the smallest float
    else:
        try:
            value = float(n * 10**tens << twos) if tens >= 0 else (n << twos) / 10**-tens
        except OverflowError:
            return None
    return -value if sign == "-" else value


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
