"""The admission webhook, dry-run by default: every request is allowed, findings come back
as `warnings` (shown by kubectl) and `auditAnnotations` (kept in the audit log).

Standard library only (http.server + ssl): the webhook must start fast and have nothing to
break. Only single-object rules run: an AdmissionReview holds one object. A request that
takes too long is answered `allowed: true` with a warning rather than letting the API
server time out; bodies over 3 MiB get 413, malformed ones 400, and the server lives on.

Latency notes (bench/webhook_latency.py):
- HTTP/1.1 keep-alive, as the kube-apiserver uses: every response carries Content-Length.
- A response leaves in one write (buffered `wfile`) with TCP_NODELAY: headers and body in
  two segments made Nagle's algorithm wait for the client's delayed ACK, 40 ms a request.
- The TLS handshake runs in the connection's thread, not in the accept loop.
- `--workers N` forks N processes after the rules are loaded and warmed up; they accept on
  one shared listening socket (pre-fork), so a Python process's GIL no longer serializes
  all the CPU work. The parent only supervises: it restarts a worker that dies, and on
  SIGTERM stops them all gracefully. /metrics, from any worker, adds up all workers
  (counters live in shared memory, one row per worker).
- Graceful stop: stop accepting, answer the requests in flight, close idle keep-alive
  connections.
"""

from __future__ import annotations

import gc
import io
import json
import math
import mmap
import os
import signal
import socket
import ssl
import sys
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ailint import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

MAX_BODY = 3 * 1024 * 1024
MAX_WARNINGS = 20
MAX_WARNING_CHARS = 120
ANALYSIS_TIMEOUT = 3.0  # seconds; the webhook configuration allows 5
IDLE_TIMEOUT = 120.0  # seconds a keep-alive connection may stay silent (Go's client drops idle ones at 90)
HANDSHAKE_TIMEOUT = 10.0  # the whole TLS handshake (CPython's handshake keeps one deadline)
HEADER_TIMEOUT = 10.0  # from a request's first byte to the end of its headers
BODY_TIMEOUT = 15.0  # from the end of the headers to the end of the body (3 MiB at most)
MAX_CONNECTIONS = 128  # connections served at once, each a thread; beyond: idle ones evicted, then 503
EVICT_SLACK = 16  # connections admitted above the bound while the evicted ones close
REJECT_THREADS = 8  # threads answering 503 at once (the TLS handshake needs one); beyond: closed
REJECT_TIMEOUT = 2.0
_BUSY_BODY = b'{"error": "too many connections; retry"}'
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: " + str(len(_BUSY_BODY)).encode() + b"\r\n\r\n" + _BUSY_BODY
)
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_OUTCOMES = ("allowed", "denied", "http_400", "http_413")
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
_MAX_RESTARTS = 5  # worker restarts within a minute before the supervisor gives up


