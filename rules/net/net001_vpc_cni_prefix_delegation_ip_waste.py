"""
## What it does
Finds VPC CNI and EKS Auto Mode settings that reserve far more pod IPs than pod-sparse
(GPU and other accelerator) nodes use:
- (a) self-managed VPC CNI: the `kube-system/aws-node` DaemonSet, or an eksctl
  `ClusterConfig` `vpc-cni` add-on's `configurationValues`, sets
  `ENABLE_PREFIX_DELEGATION="true"` and neither `WARM_IP_TARGET` nor `MINIMUM_IP_TARGET`,
  in a run with pod-sparse capacity: an accelerator NodePool (not an Auto Mode one: the
  CNI settings do not apply there), an eksctl node group of accelerator instances, or the
  profile flag `podSparseNodes: true`;
- (b) EKS Auto Mode: a `NodeClass` (`eks.amazonaws.com/v1`) used by an accelerator
  NodePool without `spec.advancedNetworking.ipv4PrefixSize: "32"`, or an accelerator
  NodePool on the built-in `default` NodeClass. This is `info`, and a `warning` when the
  profile sets `largeScaleNodes: true` or the NodePool's `limits` allow more than 100
  nodes of its largest instance type;
- (c) `WARM_PREFIX_TARGET` of 2 or more with prefix delegation on (and no IP targets).

Severity: a warning when the NodePool can launch a large fleet (its limits and instance
types allow many nodes, or the profile sets largeScaleNodes); info for a smaller fleet.

## Why is this bad?
With prefix delegation the CNI hands out /28 prefixes (16 IPs). `WARM_PREFIX_TARGET`
(`"1"` in the shipped manifest) keeps a whole spare prefix, so a GPU node running five pods
holds 32 addresses; `WARM_PREFIX_TARGET: 2` keeps 48. Auto Mode reserves a /28 per slot
too unless the NodeClass switches to secondary-IP mode (`"32"`). On large GPU fleets the
subnets run out of addresses (or of contiguous /28 blocks) long before the nodes are full,
and new nodes fail to get pod IPs.

## Example
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-family, operator: In, values: ["p5"]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: aws-node
  namespace: kube-system
spec:
  selector:
    matchLabels: {k8s-app: aws-node}
  template:
    metadata:
      labels: {k8s-app: aws-node}
    spec:
      containers:
        - name: aws-node
          image: 602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.2
          env:
            - name: ENABLE_PREFIX_DELEGATION
              value: "true"
```

## Use instead
```yaml
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-family, operator: In, values: ["p5"]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: aws-node
  namespace: kube-system
spec:
  selector:
    matchLabels: {k8s-app: aws-node}
  template:
    metadata:
      labels: {k8s-app: aws-node}
    spec:
      containers:
        - name: aws-node
          image: 602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.2
          env:
            - name: ENABLE_PREFIX_DELEGATION
              value: "true"
            - name: WARM_IP_TARGET
              value: "1"
            - name: MINIMUM_IP_TARGET
              value: "16"
```

## Options
- `warm_ip_target` (default `"1"`): the `WARM_IP_TARGET` the fix for (a) adds.
- `minimum_ip_target` (default `"16"`): the `MINIMUM_IP_TARGET` the fix for (a) adds; set it
  to the pods you expect per node.

## Fix
(a) unsafe: adds `WARM_IP_TARGET` and `MINIMUM_IP_TARGET` to the aws-node container (the
values trade IPs for pod start latency during bursts). (b) adds
`advancedNetworking: {ipv4PrefixSize: "32"}` to the NodeClass: safe when only accelerator
NodePools use it and the warning case holds (AWS recommends `"32"` for pod-sparse nodes at
that scale); unsafe otherwise; never for the built-in `default` NodeClass. (c) unsafe:
sets `WARM_PREFIX_TARGET` to `"1"`. The eksctl add-on form gets no fix.

## References
- https://github.com/aws/amazon-vpc-cni-k8s/blob/master/docs/prefix-and-ip-target.md
- https://github.com/aws/amazon-vpc-cni-k8s#warm_prefix_target
- https://docs.aws.amazon.com/eks/latest/userguide/create-node-class.html
- https://docs.aws.amazon.com/eks/latest/best-practices/prefix-mode-linux.html
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity, as_dict, iter_dicts
from ailint.core.rule import Option, Options, Rule, Scope, make_fix
from ailint.domain import accelerators, instances
from ailint.domain.context import Context, NodePoolView
from ailint.domain.extract import all_containers
from ailint.domain.quantities import parse_quantity
from ailint.fix import edits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="NET001",
    name="vpc-cni-prefix-delegation-ip-waste",
    severity=Severity.WARNING,
    summary="VPC CNI prefix delegation or an Auto Mode NodeClass reserves /28 prefixes on pod-sparse GPU nodes",
    kinds=("DaemonSet", "ClusterConfig", "eks.amazonaws.com/NodeClass", "karpenter.sh/NodePool"),
    scope=Scope.BUNDLE,
    single_object=True,
    fix=FixAvailability.SOMETIMES,
    options={
        "warm_ip_target": Option("1", "WARM_IP_TARGET the fix adds", "string"),
        "minimum_ip_target": Option("16", "MINIMUM_IP_TARGET the fix adds (expected pods per node)", "string"),
    },
    tags=("networking", "ip", "eks", "gpu"),
    precision="high",
)

_ENV_KEYS = ("ENABLE_PREFIX_DELEGATION", "WARM_IP_TARGET", "MINIMUM_IP_TARGET", "WARM_PREFIX_TARGET")
_CONF_RE = {k: re.compile(r"[\"']?\b" + k + r"\b[\"']?\s*[:=]\s*[\"']?([^\"',}\s#]*)") for k in _ENV_KEYS}


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    if obj.kind == "DaemonSet" and obj.group == "apps":
        yield from _check_aws_node(obj, ctx, opts)
    elif obj.kind == "ClusterConfig" and obj.group.startswith("eksctl.io"):
        yield from _check_eksctl(obj, ctx)
    elif obj.kind == "NodeClass" and obj.group == "eks.amazonaws.com":
        yield from _check_nodeclass(obj, ctx)
    elif obj.kind == "NodePool" and obj.group == "karpenter.sh":
        yield from _check_builtin_nodeclass(obj, ctx)


# ---------------------------------------------------------------------------------------
# (a) and (c): the VPC CNI settings
# ---------------------------------------------------------------------------------------
def _evidence(ctx: Any) -> str | None:
    # Auto Mode nodes do not run the self-managed CNI: its env does not apply to them
    pools = [p for p in accelerators.accelerator_pools(ctx) if not p.is_auto_mode]
    if pools:
        names = ", ".join(ctx.describe(p.obj) for p in pools[:2]) + (" and more" if len(pools) > 2 else "")
        return f"accelerator {names}"
    groups = accelerators.eksctl_accelerator_nodegroups(ctx)
    if groups:
        return f"accelerator node group {groups[0]}"
    if ctx.profile.flag("podSparseNodes"):
        return "profile podSparseNodes"
    return None


def _warm_prefix(value: Any) -> int | None:
    q = parse_quantity(value) if value not in (None, "") else None
    return int(q) if q is not None and q == int(q) else None


def _assess(env: dict[str, Any], ctx: Any) -> tuple[str, str] | None:
    """('a'|'c', message) for an env of the CNI, or None."""
    pd = env.get("ENABLE_PREFIX_DELEGATION")
    if not isinstance(pd, str) or pd.strip().lower() != "true":
        return None
    if "WARM_IP_TARGET" in env or "MINIMUM_IP_TARGET" in env:
        return None
    warm = _warm_prefix(env.get("WARM_PREFIX_TARGET"))
    spare = warm if warm is not None else 1
    evidence = _evidence(ctx)
    if evidence:
        return "a", (
            f"prefix delegation without WARM_IP_TARGET or MINIMUM_IP_TARGET keeps {spare} spare /28 "
            f"prefix{'es' if spare != 1 else ''} per node ({16 * (spare + 1)} IPs for a few pods) on "
            f"pod-sparse nodes ({evidence})"
        )
    if warm is not None and warm >= 2:
        return "c", (
            f"WARM_PREFIX_TARGET is {warm}: with prefix delegation every node keeps {warm} spare /28 "
            f"prefixes ({16 * warm} IPs) beyond the ones its pods use"
        )
    return None


def _check_aws_node(obj: K8sObject, ctx: Any, opts: Options) -> Iterator[Finding]:
    if obj.name != "aws-node" or (obj.namespace or "kube-system") != "kube-system":
        return
    for c in all_containers(obj, include_init=False):
        if c.name != "aws-node" and "amazon-k8s-cni:" not in c.image:
            continue
        env: dict[str, Any] = {}
        for e in c.env:
            name = e.get("name")
            if name in _ENV_KEYS:
                env[str(name)] = str(e.get("value")) if "value" in e and e.get("value") is not None else None
        verdict = _assess(env, ctx)
        if verdict is None:
            continue
        case, msg = verdict
        if case == "a":
            idx = c.env_index("ENABLE_PREFIX_DELEGATION")
            items = [
                {"name": "WARM_IP_TARGET", "value": opts.get_str("warm_ip_target")},
                {"name": "MINIMUM_IP_TARGET", "value": opts.get_str("minimum_ip_target")},
            ]
            edit = accelerators.add_list_items(obj, c.path, "env", items)
            fix = make_fix(
                f"set WARM_IP_TARGET={items[0]['value']} and MINIMUM_IP_TARGET={items[1]['value']}", [edit], unsafe=True
            )
            yield RULE.finding(obj, c.path_of("env", idx, "value"), msg, fix=fix)
        else:
            idx = c.env_index("WARM_PREFIX_TARGET")
            path = c.path_of("env", idx, "value")
            fix = make_fix('set WARM_PREFIX_TARGET to "1"', [edits.replace_value(obj, path, '"1"')], unsafe=True)
            yield RULE.finding(obj, path, msg, fix=fix)


def _conf_env(text: str) -> dict[str, Any]:
    """The CNI env keys in an add-on `configurationValues` string (JSON or YAML)."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        env = as_dict(data.get("env"))
        return {k: str(v) for k, v in env.items() if k in _ENV_KEYS}
    out = {}
    for k, rx in _CONF_RE.items():
        m = rx.search(text)
        if m:
            out[k] = m.group(1)
    return out


