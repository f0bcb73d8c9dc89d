"""Helpers behind REL001-REL003 (descheduler policies) and SEC001 (RBAC)."""

from __future__ import annotations

import pytest
from ailint.core.model import Severity, SourceFile
from ailint.domain.context import Context
from ailint.domain.descheduler import policies_in
from ailint.domain.rbac import agent_templates, bindings_for, classify_rule, service_account
from ailint.engine.load import load_text
from ailint.fix import edits


def _objs(text):
    return load_text(SourceFile("t.yaml", "t.yaml", text)).objects


CM = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: d, namespace: kube-system}
data:
  other: "x"
  policy.yaml: |
    apiVersion: "descheduler/v1alpha2"
    kind: "DeschedulerPolicy"
    profiles:
      - name: p
        pluginConfig:
          - name: DefaultEvictor
            args:
              ignorePvcPods: true
        plugins:
          balance:
            enabled: [RemoveDuplicates, RemoveFailedPods]
"""


def test_embedded_policy_positions_and_edits():
    obj = _objs(CM)[0]
    [pol] = policies_in(obj)
    prof = pol.profiles()[0]
    assert prof.protections() == {
        "PodsWithLocalStorage",
        "SystemCriticalPods",
        "FailedBarePods",
        "DaemonSetPods",
        "PodsWithPVC",
    }
    assert prof.healthy_pod_evictors() == ["RemoveDuplicates"]
    span = pol.span(prof.evictor_path + ("args",))
    assert (span.line, span.col) == (13, 13)
    edit = pol.translate(edits.insert_value(pol.edit_view, prof.evictor_path + ("args",), "nodeFit", True))
    new = CM[: edit.start] + edit.content + CM[edit.end :]
    assert "              ignorePvcPods: true\n              nodeFit: true\n" in new


def test_pod_protections_override_legacy_flags():
    text = CM.replace(
        "ignorePvcPods: true",
        "ignorePvcPods: true\n              podProtections: {defaultDisabled: [PodsWithLocalStorage]}",
    )
    [pol] = policies_in(_objs(text)[0])
    assert pol.profiles()[0].protections() == {"SystemCriticalPods", "FailedBarePods", "DaemonSetPods"}


def test_classify_rule():
    sev = lambda r: [g.severity for g in classify_rule(r)]  # noqa: E731
    assert sev({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}) == []
    assert sev({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}) == [Severity.ERROR]
    assert sev({"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["k"], "verbs": ["get"]}) == []
    assert sev({"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}) == [Severity.WARNING]
    assert sev({"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["patch"]}) == [Severity.ERROR]
    assert sev({"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["create"]}) == [
        Severity.ERROR
    ]
    assert sev({"apiGroups": ["example.com"], "resources": ["deployments"], "verbs": ["create"]}) == []
    assert sev({"nonResourceURLs": ["/metrics"], "verbs": ["get"]}) == []
    assert sev({"resources": 5, "verbs": None}) == []


def test_bindings_for_groups_and_default_namespace():
    objs = _objs("""\
apiVersion: v1
kind: Pod
metadata: {name: my-agent, namespace: a, annotations: {ailint.io/role: agent}}
spec:
  containers: [{name: agent, image: x/agent:1}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb, namespace: a}
roleRef: {kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: default}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: other, namespace: b}
roleRef: {kind: ClusterRole, name: edit}
subjects: [{kind: ServiceAccount, name: default}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: crb}
roleRef: {kind: ClusterRole, name: view}
subjects: [{kind: Group, name: "system:serviceaccounts:a"}]
""")
    ctx = Context(objects=objs)
    pod = next(agent_templates(objs[0]))
    assert service_account(pod) == ("a", "default")
    assert sorted(b.name for b in bindings_for(ctx, ("a", "default"))) == ["crb", "rb"]


AGENT_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: a}}
spec:
  template:
    spec:
      containers:
        - name: main
          image: registry.example.com/{name}:1
          env: [{{name: OPENAI_API_KEY, valueFrom: {{secretKeyRef: {{name: k, key: k}}}}}}]
"""


def _agent_decisions(name):
    from ailint.domain.extract import pod_templates
    from ailint.domain.roles import is_agent_pod

    (obj,) = _objs(AGENT_DEPLOYMENT.format(name=name))
    (pod,) = pod_templates(obj)
    return is_agent_pod(pod), len(list(agent_templates(obj)))


@pytest.mark.parametrize(
    ("name", "agent"),
    [
        ("research-agent", True),
        ("dialog-agent", True),  # not a log agent: an infrastructure name starts a word
        ("catalog-assistant", True),
        ("datadog-agent", False),
        ("security-agent", False),  # infrastructure names once listed for RBAC only
        ("backup-agent", False),
        ("ci-runner-agent", False),
        ("volcano-agent", False),  # and once for the role decision only
        ("tailscale-agent", False),
        ("amazon-cloudwatch-agent", False),
    ],
)
def test_agent_decisions_read_one_infrastructure_list(name, agent):
    """The role decision (`roles.is_agent_pod`) and RBAC's (`rbac.agent_templates`, SEC001)
    take the same infrastructure agents out: each had a list of its own, and a name one of
    them listed was an AI agent to the other."""
    assert _agent_decisions(name) == (agent, int(agent))