class Metrics:
    """Prometheus text-format counters and a latency histogram.

    The numbers live in an anonymous shared memory map with one row per worker process:
    each process writes only its own row (`row`, under a thread lock) and `render` adds
    up all rows, so a scrape of any worker reports the whole pod. Outcomes and codes
    outside the layout (not expected) are counted in this process only.
    """

    def __init__(self, codes: Iterable[str] = (), workers: int = 1) -> None:
        self.lock = threading.Lock()
        self.workers = max(1, workers)
        self.row = 0
        self.outcomes = list(_OUTCOMES)
        self.codes = sorted(set(codes))
        self._outcome_at = {k: i for i, k in enumerate(self.outcomes)}
        self._code_at = {k: len(self.outcomes) + i for i, k in enumerate(self.codes)}
        self._bucket_at = len(self.outcomes) + len(self.codes)
        self._count_at = self._bucket_at + len(_BUCKETS)
        self._sum_at = self._count_at + 1
        self.width = self._sum_at + 1
        self._mem = mmap.mmap(-1, 8 * self.width * self.workers)  # MAP_SHARED: forked workers see it
        self._cells = memoryview(self._mem).cast("d")
        self._extra_requests: dict[str, int] = {}
        self._extra_findings: dict[str, int] = {}

    def observe(self, outcome: str, seconds: float, codes: list[str]) -> None:
        cells, base = self._cells, self.row * self.width
        with self.lock:
            i = self._outcome_at.get(outcome)
            if i is None:
                self._extra_requests[outcome] = self._extra_requests.get(outcome, 0) + 1
            else:
                cells[base + i] += 1
            for c in codes:
                i = self._code_at.get(c)
                if i is None:
                    self._extra_findings[c] = self._extra_findings.get(c, 0) + 1
                else:
                    cells[base + i] += 1
            for j, b in enumerate(_BUCKETS):
                if seconds <= b:
                    cells[base + self._bucket_at + j] += 1
            cells[base + self._count_at] += 1
            cells[base + self._sum_at] += seconds

    def _totals(self) -> list[float]:
        cells, w = self._cells, self.width
        return [sum(cells[r * w + i] for r in range(self.workers)) for i in range(w)]

    def render(self) -> str:
        with self.lock:
            tot = self._totals()
            requests = {k: int(tot[i]) for k, i in self._outcome_at.items() if tot[i]}
            for k, v in self._extra_requests.items():
                requests[k] = requests.get(k, 0) + v
            findings = {k: int(tot[i]) for k, i in self._code_at.items() if tot[i]}
            for k, v in self._extra_findings.items():
                findings[k] = findings.get(k, 0) + v
            per_worker = [int(self._cells[r * self.width + self._count_at]) for r in range(self.workers)]
        out = [
            "# HELP ailint_webhook_requests_total Admission requests by outcome (all workers).",
            "# TYPE ailint_webhook_requests_total counter",
        ]
        for k, v in sorted(requests.items()):
            out.append(f'ailint_webhook_requests_total{{outcome="{k}"}} {v}')
        out += [
            "# HELP ailint_webhook_findings_total Findings reported, by rule code.",
            "# TYPE ailint_webhook_findings_total counter",
        ]
        for k, v in sorted(findings.items()):
            out.append(f'ailint_webhook_findings_total{{code="{k}"}} {v}')
        out += [
            "# HELP ailint_webhook_request_duration_seconds Time to answer /validate.",
            "# TYPE ailint_webhook_request_duration_seconds histogram",
        ]
        for j, b in enumerate(_BUCKETS):
            out.append(f'ailint_webhook_request_duration_seconds_bucket{{le="{b}"}} {int(tot[self._bucket_at + j])}')
        out.append(f'ailint_webhook_request_duration_seconds_bucket{{le="+Inf"}} {int(tot[self._count_at])}')
        out.append(f"ailint_webhook_request_duration_seconds_sum {tot[self._sum_at]:.6f}")
        out.append(f"ailint_webhook_request_duration_seconds_count {int(tot[self._count_at])}")
        out += [
            "# HELP ailint_webhook_worker_requests_total Timed requests handled, by worker process.",
            "# TYPE ailint_webhook_worker_requests_total counter",
        ]
        for r, n in enumerate(per_worker):
            out.append(f'ailint_webhook_worker_requests_total{{worker="{r}"}} {n}')
        out.append("# TYPE ailint_webhook_workers gauge")
        out.append(f"ailint_webhook_workers {self.workers}")
        out.append(f'ailint_build_info{{version="{__version__}"}} 1')
        return "\n".join(out) + "\n"


# Objects run once at start-up so that every lazy import and table a rule needs is loaded
# before the first request (and, with --workers, before the fork, shared by all workers).
_WARM_CONTAINER = {
    "name": "c",
    "image": "vllm/vllm-openai:v0.9.2",
    "resources": {"requests": {"nvidia.com/gpu": 1, "cpu": "1"}, "limits": {"nvidia.com/gpu": 1}},
}
_WARM_POD_SPEC = {"containers": [_WARM_CONTAINER], "nodeSelector": {"karpenter.sh/nodepool": "gpu"}}
_WARM_OBJECTS = [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "warm"}, "spec": _WARM_POD_SPEC},
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "warm"},
        "spec": {"replicas": 1, "template": {"spec": _WARM_POD_SPEC}},
    },
    {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "warm"},
        "spec": {"template": {"spec": _WARM_POD_SPEC}},
    },
    {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "warm"},
        "spec": {
            "headGroupSpec": {"template": {"spec": _WARM_POD_SPEC}},
            "workerGroupSpecs": [{"groupName": "g", "replicas": 1, "template": {"spec": _WARM_POD_SPEC}}],
        },
    },
    {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "warm"},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]}
                    ]
                }
            }
        },
    },
]


