"""What the webhook says about one object: single-object bundle rules, warnings that keep
whole words, 405 and v1beta1, and deploy/ (the kinds it is sent, the image, lint-clean)."""

from __future__ import annotations

import glob
import json
import re
import shutil
import tomllib

import pytest
import yaml
from ailint.doors.webhook import MAX_WARNING_CHARS, Reviewer, fit_warning
from ailint.engine.config import Settings
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

VLLM_DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "vllm", "namespace": "ai"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "vllm"}},
        "template": {
            "metadata": {"labels": {"app": "vllm"}},
            "spec": {
                "containers": [
                    {
                        "name": "vllm",
                        "image": "vllm/vllm-openai:v0.9.2",
                        "args": ["--model", "Qwen/Qwen2.5-7B-Instruct", "--tensor-parallel-size", "2"],
                        "resources": {"limits": {"nvidia.com/gpu": 1}},
                    }
                ]
            },
        },
    },
}


def _review(obj: dict, api_version: str = "admission.k8s.io/v1") -> dict:
    return {
        "apiVersion": api_version,
        "kind": "AdmissionReview",
        "request": {"uid": "u-1", "operation": "CREATE", "namespace": "ai", "object": obj},
    }


@pytest.fixture(scope="module")
def reviewer() -> Reviewer:
    return Reviewer(Settings())


def test_single_object_bundle_rules_warn_on_one_deployment(reviewer):
    answer, codes, allowed = reviewer.review(_review(json.loads(json.dumps(VLLM_DEPLOYMENT))))
    resp = answer["response"]
    assert allowed and resp["allowed"] is True
    warned = {w.split(" ", 1)[0] for w in resp["warnings"]}
    assert {"SRV004", "GPU003"} <= warned, resp["warnings"]
    assert {"SRV004", "GPU003"} <= set(resp["auditAnnotations"]["ailint.io/findings"].split(","))
    # the audit annotation keeps every message whole
    full = json.loads(resp["auditAnnotations"]["ailint.io/messages"])
    assert any(m.startswith("SRV004 ") for m in full) and len(full) == len(codes)


def test_rules_that_need_other_objects_stay_off(reviewer):
    from ailint.engine import registry

    ran = set(reviewer.codes())
    for reg in registry.all_rules().values():
        if reg.rule.scope.value == "bundle" and reg.check:
            assert (reg.rule.code in ran) == reg.rule.single_object, reg.rule.code
    assert "GPU001" not in ran and "REL003" not in ran  # judged by what other objects lack


def test_the_cli_and_the_webhook_agree_on_the_single_object_rules(reviewer, tmp_path):
    """Every finding a single-object bundle rule gives on the object alone in a file, the
    webhook gives too."""
    from ailint.engine.run import lint

    (tmp_path / "d.yaml").write_text(yaml.safe_dump(VLLM_DEPLOYMENT))
    cli = {f.code for f in lint([str(tmp_path / "d.yaml")], Settings(root=str(tmp_path))).findings}
    hook = {f.code for f in reviewer.findings_for(json.loads(json.dumps(VLLM_DEPLOYMENT)))}
    assert {"SRV004", "GPU003"} <= cli & hook
    assert not (cli - hook) - {"SCH001", "SCH002", "SCH003"}, cli - hook


def test_v1beta1_gets_a_v1beta1_response(reviewer):
    answer, _, _ = reviewer.review(_review(json.loads(json.dumps(VLLM_DEPLOYMENT)), "admission.k8s.io/v1beta1"))
    assert answer["apiVersion"] == "admission.k8s.io/v1beta1" and answer["response"]["uid"] == "u-1"


# -- warnings ------------------------------------------------------------------------------
def _fixture_findings() -> list:
    """Every finding of the fixtures, each rule's folder linted as one run (as its cases are)."""
    from ailint.engine.run import lint

    out = []
    for folder in sorted(glob.glob(str(ROOT / "fixtures" / "*"))):
        files = sorted(f for f in glob.glob(folder + "/*.yaml") if not f.endswith(".fixed.yaml"))
        if files:
            out.extend(lint(files, Settings(root=str(ROOT)), jobs=1).findings)
    return out


_FINDINGS = _fixture_findings()
_WORD = st.text(alphabet=st.characters(blacklist_categories=("Zs", "Cc", "Zl", "Zp")), min_size=1, max_size=40)


def _assert_whole_words(line: str, code: str, message: str, fix_title: str | None) -> None:
    assert len(line) <= MAX_WARNING_CHARS, line
    assert line.startswith((code + " ", code + "…")) or line == code, line
    words = message.split()
    if line == " ".join(f"{code} {message}".split()):
        return
    body = line[len(code) :].strip()
    title = f" fix: {' '.join(fix_title.split())}" if fix_title else None
    if title and body.endswith(title) and "…" not in body:  # the whole fact and the fix's title
        assert body[: -len(title)] == " ".join(words), line
        return
    assert "…" in body, line
    kept, _, after = body.partition("…")
    if after.startswith("; "):  # the message's last clause, what to do
        assert fix_title is None and message.endswith(after), line
    elif after:
        assert after == title, line
    got = kept.split()
    n = len(got)
    whole = got == words[:n]
    trimmed = n > 0 and got[:-1] == words[: n - 1] and words[n - 1].rstrip(" ,;:([{-–—") == got[-1]
    assert whole or trimmed, (line, message)


