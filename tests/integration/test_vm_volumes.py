"""VirtualMachine.spec.volumes on the real kube-apiserver and the lab's Nova and Cinder
(fake drivers, real attachments at the API level): a Volume is attached in place once
Ready; a server deleted out of band is replaced and the new one gets the same volume;
deleting the Volume waits while the VM names it; removing it from the spec detaches it
in place (same server), after which the Volume's deletion completes."""

from __future__ import annotations

from typing import Any

from tests.integration.helpers import apply, condition, vm, wait_gone, wait_ready, wait_reason
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until

MV = "3.0"


def volume_of(conn: Any, volume_id: str) -> dict[str, Any] | None:
    response = conn.block_storage.get(f"/volumes/{volume_id}", microversion=MV)
    return None if response.status_code == 404 else response.json()["volume"]


def attached_servers(conn: Any, volume_id: str) -> list[str]:
    volume = volume_of(conn, volume_id) or {}
    return sorted(a["server_id"] for a in volume.get("attachments") or [])


def server_volumes(conn: Any, server_id: str) -> list[str]:
    server = conn.compute.get_server(server_id)
    return sorted(v["id"] if isinstance(v, dict) else v.id for v in server.attached_volumes or [])


def attached_to(conn: Any, ns: str, volume_id: str) -> str | None:
    """The VM's server ID once it is Ready with the volume attached (both sides agree)."""
    obj = get_obj("vm", "web", ns) or {}
    status = obj.get("status") or {}
    server_id = status.get("id")
    if (
        condition(obj).get("status") != "True"
        or [v["id"] for v in status.get("volumes") or []] != [volume_id]
        or attached_servers(conn, volume_id) != [server_id]
        or (volume_of(conn, volume_id) or {}).get("status") != "in-use"
    ):
        return None
    return str(server_id) if volume_id in server_volumes(conn, server_id) else None


def test_vm_volume_attach_replace_detach_in_place_and_deletion_waits(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    ns = namespace
    volume = {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "Volume",
        "metadata": {"name": "data"},
        "spec": {"size": 1},
    }
    web = vm("web")
    web["spec"]["volumes"] = [{"volumeRef": "data"}]
    apply(ns, web)  # before its Volume: it waits for it
    apply(ns, volume)
    volume_id = wait_ready("vol", "data", ns, timeout=120)["status"]["id"]
    first = wait_until(
        "volume attached to the VM", lambda: attached_to(demo_conn, ns, volume_id), 240
    )

    # Out of band: the server is deleted; the new one gets the same volume once Nova has
    # freed it from the old one.
    demo_conn.compute.delete_server(first)

    def replaced() -> str | None:
        server_id = attached_to(demo_conn, ns, volume_id)
        return server_id if server_id not in (None, first) else None

    second = wait_until("the replacement server has the volume", replaced, 300)
    assert second != first

    # Deleting the Volume waits while the VM names it; the volume stays attached.
    kubectl("delete", "vol", "data", "-n", ns, "--wait=false")
    cond = wait_reason("vol", "data", ns, "WaitingForVirtualMachines", timeout=60)
    assert "web" in cond["message"]
    assert attached_servers(demo_conn, volume_id) == [second]

    # Leaving spec.volumes detaches it in place: the same server; then the Volume goes.
    kubectl("patch", "vm", "web", "-n", ns, "--type=merge", "-p", '{"spec":{"volumes":[]}}')
    wait_gone("vol", "data", ns, 180)
    wait_until("volume gone from Cinder", lambda: volume_of(demo_conn, volume_id) is None, 60)
    obj = wait_ready("vm", "web", ns, timeout=60)
    assert obj["status"]["id"] == second, "detached in place, never replaced"
    assert obj["status"].get("volumes", []) == []
    assert demo_conn.compute.get_server(second).status == "ACTIVE"
    kubectl("delete", "vm", "web", "-n", ns, "--wait=false")
    wait_gone("vm", "web", ns, 180)


def test_root_volume_boots_from_a_volume_of_the_image_that_goes_with_the_server(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    ns = namespace
    boot = vm("boot")
    boot["spec"]["rootVolume"] = {"size": 1}
    apply(ns, boot)
    obj = wait_ready("vm", "boot", ns, timeout=300)
    server_id = obj["status"]["id"]
    server = demo_conn.compute.get_server(server_id)
    assert not (server.image or {}).get("id"), "booted from a volume, not from the image"
    (root_id,) = server_volumes(demo_conn, server_id)
    root = volume_of(demo_conn, root_id) or {}
    assert root["status"] == "in-use" and root["size"] == 1 and root["bootable"] == "true"
    image = demo_conn.image.find_image(boot["spec"]["image"], ignore_missing=False)
    assert root["volume_image_metadata"]["image_id"] == image.id
    assert attached_servers(demo_conn, root_id) == [server_id]
    assert obj["status"].get("volumes", []) == [], (
        "the root volume is the server's, not spec.volumes'"
    )

    kubectl("delete", "vm", "boot", "-n", ns, "--wait=false")
    wait_gone("vm", "boot", ns, 180)
    wait_until(
        "the root volume gone with the server", lambda: volume_of(demo_conn, root_id) is None, 120
    )