class Reviewer:
    """Lints one admission object with the single-object rules."""

    def __init__(self, settings: Any, enforce: bool = False, timeout: float = ANALYSIS_TIMEOUT) -> None:
        from ailint.core.model import K8sObject, SourceFile
        from ailint.domain.context import Context
        from ailint.engine import registry, suppress
        from ailint.engine.run import Engine

        self.settings = settings
        self.enforce = enforce
        self.timeout = timeout
        rules = registry.select(settings.select, settings.ignore, settings.extend_select)
        self.engine = Engine(settings, rules, only_object_rules=True)
        # bundle rules that can judge one object by itself (`Rule.single_object`) run with a
        # context of the request's object alone; those that need other objects stay off
        self.alone = Engine(settings, [r for r in rules if r.rule.scope.value == "bundle" and r.rule.single_object])
        # resolved once, not per request
        self._suppress, self._Context, self._K8sObject, self._SourceFile = suppress, Context, K8sObject, SourceFile
        self._selector_matches = registry.selector_matches
        # threads start on first use: a Reviewer built before a fork is safe to share
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ailint-review")

    def codes(self) -> list[str]:
        """Every code a finding of this reviewer can carry (the metrics layout)."""
        from ailint.engine.registry import all_rules

        own = {r.rule.code for r in self.engine.object_rules} | {r.rule.code for r in self.alone.bundle_rules}
        engine = {c for c, reg in all_rules().items() if reg.rule.engine and reg.rule.family in ("YML", "AIL")}
        return sorted(own | engine)

    def warm(self) -> None:
        """Run the rules once on a few typical objects, in this thread (no pool threads),
        then move everything loaded so far out of the garbage collector's sight: the
        collections a request triggers only scan what requests allocate (and, with
        --workers, the pages shared with the parent stay shared)."""
        for obj in _WARM_OBJECTS:
            try:
                self.findings_for(json.loads(json.dumps(obj)))
            except Exception:
                pass
        gc.collect()
        gc.freeze()

    def findings_for(self, obj: dict[str, Any]) -> list[Any]:
        """Findings for one object as the API server sent it (JSON, already parsed).

        The object is checked as is, without a YAML round trip: positions do not matter
        in a warning, so every span falls back to the object itself.
        """
        raw_meta = obj.get("metadata")
        meta = raw_meta if isinstance(raw_meta, dict) else {}
        name = meta.get("name") or meta.get("generateName") or ""
        source = self._SourceFile("-", f"{obj.get('kind', 'object')}/{name}", "")
        o = self._K8sObject(source, 0, obj, {})
        ctx = self._Context(profile=self.settings.profile, bundle=False)
        # the rules for this kind (resolved once per kind); the object and its memo die with
        # the request: memory stays flat, and its garbage is young (no long full-GC pauses)
        out = self.engine.check_object(o, ctx)
        sups = self._suppress.annotation_suppressions(o)
        out = out + self._alone_findings(o) + self._provider_findings(o)
        res = self._suppress.apply(out, sups, self._selector_matches, lambda s: True, lambda s: False)
        return sorted(res.kept, key=lambda f: (-f.severity.rank, f.code, f.message))

    def _provider_findings(self, o: Any) -> list[Any]:
        """Providers' passes on `o` alone: the admission policies of the config's `policies:`
        (custom rules are object rules, already in `self.engine`)."""
        from ailint.engine import registry

        enabled = {r.rule.code for r in self.engine.rules}
        out: list[Any] = []
        for provider in registry.providers():
            out.extend(provider.run_pass([o], self.settings, enabled))
        return out

    def _alone_findings(self, o: Any) -> list[Any]:
        """The single-object bundle rules on `o`, with a context that holds `o` only."""
        rules = self.alone.rules_for(o, bundle=True)
        if not rules:
            return []
        ctx = self._Context(objects=[o], profile=self.settings.profile, bundle=True)
        out: list[Any] = []
        try:
            for reg in rules:
                out.extend(self.alone.check(reg, o, ctx))
        finally:
            for forget in getattr(self, "_forget", ()):
                forget(o)
        return out

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
            except Exception as exc:
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
                "ailint.io/messages": audit_messages(findings),
            }
        if message:
            response["status"] = {"code": 403, "message": message}
        return (
            {
                "apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
                "kind": "AdmissionReview",
                "response": response,
            },
            codes,
            allowed,
        )


def _warning_line(f: Any) -> str:
    from ailint.report.common import redact_text

    # masked before it is cut short: a secret cut in half would no longer be recognised
    text = " ".join(redact_text(f"{f.code} {f.message}").split())
    return fit_warning(text, f.code, f.fix.title if getattr(f, "fix", None) is not None else None)


_CUT_TRAILING = " ,;:([{-–—"


