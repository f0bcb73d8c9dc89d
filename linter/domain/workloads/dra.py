"""Dynamic Resource Allocation (resource.k8s.io v1, v1beta2, v1beta1, v1alpha3): a pod's
`resourceClaims` name a ResourceClaim or ResourceClaimTemplate whose device requests name a
DeviceClass; a GPU class (`gpu.nvidia.com`, `mig.nvidia.com`, `neuron.aws.com`, ...) makes
the pod an accelerator pod with the requested device count (`exactly.count` in v1beta2/v1,
`count` on the request in v1beta1; ExactCount 1 by default; allocationMode All counts as 1
here). A request with `adminAccess: true` holds no device (a monitoring agent's claim: the
API says it ignores the device's allocations). These objects run no pods: they are
catalogue entries.
"""

from __future__ import annotations

from ailint.core.model import K8sObject, as_dict, iter_dicts
from ailint.domain.extract import PodTemplate
from ailint.domain.workloads.base import Catalog, Family, as_int

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GROUP = "resource.k8s.io"
# DeviceClass name (or prefix) -> the extended resource it stands for
GPU_CLASSES = {
    "gpu.nvidia.com": "nvidia.com/gpu",
    "mig.nvidia.com": "nvidia.com/gpu",
    "vfio.gpu.nvidia.com": "nvidia.com/gpu",
    "gpu.amd.com": "amd.com/gpu",
    "neuron.aws.com": "aws.amazon.com/neuron",
    "gpu.example.com": "nvidia.com/gpu",
}


def _requests(claim_spec: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for _, req in iter_dicts(as_dict(claim_spec.get("devices")).get("requests")):
        exact = as_dict(req.get("exactly")) or req  # v1beta1 has the fields on the request
        cls = exact.get("deviceClassName")
        if not isinstance(cls, str):
            first: dict[str, Any] = next((r for _, r in iter_dicts(req.get("firstAvailable"))), {})
            cls = first.get("deviceClassName")
            exact = first
        res = GPU_CLASSES.get(cls) if isinstance(cls, str) else None
        if res is None or exact.get("adminAccess") is True:
            continue  # an admin-access claim (a monitoring agent's) holds no device: it "ignores
            # all ordinary claims to the device with respect to ... any resource allocations"
        count = as_int(exact.get("count")) if exact.get("allocationMode", "ExactCount") == "ExactCount" else 1
        out[res] = out.get(res, 0) + float(count or 1)
    return out


def claim_devices(pod: PodTemplate, catalog: Catalog) -> dict[str, dict[str, float]]:
    """The accelerators of each of the pod's claims found in the run, by the pod's claim
    name (containers name it in `resources.claims`)."""
    out: dict[str, dict[str, float]] = {}
    ns = pod.obj.namespace
    for _, ref in iter_dicts(pod.spec.get("resourceClaims")):
        spec: dict[str, Any] = {}
        if isinstance(ref.get("resourceClaimTemplateName"), str):
            rct = catalog.get(GROUP, "ResourceClaimTemplate", ref["resourceClaimTemplateName"], ns)
            spec = as_dict(rct.get("spec", "spec")) if rct is not None else {}
        elif isinstance(ref.get("resourceClaimName"), str):
            rc = catalog.get(GROUP, "ResourceClaim", ref["resourceClaimName"], ns)
            spec = as_dict(rc.get("spec")) if rc is not None else {}
        got = _requests(spec)
        if got:
            out[str(ref.get("name"))] = got
    return out


_READS = ((GROUP, "ResourceClaimTemplate"), (GROUP, "ResourceClaim"))


def reads(obj: K8sObject, pods: list[PodTemplate]) -> tuple[tuple[str | None, str], ...]:
    """Any pod with resourceClaims depends on the claims (and templates) of the run."""
    return _READS if any(p.spec.get("resourceClaims") for p in pods) else ()


def bind_pod(pod: PodTemplate, catalog: Catalog) -> None:
    pod.claimed = claim_devices(pod, catalog) or None


def _no_templates(obj: K8sObject) -> list[PodTemplate]:
    return []


FAMILY = Family(
    "dra",
    (),
    _no_templates,
    catalogue=((GROUP, "ResourceClaimTemplate"), (GROUP, "ResourceClaim"), (GROUP, "DeviceClass")),
    reads=reads,
    bind_pod=bind_pod,
)
