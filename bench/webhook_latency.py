#!/usr/bin/env python3
"""Webhook latency under 16 concurrent clients, over TLS on loopback.

    python bench/webhook_latency.py [--requests 2000] [--clients 16]

Starts the webhook in-process on 127.0.0.1 with a throwaway certificate (openssl CLI),
sends AdmissionReviews built from the demo and fixture manifests (typical objects), and
prints p50/p90/p99/max latency as seen by the clients. Bounded in count and time; only
loopback traffic.
"""

from __future__ import annotations

import argparse
import glob
import http.client
import json
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def objects() -> list[dict]:
    out = []
    for f in sorted(glob.glob(str(ROOT / "fixtures" / "demo" / "*.yaml"))) + \
            sorted(glob.glob(str(ROOT / "fixtures" / "*" / "*.yaml")))[:200]:
        try:
            for doc in yaml.safe_load_all(open(f, encoding="utf-8")):
                if isinstance(doc, dict) and doc.get("kind") and doc.get("apiVersion"):
                    out.append(doc)
        except yaml.YAMLError:
            continue
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--max-seconds", type=float, default=120)
    args = ap.parse_args()

    from ailint.config import Settings
    from ailint.webhook import build_server

    tmp = Path(tempfile.mkdtemp())
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp / "k.pem"),
                    "-out", str(tmp / "c.pem"), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    log = open("/dev/null", "w")
    srv = build_server("127.0.0.1", 0, Settings(), tls_cert=str(tmp / "c.pem"), tls_key=str(tmp / "k.pem"), log=log)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    objs = objects()
    bodies = [json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                          "request": {"uid": f"u{i}", "operation": "CREATE", "object": o}}).encode()
              for i, o in enumerate(objs)]
    ctx = ssl.create_default_context(cafile=str(tmp / "c.pem"))
    deadline = time.monotonic() + args.max_seconds
    local = threading.local()

    def one(i: int) -> float:
        if time.monotonic() > deadline:
            return float("nan")
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
        t0 = time.perf_counter()
        conn.request("POST", "/validate", body=bodies[i % len(bodies)], headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}")
        return time.perf_counter() - t0

    with ThreadPoolExecutor(args.clients) as ex:
        lat = [x for x in ex.map(one, range(args.requests)) if x == x]
    srv.shutdown()
    lat.sort()
    q = statistics.quantiles(lat, n=100)
    print(f"{len(lat)} requests, {args.clients} clients, {len(objs)} distinct objects: "
          f"p50 {q[49] * 1000:.1f} ms, p90 {q[89] * 1000:.1f} ms, p99 {q[98] * 1000:.1f} ms, "
          f"max {lat[-1] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
