"""Issue 21 item 8: a VirtualMachine deleted between the cache read of its first pass and
that pass's finalizer write. The finalizer PATCH answers 404; the old client took that
as success and the pass created a server whose owner no longer existed, forever.

The failpoint ``before-finalizer=<s>`` only holds the pass inside that real window long
enough for the test to delete the object there, every time.
"""

from __future__ import annotations

from typing import Any

from tests.integration.helpers import apply, owned_servers, vm, wait_gone
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import KumoOperator, get_obj, like, wait_until


def test_a_vm_deleted_before_its_finalizer_write_gets_no_server(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    kumo_operator.stop()
    paused = like(kumo_operator, "operator-leak.log")
    mark = len(paused.log())
    paused.start(env={"KUMO_FAILPOINTS": "before-finalizer=10"})
    try:
        apply(namespace, vm("vanishing"))
        uid = wait_until(
            "VM has a uid", lambda: get_obj("vm", "vanishing", namespace)["metadata"]["uid"]
        )
        wait_until(
            "the first pass holds before its finalizer write",
            lambda: "failpoint before-finalizer" in paused.log()[mark:],
            120,
        )
        kubectl("delete", "vm", "vanishing", "-n", namespace, "--wait=false")
        wait_gone("vm", "vanishing", namespace, 30)  # no finalizer yet: gone at once
        wait_until(
            "the held pass ended on the 404",
            lambda: "gone from the API server" in paused.log()[mark:],
            60,
        )
        assert owned_servers(demo_conn, uid) == [], "a server for a VM that no longer exists"
    finally:
        paused.kill()
        kumo_operator.start()
