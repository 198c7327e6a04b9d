"""The lab's Prometheus (dev/prometheus.sh): its scrape targets and its HTTP API.

Prometheus finds Kumo's metrics endpoints in files under ``$KUMO_STATE/prometheus/targets``
(file_sd, re-read within seconds): an operator the suite starts on a free port registers
itself there (:func:`register`) and is removed when it stops, so the lab's Prometheus
scrapes whichever Kumo runs, as a ServiceMonitor follows a Deployment's Pods.
"""

from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("KUMO_STATE", REPO_ROOT / ".kumo-dev")).resolve()
TARGETS = STATE / "prometheus" / "targets"
URL = f"http://127.0.0.1:{os.environ.get('KUMO_PROMETHEUS_PORT', '9090')}"


def register(name: str, addresses: list[str], **labels: str) -> None:
    """Have the lab's Prometheus scrape ``addresses`` (host:port) as job kumo; a no-op
    where the lab has no Prometheus (its targets folder does not exist)."""
    if not TARGETS.is_dir():
        return
    tmp = TARGETS / f".{name}.json.tmp"
    tmp.write_text(json.dumps([{"targets": addresses, "labels": labels}]))
    tmp.rename(TARGETS / f"{name}.json")


def unregister(name: str) -> None:
    (TARGETS / f"{name}.json").unlink(missing_ok=True)


def api(path: str, **params: str) -> Any:
    """GET /api/v1/<path>: its ``data``."""
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with urllib.request.urlopen(f"{URL}/api/v1/{path}{query}", timeout=10) as response:
        body = json.loads(response.read())
    assert body["status"] == "success", body
    return body["data"]


def query(expr: str) -> list[dict[str, Any]]:
    """An instant query's series (a vector's samples)."""
    data = api("query", query=expr)
    return data["result"] if data["resultType"] == "vector" else [data["result"]]


def alerts(name: str) -> list[dict[str, Any]]:
    """The alerts of rule ``name`` now (pending or firing), with their labels."""
    return [a for a in api("alerts")["alerts"] if a["labels"].get("alertname") == name]


def available() -> bool:
    try:
        with urllib.request.urlopen(f"{URL}/-/ready", timeout=3):
            return True
    except OSError:
        return False
