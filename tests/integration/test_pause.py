"""Pause and reconcile-now on the lab: a paused VM whose server is deleted by hand stays
without one through several passes — each asked for with ``kumo.dev/reconcile-requested-at``
and seen served in ``status.lastHandledReconcileAt`` — while its status says what it saw;
unpaused, Kumo builds the server again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.integration.helpers import apply, condition, owned_servers, vm, wait_gone, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until

MISSING = {"field": "server", "desired": "present", "actual": "absent"}


def annotate(namespace: str, *pairs: str) -> None:
    kubectl("annotate", "--overwrite", "vm/held", "-n", namespace, *pairs)


def held(namespace: str) -> dict[str, Any]:
    obj = get_obj("vm", "held", namespace)
    assert obj is not None
    return obj


def held_once(namespace: str, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The object when ``check`` holds for it, else None (for wait_until)."""
    obj = held(namespace)
    return obj if check(obj) else None


def test_a_paused_vm_stays_without_its_server_until_unpaused(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    apply(namespace, vm("held"))
    obj = wait_ready("vm", "held", namespace, 240)
    server_id, uid = obj["status"]["id"], obj["metadata"]["uid"]
    ready_before = condition(obj)

    annotate(namespace, "kumo.dev/paused=true")
    wait_until(
        "the Paused condition",
        lambda: condition(held(namespace), "Paused").get("status") == "True",
        30,
    )
    demo_conn.compute.delete_server(server_id)

    # The cloud watch wakes the paused VM; its pass reads the server gone and says so.
    seen = wait_until(
        "status: the server seen missing while paused",
        lambda: held_once(namespace, lambda o: MISSING in o["status"].get("drift", [])),
        90,
    )
    assert "would create server" in condition(seen, "Paused")["message"]
    assert seen["status"]["phase"] == "Paused"

    # Several more passes, each one asked for and served: none builds a server.
    for i in range(3):
        annotate(namespace, f"kumo.dev/reconcile-requested-at=check-{i}")
        obj = wait_until(
            f"reconcile request check-{i} served",
            lambda i=i: held_once(
                namespace, lambda o: o["status"].get("lastHandledReconcileAt") == f"check-{i}"
            ),
            30,
        )
        assert owned_servers(demo_conn, uid) == [], f"pass {i} built a server while paused"
        assert MISSING in obj["status"]["drift"]
        assert condition(obj) == ready_before, "Ready keeps its last truth while paused"
        assert condition(obj, "Reconciling")["reason"] == "Paused"

    kubectl("annotate", "vm/held", "-n", namespace, "kumo.dev/paused-")

    def rebuilt() -> dict[str, Any] | None:
        o = held(namespace)
        new = o["status"].get("id")
        ready = condition(o).get("status") == "True"
        return o if ready and new not in (None, server_id) else None

    obj = wait_until("a new server once unpaused", rebuilt, 240)
    assert condition(obj, "Paused") == {}, "the Paused condition goes with the annotation"
    assert "drift" not in obj["status"]
    assert [s.id for s in owned_servers(demo_conn, uid)] == [obj["status"]["id"]]

    kubectl("delete", "vm/held", "-n", namespace, "--wait=false")
    wait_gone("vm", "held", namespace, 180)


def test_deleting_a_paused_vm_waits_for_unpause(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    """The finalizer stays while paused (Crossplane's rule): nothing is deleted or
    released behind a person holding it; unpaused, the deletion completes."""
    apply(namespace, vm("held"))
    obj = wait_ready("vm", "held", namespace, 240)
    uid = obj["metadata"]["uid"]
    annotate(namespace, "kumo.dev/paused=true")
    wait_until("paused", lambda: condition(held(namespace), "Paused").get("status") == "True", 30)
    kubectl("delete", "vm/held", "-n", namespace, "--wait=false")
    obj = wait_until(
        "the paused deletion reported",
        lambda: held_once(
            namespace, lambda o: "deletion waits" in condition(o, "Paused").get("message", "")
        ),
        30,
    )
    annotate(namespace, "kumo.dev/reconcile-requested-at=while-deleting")
    wait_until(
        "a pass of the paused deletion",
        lambda: held(namespace)["status"].get("lastHandledReconcileAt") == "while-deleting",
        30,
    )
    assert len(owned_servers(demo_conn, uid)) == 1, "the server stays while paused"
    kubectl("annotate", "vm/held", "-n", namespace, "kumo.dev/paused-")
    wait_gone("vm", "held", namespace, 180)
    assert owned_servers(demo_conn, uid) == []
