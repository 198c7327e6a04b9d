"""Observing a hand-made server costs Nova nothing while nothing changes (issue 24, item 8).

Two VirtualMachines observe one server made outside Kumo (``managementPolicy: Observe``),
one importing it by ID, one by name. Once both report it, nova-api's own request log is
read over an idle window of two observe periods (each observed object is passed over
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
from tests.integration.helpers import allow_unmarked_imports, apply, lb_port, server_made_by_hand
from tests.integration.kumo_fixtures import KumoOperator, get_obj, wait_until
from tests.integration.test_import_plan import _group, _hand_made_lb, drift_of

VM_SPEC = {"image": "centos79", "flavor": "m1.tiny", "description": "kumo web"}
IDLE_SECONDS = 2 * OBSERVE_SECONDS


def observing(namespace: str, name: str, ref: dict[str, str]) -> None:
    allow_unmarked_imports(namespace)
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": {"name": name},
            "spec": {**VM_SPEC, "import": ref, "managementPolicy": "Observe"},
        },
    )


def requests_to(
    window: LogWindow, service: str, project: str | None = None
) -> list[tuple[str, str]]:
    """(method, path) of every request ``service`` logged since ``window`` (of ``project``
    where its log names one; octavia-api's does not)."""
    out = []
    for logged, line in window.lines():
        req = parse_line(line)
        if logged.name == service and req is not None and project in (None, req.project):
            out.append((req.method, req.path))
    return out


def nova_requests(window: LogWindow, project: str) -> list[tuple[str, str]]:
    return requests_to(window, "nova", project)


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
        # The idle window is what is measured (two observe periods), not a wait for
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


def test_an_observed_load_balancer_costs_no_read_by_id_while_idle(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    """The same for Octavia: an Observe LoadBalancer on a hand-made load balancer."""
    allow_unmarked_imports(namespace)
    apply(namespace, _group("obs-web", 0, {"image": "centos79", "flavor": "m1.tiny"}))
    name = f"observed-lb-{namespace}"
    lb, _listener, _pool = _hand_made_lb(demo_conn, name)
    try:
        port = lb_port("obs-web")
        apply(
            namespace,
            {
                "apiVersion": "kumo.dev/v1alpha1",
                "kind": "LoadBalancer",
                "metadata": {"name": "observed"},
                "spec": {
                    "import": {"id": lb.id},
                    "managementPolicy": "Observe",
                    "vipNetwork": "kumo-demo-net",
                    "ports": [port],
                },
            },
        )

        def observed() -> bool:
            status = (get_obj("lb", "observed", namespace) or {}).get("status") or {}
            return status.get("phase") == "Observed" and status.get("id") == lb.id

        wait_until("the load balancer observed", observed, 180)
        window = LogWindow(LOGS)
        started = time.monotonic()
        time.sleep(IDLE_SECONDS)  # the measured idle window (see the server's test)
        idle = requests_to(window, "octavia")
        reads = [r for r in idle if r[0] == "GET" and lb.id in r[1]]
        shapes: dict[str, int] = {}
        for method, path in idle:
            key = f"{method} {path.split('?')[0].replace(lb.id, '{lb}')}"
            shapes[key] = shapes.get(key, 0) + 1
        print(f"\noctavia-api, {time.monotonic() - started:.0f} s idle, 1 observed: {shapes}")
        assert observed(), "still observed"
        assert reads == [], f"the observed load balancer read by ID: {reads}"
    finally:
        demo_conn.load_balancer.delete_load_balancer(lb.id, cascade=True, ignore_missing=True)
