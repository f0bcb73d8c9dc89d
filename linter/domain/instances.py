"""The AWS accelerator instance table (spec section 11) and the node labels it implies.

Data lives in `data/instances.json`; this module answers "which known types satisfy
these node requirements" so that rules can compute a pod's target instance set.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from ailint.core import pkgdata
from ailint.core.lazyre import lazy_re
from ailint.domain.extract import Requirement

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# -- instance families ----------------------------------------------------------------------
# Karpenter's `instanceTypeScheme` (aws/karpenter-provider-aws, pkg/providers/instancetype/
# types.go: `(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.`) gives a type's `instance-category` (the
# leading letters: `gr` for gr6, `inf` for inf2) and `instance-generation` (the number after).
_TYPE_SCHEME = lazy_re(r"^([a-z]+)(-[0-9]+tb)?([0-9]+)")
# The categories whose every family carries GPUs, Neuron devices or Gaudi/Qualcomm
# accelerators: p2..p6e, g3..g7e, gr6, inf1/2, trn1/2, dl1/dl2q.
ACCELERATOR_CATEGORIES = frozenset({"p", "g", "gr", "inf", "trn", "dl"})


def family_of(instance_type: str) -> str:
    """The family of an instance type (`p4d` of `p4d.24xlarge`); a family is its own."""
    return str(instance_type).split(".", 1)[0]


def category_of(family: str) -> str | None:
    """Karpenter's `instance-category` of a family or type (`gr` of `gr6`), None when the
    name does not have the EC2 shape. Label values match exactly: `G5` is no family."""
    m = _TYPE_SCHEME.match(str(family))
    return m.group(1) if m else None


def generation_of(family: str) -> str | None:
    """Karpenter's `instance-generation` of a family or type (`6` of `p6-b200`)."""
    m = _TYPE_SCHEME.match(str(family))
    return m.group(3) if m else None


def is_accelerator_family(family: str) -> bool:
    return category_of(family) in ACCELERATOR_CATEGORIES


def is_accelerator_type(instance_type: str) -> bool:
    return is_accelerator_family(family_of(instance_type))


@dataclass(frozen=True, slots=True)
class InstanceType:
    """An EC2 instance type's shape: accelerators, memory, local NVMe, EFA and allocatable resources."""

    type: str
    family: str
    size: str
    accelerator: str
    manufacturer: str
    gpu_name: str | None
    accelerator_name: str | None
    count: int
    neuron_cores: int | None
    memory_mib_per_device: int
    local_nvme_gb: int
    efa_max: int
    vcpu: int
    memory_gib: int
    allocatable_cpu_m: int
    allocatable_memory_mib: int

    @property
    def is_gpu(self) -> bool:
        return self.gpu_name is not None

    @property
    def is_neuron(self) -> bool:
        return self.accelerator_name is not None

    def labels(self) -> dict[str, str]:
        """The well-known node labels Karpenter (and Auto Mode) set for this type."""
        got = _LABELS.get(self.type)
        if got is None:  # built once per type: pool matching asks often
            got = _LABELS[self.type] = self._labels()
        return dict(got)

    def _labels(self) -> dict[str, str]:
        out = {
            "node.kubernetes.io/instance-type": self.type,
            "karpenter.k8s.aws/instance-family": self.family,
            "karpenter.k8s.aws/instance-size": self.size,
            "karpenter.k8s.aws/instance-cpu": str(self.vcpu),
            "karpenter.k8s.aws/instance-memory": str(self.memory_gib * 1024),
            "karpenter.k8s.aws/instance-local-nvme": str(self.local_nvme_gb),
            "kubernetes.io/arch": "amd64",
            "karpenter.k8s.aws/instance-category": category_of(self.family) or self.family,
            "karpenter.k8s.aws/instance-generation": generation_of(self.family) or "0",
        }
        if self.is_gpu:
            out.update(
                {
                    "karpenter.k8s.aws/instance-gpu-name": self.gpu_name or "",
                    "karpenter.k8s.aws/instance-gpu-count": str(self.count),
                    "karpenter.k8s.aws/instance-gpu-memory": str(self.memory_mib_per_device),
                    "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
                }
            )
        if self.is_neuron:
            out.update(
                {
                    "karpenter.k8s.aws/instance-accelerator-name": self.accelerator_name or "",
                    "karpenter.k8s.aws/instance-accelerator-count": str(self.count),
                    "karpenter.k8s.aws/instance-accelerator-manufacturer": "aws",
                }
            )
        for k, v in list(out.items()):
            if k.startswith("karpenter.k8s.aws/"):
                out["eks.amazonaws.com/" + k.split("/", 1)[1]] = v
        return out


_LABELS: dict[str, dict[str, str]] = {}  # type name -> its labels (the table is fixed)


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return pkgdata.load_json("ailint.data", "instances.json")


@lru_cache(maxsize=1)
def table() -> dict[str, InstanceType]:
    return {row["type"]: InstanceType(**row) for row in _data()["instances"]}


def get(type_name: str) -> InstanceType | None:
    return table().get(type_name)


def blackwell_gpu_names() -> tuple[str, ...]:
    return tuple(_data()["blackwell_gpu_names"])


# Keys whose values the table can answer; requirements on other keys do not narrow types.
INSTANCE_KEYS = {
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    *(
        p + s
        for p in ("karpenter.k8s.aws/", "eks.amazonaws.com/")
        for s in (
            "instance-family",
            "instance-size",
            "instance-gpu-name",
            "instance-gpu-count",
            "instance-gpu-memory",
            "instance-gpu-manufacturer",
            "instance-accelerator-name",
            "instance-accelerator-count",
            "instance-accelerator-manufacturer",
            "instance-local-nvme",
            "instance-cpu",
            "instance-memory",
            "instance-category",
            "instance-generation",
        )
    ),
}
ACCELERATOR_LABEL_PREFIXES = tuple(
    p + s for p in ("karpenter.k8s.aws/", "eks.amazonaws.com/") for s in ("instance-gpu-", "instance-accelerator-")
)


def matching_types(reqs: Iterable[Requirement]) -> set[str] | None:
    """Known types satisfying every requirement on instance keys; None when none constrain.

    Types outside the table are unknown to ailint, so the result is "which of the known
    accelerator types fit"; callers treat an empty set with care (the pool may allow only
    unknown types).
    """
    reqs = [r for r in reqs if r.key in INSTANCE_KEYS]
    if not reqs:
        return None
    key = tuple((r.key, r.operator, r.values) for r in reqs)
    hit = _MATCHING.get(key)
    if hit is None:
        if len(_MATCHING) > 4096:
            _MATCHING.clear()
        hit = _MATCHING[key] = _matching_types(reqs)
    return set(hit)


_MATCHING: dict[tuple[Any, ...], frozenset[str]] = {}  # requirements -> types (pools repeat them)


def _matching_types(reqs: list[Requirement]) -> frozenset[str]:
    out = set()
    for it in table().values():
        labels = it.labels()
        if labels.get("node.kubernetes.io/instance-type"):
            labels["beta.kubernetes.io/instance-type"] = it.type
        if all(r.allows(labels.get(r.key)) for r in reqs):
            out.add(it.type)
    return frozenset(out)


def names_unknown_type(reqs: Iterable[Requirement]) -> bool:
    """True when an `instance-type In [...]` requirement lists a type not in the table."""
    for r in reqs:
        if (
            r.key in ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
            and r.operator == "In"
            and any(v not in table() for v in r.values)
        ):
            return True
    return False
