"""A delete the cloud accepts and then does not carry out (issue 24, item 7): Nova answers
``202`` to ``DELETE /servers/{id}`` and the server stays ACTIVE, as a real cloud's failed
delete leaves it. Kumo must not release the VirtualMachine's finalizer on the 202: the
watch reads the lingering ``DELETING`` server again, sees it alive, and the finalizer
deletes it again — the object goes only once the server is gone.

The fault proxy (``swallow``) answers the first matching DELETE itself and never passes
it on; the operator is this test's own, talking to Nova through the proxy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.chaos.faultproxy import FaultConfig, FaultProxyThread
from tests.chaos.stack import OperatorFactory
from tests.chaos.test_fault_injection import (  # noqa: F401 (fixtures)
    CLOUD,
    endpoints,
    fault_proxy,
    proxied_clouds_yaml,
)
from tests.integration.helpers import apply, vm, wait_gone, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj
from tests.integration.polling import wait_until


def server_status(conn: Any, server_id: str) -> str | None:
    server = conn.compute.find_server(server_id, ignore_missing=True)
    return None if server is None else str(server.status)


def test_a_delete_accepted_then_dropped_is_retried_and_the_object_waits_for_it(
    namespace: str,
    fault_proxy: FaultProxyThread,  # noqa: F811
    proxied_clouds_yaml: Path,  # noqa: F811
    own_operator: OperatorFactory,
    demo_conn: Any,
) -> None:
    operator = own_operator(str(proxied_clouds_yaml), CLOUD, "operator-failed-delete.log")
    operator.wait_role("leader", 90)
    apply(namespace, vm("victim"))
    server_id = wait_ready("vm", "victim", namespace, timeout=240)["status"]["id"]

    fault_proxy.configure(FaultConfig(swallow=rf"^DELETE .*/servers/{server_id}$"))
    kubectl("delete", "vm", "victim", "-n", namespace, "--wait=false")
    wait_until(
        "Kumo's DELETE accepted and dropped", lambda: fault_proxy.snapshot()["swallowed"] == 1, 60
    )
    assert server_status(demo_conn, server_id) == "ACTIVE", "the dropped delete left it alive"
    wait_gone("vm", "victim", namespace, 120)
    # The object went only because the server went: a retried delete, not the first 202.
    assert server_status(demo_conn, server_id) in (None, "DELETED")
    assert get_obj("vm", "victim", namespace) is None
    fault_proxy.configure(FaultConfig())
