#!/usr/bin/env python3
"""Webhook latency under concurrent clients, over TLS on loopback.

    python bench/webhook_latency.py [--requests 1000] [--clients 16] [--workers 2]

Starts `ailint webhook serve` as a separate process (as in a cluster: the API server is
another process) on 127.0.0.1 with a throwaway certificate (openssl CLI), then sends
AdmissionReviews built from the demo and fixture manifests (typical objects).

Like the kube-apiserver, each client keeps one HTTP/1.1 keep-alive TLS connection and
sends its requests over it; the first `--warmup` requests of each client (TLS handshake
included) are not counted. `--new-connections` opens a TLS connection per request instead
(worst case, for comparison). Clients run as threads in `--client-procs` processes.

Prints client-side p50/p95/p99/max, the server-side handler time from the server's JSON
log lines, throughput, and the machine (nproc, load average). Bounded in count and time;
only loopback traffic.
"""

from __future__ import annotations

import argparse
import glob
import http.client
import itertools
import json
import multiprocessing as mp
import os
import re
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def objects() -> list[dict]:
    out = []
    for f in (
        sorted(glob.glob(str(ROOT / "fixtures" / "demo" / "*.yaml")))
        + sorted(glob.glob(str(ROOT / "fixtures" / "*" / "*.yaml")))[:200]
    ):
        try:
            with open(f, encoding="utf-8") as fh:
                for doc in yaml.safe_load_all(fh):
                    if isinstance(doc, dict) and doc.get("kind") and doc.get("apiVersion"):
                        out.append(doc)
        except yaml.YAMLError:
            continue
    return out


def bodies() -> list[bytes]:
    return [
        json.dumps(
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "request": {"uid": f"u{i}", "operation": "CREATE", "object": o},
            }
        ).encode()
        for i, o in enumerate(objects())
    ]


def pct(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1] if len(values) > 1 else values[0]


def summary(label: str, ms: list[float]) -> str:
    ms = sorted(ms)
    return f"{label}: p50 {pct(ms, 50):.1f} ms, p95 {pct(ms, 95):.1f} ms, p99 {pct(ms, 99):.1f} ms, max {ms[-1]:.1f} ms"


