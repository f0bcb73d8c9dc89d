"""The admission webhook, dry-run by default: every request is allowed, findings come back
as `warnings` (shown by kubectl) and `auditAnnotations` (kept in the audit log).

Standard library only (http.server + ssl): the webhook must start fast and have nothing to
break. Only single-object rules run: an AdmissionReview holds one object. A request that
takes too long is answered `allowed: true` with a warning rather than letting the API
server time out; bodies over 3 MiB get 413, malformed ones 400, and the server lives on.
"""

from __future__ import annotations

import json
import signal
import ssl
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import __version__

MAX_BODY = 3 * 1024 * 1024
MAX_WARNINGS = 20
MAX_WARNING_CHARS = 120
ANALYSIS_TIMEOUT = 3.0  # seconds; the webhook configuration allows 5
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class Metrics:
    """Prometheus text-format counters and a latency histogram, thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: dict[str, int] = {}
        self.findings: dict[str, int] = {}
        self.buckets = [0] * len(_BUCKETS)
        self.count = 0
        self.total = 0.0

    def observe(self, outcome: str, seconds: float, codes: list[str]) -> None:
        with self.lock:
            self.requests[outcome] = self.requests.get(outcome, 0) + 1
            for c in codes:
                self.findings[c] = self.findings.get(c, 0) + 1
            for i, b in enumerate(_BUCKETS):
                if seconds <= b:
                    self.buckets[i] += 1
            self.count += 1
            self.total += seconds

    def render(self) -> str:
        with self.lock:
            out = ["# HELP ailint_webhook_requests_total Admission requests by outcome.",
                   "# TYPE ailint_webhook_requests_total counter"]
            for k, v in sorted(self.requests.items()):
                out.append(f'ailint_webhook_requests_total{{outcome="{k}"}} {v}')
            out += ["# HELP ailint_webhook_findings_total Findings reported, by rule code.",
                    "# TYPE ailint_webhook_findings_total counter"]
            for k, v in sorted(self.findings.items()):
                out.append(f'ailint_webhook_findings_total{{code="{k}"}} {v}')
            out += ["# HELP ailint_webhook_request_duration_seconds Time to answer /validate.",
                    "# TYPE ailint_webhook_request_duration_seconds histogram"]
            for b, n in zip(_BUCKETS, self.buckets):
                out.append(f'ailint_webhook_request_duration_seconds_bucket{{le="{b}"}} {n}')
            out.append(f'ailint_webhook_request_duration_seconds_bucket{{le="+Inf"}} {self.count}')
            out.append(f"ailint_webhook_request_duration_seconds_sum {self.total:.6f}")
            out.append(f"ailint_webhook_request_duration_seconds_count {self.count}")
            out.append(f'ailint_build_info{{version="{__version__}"}} 1')
            return "\n".join(out) + "\n"


class Reviewer:
    """Lints one admission object with the single-object rules."""

    def __init__(self, settings: Any, enforce: bool = False, timeout: float = ANALYSIS_TIMEOUT) -> None:
        from . import registry
        from .run import Engine

        self.settings = settings
        self.enforce = enforce
        self.timeout = timeout
        rules = registry.select(settings.select, settings.ignore, settings.extend_select)
        self.engine = Engine(settings, rules, only_object_rules=True)
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ailint-review")

    def findings_for(self, obj: dict[str, Any]) -> list[Any]:
        """Findings for one object as the API server sent it (JSON, already parsed).

        The object is checked as is, without a YAML round trip: positions do not matter
        in a warning, so every span falls back to the object itself.
        """
        from . import suppress
        from .facts import Context
        from .model import K8sObject, SourceFile
        from .run import _selector_matches

        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        name = meta.get("name") or meta.get("generateName") or ""
        source = SourceFile("-", f"{obj.get('kind', 'object')}/{name}", "")
        o = K8sObject(source, 0, obj, {})
        ctx = Context(profile=self.settings.profile, bundle=False)
        out = []
        for reg in self.engine.object_rules:
            out.extend(self.engine.check(reg, o, ctx))
        sups = suppress.annotation_suppressions(o)
        res = suppress.apply(out, sups, _selector_matches, lambda s: True, lambda s: False)
        return sorted(res.kept, key=lambda f: (-f.severity.rank, f.code, f.message))

    def review(self, review: dict[str, Any]) -> tuple[dict[str, Any], list[str], bool]:
        req = review["request"]
        uid = req["uid"]
        obj = req.get("object")
        warnings: list[str] = []
        codes: list[str] = []
        allowed = True
        message = None
        if isinstance(obj, dict) and obj:
            try:
                findings = self.pool.submit(self.findings_for, obj).result(timeout=self.timeout)
            except FutureTimeout:
                findings = []
                warnings.append("ailint: analysis took too long; object not checked")
            except Exception as exc:  # noqa: BLE001 - a webhook never fails the request
                findings = []
                warnings.append(f"ailint: internal error ({type(exc).__name__}); object not checked")
            codes = [f.code for f in findings]
            for f in findings[:MAX_WARNINGS]:
                warnings.append(_warning_line(f))
            if len(findings) > MAX_WARNINGS:
                warnings.append(f"ailint: +{len(findings) - MAX_WARNINGS} more findings (run ailint check)")
            errors = [f for f in findings if f.severity.value == "error"]
            if self.enforce and errors:
                allowed = False
                message = f"ailint: {len(errors)} error finding(s): " + ", ".join(sorted({f.code for f in errors}))
        response: dict[str, Any] = {"uid": uid, "allowed": allowed}
        if warnings:
            response["warnings"] = warnings
        if codes:
            response["auditAnnotations"] = {
                "ailint.io/findings": ",".join(sorted(set(codes)))[:1000],
                "ailint.io/count": str(len(codes)),
            }
        if message:
            response["status"] = {"code": 403, "message": message}
        return ({"apiVersion": review.get("apiVersion", "admission.k8s.io/v1"), "kind": "AdmissionReview",
                 "response": response}, codes, allowed)


def _warning_line(f: Any) -> str:
    text = " ".join(f"{f.code} {f.message}".split())
    if len(text) > MAX_WARNING_CHARS:
        text = text[: MAX_WARNING_CHARS - 1].rstrip() + "…"
    return text


def valid_review(body: Any) -> str | None:
    """None when `body` is an admission.k8s.io/v1 AdmissionReview request, else why not."""
    if not isinstance(body, dict):
        return "body is not a JSON object"
    if body.get("kind") != "AdmissionReview":
        return "kind is not AdmissionReview"
    if body.get("apiVersion") not in ("admission.k8s.io/v1", "admission.k8s.io/v1beta1"):
        return "apiVersion is not admission.k8s.io/v1"
    req = body.get("request")
    if not isinstance(req, dict) or not isinstance(req.get("uid"), str) or not req.get("uid"):
        return "request.uid is missing"
    return None


def make_handler(reviewer: Reviewer, metrics: Metrics, log=sys.stderr):
    class Handler(BaseHTTPRequestHandler):
        server_version = f"ailint-webhook/{__version__}"
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: Any) -> None:  # silence the default access log
            pass

        def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, message: str, started: float) -> None:
            metrics.observe(f"http_{status}", time.perf_counter() - started, [])
            self._log({"status": status, "error": message})
            self._send(status, json.dumps({"error": message}).encode())

        def _log(self, entry: dict[str, Any]) -> None:
            entry = {"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "path": self.path, **entry}
            try:
                log.write(json.dumps(entry) + "\n")
                log.flush()
            except (OSError, ValueError):
                pass

        def do_GET(self) -> None:  # noqa: N802
            if self.path in ("/healthz", "/readyz"):
                self._send(200, b"ok\n", "text/plain")
            elif self.path == "/metrics":
                self._send(200, metrics.render().encode(), "text/plain; version=0.0.4")
            else:
                self._send(404, b'{"error": "not found"}')

        def do_POST(self) -> None:  # noqa: N802
            started = time.perf_counter()
            if self.path.split("?", 1)[0] != "/validate":
                self._send(404, b'{"error": "not found"}')
                return
            try:
                length = int(self.headers.get("Content-Length") or "0")
            except ValueError:
                self._error(400, "bad Content-Length", started)
                return
            if length > MAX_BODY:
                # drain what a sane client sends, so it reads our 413 instead of a reset
                remaining = min(length, 8 * MAX_BODY)
                while remaining > 0:
                    chunk = self.rfile.read(min(65536, remaining))
                    if not chunk:
                        break
                    remaining -= len(chunk)
                self.close_connection = True
                self._error(413, f"body over {MAX_BODY} bytes", started)
                return
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                self._error(400, "malformed JSON", started)
                return
            problem = valid_review(body)
            if problem:
                self._error(400, problem, started)
                return
            answer, codes, allowed = reviewer.review(body)
            elapsed = time.perf_counter() - started
            metrics.observe("allowed" if allowed else "denied", elapsed, codes)
            req = body["request"]
            obj = req.get("object") if isinstance(req.get("object"), dict) else {}
            meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            self._log({"uid": req["uid"], "operation": req.get("operation"), "dryRun": bool(req.get("dryRun")),
                       "kind": obj.get("kind"), "namespace": req.get("namespace") or meta.get("namespace"),
                       "name": req.get("name") or meta.get("name"), "allowed": allowed, "findings": len(codes),
                       "codes": sorted(set(codes)), "ms": round(elapsed * 1000, 2)})
            self._send(200, json.dumps(answer).encode())

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = False  # shutdown waits for in-flight requests
    block_on_close = True
    allow_reuse_address = True


def build_server(host: str, port: int, settings: Any, *, tls_cert: str | None, tls_key: str | None,
                 insecure_http: bool = False, enforce: bool = False, log=sys.stderr) -> Server:
    reviewer = Reviewer(settings, enforce=enforce)
    server = Server((host, port), make_handler(reviewer, Metrics(), log))
    if not insecure_http:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(tls_cert, tls_key)  # type: ignore[arg-type]
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    return server


def serve(host: str, port: int, tls_cert: str | None, tls_key: str | None, insecure_http: bool = False,
          enforce: bool = False, config_file: str | None = None) -> int:
    from .config import ConfigError, load_settings

    try:
        settings = load_settings(config_file, no_config=config_file is None)
    except ConfigError as exc:
        print(f"ailint: error: {exc}", file=sys.stderr)
        return 2
    if insecure_http:
        print("ailint: WARNING: serving plain HTTP (--insecure-http); the API server requires TLS. "
              "Use this for local tests only.", file=sys.stderr)
    try:
        server = build_server(host, port, settings, tls_cert=tls_cert, tls_key=tls_key,
                              insecure_http=insecure_http, enforce=enforce)
    except (OSError, ssl.SSLError) as exc:
        print(f"ailint: error: cannot start the webhook: {exc}", file=sys.stderr)
        return 2

    def stop(signum: int, frame: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    mode = "enforce" if enforce else "dry-run"
    print(json.dumps({"msg": "ailint webhook listening", "host": host, "port": server.server_address[1],
                      "mode": mode, "tls": not insecure_http}), file=sys.stderr, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()  # joins in-flight request threads
    print(json.dumps({"msg": "ailint webhook stopped"}), file=sys.stderr, flush=True)
    return 0
