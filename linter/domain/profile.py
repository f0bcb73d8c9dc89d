"""The cluster profile (`profile:` in the config): facts the manifests cannot show.

Its own module so that the configuration (and a cached run) does not import the pod-template
extraction it sits beside in meaning (`ailint.domain.extract` re-exports it)."""

from __future__ import annotations

from dataclasses import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# Not annotated `ClassVar` in the class: `dataclasses` recognises one only when `typing` is
# already imported, which a run of ailint does not do.
_DEFAULTS: dict[str, Any] = {
    "extendedResourceToleration": True,
    "deschedulerInstalled": False,
    "autoMode": False,
    "karpenterVersion": None,
    "vllmVersion": None,
    "esoVersion": None,
    "db.maxConnections": None,
    "gpuNodeTaints": [],
    "podSparseNodes": False,
    "largeScaleNodes": False,
    "gpuOperatorInstalled": False,
    "productionNamespaces": [],
}


@dataclass(slots=True)
class Profile:
    """Cluster facts the manifests cannot show (spec section 0 and decision 31)."""

    values: dict[str, Any] = field(default_factory=dict)

    DEFAULTS = _DEFAULTS  # every key and its default: a class attribute, not a field (no annotation)

    def get(self, key: str) -> Any:
        if key in self.values:
            return self.values[key]
        return self.DEFAULTS.get(key)

    def flag(self, key: str) -> bool:
        v = self.get(key)
        if isinstance(v, str):
            return v.strip().lower() in ("1", "true", "yes", "on")
        return bool(v)
