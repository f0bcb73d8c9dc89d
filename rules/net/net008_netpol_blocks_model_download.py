"""
## What it does
Finds pods that download model weights when they start while the NetworkPolicies that
select them leave no way out to S3 or the Hugging Face Hub. A download at start is an
init container running `aws s3 sync`/`aws s3 cp`, `s5cmd`, `huggingface-cli download` or
`hf download`, or a vLLM/TGI/SGLang container given a Hub id (`--model org/name`) without
`HF_HUB_OFFLINE=1`. The policies block it when some policy selecting the pod restricts
egress and none of them allows TCP 443 to an `ipBlock` or to any destination.

## Why is this bad?
Egress isolation is all or nothing per pod: once one policy with `Egress` selects it, only
what the policies list is allowed. A policy written for "DNS only, models are pre-loaded"
next to a pod that still fetches its weights at start makes the fetch hang or fail; the
init container exits non-zero (or vLLM cannot resolve the model) and the pod crash-loops,
usually only after the policy is rolled out, far from the change that caused it.

## Example
```yaml
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: vllm-egress
  namespace: inference
spec:
  podSelector:
    matchLabels: {app: vllm}
  policyTypes: [Egress]
  egress:
    - ports:
        - {protocol: UDP, port: 53}
        - {protocol: TCP, port: 53}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: inference
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.10.1
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
```

## Use instead
```yaml
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: vllm-egress
  namespace: inference
spec:
  podSelector:
    matchLabels: {app: vllm}
  policyTypes: [Egress]
  egress:
    - ports:
        - {protocol: UDP, port: 53}
        - {protocol: TCP, port: 53}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: inference
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.10.1
          args: ["--model", "/models/llama-3.1-8b-instruct"]
          env:
            - name: HF_HUB_OFFLINE
              value: "1"
          volumeMounts:
            - name: models
              mountPath: /models
              readOnly: true
      volumes:
        - name: models
          persistentVolumeClaim:
            claimName: fsx-models
```

## Options
None.

## Fix
None: pre-stage the weights on FSx for Lustre or EFS (or in the image) and load them from
a path with `HF_HUB_OFFLINE=1`, or allow HTTPS to the S3 prefix list / VPC endpoint in the
policy. Pods that use an HTTP proxy (`HTTPS_PROXY`), an in-cluster mirror (`HF_ENDPOINT`,
`--endpoint-url`) or a namespace with Cilium policies (FQDN rules the linter cannot
evaluate) are not reported.

## References
- https://kubernetes.io/docs/concepts/services-networking/network-policies/#default-deny-all-egress-traffic
- https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables#hfhuboffline
- https://docs.aws.amazon.com/vpc/latest/privatelink/vpc-endpoints-s3.html
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity
from ailint.core.rule import Options, Rule, Scope
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, has_flag, pod_templates
from ailint.domain.netpol import (
    cilium_policies_in,
    egress_rules,
    egress_summary,
    peer_cidr,
    policies_selecting,
    rule_allows_port,
    rule_peers,
)
from ailint.domain.storage import startup_downloads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULE = Rule(
    code="NET008",
    name="netpol-blocks-model-download",
    severity=Severity.ERROR,
    summary="A pod downloads model weights at start but its NetworkPolicies block the download",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    fix=FixAvailability.NEVER,
    tags=("network", "networkpolicy", "model-loading"),
)

_PROXY_ENV = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")


def _https_allowed(policies: list[Any]) -> bool:
    """Some rule allows TCP 443 to anywhere, or to an ipBlock (an S3 prefix, a VPC endpoint)."""
    for np in policies:
        for _, rule in egress_rules(np):
            if rule_allows_port(rule, "TCP", 443) is False:
                continue
            peers = rule_peers(rule)
            if peers is None or any(peer_cidr(p) for p in peers):
                return True
    return False


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        downloads = startup_downloads(pod)
        if not downloads:
            continue
        if any(c.has_env(n) for c in pod.containers() for n in _PROXY_ENV):
            continue
        downloads = [
            d
            for d in downloads
            if not (d.kind == "hub" and d.container.has_env("HF_ENDPOINT"))
            and not (d.kind == "s3" and has_flag(d.container.tokens, "--endpoint-url"))
        ]
        if not downloads:
            continue
        policies = policies_selecting(ctx, pod, "Egress")
        if not policies or cilium_policies_in(ctx, obj.namespace_or_default):
            continue
        if _https_allowed(policies):
            continue
        d = downloads[0]
        names = ", ".join(sorted(ctx.describe(np) for np in policies)[:3])
        what = (
            f"container {d.container.name} loads Hub model {d.what}"
            if d.kind == "hub"
            else f"init container {d.container.name} runs {d.what}"
        )
        who = f"{names} allow" if len(policies) > 1 else f"{names} allows"
        yield RULE.finding(
            obj,
            d.where,
            f"{what} at start, but {who} {egress_summary(policies)}; the download fails and the pod crash-loops",
        )