def fit_warning(text: str, code: str, fix_title: str | None = None, limit: int = MAX_WARNING_CHARS) -> str:
    """`CODE message` within `limit` characters, cut at a word boundary, never mid-word.

    What is kept, in order: the code, the start of the message (the fact) and what to do:
    the fix's title after ` fix: ` when the finding has a fix, else the message's last
    `; ` clause, where messages say what to do. A cut fact ends in `…`; the full text
    stays in the audit annotation `ailint.io/messages`."""
    if len(text) <= limit:
        return text
    message = text[len(code) :].strip() if text.startswith(code) else text
    tail = ""
    if fix_title:
        tail = f" fix: {' '.join(fix_title.split())}"
    elif "; " in message:
        fact, advice = message.rsplit("; ", 1)
        if advice and len(advice) <= limit // 2:
            message, tail = fact, f"; {advice}"
    if len(code) + 1 + 24 + 1 + len(tail) > limit:  # no room for a useful fact beside the fix
        message, tail = (message + tail if tail.startswith(";") else message), ""
    room = limit - len(code) - 1 - 1 - len(tail)  # the space after the code, the ellipsis
    if len(message) < room:  # the fact is whole (only a fix title was added)
        return f"{code} {message}{tail}"
    return f"{code} {_cut_words(message, room)}…{tail}".replace(" …", "…")


def _cut_words(message: str, room: int) -> str:
    """The longest run of whole words of `message` within `room` characters."""
    if room <= 0:
        return ""
    if len(message) <= room:
        return message
    cut = message[: room + 1]
    space = cut.rfind(" ")
    head = cut[:space] if space > 0 else ""
    return head.rstrip(_CUT_TRAILING)


AUDIT_MESSAGES_CHARS = 8000


def audit_messages(findings: list[Any]) -> str:
    """Every finding's full message for the audit log (a JSON list of `CODE message`,
    whole entries only, within AUDIT_MESSAGES_CHARS)."""
    out: list[str] = []
    size = 2
    for f in findings:
        entry = f"{f.code} {' '.join(f.message.split())}"
        size += len(json.dumps(entry)) + 1
        if size > AUDIT_MESSAGES_CHARS:
            break
        out.append(entry)
    return json.dumps(out, ensure_ascii=False)


def valid_review(body: Any) -> str | None:
    """None when `body` is an admission.k8s.io/v1 AdmissionReview request, else why not."""
    if not isinstance(body, dict):
        return "body is not a JSON object"
    if body.get("kind") != "AdmissionReview":
        return "kind is not AdmissionReview"
    if body.get("apiVersion") not in ("admission.k8s.io/v1", "admission.k8s.io/v1beta1"):
        return "apiVersion is not admission.k8s.io/v1 (or v1beta1)"
    req = body.get("request")
    if not isinstance(req, dict) or not isinstance(req.get("uid"), str) or not req.get("uid"):
        return "request.uid is missing"
    return None


