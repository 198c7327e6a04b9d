"""The CPU cost of the per-service cloud metrics: the response hook every HTTP request
to OpenStack goes through (kumo/cloud/telemetry.py), timed in memory on the lab's mix of
URLs (no lab needed).

    python -m bench metrics-hook [--requests 200000]
"""

from __future__ import annotations

import argparse
import time
import uuid
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from kumo.cloud import telemetry

BASE = "http://127.0.0.1"
CATALOG = [
    {"type": "compute", "endpoints": [{"url": f"{BASE}:8774/v2.1"}]},
    {"type": "network", "endpoints": [{"url": f"{BASE}:9696"}]},
    {"type": "image", "endpoints": [{"url": f"{BASE}:9292"}]},
    {"type": "load-balancer", "endpoints": [{"url": f"{BASE}:9876"}]},
    {"type": "dns", "endpoints": [{"url": f"{BASE}:9001"}]},
    {"type": "volumev3", "endpoints": [{"url": f"{BASE}:8776/v3/{uuid.uuid4().hex}"}]},
    {"type": "sharev2", "endpoints": [{"url": f"{BASE}:8786/v2"}]},
    {"type": "identity", "endpoints": [{"url": f"{BASE}:5000/v3"}]},
]


def urls() -> list[tuple[str, str]]:
    """What a scale event sends (each with a fresh ID, as in life)."""
    i = lambda: str(uuid.uuid4())  # noqa: E731
    return [
        ("POST", f"{BASE}:8774/v2.1/servers"),
        ("GET", f"{BASE}:8774/v2.1/servers/{i()}"),
        ("GET", f"{BASE}:8774/v2.1/servers/detail?changes-since=2026-11-29T00:00:00Z"),
        ("POST", f"{BASE}:8774/v2.1/servers/{i()}/action"),
        ("GET", f"{BASE}:9696/v2.0/ports?device_id={i()}"),
        ("PUT", f"{BASE}:9876/v2/lbaas/pools/{i()}/members"),
        ("GET", f"{BASE}:9001/v2/zones/{i()}/recordsets"),
        ("GET", f"{BASE}:8776/v3/{uuid.uuid4().hex}/volumes/detail"),
    ]


def response(method: str, url: str) -> Any:
    return SimpleNamespace(
        request=SimpleNamespace(method=method, url=url),
        status_code=200,
        elapsed=timedelta(milliseconds=42),
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=int, default=200_000)


def run(args: argparse.Namespace) -> None:
    catalog = SimpleNamespace(normalize_catalog=lambda: CATALOG)
    session = SimpleNamespace(
        auth=SimpleNamespace(auth_ref=SimpleNamespace(service_catalog=catalog))
    )
    recorder = telemetry.Recorder(session)
    responses = [response(m, u) for _ in range(64) for m, u in urls()]
    for r in responses:  # warm: the catalog read, the operations seen
        recorder.hook(r)
    n = args.requests
    start = time.process_time()
    for k in range(n):
        recorder.hook(responses[k % len(responses)])
    hook = (time.process_time() - start) / n
    start = time.process_time()
    for k in range(n):
        responses[k % len(responses)]
    loop = (time.process_time() - start) / n
    print(f"response hook: {(hook - loop) * 1e6:.1f} µs of CPU per request ({n} requests)")
    print("  of which the URL template: ", end="")
    start = time.process_time()
    for k in range(n):
        r = responses[k % len(responses)]
        telemetry.operation(r.request.method, r.request.url)
    print(f"{((time.process_time() - start) / n - loop) * 1e6:.1f} µs")
