"""Go durations (`90s`, `1h30m`, `720h`, `Never`), as Karpenter's NodePool fields and its
pod annotations take them (`time.ParseDuration`).

A module of its own so that reading a duration does not import the Karpenter domain: the
disruption rules read a pod's `karpenter.sh/do-not-disrupt` duration whether or not any
NodePool is in the run.
"""

from __future__ import annotations

import math

from ailint.core.lazyre import lazy_re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Go's time.ParseDuration units (no `d`: `3d` is rejected by Karpenter and the API server)
_DUR_PART = lazy_re(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
NEVER = math.inf


def parse_duration(value: Any) -> float | None:
    """Seconds in a Go duration (`90s`, `1h30m`, `720h`); `Never` is infinity; None when not
    a finite duration. A number counts as seconds; a string needs its units (`"0"` aside),
    as in `time.ParseDuration`."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    s = str(value).strip()
    if s == "Never":
        return NEVER
    if s == "0":
        return 0.0
    if not s:
        return None
    pos, total = 0, 0.0
    for m in _DUR_PART.finditer(s):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    return total if pos == len(s) and math.isfinite(total) else None


def format_duration(seconds: float) -> str:
    if seconds == NEVER:
        return "Never"
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    return f"{seconds:g}s"