def _check_eksctl(obj: K8sObject, ctx: Any) -> Iterator[Finding]:
    for i, addon in iter_dicts(obj.data.get("addons")):
        if addon.get("name") != "vpc-cni":
            continue
        conf = addon.get("configurationValues")
        if not isinstance(conf, str):
            continue
        verdict = _assess(_conf_env(conf), ctx)
        if verdict is None:
            continue
        _, msg = verdict
        yield RULE.finding(obj, ("addons", i, "configurationValues"), f"vpc-cni add-on: {msg}")


# ---------------------------------------------------------------------------------------
# (b): EKS Auto Mode NodeClass
# ---------------------------------------------------------------------------------------
def _pools_using(ctx: Any, nodeclass: str) -> list[Any]:
    out = []
    for p in ctx.nodepools:
        ref = p.node_class_ref
        if (
            ref.get("group") == "eks.amazonaws.com"
            and ref.get("kind", "NodeClass") == "NodeClass"
            and ref.get("name") == nodeclass
        ):
            out.append(p)
    return out


def _capacity(it: Any, res: str) -> float | None:
    if res == "cpu":
        return float(it.vcpu)
    if res == "memory":
        return float(it.memory_gib) * 2**30
    n = accelerators.device_count(it, res)
    return float(n) if n else None


