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

from kumo.ports.markers import marker_of
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
    hand) is reported, then deleted after the grace; a server Kumo itself released (a
    VirtualMachine with ``deletionPolicy: Orphan``, deleted) is never found nor deleted.

    The released server would be swept if its release were broken (the marker left on
    it): it is orphaned before the leak is made, so its grace ends no later than the
    leak's, and three security groups of live objects keep the two under the breaker's
    50 % (2 of 5; with two anchors it would be 2 of 4: suspended, nothing deleted, and
    the test could not tell). It must still be there two sweeps after the leak went."""
    ns = namespace
    kumo_operator.stop()
    sweeping = like(kumo_operator, "operator-sweep.log")
    sweeping.start("--orphan-sweep", "delete", "--orphan-grace", "5", "--sweep-seconds", "1")
    made: list[str] = []
    try:
        sweeping.wait_role("leader", 90)
        # The sweep looks at the projects the operator's reconciles use: give it one,
        # with three live marked resources.
        for anchor in ("anchor-a", "anchor-b", "anchor-c"):
            apply(ns, sg_manifest(anchor, []))
        released = vm("released")
        released["spec"]["deletionPolicy"] = "Orphan"
        apply(ns, released)
        for anchor in ("anchor-a", "anchor-b", "anchor-c"):
            wait_ready("sg", anchor, ns, 120)
        obj = wait_ready("vm", "released", ns, 240)
        kept_id, kept_uid = obj["status"]["id"], obj["metadata"]["uid"]
        made.append(kept_id)
        kubectl("delete", "vm", "released", "-n", ns, "--wait=false")
        wait_gone("vm", "released", ns, 120)
        tags = demo_conn.compute.get_server(kept_id).tags
        assert marker_of(tags) is None and f"kumo-orphan={kept_uid}" in tags, tags

        # This cluster's marker: one without the cluster (from before markers named it) or
        # with another cluster's is never swept.
        gone = str(uuid.uuid4())
        marker = ["kumo", f"kumo-owner={gone}", f"kumo-cluster={cluster_id()}"]
        leak = server_made_by_hand(demo_conn, "leaked", tags=marker)
        made.append(leak.id)
        found = wait_until(
            "the leak reported",
            lambda: [m for m in namespace_events(ns, "OrphanFound") if leak.id in m],
        )
        assert gone in found[0]
        deleted = wait_until(
            "the leak's deletion reported",
            lambda: [m for m in namespace_events(ns, "OrphanDeleted") if leak.id in m],
            120,
        )
        assert gone in deleted[0]
        wait_until("the leaked server deleted", lambda: owned_servers(demo_conn, gone) == [], 120)
        assert sweeping.metric("kumo_orphans_deleted_total") >= 1
        sweeps = sweeping.metric("kumo_orphan_sweeps_total")
        wait_until(
            "two more sweeps",
            lambda: sweeping.metric("kumo_orphan_sweeps_total") >= sweeps + 2,
            30,
        )

        kept = demo_conn.compute.find_server(kept_id, ignore_missing=True)
        assert kept is not None, "the released server was swept"
        assert kept.status == "ACTIVE" and kept.task_state != "deleting", "released: kept"
        assert marker_of(kept.tags) is None, kept.tags
        for reason in ("OrphanFound", "OrphanDeleted"):
            assert not [m for m in namespace_events(ns, reason) if kept_id in m], reason
    finally:
        sweeping.kill()
        kumo_operator.start()
        for server_id in made:
            with contextlib.suppress(Exception):
                demo_conn.compute.delete_server(server_id)
