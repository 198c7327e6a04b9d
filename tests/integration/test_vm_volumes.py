"""A VirtualMachine's spec.volumes on the real Nova (fake driver) and Cinder: a Volume is
attached in place (Cinder says in-use on the server, Nova lists it), survives the server
being deleted out of band (the replacement gets the same volume), is detached in place
when it leaves the spec (the same server); the Volume's deletion waits while a VM names
it; deleting everything leaves nothing."""

from __future__ import annotations

from typing import Any

from tests.integration.helpers import apply, kumo_leftovers, wait_gone, wait_ready, wait_reason
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until
from tests.integration.test_volumes import owned_by, volume_manifest, volume_of

TEMPLATE = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}


def vm_manifest(volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachine",
        "metadata": {"name": "db"},
        "spec": {**TEMPLATE, "volumes": volumes},
    }


def attached_to(conn: Any, volume_id: str) -> set[str]:
    volume = volume_of(conn, volume_id) or {}
    return {a["server_id"] for a in volume.get("attachments") or []}


def nova_lists(conn: Any, server_id: str, volume_id: str) -> bool:
    found = conn.compute.get(f"/servers/{server_id}/os-volume_attachments").json()
    return volume_id in {a["volumeId"] for a in found["volumeAttachments"]}


def test_a_volume_is_attached_in_place_follows_a_replacement_and_is_detached_in_place(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    ns = namespace
    apply(ns, volume_manifest("data", 1))
    apply(ns, vm_manifest([{"volumeRef": "data"}]))
    volume_id = wait_ready("vol", "data", ns, timeout=120)["status"]["id"]
    vol_uid = (get_obj("vol", "data", ns) or {})["metadata"]["uid"]
    wait_until(
        "the VM Ready with the volume attached",
        lambda: (
            (get_obj("vm", "db", ns) or {}).get("status", {}).get("volumes")
            == [{"id": volume_id, "name": "data"}]
            and attached_to(demo_conn, volume_id)
            == {(get_obj("vm", "db", ns) or {})["status"]["id"]}
        ),
        240,
    )
    server_id = wait_ready("vm", "db", ns)["status"]["id"]
    assert (volume_of(demo_conn, volume_id) or {})["status"] == "in-use"
    assert nova_lists(demo_conn, server_id, volume_id)

    # The server deleted out of band: the new one gets the same volume.
    demo_conn.compute.delete_server(server_id)
    wait_until(
        "a new server with the same volume",
        lambda: (
            (new := (get_obj("vm", "db", ns) or {}).get("status", {}).get("id"))
            not in (None, server_id)
            and attached_to(demo_conn, volume_id) == {new}
        ),
        240,
    )
    server_id = wait_ready("vm", "db", ns)["status"]["id"]

    # Out of the spec: detached, the server stays.
    apply(ns, vm_manifest([]))
    wait_until("volume detached", lambda: attached_to(demo_conn, volume_id) == set(), 120)
    wait_until(
        "status says so",
        lambda: not (get_obj("vm", "db", ns) or {}).get("status", {}).get("volumes"),
        60,
    )
    assert wait_ready("vm", "db", ns)["status"]["id"] == server_id, "never replaced"

    # Named again, then the Volume's deletion waits for the VM.
    apply(ns, vm_manifest([{"volumeRef": "data"}]))
    wait_until("attached again", lambda: attached_to(demo_conn, volume_id) == {server_id}, 120)
    kubectl("delete", "vol", "data", "-n", ns, "--wait=false")
    wait_reason("vol", "data", ns, "WaitingForVirtualMachines", 60)
    assert volume_of(demo_conn, volume_id) is not None
    kubectl("delete", "vm", "db", "-n", ns, "--wait=false")
    wait_gone("vm", "db", ns, 180)
    wait_gone("vol", "data", ns, 180)
    wait_until("volume gone", lambda: volume_of(demo_conn, volume_id) is None, 60)
    assert owned_by(demo_conn, vol_uid) == []
    wait_until(
        "no Kumo resources left", lambda: not any(kumo_leftovers(demo_conn, ns).values()), 120
    )