def _write_log(log: Any, entry: dict[str, Any]) -> None:
    entry = {"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **entry}
    try:
        log.write(json.dumps(entry) + "\n")  # one write: lines of several workers do not mix
        log.flush()
    except (OSError, ValueError):
        pass


def make_handler(
    reviewer: Reviewer, metrics: Metrics, log: TextIO = sys.stderr, worker: int | None = None
) -> type[BaseHTTPRequestHandler]:
    tag = {} if worker is None else {"worker": worker}

    class Handler(BaseHTTPRequestHandler):
        server_version = f"ailint-webhook/{__version__}"
        protocol_version = "HTTP/1.1"  # keep-alive, as the API server expects
        timeout = IDLE_TIMEOUT
        wbufsize = 64 * 1024  # status, headers and body leave in one write (flushed per request)
        disable_nagle_algorithm = True
        server: Server

        def setup(self) -> None:
            super().setup()
            # every read runs against a deadline (idle, headers, body), not a per-read timeout
            # that a client sending a byte at a time would reset forever
            self.reader = DeadlineReader(self.connection)
            self.rfile = io.BufferedReader(self.reader, 64 * 1024)
            self.phase, self.since = "idle", time.monotonic()
            self.server.track(self)

        def finish(self) -> None:
            try:
                super().finish()
            finally:
                self.server.untrack(self)

        def parse_request(self) -> bool:  # a request line arrived: this connection is busy
            stopping = self.server.mark(self, busy=True)
            ok = super().parse_request()  # reads the headers (under the header deadline)
            self.phase = "body"
            self.reader.deadline = time.monotonic() + self.server.body_timeout
            if stopping:
                self.close_connection = True
            return ok

        def _first_byte(self) -> None:  # a request begins: its headers must follow in time
            self.phase = "head"
            self.reader.deadline = time.monotonic() + self.server.header_timeout

        def handle_one_request(self) -> None:
            self.phase, self.since = "idle", time.monotonic()
            self.reader.deadline = self.since + (1.0 if self.server.stopping else self.server.idle_timeout)
            self.reader.on_data = self._first_byte
            try:
                super().handle_one_request()
            finally:
                if self.server.mark(self, busy=False):
                    self.close_connection = True

        def handle_expect_100(self) -> bool:
            ok = super().handle_expect_100()
            self.wfile.flush()  # the interim answer must not wait in the write buffer
            return ok

        def log_message(self, fmt: str, *args: Any) -> None:  # silence the default access log
            pass

        def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            if self.close_connection or self.server.stopping:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()  # one segment out now, before the log line is written

        def _error(self, status: int, message: str, started: float) -> None:
            metrics.observe(f"http_{status}", time.perf_counter() - started, [])
            self._log({"status": status, "error": message})
            self._send(status, json.dumps({"error": message}).encode())

        def _log(self, entry: dict[str, Any]) -> None:
            _write_log(log, {"path": self.path, **entry, **tag})

        def do_GET(self) -> None:
            if self.path in ("/healthz", "/readyz"):
                self._send(200, b"ok\n", "text/plain")
            elif self.path == "/metrics":
                self._send(200, metrics.render().encode(), "text/plain; version=0.0.4")
            elif self.path.split("?", 1)[0] == "/validate":  # exists, for POST only
                body = b'{"error": "method not allowed: use POST /validate"}'
                self.send_response(405)
                self.send_header("Allow", "POST")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()
            else:
                self._send(404, b'{"error": "not found"}')

        def do_POST(self) -> None:
            started = time.perf_counter()
            if self.path.split("?", 1)[0] != "/validate":
                self._send(404, b'{"error": "not found"}')
                return
            try:
                length = int(self.headers.get("Content-Length") or "0")
            except ValueError:
                self.close_connection = True  # the body's end is unknown
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
            raw = self.rfile.read(length) if length > 0 else b""
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
            payload = json.dumps(answer, separators=(",", ":")).encode()
            elapsed = time.perf_counter() - started
            metrics.observe("allowed" if allowed else "denied", elapsed, codes)
            self._send(200, payload)
            req = body["request"]
            obj = req.get("object") if isinstance(req.get("object"), dict) else {}
            raw_meta = obj.get("metadata")
            meta = raw_meta if isinstance(raw_meta, dict) else {}
            self._log(
                {
                    "uid": req["uid"],
                    "operation": req.get("operation"),
                    "dryRun": bool(req.get("dryRun")),
                    "kind": obj.get("kind"),
                    "namespace": req.get("namespace") or meta.get("namespace"),
                    "name": req.get("name") or meta.get("name"),
                    "allowed": allowed,
                    "findings": len(codes),
                    "codes": sorted(set(codes)),
                    "ms": round(elapsed * 1000, 2),
                }
            )

    return Handler


def listen_socket(host: str, port: int, backlog: int = 128) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=backlog)  # SO_REUSEADDR on POSIX


def tls_context(cert: str | None, key: str | None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)  # type: ignore[arg-type]
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


CERT_CHECK_SECONDS = 10.0