def test_every_rule_message_fits_whole_words():
    from ailint.engine import registry

    ruled = {r.rule.code for r in registry.all_rules().values() if r.check}
    missing = ruled - {f.code for f in _FINDINGS}
    assert len(missing) <= len(ruled) // 20, missing  # the fixtures reach (nearly) every rule
    for f in _FINDINGS:
        text = " ".join(f"{f.code} {f.message}".split())
        title = f.fix.title if f.fix is not None else None
        _assert_whole_words(fit_warning(text, f.code, title), f.code, " ".join(f.message.split()), title)


@settings(max_examples=300, deadline=None)
@given(
    finding=st.sampled_from(_FINDINGS),
    extra=st.lists(_WORD, max_size=30),
    title=st.one_of(st.none(), st.lists(_WORD, min_size=1, max_size=12).map(" ".join)),
)
def test_no_warning_is_cut_mid_word(finding, extra, title):
    message = " ".join([*finding.message.split(), *extra])
    text = f"{finding.code} {message}"
    _assert_whole_words(fit_warning(text, finding.code, title), finding.code, message, title)


# -- HTTP: 405 -----------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI needed to make a test cert")
def test_get_validate_is_405(tmp_path):
    import http.client
    import io
    import ssl
    import subprocess
    import threading

    from ailint.doors.webhook import build_server

    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_path / "k.pem"),
         "-out", str(tmp_path / "c.pem"), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    srv = build_server(
        "127.0.0.1", 0, Settings(), tls_cert=str(tmp_path / "c.pem"), tls_key=str(tmp_path / "k.pem"), log=io.StringIO()
    )
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        ctx = ssl.create_default_context(cafile=str(tmp_path / "c.pem"))
        conn = http.client.HTTPSConnection("127.0.0.1", srv.server_address[1], context=ctx, timeout=10)
        conn.request("GET", "/validate")
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 405 and resp.getheader("Allow") == "POST"
        conn.request("GET", "/nowhere")
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 404
        conn.close()
    finally:
        srv.shutdown()
        srv.server_close()


# -- deploy/ -------------------------------------------------------------------------------
def _deploy_docs() -> list[dict]:
    return [d for d in yaml.safe_load_all((ROOT / "deploy" / "webhook.yaml").read_text()) if d]


def test_webhook_is_sent_only_the_kinds_ailint_has_rules_for():
    from ailint.doors.admission_kinds import admission_rules, group_resources

    _, unknown = group_resources()
    assert not unknown, f"kinds rules name that admission_kinds cannot place in an API group: {unknown}"
    config = next(d for d in _deploy_docs() if d["kind"] == "ValidatingWebhookConfiguration")
    rules = config["webhooks"][0]["rules"]
    assert rules == admission_rules(), "update deploy/webhook.yaml: python -m ailint.doors.admission_kinds"
    resources = {r for rule in rules for r in rule["resources"]}
    assert "*" not in resources and not {"secrets", "events", "leases"} & resources
    assert {"deployments", "pods", "rayclusters", "nodepools", "networkpolicies", "roles"} <= resources


def test_deploy_lints_clean():
    from ailint.engine.run import lint

    result = lint([str(ROOT / "deploy")], Settings(root=str(ROOT)))
    assert result.files and result.object_count >= 8 and not result.findings, result.findings


def test_deploy_scales_on_cpu_and_spreads():
    docs = _deploy_docs()
    kinds = {d["kind"] for d in docs}
    assert {"HorizontalPodAutoscaler", "PodDisruptionBudget", "Deployment"} <= kinds
    hpa = next(d for d in docs if d["kind"] == "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == "ailint-webhook" and hpa["spec"]["minReplicas"] >= 2
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"
    dep = next(d for d in docs if d["kind"] == "Deployment")
    keys = {c["topologyKey"] for c in dep["spec"]["template"]["spec"]["topologySpreadConstraints"]}
    assert keys == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}
    assert "replicas" not in dep["spec"]  # the HPA owns it


def _dockerfile() -> tuple[list[str], str]:
    """The final stage's ENTRYPOINT (exec form) and USER."""
    text = (ROOT / "Dockerfile").read_text()
    stage = re.split(r"(?m)^FROM ", text)[-1]
    entry = json.loads(re.search(r"(?m)^ENTRYPOINT (\[.*\])$", stage).group(1))
    user = re.search(r"(?m)^USER (\S+)$", stage).group(1)
    return entry, user


def test_image_entry_point_is_what_the_deployment_runs():
    from ailint.doors.cli import cli

    entry, user = _dockerfile()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert entry == ["ailint"] and "ailint" in scripts  # the console script the package installs
    dep = next(d for d in _deploy_docs() if d["kind"] == "Deployment")
    pod = dep["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert "command" not in container  # the image's ENTRYPOINT runs, with the Deployment's args
    args = container["args"]
    assert args[:2] == ["webhook", "serve"]
    group = cli.get_command(cli.make_context("ailint", ["webhook"]), "webhook")
    serve = group.get_command(cli.make_context("ailint", ["webhook"]), "serve")
    params = serve.make_context("serve", list(args[2:]), resilient_parsing=True).params  # the args parse
    assert params["port"] == 8443 and params["workers"] == 2  # (the TLS paths exist only in the pod)
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0 and int(uid) == pod["securityContext"]["runAsUser"]
    assert int(gid or uid) == pod["securityContext"]["runAsGroup"]
    assert "COPY linter linter" in (ROOT / "Dockerfile").read_text()  # installed from the repository
