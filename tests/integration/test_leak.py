"""Issue 21 item 8: a VirtualMachine deleted between the cache read of its first pass and
that pass's finalizer write. The finalizer PATCH answers 404; the old client took that
as success and the pass created a server whose owner no longer existed, forever.

The failpoint ``before-finalizer=<s>`` only holds the pass inside that real window long
enough for the test to delete the object there, every time.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from tests.integration.helpers import (
    apply,
    cluster_id,
    namespace_events,
    owned_servers,
    server_made_by_hand,
    vm,
    wait_gone,
    wait_ready,
)
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import KumoOperator, get_obj, like, wait_until
from tests.integration.test_security_groups import sg_manifest


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


def test_the_sweep_deletes_a_leaked_server_and_never_a_released_one(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    """A server carrying the marker of a UID no object has (the leak above, made by
    hand) is reported, then deleted after the grace; one Orphan released is kept. Two
    security groups of live objects keep the leak under the breaker's 50 % (alone it
    would be 1 of 1: reported, never swept)."""
    gone, released = str(uuid.uuid4()), str(uuid.uuid4())
    # This cluster's marker: one without the cluster (from before markers named it) or
    # with another cluster's is never swept.
    marker = ["kumo", f"kumo-owner={gone}", f"kumo-cluster={cluster_id()}"]
    leak = server_made_by_hand(demo_conn, "leaked", tags=marker)
    kept = server_made_by_hand(demo_conn, "released", tags=[f"kumo-orphan={released}"])
    kumo_operator.stop()
    sweeping = like(kumo_operator, "operator-sweep.log")
    sweeping.start("--orphan-sweep", "delete", "--orphan-grace", "5", "--sweep-seconds", "1")
    try:
        sweeping.wait_role("leader", 90)
        # The sweep looks at the projects the operator's reconciles use: give it one,
        # with two live marked resources beside the leak.
        for anchor in ("anchor-a", "anchor-b"):
            apply(namespace, sg_manifest(anchor, []))
            wait_ready("sg", anchor, namespace, 120)
        found = wait_until(
            "the leak reported",
            lambda: [m for m in namespace_events(namespace, "OrphanFound") if leak.id in m],
        )
        assert gone in found[0]
        wait_until(
            "the leaked server deleted",
            lambda: owned_servers(demo_conn, gone) == [],
            120,
        )
        deleted = wait_until(
            "the deletion reported",
            lambda: [m for m in namespace_events(namespace, "OrphanDeleted") if leak.id in m],
        )
        assert gone in deleted[0]
        assert sweeping.metric("kumo_orphans_deleted_total") >= 1
        assert demo_conn.compute.get_server(kept.id).status == "ACTIVE", "released: kept"
        assert not [m for m in namespace_events(namespace, "OrphanFound") if kept.id in m]
    finally:
        sweeping.kill()
        kumo_operator.start()
        for server in (leak, kept):
            with contextlib.suppress(Exception):
                demo_conn.compute.delete_server(server.id)
