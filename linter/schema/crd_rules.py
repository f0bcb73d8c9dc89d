"""The CRD CEL rules (`x-kubernetes-validations`) that decide whether a Karpenter or Kueue
object is accepted, re-implemented in Python (SCH007).

Each function yields (path, message, where the finding points: "field" or "value") for one
kind; `ailint.schema.validate.CEL_RULES` says which, and imports this module only for an
object of those kinds.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import K8sObject, Path, as_dict, iter_dicts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


_KARPENTER_AWS_ALLOWED = frozenset(
    (
        "karpenter.k8s.aws/instance-tenancy",
        "karpenter.k8s.aws/capacity-reservation-type",
        "karpenter.k8s.aws/capacity-reservation-id",
        "karpenter.k8s.aws/capacity-reservation-interruptible",
        "karpenter.k8s.aws/ec2nodeclass",
        "karpenter.k8s.aws/instance-encryption-in-transit-supported",
        "karpenter.k8s.aws/nitro-sandbox",
        "karpenter.k8s.aws/instance-category",
        "karpenter.k8s.aws/instance-hypervisor",
        "karpenter.k8s.aws/instance-family",
        "karpenter.k8s.aws/instance-generation",
        "karpenter.k8s.aws/instance-local-nvme",
        "karpenter.k8s.aws/instance-size",
        "karpenter.k8s.aws/instance-cpu",
        "karpenter.k8s.aws/instance-cpu-manufacturer",
        "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
        "karpenter.k8s.aws/instance-memory",
        "karpenter.k8s.aws/instance-ebs-bandwidth",
        "karpenter.k8s.aws/instance-network-bandwidth",
        "karpenter.k8s.aws/instance-gpu-name",
        "karpenter.k8s.aws/instance-gpu-manufacturer",
        "karpenter.k8s.aws/instance-gpu-count",
        "karpenter.k8s.aws/instance-gpu-memory",
        "karpenter.k8s.aws/instance-accelerator-name",
        "karpenter.k8s.aws/instance-accelerator-manufacturer",
        "karpenter.k8s.aws/instance-accelerator-count",
        "karpenter.k8s.aws/instance-capability-flex",
        "karpenter.k8s.aws/placement-group-id",
        "karpenter.k8s.aws/placement-group-partition",
    )
)
_INT_RE = lazy_re(r"^[+-]?[0-9]+$")


def _label_key_problem(key: str, nodepool: bool) -> str | None:
    """The CEL message a NodePool/NodeClaim rejects a requirement or label key with."""
    m = re.match(r"^([^/]+)", key)
    domain = m.group(1) if m else ""
    if key not in ("karpenter.sh/capacity-type", "karpenter.sh/nodepool") and domain.endswith("karpenter.sh"):
        return 'label domain "karpenter.sh" is restricted'
    if nodepool and key == "karpenter.sh/nodepool":
        return 'label "karpenter.sh/nodepool" is restricted (Karpenter sets it)'
    if key == "kubernetes.io/hostname":
        return 'label "kubernetes.io/hostname" is restricted'
    if key not in _KARPENTER_AWS_ALLOWED and domain.endswith("karpenter.k8s.aws"):
        return 'label domain "karpenter.k8s.aws" is restricted'
    return None


CelResult = Iterator[tuple[Path, str, str]]


def _requirements(obj: K8sObject, base: Path, nodepool: bool) -> CelResult:
    for i, req in iter_dicts(obj.get(*base)):
        p = base + (i,)
        key, op = req.get("key"), req.get("operator")
        if isinstance(key, str):
            problem = _label_key_problem(key, nodepool)
            if problem:
                yield p + ("key",), f"requirement key `{key}`: {problem}", "value"
        values = req.get("values")
        n = len(values) if isinstance(values, list) else None
        if op == "In" and not n:
            yield p + ("values",), f"requirement `{key}` with operator In has no values", "field"
        if op in ("Gt", "Lt", "Gte", "Lte"):
            ok = (
                isinstance(values, list)
                and len(values) == 1
                and isinstance(values[0], str)
                and _INT_RE.match(values[0])
                and int(values[0]) >= 0
            )
            if not ok:
                yield (
                    p + ("values",),
                    f"requirement `{key}` with operator {op} must have a single "
                    "non-negative integer value (as a string)",
                    "field",
                )
        mv = req.get("minValues")
        if op == "In" and isinstance(mv, int) and not isinstance(mv, bool) and n is not None and n < mv:
            yield (
                p + ("minValues",),
                f"requirement `{key}` has minValues {mv} but lists only {n} value{'' if n == 1 else 's'}",
                "field",
            )


def nodepool(obj: K8sObject) -> CelResult:
    spec = as_dict(obj.get("spec"))
    tspec_path = ("spec", "template", "spec")
    yield from _requirements(obj, tspec_path + ("requirements",), nodepool=True)
    for key in as_dict(obj.get("spec", "template", "metadata", "labels")):
        problem = _label_key_problem(str(key), nodepool=True)
        if problem:
            yield ("spec", "template", "metadata", "labels", key), f"label `{key}`: {problem}", "field"
    for i, b in iter_dicts(obj.get("spec", "disruption", "budgets")):
        if ("schedule" in b) != ("duration" in b):
            have, miss = ("schedule", "duration") if "schedule" in b else ("duration", "schedule")
            yield (
                ("spec", "disruption", "budgets", i, have),
                f"budget {i} sets `{have}` without `{miss}`; they must be set together",
                "field",
            )
    ref = as_dict(obj.get(*tspec_path, "nodeClassRef"))
    for f in ("group", "kind", "name"):
        if ref.get(f) == "":
            yield tspec_path + ("nodeClassRef", f), f"nodeClassRef.{f} may not be empty", "field"
    if "replicas" in spec and spec.get("replicas") is not None:
        limits = spec.get("limits")
        if isinstance(limits, dict) and any(k != "nodes" for k in limits):
            extra = ", ".join(f"`{k}`" for k in limits if k != "nodes")
            yield (
                ("spec", "limits"),
                f"a static NodePool (replicas set) supports only limits.nodes, not {extra}",
                "field",
            )
        if "weight" in spec:
            yield ("spec", "weight"), "weight is not supported on a static NodePool (replicas set)", "field"


def nodeclaim(obj: K8sObject) -> CelResult:
    yield from _requirements(obj, ("spec", "requirements"), nodepool=False)


_ALIAS_FAMILIES = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}


def ec2nodeclass(obj: K8sObject) -> CelResult:
    spec = as_dict(obj.get("spec"))
    if not spec:
        return
    has_role, has_profile = "role" in spec, "instanceProfile" in spec
    if has_role and has_profile:
        yield ("spec", "instanceProfile"), "set exactly one of `role` and `instanceProfile`, not both", "field"
    elif not has_role and not has_profile:
        yield ("spec",), "must specify exactly one of `role` and `instanceProfile`", "field"
    for f in ("role", "instanceProfile"):
        if spec.get(f) == "":
            yield ("spec", f), f"`{f}` cannot be empty", "field"
    terms = spec.get("amiSelectorTerms")
    if isinstance(terms, list):
        aliases = [(i, t.get("alias")) for i, t in iter_dicts(terms) if "alias" in t]
        fam = spec.get("amiFamily")
        for i, alias in aliases:
            p: Path = ("spec", "amiSelectorTerms", i, "alias")
            if not isinstance(alias, str):
                continue
            if not re.match(r"^[a-zA-Z0-9]+@.+$", alias):
                yield p, f"alias `{alias}` must have the form family@version (e.g. al2023@latest)", "value"
                continue
            family, _, ver = alias.partition("@")
            if family not in _ALIAS_FAMILIES:
                yield (
                    p,
                    f"alias family `{family}` is not supported; use one of "
                    + ", ".join(f"`{f}`" for f in _ALIAS_FAMILIES),
                    "value",
                )
                continue
            if family.startswith("windows") and ver != "latest":
                yield p, f"windows alias `{alias}` may only use the version `latest`", "value"
            if "amiFamily" in spec and fam not in ("Custom", _ALIAS_FAMILIES[family]):
                yield (
                    ("spec", "amiFamily"),
                    f"amiFamily `{fam}` does not match the alias `{alias}`; use "
                    f"`{_ALIAS_FAMILIES[family]}` or `Custom`, or drop amiFamily",
                    "field",
                )
        if not aliases and "amiFamily" not in spec:
            yield (
                ("spec", "amiSelectorTerms"),
                "amiFamily is required when no amiSelectorTerms entry has an alias",
                "field",
            )
        for i, t in iter_dicts(terms):
            p = ("spec", "amiSelectorTerms", i)
            if not any(k in t for k in ("tags", "id", "name", "alias", "ssmParameter")):
                yield p, "an amiSelectorTerms entry needs one of tags, id, name, alias or ssmParameter", "field"
            if "id" in t and any(k in t for k in ("alias", "tags", "name", "owner")):
                yield p + ("id",), "`id` cannot be combined with other fields in an amiSelectorTerms entry", "field"
            if "alias" in t and any(k in t for k in ("id", "tags", "name", "owner")):
                yield (
                    p + ("alias",),
                    "`alias` cannot be combined with other fields in an amiSelectorTerms entry",
                    "field",
                )
            yield from _empty_tags(as_dict(t.get("tags")), p + ("tags",))
        if aliases and len(terms) != 1:
            yield (("spec", "amiSelectorTerms"), "an `alias` term must be the only amiSelectorTerms entry", "field")
    for field_name, allowed in (
        ("subnetSelectorTerms", ("tags", "id")),
        ("securityGroupSelectorTerms", ("tags", "id", "name")),
    ):
        terms = spec.get(field_name)
        if not isinstance(terms, list):
            continue
        if not terms:
            yield ("spec", field_name), f"{field_name} cannot be empty", "field"
        for i, t in iter_dicts(terms):
            if not any(k in t for k in allowed):
                yield (("spec", field_name, i), f"a {field_name} entry needs one of " + ", ".join(allowed), "field")
            yield from _empty_tags(as_dict(t.get("tags")), ("spec", field_name, i, "tags"))
        dicts = [t for _, t in iter_dicts(terms)]
        if dicts and len(dicts) == len(terms):
            others = [k for k in allowed if k != "id"]
            if all("id" in t and any(k in t for k in others) for t in dicts):
                yield (
                    ("spec", field_name),
                    f"`id` cannot be combined with {' or '.join(others)} in {field_name}",
                    "field",
                )
            if field_name == "securityGroupSelectorTerms" and all(
                "name" in t and ("tags" in t or "id" in t) for t in dicts
            ):
                yield (
                    ("spec", field_name),
                    "`name` cannot be combined with tags or id in securityGroupSelectorTerms",
                    "field",
                )
    roots = [i for i, m in iter_dicts(spec.get("blockDeviceMappings")) if m.get("rootVolume") is True]
    if len(roots) > 1:
        yield (
            ("spec", "blockDeviceMappings", roots[1], "rootVolume"),
            "only one blockDeviceMappings entry may set rootVolume",
            "field",
        )
    for i, m in iter_dicts(spec.get("blockDeviceMappings")):
        ebs = m.get("ebs")
        if isinstance(ebs, dict) and "snapshotID" not in ebs and "volumeSize" not in ebs:
            yield ("spec", "blockDeviceMappings", i, "ebs"), "ebs needs snapshotID or volumeSize", "field"
    for key in as_dict(spec.get("tags")):
        k = str(key)
        bad = (
            k == ""
            or k
            in (
                "eks:eks-cluster-name",
                "karpenter.sh/nodepool",
                "karpenter.sh/nodeclaim",
                "karpenter.k8s.aws/ec2nodeclass",
            )
            or k.startswith("kubernetes.io/cluster")
        )
        if bad:
            yield ("spec", "tags", key), f"tag `{k}` is restricted (Karpenter sets it)", "field"


def _empty_tags(tags: dict[str, Any], path: Path) -> CelResult:
    for k, v in tags.items():
        if k == "" or v == "":
            yield path + (k,), "empty tag keys or values are not supported", "field"


_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def resourceflavor(obj: K8sObject) -> CelResult:
    spec = as_dict(obj.get("spec"))
    for i, t in iter_dicts(spec.get("nodeTaints")):
        if "effect" in t and t.get("effect") not in _TAINT_EFFECTS:
            yield (
                ("spec", "nodeTaints", i, "effect"),
                f"taint effect `{t.get('effect')}` is not one of " + ", ".join(_TAINT_EFFECTS),
                "value",
            )
    for i, t in iter_dicts(spec.get("tolerations")):
        p = ("spec", "tolerations", i)
        op = t.get("operator")
        if "key" not in t and op != "Exists":
            yield p, "a toleration without a key must use operator Exists", "field"
        if "tolerationSeconds" in t and t.get("effect") != "NoExecute":
            yield p + ("tolerationSeconds",), "tolerationSeconds requires effect NoExecute", "field"
        if "operator" in t and op not in ("Equal", "Exists"):
            yield p + ("operator",), f"toleration operator `{op}` is not Equal or Exists", "value"
        if op == "Exists" and "value" in t:
            yield p + ("value",), "a toleration with operator Exists must not set a value", "field"
        if "effect" in t and t.get("effect") not in _TAINT_EFFECTS:
            yield (
                p + ("effect",),
                f"toleration effect `{t.get('effect')}` is not one of " + ", ".join(_TAINT_EFFECTS),
                "value",
            )