class ReloadingTLS:
    """The server's TLS context, reloaded when the certificate or key file changes.

    cert-manager renews the Certificate into the Secret and the kubelet swaps the mounted
    files (an atomic symlink switch), but a context loaded once would serve the old
    certificate until it expires and the API server's calls fail. New connections look at
    the files at most every `interval` seconds; a pair that does not load (a renewal caught
    half way) keeps the current context and is tried again at the next look.
    """

    def __init__(self, cert: str, key: str, log: Any = sys.stderr, interval: float = CERT_CHECK_SECONDS) -> None:
        self.cert, self.key, self.log, self.interval = cert, key, log, interval
        self._lock = threading.Lock()
        self._stamp = self._files_stamp()
        self._ctx = tls_context(cert, key)  # errors here stop the start, as before
        self._checked = time.monotonic()

    def _files_stamp(self) -> tuple[Any, ...]:
        out: list[Any] = []
        for f in (self.cert, self.key):
            try:
                st = os.stat(f)
                out.append((st.st_ino, st.st_mtime_ns, st.st_size))
            except OSError:
                out.append(None)
        return tuple(out)

    def context(self) -> ssl.SSLContext:
        now = time.monotonic()
        if now - self._checked < self.interval:
            return self._ctx
        with self._lock:
            if now - self._checked >= self.interval:
                self._checked = now
                stamp = self._files_stamp()
                if stamp != self._stamp:
                    try:
                        self._ctx = tls_context(self.cert, self.key)
                        self._stamp = stamp
                        _write_log(self.log, {"msg": "ailint webhook reloaded its TLS certificate"})
                    except (OSError, ssl.SSLError) as exc:
                        _write_log(
                            self.log,
                            {
                                "msg": "ailint webhook kept its TLS certificate",
                                "error": f"cannot load the new pair: {exc}",
                            },
                        )
        return self._ctx

    def wrap_socket(self, sock: socket.socket, server_side: bool = True) -> ssl.SSLSocket:
        return self.context().wrap_socket(sock, server_side=server_side)