def _large(ctx: Any, pools: list[Any]) -> str | None:
    if ctx.profile.flag("largeScaleNodes"):
        return "profile largeScaleNodes"
    for p in pools:
        limits = p.limits
        types = p.allowed_types
        if not limits or not types:
            continue
        big = accelerators.largest_type(types)
        it = instances.get(big) if big else None
        if it is None:
            continue
        nodes = None
        for res, v in limits.items():
            q, per = parse_quantity(v), _capacity(it, str(res))
            if q is None or not per:
                continue
            n = q / per
            nodes = n if nodes is None else min(nodes, n)
        if nodes is not None and nodes > 100:
            return f"the limits of {ctx.describe(p.obj)} allow {int(nodes)} {it.type} nodes"
    return None


def _check_nodeclass(obj: K8sObject, ctx: Any) -> Iterator[Finding]:
    if not obj.name:
        return
    using = _pools_using(ctx, obj.name)
    sparse = [p for p in using if accelerators.pool_capability(p) == "yes"]
    if not sparse and ctx.profile.flag("podSparseNodes"):
        sparse = using
    if not sparse:
        return
    size = obj.get("spec", "advancedNetworking", "ipv4PrefixSize")
    if str(size).strip() == "32":
        return
    large = _large(ctx, sparse)
    sev = Severity.WARNING if large else Severity.INFO
    pools = ", ".join(ctx.describe(p.obj) for p in sparse[:2]) + (" and more" if len(sparse) > 2 else "")
    state = f'ipv4PrefixSize is "{size}"' if size is not None else "ipv4PrefixSize is unset (Auto)"
    msg = (
        f"NodeClass {obj.name} serves pod-sparse {pools} but {state}, so each node reserves /28 "
        f'prefixes (16 IPs per slot); use "32" (secondary-IP mode)' + (f"; {large}" if large else "")
    )
    fix = None
    if obj.name != "default":
        path = ("spec", "advancedNetworking", "ipv4PrefixSize")
        if size is not None:
            parts = [edits.replace_value(obj, path, '"32"')]
        else:
            mapped = accelerators.set_map_values(obj, ("spec", "advancedNetworking"), {"ipv4PrefixSize": "32"})
            parts = [*mapped] if mapped else [None]
        safe = bool(large) and len(sparse) == len(using)
        fix = make_fix('set advancedNetworking.ipv4PrefixSize: "32"', parts, unsafe=not safe)
    yield RULE.finding(obj, ("spec", "advancedNetworking", "ipv4PrefixSize"), msg, severity=sev, fix=fix)


def _check_builtin_nodeclass(obj: K8sObject, ctx: Any) -> Iterator[Finding]:
    pool = NodePoolView(obj)
    ref = pool.node_class_ref
    if ref.get("group") != "eks.amazonaws.com" or ref.get("name") != "default":
        return
    if any(o.group == "eks.amazonaws.com" and o.name == "default" for o in ctx.of_kind("NodeClass")):
        return  # the NodeClass is in the run: judged on its own
    if accelerators.pool_capability(pool) != "yes":
        return
    large = _large(ctx, [pool])
    sev = Severity.WARNING if large else Severity.INFO
    msg = (
        f"accelerator NodePool {pool.name} uses the built-in default NodeClass, which reserves /28 prefixes "
        f'(ipv4PrefixSize Auto); point it at a custom NodeClass with ipv4PrefixSize "32"'
        + (f"; {large}" if large else "")
    )
    yield RULE.finding(obj, ("spec", "template", "spec", "nodeClassRef", "name"), msg, severity=sev)
