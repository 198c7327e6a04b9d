"""Observing a hand-made server costs Nova nothing while nothing changes (issue 24, item 8).

Two VirtualMachines observe one server made outside Kumo (``managementPolicy: Observe``),
one importing it by ID, one by name. Once both report it, nova-api's own request log is
read over an idle window of three observe periods (each observed object is passed over
every ``OBSERVE_SECONDS``): not one ``GET /servers/{id}`` of that server, and no listing by
its name — the cloud watch keeps the foreign server in its cache, fresh by the
changes-since listings it makes anyway. Then a hand edit of the server is still reported
as drift, from that cache. Before the change, each object read its server by ID on every
pass (about 8 a minute per object).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from typing import Any

from openstack import exceptions as os_exc

from bench.lab import LOGS
from bench.reqlog import LogWindow, parse_line
from kumo.engine.reconciler import OBSERVE_SECONDS
from tests.integration.helpers import apply, server_made_by_hand
from tests.integration.kumo_fixtures import KumoOperator, get_obj, wait_until

VM_SPEC = {"image": "centos79", "flavor": "m1.tiny", "description": "kumo web"}
IDLE_SECONDS = 3 * OBSERVE_SECONDS


def observing(namespace: str, name: str, ref: dict[str, str]) -> None:
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": {"name": name},
            "spec": {**VM_SPEC, "import": ref, "managementPolicy": "Observe"},
        },
    )


def drift_of(namespace: str, name: str) -> list[dict[str, str]]:
    return list(((get_obj("vm", name, namespace) or {}).get("status") or {}).get("drift") or [])


def nova_requests(window: LogWindow, project: str) -> list[tuple[str, str]]:
    """(method, path) of every request of ``project`` nova-api logged since ``window``."""
    out = []
    for service, line in window.lines():
        req = parse_line(line)
        if service.name == "nova" and req is not None and req.project == project:
            out.append((req.method, req.path))
    return out


def test_observed_servers_cost_no_read_by_id_while_idle(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    name = f"observed-{uuid.uuid4().hex[:6]}"
    server = server_made_by_hand(demo_conn, name, description="hand made")
    try:
        observing(namespace, "by-id", {"id": server.id})
        observing(namespace, "by-name", {"name": name})
        want = {"field": "spec.description", "desired": "kumo web", "actual": "hand made"}
        for vm in ("by-id", "by-name"):
            wait_until(f"{vm} reports the server", lambda vm=vm: want in drift_of(namespace, vm))
            assert get_obj("vm", vm, namespace)["status"]["id"] == server.id  # type: ignore[index]

        window = LogWindow(LOGS)
        started = time.monotonic()
        # The idle window is what is measured (three observe periods), not a wait for
        # something to happen: the operator passes over both objects meanwhile.
        time.sleep(IDLE_SECONDS)
        idle = nova_requests(window, demo_conn.current_project_id)
        elapsed = time.monotonic() - started
        reads = [r for r in idle if r[0] == "GET" and server.id in r[1]]
        by_name = [r for r in idle if "name=" in r[1]]
        shapes: dict[str, int] = {}
        for method, path in idle:
            key = f"{method} {path.split('?')[0].replace(server.id, '{server}')}"
            shapes[key] = shapes.get(key, 0) + 1
        print(f"\nnova-api, {elapsed:.0f} s idle with 2 observed objects: {shapes}")
        assert idle, "the watch lists Nova all along: the window holds its requests"
        assert reads == [], f"the observed server read by ID: {reads}"
        assert by_name == [], f"listed by name: {by_name}"

        demo_conn.compute.update_server(server.id, description="edited by hand")
        edited = {"field": "spec.description", "desired": "kumo web", "actual": "edited by hand"}
        for vm in ("by-id", "by-name"):
            wait_until(
                f"{vm} reports the edit",
                lambda vm=vm: edited in drift_of(namespace, vm),
                OBSERVE_SECONDS + 30,
            )
        after = nova_requests(window, demo_conn.current_project_id)
        assert [r for r in after if r[0] == "GET" and server.id in r[1]] == [], "from the cache"
    finally:
        with contextlib.suppress(os_exc.NotFoundException):
            demo_conn.compute.delete_server(server.id, ignore_missing=True)
