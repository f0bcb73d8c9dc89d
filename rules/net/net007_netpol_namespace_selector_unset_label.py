"""
## What it does
Checks `namespaceSelector` peers of NetworkPolicy ingress and egress rules that select a
namespace by a name-like label (`name`, `namespace`, `ns`, `kubernetes.io/name`,
`app.kubernetes.io/name`, ...) instead of `kubernetes.io/metadata.name`, the label the API
server sets on every Namespace. It fires when no Namespace manifest in the run carries
that label key; with a Namespace of that name in the run that lacks the label, the
message says so.

## Why is this bad?
Kubernetes does not put a `name` label on namespaces; only `kubernetes.io/metadata.name`
is guaranteed (since 1.21, immutable and equal to the namespace's name). A selector on
`name: api-gateway` therefore matches no namespace, and the peer silently allows nothing:
ingress from the gateway is blocked, or Prometheus in `monitoring` can no longer scrape.
The policy applies cleanly and looks right in review.

## Example
```yaml
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: vllm-ingress
  namespace: inference
spec:
  podSelector:
    matchLabels: {app: vllm}
  policyTypes: [Ingress]
  ingress:
    - from:
        - namespaceSelector:
            matchLabels:
              name: api-gateway
      ports:
        - protocol: TCP
          port: 8000
```

## Use instead
```yaml
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: vllm-ingress
  namespace: inference
spec:
  podSelector:
    matchLabels: {app: vllm}
  policyTypes: [Ingress]
  ingress:
    - from:
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: api-gateway
      ports:
        - protocol: TCP
          port: 8000
```

## Options
- `nameKeys` (array, default `["name", "namespace", "ns", "kubernetes.io/name", "app.kubernetes.io/name", "namespace-name"]`):
  label keys treated as "the namespace's name".

## Fix
Safe, when the values are valid namespace names: renames the key (in `matchLabels` or a
`matchExpressions` entry) to `kubernetes.io/metadata.name`, keeping the values. No fix when
the selector already uses `kubernetes.io/metadata.name` next to it. If your GitOps tooling labels the
namespaces outside this repository, suppress the finding or add the Namespace manifests.

## References
- https://kubernetes.io/docs/concepts/services-networking/network-policies/#targeting-a-namespace-by-its-name
- https://github.com/kubernetes/enhancements/issues/2161
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.lazyre import lazy_re
from ailint.core.model import Edit, Finding, FixAvailability, K8sObject, Severity, as_dict, iter_dicts
from ailint.core.rule import Option, Options, Rule, Scope, make_fix
from ailint.domain.context import Context
from ailint.domain.netpol import is_network_policy, rules_of
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="NET007",
    name="netpol-namespace-selector-unset-label",
    severity=Severity.WARNING,
    summary="A NetworkPolicy namespaceSelector uses a name label that namespaces do not carry",
    kinds=("networking.k8s.io/NetworkPolicy",),
    scope=Scope.BUNDLE,
    fix=FixAvailability.SOMETIMES,
    options={
        "nameKeys": Option(
            ["name", "namespace", "ns", "kubernetes.io/name", "app.kubernetes.io/name", "namespace-name"],
            "label keys treated as the namespace's name",
            "array",
        )
    },
    tags=("network", "networkpolicy"),
)

META_NAME = "kubernetes.io/metadata.name"
_DNS_LABEL = lazy_re(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if not is_network_policy(obj):
        return
    keys = {str(k) for k in opts.get_list("nameKeys")}
    namespaces = [n for n in ctx.of_kind("Namespace")] if ctx.bundle else []
    labelled = {str(k) for n in namespaces for k in n.labels}
    for direction, peer_key in (("Ingress", "from"), ("Egress", "to")):
        for path, rule in rules_of(obj, direction):
            for j, peer in iter_dicts(rule.get(peer_key)):
                sel = peer.get("namespaceSelector")
                if not isinstance(sel, dict):
                    continue
                sel_path = path + (peer_key, j, "namespaceSelector")
                ml = as_dict(sel.get("matchLabels"))
                for key, value in ml.items():
                    if str(key) not in keys or str(key) in labelled or not isinstance(value, (str, int)):
                        continue
                    yield _finding(
                        obj, namespaces, sel_path + ("matchLabels", key), str(key), value, fixable=META_NAME not in ml
                    )
                for i, expr in iter_dicts(sel.get("matchExpressions")):
                    key = str(expr.get("key"))
                    if key in keys and key not in labelled and expr.get("operator") in ("In", None):
                        vals = expr.get("values")
                        shown = vals[0] if isinstance(vals, list) and len(vals) == 1 else vals
                        f = _finding(
                            obj, namespaces, sel_path + ("matchExpressions", i, "key"), key, shown, fixable=False
                        )
                        names = vals if isinstance(vals, list) else []
                        if (
                            names
                            and all(isinstance(v, str) and _DNS_LABEL.match(v) for v in names)
                            and not any(e.get("key") == META_NAME for _, e in iter_dicts(sel.get("matchExpressions")))
                        ):
                            fix = make_fix(
                                f"select the namespace by {META_NAME}",
                                [edits.replace_value(obj, sel_path + ("matchExpressions", i, "key"), META_NAME)],
                            )
                            f = RULE.finding(obj, sel_path + ("matchExpressions", i, "key"), f.message, fix=fix)
                        yield f


def _finding(obj: Any, namespaces: list[Any], path: tuple, key: str, value: Any, fixable: bool) -> Finding:
    named = [n for n in namespaces if isinstance(value, str) and n.name == value]
    if named:
        why = f"Namespace {value} in this run has no {key} label"
    else:
        why = f"no Namespace in this run carries the label {key}"
    msg = f"namespaceSelector matches on {key}={value} but {why}; the peer matches nothing (use {META_NAME})"
    fix = None
    if fixable and isinstance(value, str) and _DNS_LABEL.match(value):
        loc = obj.location(path)
        if loc is not None and loc.key.line == loc.key.end_line and obj.source.text[loc.key_start : loc.key_end] == key:
            fix = make_fix(f"select the namespace by {META_NAME}", [Edit(loc.key_start, loc.key_end, META_NAME)])
    return RULE.finding(obj, path, msg, fix=fix)
