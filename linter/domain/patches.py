"""Objects that are fragments by design: kustomize patches and pod-template files.

A strategic-merge patch (`$patch: merge`, or a file a Kustomization names under `patches`)
holds only the fields it changes; the API server never receives it as it is written. The
schema pass lets such an object miss required fields, and the admission-policy pass does
not judge it at all: a policy that asks every container for resources would otherwise fire
on a patch that only adds an argument.
"""

from __future__ import annotations

import marshal
import os

from ailint.core.lazyre import lazy_re
from ailint.core.model import K8sObject, as_list, iter_dicts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

PATCH_DIRECTIVES = ("$patch", "$setElementOrder", "$retainKeys", "$deleteFromPrimitiveList")
_DIRECTIVE_BYTES = tuple(d.encode() for d in PATCH_DIRECTIVES)  # (as marshal writes a key)
_PATCH_NAME_RE = lazy_re(r"(?<![a-z])patch(es)?(?![a-z])")  # `x_patch.yaml`, `patches/`, not `dispatcher`
_TEMPLATE_WORDS = ("pod-template", "pod_template", "podtemplate")


def kustomize_patches(objects: Iterable[K8sObject]) -> set[str]:
    """Base names of the files that Kustomizations in the run apply as patches."""
    names: set[str] = set()
    for o in objects:
        if o.kind not in ("Kustomization", "Component") or not o.group.startswith("kustomize.config.k8s.io"):
            continue
        for p in as_list(o.data.get("patchesStrategicMerge")):
            if isinstance(p, str) and "\n" not in p:
                names.add(os.path.basename(p.strip()))
        for key in ("patches", "patchesJson6902"):
            for _, p in iter_dicts(o.data.get(key)):
                if isinstance(p.get("path"), str):
                    names.add(os.path.basename(p["path"].strip()))
    names.discard("")
    return names


def is_partial(obj: K8sObject, patch_names: set[str]) -> bool:
    """A kustomize patch or a pod template file (by its name, a Kustomization of the run
    naming it, or a patch directive inside): missing fields are expected."""
    display = obj.file.replace("\\", "/")
    base = display.rsplit("/", 1)[-1]
    low = display.lower()
    if _PATCH_NAME_RE.search(low) or any(t in base.lower() for t in _TEMPLATE_WORDS):
        return True
    if patch_names and named_in(base, patch_names):
        return True
    return has_directive(obj.data, 0)


def named_in(base: str, patch_names: set[str]) -> bool:
    """Whether the file `base` is one of `patch_names`, or one flattened with a folder prefix
    (`<folder>__<name>`, `<folder>_<name>`): the suffixes after each `_` looked up in the set,
    not each name tried against the file (a repository's Kustomizations name hundreds)."""
    if base in patch_names:
        return True
    i = base.find("_")
    while i >= 0:
        if base[i + 1 :] in patch_names:
            return True
        i = base.find("_", i + 1)
    return False


def has_directive(node: Any, depth: int) -> bool:
    """A strategic-merge directive (`$patch`, `$retainKeys`, ...) anywhere in `node` (at most
    12 levels down). The walk is taken only where the data's marshalled bytes hold a
    directive's name at all: a key is marshalled as its UTF-8 bytes, so data without them
    holds no such key (most objects; a walk of a large one cost 90 µs)."""
    if depth == 0 and (node.__class__ is dict or node.__class__ is list):
        try:
            raw = marshal.dumps(node)
        except ValueError:  # (not plain data: walked)
            pass
        else:
            if not any(d in raw for d in _DIRECTIVE_BYTES):
                return False
    return _has_directive(node, depth)


def _has_directive(node: Any, depth: int) -> bool:
    if depth > 12:
        return False
    if isinstance(node, dict):
        return any(isinstance(k, str) and k.startswith(PATCH_DIRECTIVES) for k in node) or any(
            _has_directive(v, depth + 1) for v in node.values()
        )
    if isinstance(node, list):
        return any(_has_directive(v, depth + 1) for v in node)
    return False
