"""Descheduler policies in a run: top-level `DeschedulerPolicy` documents and the Helm
chart's form, a ConfigMap whose data value holds the policy as embedded YAML.

This package finds them; what a policy says (its profiles, plugins, evictor, and what
protects a pod from eviction) is `ailint.domain.descheduler.model`, imported only when the
files hold a policy. The rules that ask whether a descheduler rebalances or evicts a
workload (REL001, REL003) run on every Deployment, and most runs hold no policy: the model,
with its classes, is 1% of a one-file run.
"""

from __future__ import annotations

from ailint.core.model import K8sObject, as_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ailint.domain.descheduler.model import Policy


def is_policy_document(obj: K8sObject) -> bool:
    return obj.kind == "DeschedulerPolicy" and obj.api_version.startswith("descheduler/")


def policies_in(obj: K8sObject) -> list[Policy]:
    """The policies one document holds (itself, or ConfigMap data values)."""
    if is_policy_document(obj):
        from ailint.domain.descheduler.model import Policy

        return [Policy(obj, obj.data)]
    if obj.kind == "ConfigMap" and obj.api_version == "v1":
        out = []
        for key, value in as_dict(obj.data.get("data")).items():
            if isinstance(value, str) and "DeschedulerPolicy" in value:
                from ailint.domain.descheduler.model import Policy, parse_embedded

                emb = parse_embedded(obj, str(key), value)
                if emb is not None:
                    out.append(Policy(obj, emb.view.data, emb))
        return out
    return []


_CACHE_ATTR = "_ailint_descheduler_policies"


def policies(ctx: Any) -> list[Policy]:
    """Every descheduler policy in the run (cached on the context)."""
    cached = getattr(ctx, _CACHE_ATTR, None)
    if cached is not None:
        return cached
    out: list[Policy] = []
    root = getattr(ctx, "root", "")
    for obj in list(ctx.of_kind("DeschedulerPolicy")) + list(ctx.of_kind("ConfigMap")):
        for pol in policies_in(obj):
            pol.root = root
            out.append(pol)
    try:
        setattr(ctx, _CACHE_ATTR, out)
    except AttributeError:
        pass
    return out


__all__ = ["is_policy_document", "policies", "policies_in"]
