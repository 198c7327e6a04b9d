"""The per-service cloud metrics on the lab's real OpenStack: a VM's create shows as
``POST /servers`` to compute with its latency, the watch lists, a VM with an unknown
flavor is an ``error`` reconcile and a Stalled object, and the process says it leads."""

from __future__ import annotations

import re
import urllib.request
from typing import Any

from kumo import __version__
from tests.integration.helpers import apply, vm, wait_ready, wait_reason
from tests.integration.kumo_fixtures import KumoOperator, wait_until

CREATE = {"service": "compute", "operation": "POST /servers"}


def test_cloud_requests_latency_errors_and_object_counts(
    namespace: str, kumo_operator: KumoOperator
) -> None:
    op = kumo_operator
    errors_before = op.metric("kumo_reconciles_total", kind="VirtualMachine", outcome="error")

    apply(namespace, vm("metered"))
    server_id = wait_ready("vm", "metered", namespace)["status"]["id"]
    assert op.metric("kumo_cloud_requests_total", **CREATE, status_class="2xx") >= 1
    assert op.metric("kumo_cloud_request_seconds_count", **CREATE) >= 1
    assert op.metric("kumo_cloud_request_seconds_bucket", **CREATE, le="+Inf") >= 1
    assert op.metric("kumo_cloud_request_seconds_bucket", **CREATE, le="30.0") >= 1
    assert op.metric("kumo_cloud_requests_total", service="identity") >= 1, "the token"
    assert (
        op.metric("kumo_watch_listings_total", service="compute", resource="servers", outcome="ok")
        >= 1
    )
    assert op.metric("kumo_watch_listing_seconds_count", service="compute") >= 1
    assert op.metric("kumo_leader") == 1
    assert op.metric("kumo_build_info", version=__version__) == 1
    assert op.metric("kumo_objects", kind="VirtualMachine", condition="Ready") >= 1

    bad: dict[str, Any] = vm("no-flavor")
    bad["spec"]["flavor"] = "no-such-flavor"
    apply(namespace, bad)
    wait_reason("vm", "no-flavor", namespace, "FlavorNotFound")
    wait_until(
        "an error reconcile counted",
        lambda: (
            op.metric("kumo_reconciles_total", kind="VirtualMachine", outcome="error")
            > errors_before
        ),
        30,
    )
    wait_until(
        "the stalled VM counted",
        lambda: op.metric("kumo_objects", kind="VirtualMachine", condition="Stalled") >= 1,
        30,
    )
    # Every operation is a template: no sample names the server's ID or the flavor.
    with urllib.request.urlopen(f"http://127.0.0.1:{op.port}/metrics", timeout=5) as r:
        text = r.read().decode()
    assert server_id not in text
    assert "no-such-flavor" not in text
    operations = set(re.findall(r'operation="([^"]*)"', text))
    assert "POST /servers" in operations
    assert not [o for o in operations if re.search(r"[0-9a-f]{8}-[0-9a-f]{4}", o)], operations
