"""The dry-run admission webhook over real TLS on loopback."""

from __future__ import annotations

import http.client
import io
import json
import shutil
import ssl
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from ailint.config import Settings
from ailint.webhook import MAX_WARNING_CHARS, build_server

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI needed to make a test cert")

GPU_POD = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "vllm", "namespace": "ai"},
    "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.9.2",
                             "resources": {"requests": {"nvidia.com/gpu": 1}}}]},
}


def review(obj, uid="uid-1", dry_run=False):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": obj.get("kind", "")},
                        "operation": "CREATE", "namespace": "ai", "dryRun": dry_run, "object": obj}}


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "key.pem"),
                    "-out", str(d / "cert.pem"), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    return d / "cert.pem", d / "key.pem"


@pytest.fixture(scope="module")
def server(certs):
    cert, key = certs
    log = io.StringIO()
    srv = build_server("127.0.0.1", 0, Settings(), tls_cert=str(cert), tls_key=str(key), log=log)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    yield srv, log
    srv.shutdown()
    srv.server_close()


def request(server, certs, method, path, body=None, raw=None):
    srv, _ = server
    ctx = ssl.create_default_context(cafile=str(certs[0]))
    conn = http.client.HTTPSConnection("127.0.0.1", srv.server_address[1], context=ctx, timeout=10)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    return resp.status, payload


def test_allowed_with_warnings_and_audit_annotations(server, certs):
    status, payload = request(server, certs, "POST", "/validate", review(GPU_POD, uid="abc-123"))
    assert status == 200
    answer = json.loads(payload)
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    resp = answer["response"]
    assert resp["uid"] == "abc-123" and resp["allowed"] is True
    assert any(w.startswith("GPU002 ") for w in resp["warnings"])
    for w in resp["warnings"]:
        assert "\n" not in w and len(w) <= MAX_WARNING_CHARS
    assert "GPU002" in resp["auditAnnotations"]["ailint.io/findings"]


def test_dry_run_requests_are_answered_the_same(server, certs):
    _, a = request(server, certs, "POST", "/validate", review(GPU_POD, uid="u1", dry_run=True))
    _, b = request(server, certs, "POST", "/validate", review(GPU_POD, uid="u1", dry_run=False))
    assert json.loads(a) == json.loads(b)


def test_delete_without_object_is_allowed(server, certs):
    r = review(GPU_POD, uid="del")
    r["request"]["object"] = None
    r["request"]["operation"] = "DELETE"
    status, payload = request(server, certs, "POST", "/validate", r)
    assert status == 200 and json.loads(payload)["response"] == {"uid": "del", "allowed": True}


def test_warning_cap(server, certs):
    many = dict(GPU_POD)
    many["spec"] = {"containers": [{"name": f"c{i}", "image": "x:1",
                                    "resources": {"requests": {"nvidia.com/gpu": 1}}} for i in range(30)]}
    _, payload = request(server, certs, "POST", "/validate", review(many))
    warnings = json.loads(payload)["response"]["warnings"]
    assert len(warnings) == 21 and warnings[-1].startswith("ailint: +")


@pytest.mark.parametrize("raw,expected", [
    (b"{not json", 400),
    (json.dumps({"kind": "Pod"}).encode(), 400),
    (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}).encode(), 400),
])
def test_bad_bodies(server, certs, raw, expected):
    status, _ = request(server, certs, "POST", "/validate", raw=raw)
    assert status == expected
    status, _ = request(server, certs, "GET", "/healthz")
    assert status == 200  # the server lives on


def test_oversized_body(server, certs):
    status, _ = request(server, certs, "POST", "/validate", raw=b"x" * (3 * 1024 * 1024 + 1))
    assert status == 413
    assert request(server, certs, "GET", "/readyz")[0] == 200


def test_metrics_and_log_lines(server, certs):
    request(server, certs, "POST", "/validate", review(GPU_POD, uid="m1"))
    status, payload = request(server, certs, "GET", "/metrics")
    text = payload.decode()
    assert status == 200
    assert 'ailint_webhook_requests_total{outcome="allowed"}' in text
    assert 'ailint_webhook_findings_total{code="GPU002"}' in text
    assert "ailint_webhook_request_duration_seconds_bucket" in text
    lines = [json.loads(x) for x in server[1].getvalue().splitlines()]
    assert any(x.get("uid") == "m1" and "GPU002" in x["codes"] for x in lines)


def test_concurrent_burst(server, certs):
    def one(i):
        return request(server, certs, "POST", "/validate", review(GPU_POD, uid=f"b{i}"))

    with ThreadPoolExecutor(16) as ex:
        results = list(ex.map(one, range(64)))
    assert all(s == 200 for s, _ in results)
    assert sorted(json.loads(p)["response"]["uid"] for _, p in results) == sorted(f"b{i}" for i in range(64))


def test_enforce_mode_denies_errors(certs):
    srv = build_server("127.0.0.1", 0, Settings(), tls_cert=str(certs[0]), tls_key=str(certs[1]),
                       enforce=True, log=io.StringIO())
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        _, payload = request((srv, None), certs, "POST", "/validate", review(GPU_POD))
        resp = json.loads(payload)["response"]
        assert resp["allowed"] is False and "GPU002" in resp["status"]["message"]
    finally:
        srv.shutdown()
        srv.server_close()


def test_serve_command_starts_and_stops_on_sigterm(certs):
    import signal
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-m", "ailint", "webhook", "serve", "--host", "127.0.0.1", "--port", "0",
                             "--tls-cert", str(certs[0]), "--tls-key", str(certs[1])],
                            stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(proc.stderr.readline())
        assert first["msg"] == "ailint webhook listening" and first["tls"] is True and first["mode"] == "dry-run"
        port = first["port"]
        ctx = ssl.create_default_context(cafile=str(certs[0]))
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
        conn.request("GET", "/healthz")
        assert conn.getresponse().status == 200
        conn.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_serve_requires_tls_or_insecure_flag():
    import sys

    out = subprocess.run([sys.executable, "-m", "ailint", "webhook", "serve", "--port", "0"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "--tls-cert" in out.stderr
