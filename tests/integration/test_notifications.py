"""The cloud's notifications on the lab's real bus: Nova publishes ``instance.delete.end``
on RabbitMQ, Kumo hears it and lists at once.

The operator here looks at the cloud every 300 s (``--drift-seconds``) and re-reconciles
every 600 s, so a server deleted out of band is replaced within the test's 60 s only if
the notification made Kumo look.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.helpers import apply, vm, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import (
    REPO_ROOT,
    STATE,
    KumoOperator,
    get_obj,
    like,
    wait_until,
)

pytestmark = pytest.mark.integration

SECRET = "kumo-cloud-notifications"
NOVA_CONF = STATE / "openstack" / "etc" / "nova" / "nova.conf"
RBAC = REPO_ROOT / "deploy" / "overlays" / "cloud-notifications" / "rbac.yaml"


def lab_transport_url() -> str:
    """Nova's bus, as the platform team would copy it from nova.conf into the Secret."""
    for line in NOVA_CONF.read_text().splitlines():
        if line.startswith("transport_url = "):
            return line.split(" = ", 1)[1]
    raise AssertionError(f"no transport_url in {NOVA_CONF}")


@pytest.fixture
def listening(kumo_operator: KumoOperator) -> Iterator[KumoOperator]:
    """Kumo with the bus's Secret and slow listings, leading instead of the session's.
    It runs as the deployed ServiceAccount: the overlay's Role lets it read the Secret."""
    kubectl("apply", "-f", str(RBAC))
    kubectl("-n", "kumo-system", "delete", "secret", SECRET, "--ignore-not-found", check=False)
    kubectl(
        "-n",
        "kumo-system",
        "create",
        "secret",
        "generic",
        SECRET,
        f"--from-literal=transport_url={lab_transport_url()}",
    )
    kumo_operator.stop()
    operator = like(kumo_operator, "operator-notifications.log")
    operator.start(
        "--notifications-secret",
        f"kumo-system/{SECRET}",
        "--drift-seconds",
        "300",
        "--relist-seconds",
        "3600",
        "--resync-seconds",
        "600",
    )
    try:
        operator.wait_role("leader", 90)
        wait_until(
            "Kumo listening to the bus",
            lambda: "listening to notifications on amqp://guest@127.0.0.1:5672/" in operator.log(),
            60,
        )
        yield operator
    finally:
        operator.stop()
        kumo_operator.start()
        kumo_operator.wait_role("leader", 90)


def test_a_server_deleted_out_of_band_is_noticed_from_novas_notification(
    namespace: str, listening: KumoOperator, demo_conn: Any
) -> None:
    apply(namespace, vm("heard"))
    old = wait_ready("vm", "heard", namespace)["status"]["id"]
    # Ready, nothing building: the watch's next listing is ≈ 300 s away.
    demo_conn.compute.delete_server(old)

    def replaced() -> str | None:
        status = (get_obj("vm", "heard", namespace) or {}).get("status") or {}
        new = status.get("id")
        return new if new and new != old else None

    new = wait_until("a new server for the VM", replaced, 60)
    assert 'event_type="instance.delete.end"' in _metrics(listening)
    wait_ready("vm", "heard", namespace)
    assert demo_conn.compute.find_server(new) is not None
    # The bus's password is never logged: only its user and host.
    assert "guest:guest" not in listening.log()


def _metrics(operator: KumoOperator) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{operator.port}/metrics", timeout=5) as r:
        return str(r.read().decode())
