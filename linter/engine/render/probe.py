"""Whether the paths of a run may hold a chart or an overlay, found without importing the
rendering stage (a one-file run that is not in a chart or an overlay never imports it).

`may_render` answers yes for every folder (the stage walks it for `Chart.yaml` and
kustomizations) and for a file inside a chart or below a folder with a kustomization (the
stage then decides whether the kustomization reads it); only `stage.plan` decides what is
rendered.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

CHART_FILE = "Chart.yaml"
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
OVERLAY_LEVELS = 8  # how far above a file `stage.plan` looks for the kustomization that reads it


def kustomization_of(folder: str) -> str | None:
    for name in KUSTOMIZATION_FILES:
        p = os.path.join(folder, name)
        if os.path.isfile(p):
            return p
    return None


def chart_of(path: str) -> str | None:
    """The chart folder a file or folder belongs to: the nearest chart, or for a vendored
    subchart (`<chart>/charts/<sub>/`) its parent (a subchart renders only through it)."""
    cur = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path))
    while True:
        if os.path.isfile(os.path.join(cur, CHART_FILE)):
            parent = os.path.dirname(cur)
            if os.path.basename(parent) == "charts" and os.path.isfile(
                os.path.join(os.path.dirname(parent), CHART_FILE)
            ):
                cur = os.path.dirname(parent)
                continue
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def _under_kustomization(path: str) -> bool:
    if os.path.basename(path) in KUSTOMIZATION_FILES:
        return True
    cur = os.path.dirname(os.path.abspath(path))
    for _ in range(OVERLAY_LEVELS):
        if kustomization_of(cur):
            return True
        if os.path.isdir(os.path.join(cur, ".git")):
            return False
        parent = os.path.dirname(cur)
        if parent == cur:
            return False
        cur = parent
    return False


def may_render(paths: Sequence[str]) -> bool:
    """False only when no path can be or belong to a chart or an overlay."""
    for given in paths:
        if given == "-":
            continue
        if os.path.isdir(given):
            return True
        if os.path.isfile(given) and (chart_of(given) or _under_kustomization(given)):
            return True
    return False
