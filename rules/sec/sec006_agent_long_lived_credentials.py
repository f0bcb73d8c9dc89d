"""
## What it does
Flags agent pods that hold long-lived credentials while they have no short-lived identity.
Long-lived credentials are: static `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` from any
source; env vars from Secrets (or literals) that look like personal access or API tokens
(GitHub, GitLab, Slack, Jira, database URLs and passwords), also through `envFrom` when
the Secret is in the files; a mounted kubeconfig Secret (named so, holding a `kubeconfig`
key, or read through a `KUBECONFIG` env var pointing into the mount: one finding, at the
volume); a legacy
`kubernetes.io/service-account-token` Secret (mounted, or created for the pod's
ServiceAccount). It fires when the pod has none of: an IRSA role
(`eks.amazonaws.com/role-arn` on its ServiceAccount), an EKS Pod Identity association
(a `PodIdentityAssociation` or an eksctl `ClusterConfig` entry), or a projected
service-account token of at most 3600 s.

## Why is this bad?
Agents act on untrusted input. A prompt injection that makes one print its environment or
read a mounted file leaks credentials that stay valid for months and work from anywhere:
a GitHub PAT with repo scope, a Slack bot token, a kubeconfig. Short-lived, audience-bound
credentials (IRSA, Pod Identity, projected tokens, a sidecar that exchanges them at call
time) expire within the hour and can be scoped per agent.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pr-review-agent
spec:
  template:
    spec:
      serviceAccountName: pr-review-agent
      containers:
        - name: agent
          image: ghcr.io/example/pr-review-agent-langgraph:1.2.0
          env:
            - name: GITHUB_TOKEN
              valueFrom:
                secretKeyRef:
                  name: github-pat
                  key: token
```

## Use instead
```yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: pr-review-agent
  annotations:
    eks.amazonaws.com/role-arn: arn:aws:iam::111122223333:role/pr-review-agent
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pr-review-agent
spec:
  template:
    spec:
      serviceAccountName: pr-review-agent
      containers:
        - name: agent
          image: ghcr.io/example/pr-review-agent-langgraph:1.2.0
          env:
            - name: GITHUB_APP_ID
              value: "123456"
```

## Options
None. Token name shapes are data (`long_lived_names` in `ailint/data/secrets.json`).

## Fix
None: replace the static credential with IRSA or EKS Pod Identity (AWS), a GitHub App
installation token minted per call, or a sidecar that exchanges the pod's projected token
for short-lived credentials.

## References
- https://docs.aws.amazon.com/eks/latest/userguide/pod-identities.html
- https://docs.aws.amazon.com/eks/latest/userguide/iam-roles-for-service-accounts.html
- https://kubernetes.io/docs/concepts/storage/projected-volumes/#serviceaccounttoken
"""

from __future__ import annotations

from collections.abc import Iterator

from ailint.core.model import Finding, FixAvailability, K8sObject, Severity
from ailint.core.rule import Options, Rule, Scope
from ailint.domain.agents import long_lived_credentials, short_lived_identity
from ailint.domain.context import Context
from ailint.domain.extract import POD_KINDS, is_agent_pod, pod_templates

RULE = Rule(
    code="SEC006",
    name="agent-long-lived-credentials",
    severity=Severity.WARNING,
    summary="An agent pod holds long-lived credentials (static keys, PATs, kubeconfig) instead of short-lived ones",
    kinds=POD_KINDS,
    scope=Scope.BUNDLE,
    fix=FixAvailability.NEVER,
    tags=("security", "agents", "credentials"),
    precision="medium",
    security_severity=6.5,
)


def check(obj: K8sObject, ctx: Context, opts: Options) -> Iterator[Finding]:
    for pod in pod_templates(obj):
        if not is_agent_pod(pod):
            continue
        creds = long_lived_credentials(pod, ctx)
        if not creds or short_lived_identity(pod, ctx):
            continue
        for cred in creds:
            yield RULE.finding(
                obj,
                cred.path,
                f"agent pod holds a long-lived credential ({cred.what}) and no "
                "IRSA, Pod Identity or short-lived projected token",
            )
