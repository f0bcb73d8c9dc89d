"""Custom rules (config, policy packs, entry points) and ValidatingAdmissionPolicy offline."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

import pytest
from ailint.engine import registry
from ailint.engine.config import ConfigError, Settings, load_settings
from ailint.engine.run import lint
from ailint.policy import cel

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_config_rules():
    """Every test starts and ends without the rules of an earlier test's config."""
    registry.set_config_rules([])
    yield
    registry.set_config_rules([])


def run_cli(*args: str, cwd: pathlib.Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ailint", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def write(path: pathlib.Path, text: str) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def line_of(path: pathlib.Path, needle: str, nth: int = 1) -> int:
    seen = 0
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            seen += 1
            if seen == nth:
                return i
    raise AssertionError(f"{needle!r} not in {path}")


# -- a folder of policies, bindings, params, namespaces and workloads ---------------------------
POLICIES = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: max-replicas
spec:
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
    - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
      messageExpression: "'at most ' + params.data.maxReplicas + ' replicas in ' + object.metadata.namespace"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: team-label
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps", "ray.io"]
      apiVersions: ["*"]
      operations: ["CREATE"]
      resources: ["deployments", "rayclusters"]
  validations:
    - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
      message: "workloads carry a team label"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: gpu-pool-limits
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["karpenter.sh"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["nodepools"]
  validations:
    - expression: "has(object.spec.limits) && quantity(string(object.spec.limits.cpu)).compareTo(quantity('2k')) <= 0"
      message: "a NodePool caps cpu at 2k"
"""

BINDINGS = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: max-replicas
spec:
  policyName: max-replicas
  validationActions: [Deny]
  paramRef:
    name: limits
    parameterNotFoundAction: Allow
  matchResources:
    namespaceSelector:
      matchLabels: {tier: serving}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: team-label
spec:
  policyName: team-label
  validationActions: [Warn]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: gpu-pool-limits
spec:
  policyName: gpu-pool-limits
  validationActions: [Audit]
"""

PARAMS = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: limits
  namespace: serving
data:
  maxReplicas: "3"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: limits
  namespace: research
data:
  maxReplicas: "1"
"""

NAMESPACES = """
apiVersion: v1
kind: Namespace
metadata:
  name: serving
  labels: {tier: serving}
---
apiVersion: v1
kind: Namespace
metadata:
  name: research
  labels: {tier: research}
"""

WORKLOADS = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: too-many
  namespace: serving
  labels: {team: nlp}
spec:
  replicas: 5
  selector:
    matchLabels: {app: a}
  template:
    metadata:
      labels: {app: a}
    spec:
      containers:
        - name: a
          image: vllm/vllm-openai:v0.9.2
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: unlabelled
  namespace: serving
spec:
  replicas: 2
  selector:
    matchLabels: {app: b}
  template:
    metadata:
      labels: {app: b}
    spec:
      containers:
        - name: b
          image: vllm/vllm-openai:v0.9.2
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: research-is-not-bound
  namespace: research
  labels: {team: lab}
spec:
  replicas: 4
  selector:
    matchLabels: {app: c}
  template:
    metadata:
      labels: {app: c}
    spec:
      containers:
        - name: c
          image: vllm/vllm-openai:v0.9.2
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: compliant
  namespace: serving
  labels: {team: nlp}
spec:
  replicas: 3
  selector:
    matchLabels: {app: d}
  template:
    metadata:
      labels: {app: d}
    spec:
      containers:
        - name: d
          image: vllm/vllm-openai:v0.9.2
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
  limits:
    cpu: "4000"
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: small
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
  limits:
    cpu: "1000"
"""


def _folder(tmp_path: pathlib.Path) -> pathlib.Path:
    d = tmp_path / "repo"
    write(d / "policies" / "policies.yaml", POLICIES)
    write(d / "policies" / "bindings.yaml", BINDINGS)
    write(d / "params.yaml", PARAMS)
    write(d / "namespaces.yaml", NAMESPACES)
    write(d / "workloads" / "all.yaml", WORKLOADS)
    return d


def _pol(findings):
    return sorted(
        (pathlib.Path(f.file).name, f.span.line, f.code, f.severity.value, f.message)
        for f in findings
        if f.code.startswith("POL")
    )


def test_run_over_a_folder_reports_each_violation_at_its_field(tmp_path):
    d = _folder(tmp_path)
    s = Settings(root=str(d))
    s.select = ["POL"]
    got = _pol(lint([str(d)], s).findings)
    wl = d / "workloads" / "all.yaml"
    assert got == sorted(
        [
            # Deny: error, at the field the expression reads, with the messageExpression
            (
                "all.yaml",
                line_of(wl, "replicas: 5"),
                "POL001",
                "error",
                "policy max-replicas: at most 3 replicas in serving",
            ),
            # Warn: warning; the labels are missing, so the finding points where they belong
            (
                "all.yaml",
                line_of(wl, "metadata:", 3),
                "POL001",
                "warning",
                "policy team-label: workloads carry a team label",
            ),
            # Audit: info, at the cpu limit that the quantity() comparison reads
            (
                "all.yaml",
                line_of(wl, 'cpu: "4000"'),
                "POL001",
                "info",
                "policy gpu-pool-limits: a NodePool caps cpu at 2k",
            ),
        ]
    )


def test_a_binding_defined_in_two_files_binds_once(tmp_path):
    """Two copies of a binding (a tutorial's variants, a vendored chart) are one binding in a
    cluster: each violation is reported once, not once per copy."""
    d = _folder(tmp_path)
    write(d / "copy" / "bindings.yaml", BINDINGS)
    s = Settings(root=str(d))
    s.select = ["POL"]
    got = _pol(lint([str(d)], s).findings)
    assert len(got) == 3 and len(set(got)) == 3, got


REQUESTS_POLICY = """apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: enforce-requests
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: ["apps"]
        apiVersions: ["v1"]
        operations: ["CREATE", "UPDATE"]
        resources: ["deployments"]
  validations:
    - expression: >
        object.spec.template.spec.containers.all(c,
          (has(c.resources.requests) && size(c.resources.requests) > 0) ||
          (has(c.resources.limits) && size(c.resources.limits) > 0))
      message: every container must specify resource requests or limits
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: enforce-requests
spec:
  policyName: enforce-requests
  validationActions: [Deny]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: no-resources
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: with-requests
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          resources:
            requests: {cpu: "4"}
"""


def test_a_container_without_resources_is_judged_as_the_api_server_decodes_it(tmp_path):
    """`has(c.resources.requests)` on a container that writes no resources: the API server's
    object has `resources: {}` there (a Go struct field is never omitted), so the policy
    rejects the Deployment instead of erroring, and a container with requests passes."""
    f = write(tmp_path / "all.yaml", REQUESTS_POLICY)
    s = Settings(root=str(tmp_path))
    s.select = ["POL"]
    got = _pol(lint([str(f)], s).findings)
    assert [(code, sev) for _, _, code, sev, _ in got] == [("POL001", "error")], got
    assert got[0][1] < line_of(f, "name: with-requests")
    assert "every container must specify" in got[0][4]


def test_policies_given_as_context_are_not_linted(tmp_path):
    d = _folder(tmp_path)
    policies = d / "policies"
    wl = d / "workloads"
    # the workloads and their namespaces and params, the policies only as context; outside a
    # git repository each given path is a project of its own, so `--scope run` joins them
    proc = run_cli(
        "check", str(wl), str(d / "params.yaml"), str(d / "namespaces.yaml"), "--policies", str(policies),
        "--no-config", "--scope", "run", "--select", "POL", "--format", "json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    assert {(pathlib.Path(f["file"]).name, f["code"]) for f in findings} == {("all.yaml", "POL001")}
    assert len(findings) == 3
    # the policy files contribute no findings of their own (no SCH, no POL on them)
    proc = run_cli("check", str(wl), "--policies", str(policies), "--no-config", "--format", "json", cwd=tmp_path)
    files = {pathlib.Path(f["file"]).name for f in json.loads(proc.stdout)["findings"]}
    assert "policies.yaml" not in files and "bindings.yaml" not in files


def test_namespace_not_in_the_run_is_assumed_to_match(tmp_path):
    d = _folder(tmp_path)
    (d / "namespaces.yaml").unlink()
    s = Settings(root=str(d))
    s.select = ["POL001"]
    found = [f for f in lint([str(d)], s).findings if "max-replicas" in f.message]
    msgs = [f.message for f in found]
    # without Namespace objects, research matches too (its param allows 1 replica)
    assert any("research" in m and "assumed to match the namespaceSelector" in m for m in msgs), msgs
    assert any("at most 3 replicas in serving" in m for m in msgs), msgs
    # a Deny found on that assumption is a warning that says why, never an error
    assumed = [f for f in found if "assumed to match" in f.message]
    assert assumed and all(f.severity.value == "warning" for f in assumed), assumed
    assert all(f.severity_reason == "a namespaceSelector match assumed" for f in assumed)


def test_config_policies_key_and_severity_override(tmp_path):
    d = _folder(tmp_path)
    write(
        d / ".ailint.yaml",
        """
        policies: [policies]
        select: [POL]
        rules:
          POL001: {severity: info}
        """,
    )
    s = load_settings(None, False, cwd=str(d))
    res = lint([str(d / "workloads"), str(d / "params.yaml"), str(d / "namespaces.yaml")], s)
    pol = [f for f in res.findings if f.code == "POL001"]
    assert len(pol) == 3 and {f.severity.value for f in pol} == {"info"}
    write(d / ".ailint.yaml", "policies: [no-such-folder]\n")
    with pytest.raises(ConfigError, match=r"\.ailint\.yaml:2: `policies\[0\]`: no such file"):
        load_settings(None, False, cwd=str(d))


def test_policy_errors_are_reported_with_file_and_line(tmp_path):
    p = write(
        tmp_path / "broken.yaml",
        """
        apiVersion: admissionregistration.k8s.io/v1
        kind: ValidatingAdmissionPolicy
        metadata:
          name: broken
        spec:
          matchConstraints:
            resourceRules:
            - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"]}
          validations:
            - expression: |
                object.metadata.name.size() > 0 &&
                  object.spec.(
        """,
    )
    s = Settings(root=str(tmp_path))
    s.select = ["POL"]
    (f,) = lint([str(p)], s).findings
    assert f.code == "POL003" and f.file.endswith("broken.yaml")
    # expression line 2, column 14 ('(' after `object.spec.`), in a block scalar indented 8
    assert (f.span.line, f.span.col) == (12, 8 + 15)
    assert "object.spec.(" in p.read_text().splitlines()[11]


# -- custom rules ---------------------------------------------------------------------------------
CONFIG = """
custom-rules:
  ORG001:
    name: gpu-workloads-need-team-label
    severity: error
    summary: GPU workloads carry a team label for cost attribution
    for-each: pod-template
    match: "has(template.spec.containers) && template.spec.containers.exists(c, 'nvidia.com/gpu' in c.?resources.?limits.orValue({}))"
    validate: "'team' in object.metadata.?labels.orValue({})"
    message: "GPU workload without a team label"
    field: "metadata.labels"
  ORG002:
    name: no-latest-in-prod
    summary: No mutable latest tag in namespace prod
    for-each: container
    match: "namespaceName == 'prod'"
    validate: "!container.image.endsWith(':latest')"
    message-expression: "'container ' + container.name + ' uses ' + container.image"
    field: container.image
custom-rules-files: ["packs/*.yaml"]
"""

PACK = """
custom-rules:
  ACM001:
    name: vllm-through-our-mirror
    severity: warning
    summary: vLLM images come from the internal mirror
    for-each: container
    kinds: [Deployment, StatefulSet]
    match: "container.image.contains('vllm')"
    validate: "container.image.startsWith('mirror.example.com/')"
    message: "pull vLLM through mirror.example.com"
    field: container.image
"""

WORKLOAD = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: prod
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:latest
          resources:
            limits:
              nvidia.com/gpu: 1
        - name: sidecar  # ailint: ignore[ACM001] not vLLM
          image: mirror.example.com/envoy:latest
"""


def _custom(tmp_path: pathlib.Path) -> pathlib.Path:
    write(tmp_path / ".ailint.yaml", CONFIG)
    write(tmp_path / "packs" / "acme.yaml", PACK)
    return write(tmp_path / "deploy.yaml", WORKLOAD)


def test_custom_rules_report_at_their_field_and_are_selectable(tmp_path):
    w = _custom(tmp_path)
    s = load_settings(None, False, cwd=str(tmp_path))
    s.select = ["ORG", "ACM"]
    got = sorted((f.code, f.span.line, f.span.col, f.severity.value, f.message) for f in lint([str(w)], s).findings)
    image, sidecar = line_of(w, "image: vllm/"), line_of(w, "image: mirror")
    assert got == [
        ("ACM001", image, 11, "warning", "pull vLLM through mirror.example.com"),
        # metadata has no labels: the finding points at metadata, where they belong
        ("ORG001", line_of(w, "metadata:"), 1, "error", "GPU workload without a team label"),
        ("ORG002", image, 11, "warning", "container vllm uses vllm/vllm-openai:latest"),
        ("ORG002", sidecar, 11, "warning", "container sidecar uses mirror.example.com/envoy:latest"),
    ]
    s.select = ["ORG002"]
    s.ignore = []
    assert {f.code for f in lint([str(w)], s).findings} == {"ORG002"}
    s.select = ["ORG", "ACM"]
    s.ignore = ["no-latest-in-prod"]  # by name
    assert {f.code for f in lint([str(w)], s).findings} == {"ORG001", "ACM001"}


def test_custom_rules_in_listing_docs_sarif_and_baseline(tmp_path):
    _custom(tmp_path)
    proc = run_cli("rules", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    codes = {r["code"]: r for r in json.loads(proc.stdout)}
    assert codes["ORG001"]["name"] == "gpu-workloads-need-team-label" and "ACM001" in codes
    proc = run_cli("rule", "ORG001", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ".ailint.yaml:2" in proc.stdout and "'team' in object.metadata" in proc.stdout
    proc = run_cli("check", "deploy.yaml", "--select", "ORG,ACM", "--format", "sarif", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    sarif = json.loads(proc.stdout)
    ids = {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert {"ORG001", "ORG002", "ACM001"} <= ids
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"ORG001", "ORG002", "ACM001"}
    # a baseline of today's findings silences them; a new one still shows
    proc = run_cli("check", "deploy.yaml", "--select", "ORG,ACM", "--write-baseline", "b.json", cwd=tmp_path)
    proc = run_cli("check", "deploy.yaml", "--select", "ORG,ACM", "--baseline", "b.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        (
            "ORG001:\n    name: x\n    summary: s\n    validate: |\n      object.metadata.name == 'a' &&\n        object.spec.(\n    message: m\n",
            ":7:21:",
            "custom rule ORG001: `validate` (expression line 2, column 15): Syntax error",
        ),
        (
            'ORG001:\n    name: x\n    summary: s\n    validate: "quantity(1) > 0"\n    message: m\n',
            ":5:24:",
            "found no matching overload for 'quantity'",
        ),
        ("GPU901:\n    name: x\n    summary: s\n    validate: 'true'\n    message: m\n", ":2:", "built-in family GPU"),
        (
            "ORG001:\n    name: x\n    summary: s\n    validate: 'true'\n    message: m\n    colour: red\n",
            ":7:5:",
            "unknown key `colour`",
        ),
        (
            "ORG001:\n    name: x\n    summary: s\n    validate: 'true'\n    message-expression: '1 + 1'\n",
            ":6:",
            "`message-expression` gives int, not string",
        ),
        (
            "ORG001:\n    name: x\n    summary: s\n    validate: \"authorizer.group('').check('x').allowed()\"\n    message: m\n",
            ":5:",
            "which ailint does not support",
        ),
    ],
)
def test_custom_rule_errors_are_config_errors_with_file_and_line(tmp_path, body, where, message):
    cfg = tmp_path / ".ailint.yaml"
    cfg.write_text("custom-rules:\n  " + body, encoding="utf-8")
    write(tmp_path / "a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    proc = run_cli("check", "a.yaml", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{cfg}{where}" in proc.stderr and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_custom_rules_files_must_match(tmp_path):
    write(tmp_path / ".ailint.yaml", "custom-rules-files: [packs/*.yaml]\n")
    with pytest.raises(ConfigError, match=r"\.ailint\.yaml:2: `custom-rules-files\[0\]`: no file matches"):
        load_settings(None, False, cwd=str(tmp_path))


def test_entry_point_rules_load_with_the_builtin_api(tmp_path, monkeypatch):
    pkg = tmp_path / "site"
    write(
        pkg / "acme_rules" / "acm900_no_default_namespace.py",
        '''
        """## What it does\\nNo objects in default.\\n"""
        from ailint.core.model import Severity
        from ailint.core.rule import Rule

        RULE = Rule(code="ACM900", name="no-default-namespace", severity=Severity.WARNING,
                    summary="Objects name a namespace other than default")


        def check(obj, ctx, opts):
            if obj.namespace == "default":
                yield RULE.finding(obj, ("metadata", "namespace"), "object in the default namespace")
        ''',
    )
    write(pkg / "acme_rules" / "__init__.py", "")
    write(pkg / "acme_rules-1.0.dist-info" / "entry_points.txt", "[ailint.rules]\nacme = acme_rules\n")
    write(pkg / "acme_rules-1.0.dist-info" / "METADATA", "Name: acme-rules\nVersion: 1.0\n")
    monkeypatch.syspath_prepend(str(pkg))
    monkeypatch.setattr(registry, "_EP_CACHE", None)
    monkeypatch.setattr(registry, "_ENTRY_RULES", None)
    monkeypatch.setattr(registry, "_ALL", None)
    try:
        assert registry.find_rule("ACM900") is not None
        f = write(tmp_path / "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\n")
        s = Settings(root=str(tmp_path))
        s.select = ["ACM900"]
        (finding,) = lint([str(f)], s).findings
        assert (finding.code, finding.span.line) == ("ACM900", 5)
    finally:
        registry._EP_CACHE = registry._ENTRY_RULES = registry._ALL = None


# -- the CEL engine: Kubernetes libraries and bounds -----------------------------------------------
V = ("object",)


def ev(expr: str, obj: dict | None = None) -> cel.Outcome:
    return cel.evaluate(cel.compile_expression(expr, V), cel.activation(V, {"object": obj or {}}))


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("quantity('1Gi').isGreaterThan(quantity('512Mi'))", True),
        ("quantity('1') == quantity('1000m')", True),
        ("quantity('1.5').add(2).asApproximateFloat()", 3.5),
        ("quantity('2k').compareTo(quantity('2000'))", 0),
        ("quantity('100m').isInteger()", False),
        ("isQuantity('1e3') && !isQuantity('1.5.5')", True),
        ("url('https://a.example:8443/v1?x=1').getPort()", "8443"),
        ("url('https://[::1]:80/x').getHostname()", "::1"),
        ("url('https://a/p?y=1&y=2').getQuery()", {"y": ["1", "2"]}),
        ("isURL('/relative/ok') && !isURL('no scheme')", True),
        ("cidr('10.0.0.0/8').containsIP('10.1.2.3') && !cidr('10.0.0.0/8').containsIP(ip('192.168.0.1'))", True),
        ("cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')", True),
        ("ip('fe80::1').isLinkLocalUnicast() && ip('127.0.0.1').isLoopback()", True),
        ("ip('10.0.0.1').family() == 4 && string(ip('10.0.0.1')) == '10.0.0.1'", True),
        ("isIP('::ffff:1.2.3.4')", False),
        ("[1, 2, 3].isSorted() && [3, 1].sum() == 4 && [3, 1].min() == 1 && [1, 2].indexOf(2) == 1", True),
        ("'abc'.indexOf('c')", 2),
        ("'a1b22'.findAll('[0-9]+')", ["1", "22"]),
        ("sets.contains([1, 2, 3], [1]) && sets.intersects([1], [1, 4]) && !sets.equivalent([1], [2])", True),
        ("'%s-%d'.format(['a', 2])", "a-2"),
        ("object.?spec.?replicas.orValue(1)", 1),
        ("cel.bind(x, 2, x * x)", 4),
        ("!format.qualifiedName().validate('example.com/my-name').hasValue()", True),
        ("format.dns1123Label().validate('My_Name').value().size()", 1),
        ("format.labelValue().validate('').orValue(['error'])", ["error"]),
        ("1.5 > 1 && 1 == 1.0", True),
    ],
)
def test_kubernetes_cel_libraries(expr, value):
    out = ev(expr)
    assert out.ok, out.error
    assert out.value == value


def test_runtime_errors_are_values_not_exceptions():
    out = ev("object.spec.replicas > 1", {"spec": {}})
    assert (out.ok, out.kind, out.error) == (False, "error", "no such key: replicas")
    assert ev("quantity('12zz').asInteger() > 0").kind == "error"


@pytest.mark.parametrize(
    ("expr", "unsupported"),
    [
        ("authorizer.group('apps').resource('deployments').check('create').allowed()", "authorizer"),
        ("format.named('dns1123Label').hasValue()", "format"),
        ("[3, 1].sort() == [1, 3]", "lists extension"),
        ("{'a': 1}.all(k, v, v > 0)", "two-variable"),
    ],
)
def test_unsupported_kubernetes_functions_are_named(expr, unsupported):
    with pytest.raises(cel.CelCompileError) as info:
        cel.compile_expression(expr, ("object", "authorizer"))
    assert info.value.unsupported and unsupported in info.value.unsupported


def test_hostile_expressions_are_bounded():
    # iterations: the engine's budget
    nested = "[" + ",".join(map(str, range(10))) + "]"
    expr = (
        nested
        + ".all(a, "
        + nested
        + ".all(b, "
        + nested
        + ".all(c, "
        + nested
        + ".all(d, "
        + nested
        + ".all(e, true)))))"
    )
    assert ev(expr).kind == "budget"
    # static growth: refused before it runs
    with pytest.raises(cel.CelCompileError, match="chained growth"):
        cel.compile_expression("'x'" + ".replace('x', 'xxxxxxxxxx')" * 13, V)
    # length
    with pytest.raises(cel.CelCompileError, match="over the limit"):
        cel.compile_expression("1 == 1 && " * 600 + "true", V)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux")
def test_memory_bomb_under_the_static_limit_fails_to_allocate():
    # 10 chained replaces (under the static limit) would build a 10^10-character string
    out = ev("'x'" + ".replace('x', 'xxxxxxxxxx')" * 10 + ".size() > 0")
    assert out.kind == "memory", out
    assert ev("1 + 1 == 2").value is True  # the limit is lifted afterwards


def test_slow_expressions_and_the_run_budget(monkeypatch):
    p = cel.compile_expression("object.a == 1", V)
    act = cel.activation(V, {"object": {"a": 1}})
    monkeypatch.setattr(cel, "SLOW_EVALUATION_SECONDS", 0.0)
    cel.new_run()
    assert cel.evaluate(p, act).value is True  # runs, and is slower than 0 s
    assert cel.evaluate(p, act).kind == "time"  # disabled for the rest of the run
    monkeypatch.setattr(cel, "SLOW_EVALUATION_SECONDS", 10.0)
    cel.new_run(seconds=0.0)
    assert cel.evaluate(p, act).value is True
    out = cel.evaluate(p, act)
    assert out.kind == "time" and "budget" in (out.error or "")
    cel.new_run()
    assert cel.evaluate(p, act).value is True


def test_compiled_once_per_process():
    a = cel.compile_expression("object.a == 1", V)
    assert cel.compile_expression("object.a == 1", V) is a


# -- the webhook ----------------------------------------------------------------------------------
def test_webhook_runs_custom_rules_and_config_policies(tmp_path):
    from ailint.doors.webhook import Reviewer

    write(tmp_path / ".ailint.yaml", CONFIG.replace('custom-rules-files: ["packs/*.yaml"]\n', "") + "policies: [pol]\n")
    write(tmp_path / "pol" / "p.yaml", POLICIES + "---\n" + BINDINGS)
    s = load_settings(None, False, cwd=str(tmp_path))
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "vllm", "namespace": "prod"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "vllm"}},
            "template": {
                "metadata": {"labels": {"app": "vllm"}},
                "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:latest"}]},
            },
        },
    }
    found = Reviewer(s).findings_for(obj)
    by_code = {f.code: f for f in found}
    assert by_code["ORG002"].message == "container vllm uses vllm/vllm-openai:latest"
    assert by_code["POL001"].message == "policy team-label: workloads carry a team label"
    assert by_code["POL001"].severity.value == "warning"


def test_without_the_engine_policies_are_reported_not_passed():
    code = (
        "import sys; sys.modules['cel_expr_python'] = None\n"
        "from ailint.engine.config import Settings\nfrom ailint.engine.run import lint\n"
        f"s = Settings(root={str(ROOT)!r}); s.select = ['POL']\n"
        f"print(sorted(f.code for f in lint([{str(ROOT / 'fixtures/POL001/compliant.yaml')!r}], s).findings))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "['POL002', 'POL002']", proc.stdout + proc.stderr


def test_without_the_cel_engine_each_policy_says_it_was_not_evaluated(tmp_path, monkeypatch):
    """Never a silent pass: with the CEL engine unimportable every policy is a POL002 that
    says so, with or without the results cache."""
    from ailint.engine.config import Settings
    from ailint.engine.run import lint
    from ailint.policy import cel

    monkeypatch.setattr(cel, "available", lambda: "the CEL engine is not installed (test); reinstall ailint")
    src = ROOT / "fixtures" / "POL001" / "params_configmap_selector.yaml"
    for cached in (False, True):
        monkeypatch.setenv("AILINT_CACHE_DIR", str(tmp_path / "c"))
        result = lint([str(src)], Settings(root=str(ROOT)), jobs=1, cache=cached)
        pol = [f for f in result.findings if f.code.startswith("POL")]
        assert pol and all(f.code == "POL002" and "not evaluated" in f.message for f in pol), (cached, pol)