class DeadlineReader(io.RawIOBase):
    """A socket's read side where every read waits at most until `deadline` (monotonic
    seconds): the idle, header and body limits hold however slowly a client sends.
    `on_data` is called once, on the first bytes after it is set."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock
        self.deadline = time.monotonic() + IDLE_TIMEOUT
        self.on_data: Any = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the connection's deadline passed")
        self.sock.settimeout(left)
        n = self.sock.recv_into(buffer)
        if n and self.on_data is not None:
            call, self.on_data = self.on_data, None
            call()
        return n


class Server(ThreadingHTTPServer):
    """A thread per connection, on a listening socket it may share with other workers.

    Under abuse (issue 19): the TLS handshake, the wait for a request on a kept-alive
    connection, a request's headers and its body each have a deadline (`handshake_timeout`,
    `idle_timeout`, `header_timeout`, `body_timeout`); at most `max_connections` are served
    at once. A connection beyond the bound first evicts the longest-idle kept-alive one
    (a client reconnects; a half-sent request is not idle and runs to its deadline), else
    it is answered 503 by one of `REJECT_THREADS` threads, else closed. The thread count
    stays below `max_connections + EVICT_SLACK + REJECT_THREADS` plus a few fixed ones.

    The socket is non-blocking: when several processes are woken for one connection, the
    ones that lose the race to accept it go back to waiting instead of blocking.
    """

    daemon_threads = False  # server_close waits for in-flight requests
    block_on_close = True

    def __init__(
        self,
        sock: socket.socket,
        handler: Any,
        tls: ReloadingTLS | ssl.SSLContext | None = None,
        log: Any = sys.stderr,
        *,
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout: float = IDLE_TIMEOUT,
        header_timeout: float = HEADER_TIMEOUT,
        body_timeout: float = BODY_TIMEOUT,
        handshake_timeout: float = HANDSHAKE_TIMEOUT,
    ) -> None:
        super().__init__(sock.getsockname()[:2], handler, bind_and_activate=False)
        self.max_connections = max(1, max_connections)
        self.idle_timeout, self.header_timeout = idle_timeout, header_timeout
        self.body_timeout, self.handshake_timeout = body_timeout, handshake_timeout
        self._active = 0  # connections with a thread (handshake included)
        self._rejecters = threading.BoundedSemaphore(REJECT_THREADS)
        self.socket.close()
        self.socket = sock
        sock.setblocking(False)
        self.server_address = sock.getsockname()
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]
        self.tls = tls
        self.log = log
        self.stopping = False
        self.reviewer: Reviewer | None = None
        self._conn_lock = threading.Lock()
        self._conns: dict[Any, bool] = {}  # handler -> busy

    # a stream server's requests are sockets: the (bytes, socket) pair in the base signature is
    # a datagram server's
    def finish_request(self, request: socket.socket, client_address: Any) -> None:  # type: ignore[override]
        """In the connection's thread: the TLS handshake, then the request loop."""
        if self.tls is None:
            # (typeshed types the handler's server argument as an unbound Self mypy cannot match)
            self.RequestHandlerClass(request, client_address, self)  # type: ignore[arg-type]
            return
        try:
            request.settimeout(self.handshake_timeout)
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = self.tls.wrap_socket(request, server_side=True)
        except (OSError, ValueError):
            return  # a failed handshake; the caller closes `request`
        try:
            self.RequestHandlerClass(conn, client_address, self)  # type: ignore[arg-type]  # (as above)
        finally:
            self.shutdown_request(conn)

    def process_request(self, request: Any, client_address: Any) -> None:
        """In the accept loop: a thread for the connection, within the bound."""
        victim = None
        with self._conn_lock:
            admit = self._active < self.max_connections
            if not admit and self._active < self.max_connections + EVICT_SLACK:
                idle = [h for h, busy in self._conns.items() if not busy and h.phase == "idle" and not h.evicted]
                if idle:
                    victim = min(idle, key=lambda h: h.since)
                    victim.evicted = admit = True
            if admit:
                self._active += 1
        if victim is not None:
            try:  # its thread wakes, reads the end of the stream and leaves
                socket.socket.shutdown(victim.connection, socket.SHUT_RDWR)
            except OSError:
                pass
        if not admit:
            self._reject(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            with self._conn_lock:
                self._active -= 1
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._conn_lock:
                self._active -= 1

    def active_connections(self) -> int:
        with self._conn_lock:
            return self._active

    def _reject(self, request: socket.socket) -> None:
        """Answer 503 in a short-lived thread of a small pool, or close when all are busy."""
        if not self._rejecters.acquire(blocking=False):
            self.shutdown_request(request)
            return

        def answer() -> None:
            conn: Any = request
            try:
                request.settimeout(REJECT_TIMEOUT)
                if self.tls is not None:
                    conn = self.tls.wrap_socket(request, server_side=True)
                conn.settimeout(0.2)  # read what was sent (no reset on close), not more
                try:
                    conn.recv(65536)
                except (OSError, ValueError):
                    pass
                conn.settimeout(REJECT_TIMEOUT)
                conn.sendall(_BUSY)
            except (OSError, ValueError):
                pass
            finally:
                self.shutdown_request(conn)
                self._rejecters.release()

        threading.Thread(target=answer, name="ailint-busy", daemon=True).start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            return  # the client went away or broke TLS: nothing to answer
        _write_log(self.log, {"error": f"{type(exc).__name__}: {exc}", "client": str(client_address[0])})

    def track(self, handler: Any) -> None:
        handler.evicted = False
        with self._conn_lock:
            self._conns[handler] = False
            if self.stopping:  # accepted while stopping: answer what was sent, then close
                handler.connection.settimeout(1.0)

    def untrack(self, handler: Any) -> None:
        with self._conn_lock:
            self._conns.pop(handler, None)

    def mark(self, handler: Any, busy: bool) -> bool:
        """Record whether a connection is inside a request; True when the server is stopping."""
        with self._conn_lock:
            if handler in self._conns:
                self._conns[handler] = busy
            return self.stopping

    def drain(self) -> None:
        """Stop keep-alive: idle connections are closed now, busy ones after their answer."""
        with self._conn_lock:
            self.stopping = True
            idle = [h for h, busy in self._conns.items() if not busy]
        for h in idle:
            try:  # a read end shut down wakes the thread waiting for a next request; writes still work
                socket.socket.shutdown(h.connection, socket.SHUT_RD)
            except OSError:
                pass

    def server_close(self) -> None:
        self.drain()
        super().server_close()  # closes the listening socket, joins the connection threads


def build_server(
    host: str,
    port: int,
    settings: Any,
    *,
    tls_cert: str | None,
    tls_key: str | None,
    insecure_http: bool = False,
    enforce: bool = False,
    log: TextIO = sys.stderr,
    **limits: Any,
) -> Server:
    """A single-process server, bound and listening (port 0 picks a free port); `limits`:
    the connection bounds of `Server` (max_connections, idle_timeout, header_timeout...)."""
    reviewer = Reviewer(settings, enforce=enforce)
    tls = None if insecure_http else ReloadingTLS(str(tls_cert), str(tls_key), log)
    sock = listen_socket(host, port)
    server = Server(sock, make_handler(reviewer, Metrics(reviewer.codes()), log), tls, log, **limits)
    server.reviewer = reviewer
    return server


def usable_cpus() -> int:
    """CPUs this process may use: affinity, capped by a cgroup v2 CPU quota (containers)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as fh:
            quota, period = fh.read().split()[:2]
        if quota != "max":
            n = min(n, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        pass
    return max(1, n)


def _run(server: Server, parent: int | None = None) -> None:
    """Serve until SIGTERM/SIGINT (or, in a worker, until the parent is gone); then drain."""
    stopping = threading.Event()

    def stop(signum: int = 0, frame: Any = None) -> None:
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if parent is not None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)  # blocked by the supervisor around fork

        def orphan_watch() -> None:
            while not stopping.wait(1.0):
                if os.getppid() != parent:
                    stop()

        threading.Thread(target=orphan_watch, daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()  # closes idle connections, joins in-flight request threads


def _supervise(
    sock: socket.socket,
    tls: ReloadingTLS | None,
    reviewer: Reviewer,
    metrics: Metrics,
    workers: int,
    log: Any,
    banner: dict[str, Any],
) -> int:
    """Fork `workers` processes serving `sock`; restart the ones that die; stop all on SIGTERM."""
    parent = os.getpid()
    children: dict[int, int] = {}  # pid -> worker slot
    state = {"stopping": False, "code": 0}
    restarts: list[float] = []

    def spawn(slot: int) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                metrics.row = slot
                server = Server(sock, make_handler(reviewer, metrics, log, worker=slot), tls, log)
                _run(server, parent=parent)
                code = 0
            except BaseException as exc:
                _write_log(
                    log,
                    {"msg": "ailint webhook worker failed", "worker": slot, "error": f"{type(exc).__name__}: {exc}"},
                )
            finally:
                try:
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        children[pid] = slot

    def on_signal(signum: int, frame: Any) -> None:
        state["stopping"] = True
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    for slot in range(workers):
        spawn(slot)
    print(json.dumps({**banner, "pids": sorted(children)}), file=sys.stderr, flush=True)
    signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    while children:
        try:
            pid, status = os.waitpid(-1, 0)  # retried after a signal handler runs (PEP 475)
        except ChildProcessError:
            break
        gone = children.pop(pid, None)
        if gone is None or state["stopping"]:
            continue
        slot = gone
        now = time.monotonic()
        restarts[:] = [t for t in restarts if now - t < 60] + [now]
        _write_log(
            log,
            {
                "msg": "ailint webhook worker exited",
                "worker": slot,
                "pid": pid,
                "status": os.waitstatus_to_exitcode(status),
                "restart": len(restarts) <= _MAX_RESTARTS,
            },
        )
        if len(restarts) > _MAX_RESTARTS:
            state["code"] = 1
            on_signal(signal.SIGTERM, None)
            continue
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            if not state["stopping"]:
                spawn(slot)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    sock.close()
    return int(state["code"])


def serve(
    host: str,
    port: int,
    tls_cert: str | None,
    tls_key: str | None,
    insecure_http: bool = False,
    enforce: bool = False,
    config_file: str | None = None,
    workers: int = 1,
) -> int:
    from ailint.engine.config import ConfigError, load_settings

    try:
        settings = load_settings(config_file, no_config=config_file is None)
    except ConfigError as exc:
        print(f"ailint: error: {exc}", file=sys.stderr)
        return 2
    if workers < 0:
        print("ailint: error: --workers must be 0 (one per usable CPU) or more", file=sys.stderr)
        return 2
    workers = workers or usable_cpus()
    if workers > 1 and not hasattr(os, "fork"):
        print("ailint: error: --workers above 1 needs os.fork (Linux, macOS)", file=sys.stderr)
        return 2
    if insecure_http:
        print(
            "ailint: WARNING: serving plain HTTP (--insecure-http); the API server requires TLS. "
            "Use this for local tests only.",
            file=sys.stderr,
        )
    try:
        tls = None if insecure_http else ReloadingTLS(str(tls_cert), str(tls_key), sys.stderr)
        sock = listen_socket(host, port)
    except (OSError, ssl.SSLError) as exc:
        print(f"ailint: error: cannot start the webhook: {exc}", file=sys.stderr)
        return 2
    log = sys.stderr
    reviewer = Reviewer(settings, enforce=enforce)
    reviewer.warm()
    metrics = Metrics(reviewer.codes(), workers)
    banner = {
        "msg": "ailint webhook listening",
        "host": host,
        "port": sock.getsockname()[1],
        "mode": "enforce" if enforce else "dry-run",
        "tls": not insecure_http,
        "workers": workers,
    }
    if workers == 1:
        server = Server(sock, make_handler(reviewer, metrics, log), tls, log)
        print(json.dumps(banner), file=sys.stderr, flush=True)
        _run(server)
        code = 0
    else:
        code = _supervise(sock, tls, reviewer, metrics, workers, log, banner)
    print(json.dumps({"msg": "ailint webhook stopped"}), file=sys.stderr, flush=True)
    return code
