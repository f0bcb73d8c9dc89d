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
from ailint.doors.webhook import MAX_WARNING_CHARS, build_server
from ailint.engine.config import Settings

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI needed to make a test cert")

GPU_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "vllm", "namespace": "ai"},
    "spec": {
        "containers": [
            {"name": "vllm", "image": "vllm/vllm-openai:v0.9.2", "resources": {"requests": {"nvidia.com/gpu": 1}}}
        ]
    },
}


def review(obj, uid="uid-1", dry_run=False):
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": obj.get("kind", "")},
            "operation": "CREATE",
            "namespace": "ai",
            "dryRun": dry_run,
            "object": obj,
        },
    }


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(d / "key.pem"),
            "-out",
            str(d / "cert.pem"),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )
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
    many["spec"] = {
        "containers": [
            {"name": f"c{i}", "image": "x:1", "resources": {"requests": {"nvidia.com/gpu": 1}}} for i in range(30)
        ]
    }
    _, payload = request(server, certs, "POST", "/validate", review(many))
    warnings = json.loads(payload)["response"]["warnings"]
    assert len(warnings) == 21 and warnings[-1].startswith("ailint: +")


@pytest.mark.parametrize(
    "raw,expected",
    [
        (b"{not json", 400),
        (json.dumps({"kind": "Pod"}).encode(), 400),
        (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}).encode(), 400),
    ],
)
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
    srv = build_server(
        "127.0.0.1", 0, Settings(), tls_cert=str(certs[0]), tls_key=str(certs[1]), enforce=True, log=io.StringIO()
    )
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

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ailint",
            "webhook",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--tls-cert",
            str(certs[0]),
            "--tls-key",
            str(certs[1]),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
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

    out = subprocess.run(
        [sys.executable, "-m", "ailint", "webhook", "serve", "--port", "0"], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 2 and "--tls-cert" in out.stderr


# --- keep-alive, graceful drain, --workers ------------------------------------------------


def _tls(certs):
    return ssl.create_default_context(cafile=str(certs[0]))


class _At:  # what `request` needs of a server: its address
    def __init__(self, port):
        self.server_address = ("127.0.0.1", port)


def test_keep_alive_answers_in_one_segment(server, certs, monkeypatch):
    """Many requests over one connection, as the API server sends them; a response split in
    two writes made Nagle's algorithm wait for the client's delayed ACK (40 ms each). Each
    answer must leave in one write, on a socket with TCP_NODELAY (counted where the server
    writes, not timed: a timed test fails on a busy machine)."""
    import socket

    client = threading.get_ident()
    writes: list[tuple[int, bool]] = []  # per write of the server: (bytes, TCP_NODELAY set)

    def counted(real):
        def write(self, data, *args):
            if threading.get_ident() != client:
                nodelay = self.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
                writes.append((len(data), nodelay))
            return real(self, data, *args)

        return write

    monkeypatch.setattr(ssl.SSLSocket, "send", counted(ssl.SSLSocket.send))
    monkeypatch.setattr(ssl.SSLSocket, "sendall", counted(ssl.SSLSocket.sendall))
    conn = http.client.HTTPSConnection("127.0.0.1", server[0].server_address[1], context=_tls(certs), timeout=10)
    try:
        for i in range(10):
            conn.request(
                "POST",
                "/validate",
                body=json.dumps(review(GPU_POD, uid=f"k{i}")).encode(),
                headers={"Content-Type": "application/json"},
            )
            resp = conn.getresponse()
            assert resp.status == 200 and resp.getheader("Content-Length")
            assert json.loads(resp.read())["response"]["uid"] == f"k{i}"
            assert len(writes) == i + 1, "status, headers and body in one write"
    finally:
        conn.close()
    assert all(nodelay for _, nodelay in writes), "TCP_NODELAY on the connection"


def test_shutdown_finishes_in_flight_and_closes_idle_connections(certs):
    import time

    srv = build_server("127.0.0.1", 0, Settings(), tls_cert=str(certs[0]), tls_key=str(certs[1]), log=io.StringIO())
    slow = threading.Event()
    real = srv.reviewer.findings_for

    def findings_for(obj):
        slow.set()
        time.sleep(0.5)
        return real(obj)

    srv.reviewer.findings_for = findings_for
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    port = srv.server_address[1]
    idle = http.client.HTTPSConnection("127.0.0.1", port, context=_tls(certs), timeout=10)
    idle.request("GET", "/healthz")
    assert idle.getresponse().read() == b"ok\n"  # now idle, kept alive
    answers = []

    def in_flight():
        answers.append(request((srv, None), certs, "POST", "/validate", review(GPU_POD, uid="late")))

    c = threading.Thread(target=in_flight)
    c.start()
    assert slow.wait(5)
    closer = threading.Thread(target=lambda: (srv.shutdown(), srv.server_close()), daemon=True)
    closer.start()  # server_close drains: the idle connection is closed, the slow request answered
    closer.join(5)
    assert not closer.is_alive(), "an idle keep-alive connection held the shutdown"
    c.join(5)
    assert answers and answers[0][0] == 200 and json.loads(answers[0][1])["response"]["uid"] == "late"
    with pytest.raises((http.client.HTTPException, OSError)):
        idle.request("GET", "/healthz")
        idle.getresponse().read()
    idle.close()


def test_metrics_add_up_worker_rows():
    from ailint.doors.webhook import Metrics

    m = Metrics(["GPU002"], workers=2)
    m.observe("allowed", 0.003, ["GPU002"])
    m.row = 1
    m.observe("allowed", 0.2, ["GPU002", "GPU002"])
    m.observe("http_400", 0.001, [])
    text = m.render()
    assert 'ailint_webhook_requests_total{outcome="allowed"} 2' in text
    assert 'ailint_webhook_requests_total{outcome="http_400"} 1' in text
    assert 'ailint_webhook_findings_total{code="GPU002"} 3' in text
    assert 'ailint_webhook_request_duration_seconds_bucket{le="0.005"} 2' in text
    assert 'ailint_webhook_request_duration_seconds_bucket{le="+Inf"} 3' in text
    assert 'ailint_webhook_worker_requests_total{worker="0"} 1' in text
    assert 'ailint_webhook_worker_requests_total{worker="1"} 2' in text


def _alive(pid):
    import os

    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _wait_gone(pids, seconds):
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return not any(_alive(p) for p in pids)


def _start_workers(certs, n=2):
    import sys

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ailint",
            "webhook",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--tls-cert",
            str(certs[0]),
            "--tls-key",
            str(certs[1]),
            "--workers",
            str(n),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    banner = json.loads(proc.stderr.readline())
    assert banner["msg"] == "ailint webhook listening" and banner["workers"] == n and len(banner["pids"]) == n
    return proc, banner


needs_fork = pytest.mark.skipif(
    not hasattr(__import__("os"), "fork") or not __import__("os").path.isdir("/proc"),
    reason="--workers needs fork; the checks read /proc",
)


@needs_fork
def test_workers_answer_a_burst_and_stop_on_sigterm(certs):
    import signal

    proc, banner = _start_workers(certs)
    port = banner["port"]
    try:

        def client(c):  # one keep-alive connection per client, four requests each
            conn = http.client.HTTPSConnection("127.0.0.1", port, context=_tls(certs), timeout=10)
            out = []
            for i in range(4):
                conn.request(
                    "POST",
                    "/validate",
                    body=json.dumps(review(GPU_POD, uid=f"w{c}-{i}")).encode(),
                    headers={"Content-Type": "application/json"},
                )
                resp = conn.getresponse()
                out.append((resp.status, json.loads(resp.read())["response"]["uid"]))
            conn.close()
            return out

        with ThreadPoolExecutor(16) as ex:
            results = [r for rs in ex.map(client, range(16)) for r in rs]
        assert all(s == 200 for s, _ in results)
        assert sorted(u for _, u in results) == sorted(f"w{c}-{i}" for c in range(16) for i in range(4))
        _status, payload = request((_At(port), None), certs, "GET", "/metrics")
        text = payload.decode()
        assert 'ailint_webhook_requests_total{outcome="allowed"} 64' in text  # all workers, any scrape
        assert "ailint_webhook_workers 2" in text
        idle = http.client.HTTPSConnection("127.0.0.1", port, context=_tls(certs), timeout=10)
        idle.request("GET", "/readyz")
        assert idle.getresponse().read() == b"ok\n"  # an idle keep-alive connection must not hold the stop
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert _wait_gone(banner["pids"], 5), "no worker may outlive the parent"
        assert json.loads(proc.stderr.read().strip().splitlines()[-1])["msg"] == "ailint webhook stopped"
        idle.close()
    finally:
        if proc.poll() is None:
            proc.kill()


@needs_fork
def test_a_dead_worker_is_replaced_and_orphans_leave(certs):
    import os
    import signal

    proc, banner = _start_workers(certs)
    try:
        os.kill(banner["pids"][0], signal.SIGKILL)
        line = json.loads(proc.stderr.readline())
        assert line["msg"] == "ailint webhook worker exited" and line["restart"] is True
        for _i in range(8):  # still served, by the survivor or the replacement
            assert request((_At(banner["port"]), None), certs, "GET", "/healthz")[0] == 200
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as fh:
            workers = [int(p) for p in fh.read().split()]
        assert len(workers) == 2 and banner["pids"][1] in workers
        proc.kill()  # the parent dies without stopping them: the workers notice and leave
        proc.wait(timeout=5)
        assert _wait_gone(workers, 5)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_workers_option_rejects_negative():
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "ailint", "webhook", "serve", "--insecure-http", "--workers", "-1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 2 and "--workers" in out.stderr


def _make_cert(d, cn):
    d.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(d / "key.pem"),
            "-out",
            str(d / "cert.pem"),
            "-days",
            "1",
            "-subj",
            f"/CN={cn}",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return d / "cert.pem", d / "key.pem"


def _served_cert(port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, ctx.wrap_socket(raw) as tls:
        return tls.getpeercert(binary_form=True)


def test_a_renewed_certificate_is_served_without_a_restart(tmp_path):
    """cert-manager renews into the mounted Secret: new connections get the new pair, and a
    pair that does not load keeps the old one."""
    old_cert, old_key = _make_cert(tmp_path / "old", "old")
    new_cert, new_key = _make_cert(tmp_path / "new", "new")
    live = tmp_path / "live"
    live.mkdir()
    shutil.copy(old_cert, live / "tls.crt")
    shutil.copy(old_key, live / "tls.key")
    log = io.StringIO()
    srv = build_server(
        "127.0.0.1", 0, Settings(), tls_cert=str(live / "tls.crt"), tls_key=str(live / "tls.key"), log=log
    )
    srv.tls.interval = 0.0
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        port = srv.server_address[1]
        first = _served_cert(port)
        (live / "tls.crt").write_text("not a certificate\n")  # caught half way: keep the old pair
        assert _served_cert(port) == first
        assert "kept its TLS certificate" in log.getvalue()
        shutil.copy(new_key, live / "tls.key")
        shutil.copy(new_cert, live / "tls.crt")
        renewed = _served_cert(port)
        assert renewed != first
        assert renewed == ssl.PEM_cert_to_DER_cert(new_cert.read_text())
        assert "reloaded its TLS certificate" in log.getvalue()
    finally:
        srv.shutdown()
        srv.server_close()