def cpu_seconds(pid: int) -> float:
    """User+system CPU of a process and its live children (Linux /proc; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as fh:
            kids = [int(x) for x in fh.read().split()]
    except (OSError, ValueError, IndexError):
        return 0.0
    return total + sum(cpu_seconds(k) for k in kids)


def client_proc(
    port: int,
    cafile: str,
    data: list[bytes],
    n_threads: int,
    n_requests: int,
    warmup: int,
    new_conn: bool,
    deadline: float,
    out,
) -> None:
    """One client process: `n_threads` threads share `n_requests`; latencies (ms) go to `out`."""
    ctx = ssl.create_default_context(cafile=cafile)
    counter = itertools.count()
    lat: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def connect() -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)

    def post(conn: http.client.HTTPSConnection, i: int) -> None:
        conn.request("POST", "/validate", body=data[i % len(data)], headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        payload = resp.read()
        if resp.status != 200 or json.loads(payload)["response"]["uid"] != f"u{i % len(data)}":
            raise RuntimeError(f"HTTP {resp.status}: {payload[:80]!r}")

    def worker(t: int) -> None:
        conn = connect()
        try:
            for w in range(warmup):
                post(conn, t * 7 + w)
            mine = []
            while time.monotonic() < deadline:
                i = next(counter)
                if i >= n_requests:
                    break
                t0 = time.perf_counter()
                if new_conn:
                    conn.close()
                    conn = connect()
                post(conn, i)
                mine.append((time.perf_counter() - t0) * 1000)
            with lock:
                lat.extend(mine)
        except Exception as exc:
            with lock:
                errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            conn.close()

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    out.put((lat, errors))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=1000, help="measured requests in total (default 1000)")
    ap.add_argument("--clients", type=int, default=16, help="concurrent clients, one connection each (default 16)")
    ap.add_argument("--workers", type=int, default=1, help="passed to `ailint webhook serve --workers` (default 1)")
    ap.add_argument("--client-procs", type=int, default=1, help="processes the client threads are spread over")
    ap.add_argument("--warmup", type=int, default=2, help="uncounted requests per client first (default 2)")
    ap.add_argument("--new-connections", action="store_true", help="a new TLS connection per request")
    ap.add_argument("--max-seconds", type=float, default=120)
    args = ap.parse_args()

    data = bodies()
    tmp = Path(tempfile.mkdtemp(prefix="ailint-bench-"))
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(tmp / "k.pem"),
            "-out",
            str(tmp / "c.pem"),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    log_path = tmp / "server.log"
    log = open(log_path, "w+", encoding="utf-8")  # noqa: SIM115 - the server writes to it until the end
    server = subprocess.Popen(
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
            str(tmp / "c.pem"),
            "--tls-key",
            str(tmp / "k.pem"),
            "--workers",
            str(args.workers),
        ],
        stderr=log,
    )
    try:
        port = None
        t_end = time.monotonic() + 30
        while port is None and time.monotonic() < t_end and server.poll() is None:
            log.seek(0)
            for line in log:
                if "webhook listening" in line:
                    port = json.loads(line)["port"]
            time.sleep(0.05)
        if port is None:
            log.seek(0)
            print("server did not start:\n" + log.read(), file=sys.stderr)
            return 2
        ctx = ssl.create_default_context(cafile=str(tmp / "c.pem"))
        probe = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
        probe.request("GET", "/readyz")
        assert probe.getresponse().read() == b"ok\n"
        probe.close()
        log.seek(0, os.SEEK_END)
        start_offset = log.tell()

        procs = max(1, min(args.client_procs, args.clients))
        per_proc = [args.clients // procs + (1 if p < args.clients % procs else 0) for p in range(procs)]
        share = [args.requests // procs + (1 if p < args.requests % procs else 0) for p in range(procs)]
        deadline = time.monotonic() + args.max_seconds
        server_cpu0, client_cpu0 = cpu_seconds(server.pid), os.times()
        fork = mp.get_context("fork")
        q = fork.Queue()
        t0 = time.perf_counter()
        ps = [
            fork.Process(
                target=client_proc,
                args=(
                    port,
                    str(tmp / "c.pem"),
                    data,
                    per_proc[p],
                    share[p],
                    args.warmup,
                    args.new_connections,
                    deadline,
                    q,
                ),
            )
            for p in range(procs)
        ]
        for p in ps:
            p.start()
        lat: list[float] = []
        errors: list[str] = []
        for _ in ps:
            lat_p, err_p = q.get(timeout=args.max_seconds + 30)
            lat += lat_p
            errors += err_p
        for p in ps:
            p.join()
        wall = time.perf_counter() - t0
        server_cpu = cpu_seconds(server.pid) - server_cpu0
        probe = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
        probe.request("GET", "/metrics")
        per_worker = re.findall(r'worker_requests_total\{worker="(\d+)"\} (\d+)', probe.getresponse().read().decode())
        probe.close()
        t1 = os.times()
        client_cpu = t1.children_user + t1.children_system - client_cpu0.children_user - client_cpu0.children_system
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            rc = server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            rc = "killed"
    log.seek(start_offset)
    server_ms = []
    for line in log:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("path") == "/validate" and "ms" in entry:
            server_ms.append(entry["ms"])
    mode = "new TLS connection per request" if args.new_connections else "keep-alive connections"
    print(
        f"{len(lat)} requests, {args.clients} clients ({mode}, {procs} client process(es)), "
        f"server --workers {args.workers}, {len(data)} distinct objects, {len(lat) / wall:.0f} req/s"
    )
    if lat:
        print(summary("client-side latency", lat))
    if server_ms:
        print(summary("server handler time", server_ms))
    if lat and server_cpu:
        print(
            f"CPU per request: server {server_cpu / len(lat) * 1000:.2f} ms, "
            f"clients {client_cpu / len(lat) * 1000:.2f} ms"
        )
    if len(per_worker) > 1:
        print("requests per worker (all, warm-up included): " + ", ".join(f"#{w} {n}" for w, n in per_worker))
    print(
        f"machine: nproc {os.cpu_count()}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"server exit status {rc}"
    )
    for e in errors[:5]:
        print("error:", e, file=sys.stderr)
    return 1 if errors or len(lat) < args.requests else 0


if __name__ == "__main__":
    sys.exit(main())
