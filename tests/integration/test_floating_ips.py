"""FloatingIP on the real kube-apiserver and the lab's Neutron (API-level association: the
fake ML2 driver has no dataplane; the project's router to `public` makes Neutron accept
it): an address held, then following a VM through a server deleted out of band (the
same address on the new server's port; its latency is make bench-fip's), an out-of-band disassociation repaired,
deletion releasing the address, and Orphan keeping it for an import."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import (
    allow_unmarked_imports,
    apply,
    cluster_id,
    vm,
    wait_gone,
    wait_ready,
)
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until

CLOUD_PY = Path(__file__).resolve().parents[2] / "dev" / "openstack" / "cloud.py"


def fip_manifest(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "FloatingIP",
        "metadata": {"name": name},
        "spec": spec,
    }


def neutron_fip(conn: Any, fip_id: str) -> dict[str, Any] | None:
    response = conn.network.get(f"/floatingips/{fip_id}")
    return None if response.status_code == 404 else response.json()["floatingip"]


def ports_of(conn: Any, server_id: str) -> list[str]:
    return [p.id for p in conn.network.ports(device_id=server_id)]


def reports(ns: str, name: str, server: str) -> dict[str, Any] | None:
    """The FloatingIP once its status says Ready and associated with ``server``."""
    obj = get_obj("fip", name, ns) or {}
    status = obj.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return obj if ready and status.get("deviceId") == server else None


@pytest.fixture(scope="module")
def demo_router(openstack_lab: str, admin_conn: Any) -> None:
    """The lab's `kumo-demo-router` (dev/openstack/cloud.py makes it; a lab brought up
    before that step existed gets it here, by the same function)."""
    spec = importlib.util.spec_from_file_location("lab_cloud", CLOUD_PY)
    assert spec is not None and spec.loader is not None
    lab_cloud = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lab_cloud)
    project = admin_conn.identity.find_project("kumo-demo", domain_id="default")
    lab_cloud.router(admin_conn, "kumo-demo", project.id)


def test_held_then_following_a_vm_through_replacement_then_released(
    namespace: str, kumo_operator: Any, demo_conn: Any, demo_router: None
) -> None:
    ns = namespace
    apply(ns, fip_manifest("web-ip", description="web's public address"))
    obj = wait_ready("fip", "web-ip", ns, timeout=60)
    fip_id, address = obj["status"]["id"], obj["status"]["address"]
    uid = obj["metadata"]["uid"]
    fip = neutron_fip(demo_conn, fip_id)
    assert fip is not None and fip["floating_ip_address"] == address
    assert fip["port_id"] is None and obj["status"]["phase"] == "Held"
    assert {"kumo", f"kumo-owner={uid}"} <= set(fip["tags"])
    assert fip["description"] == f"web's public address kumo-owner={uid}@{cluster_id()}"
    assert address in kubectl("get", "fip", "web-ip", "-n", ns).stdout

    # DNS publishes it, before any VM has it.
    apply(ns, {
        "apiVersion": "kumo.dev/v1alpha1", "kind": "DNSRecord", "metadata": {"name": "www"},
        "spec": {"zone": "kumo-demo.test.", "name": f"www-{ns}", "floatingIPRef": "web-ip"},
    })  # fmt: skip
    assert wait_ready("dns", "www", ns, timeout=60)["status"]["records"] == [address]

    # Point it at a VM: associated with the server's port.
    apply(ns, vm("web"))
    server_id = wait_ready("vm", "web", ns)["status"]["id"]
    kubectl("patch", "fip", "web-ip", "-n", ns, "--type=merge",
            "-p", '{"spec":{"virtualMachineRef":"web"}}')  # fmt: skip

    def points_at(server: str) -> dict[str, Any] | None:
        found = neutron_fip(demo_conn, fip_id) or {}
        port = found.get("port_id")
        return found if port and port in ports_of(demo_conn, server) else None

    wait_until("the address on the VM's port", lambda: points_at(server_id), 60)
    # The status is written at the end of the pass that associated it (Ready was already
    # True while held): wait for it to say so, with a deadline.
    obj = wait_until("status: associated", lambda: reports(ns, "web-ip", server_id), 30)
    assert obj["status"]["phase"] == "Associated"

    # Disassociated by hand: put back within an interval.
    demo_conn.network.put(f"/floatingips/{fip_id}", json={"floatingip": {"port_id": None}})
    wait_until("re-associated", lambda: points_at(server_id), 60)

    # The server is deleted out of band: the VM builds a new one, and the same floating
    # IP follows it to the new server's port (how fast: make bench-fip).
    demo_conn.compute.delete_server(server_id)
    new_server = ""

    def followed() -> bool:
        nonlocal new_server
        status = (get_obj("vm", "web", ns) or {}).get("status") or {}
        if status.get("id") not in (None, server_id):
            new_server = status["id"]
        return bool(new_server) and points_at(new_server) is not None

    wait_until("the same address on the new server", followed, 180)
    after = neutron_fip(demo_conn, fip_id)
    assert after is not None and after["floating_ip_address"] == address, "the same address"
    obj = wait_until("status: the new server", lambda: reports(ns, "web-ip", new_server), 30)
    assert obj["status"]["id"] == fip_id

    # The VM's spec changes in a way that replaces its server (a roll): the address follows.
    kubectl("patch", "vm", "web", "-n", ns, "--type=merge",
            "-p", '{"spec":{"flavor":"m1.small"}}')  # fmt: skip
    rolled = ""

    def rolled_and_followed() -> bool:
        nonlocal rolled
        status = (get_obj("vm", "web", ns) or {}).get("status") or {}
        rolled = status.get("id") if status.get("id") not in (None, new_server) else ""
        return bool(rolled) and points_at(rolled) is not None

    wait_until("the same address on the rolled server", rolled_and_followed, 180, interval=0.2)
    after = neutron_fip(demo_conn, fip_id)
    assert after is not None and after["floating_ip_address"] == address
    assert (get_obj("dns", "www", ns) or {})["status"]["records"] == [address]

    # Deleting the object disassociates and releases the address.
    kubectl("delete", "fip", "web-ip", "-n", ns, "--wait=false")
    wait_gone("fip", "web-ip", ns, 60)
    wait_until("address released", lambda: neutron_fip(demo_conn, fip_id) is None, 30)


def test_orphan_keeps_the_address_and_an_import_takes_it_back(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    allow_unmarked_imports(namespace)
    ns = namespace
    apply(ns, fip_manifest("keep", deletionPolicy="Orphan"))
    obj = wait_ready("fip", "keep", ns, timeout=60)
    fip_id, address, uid = obj["status"]["id"], obj["status"]["address"], obj["metadata"]["uid"]

    kubectl("delete", "fip", "keep", "-n", ns, "--wait=false")
    wait_gone("fip", "keep", ns, 60)
    kept = neutron_fip(demo_conn, fip_id)
    assert kept is not None and kept["floating_ip_address"] == address, "the address stays"
    assert f"kumo-orphan={uid}" in kept["tags"]
    assert not any(
        t == "kumo" or t.startswith(("kumo-owner=", "kumo-cluster=")) for t in kept["tags"]
    )
    assert not any(w.startswith("kumo-owner=") for w in kept["description"].split())

    # The address is an identity (firewalls, DNS): a new object takes it over by address.
    apply(ns, fip_manifest("again", **{"import": {"name": address}}))
    obj = wait_ready("fip", "again", ns, timeout=60)
    assert (obj["status"]["id"], obj["status"]["address"]) == (fip_id, address)
    taken = neutron_fip(demo_conn, fip_id) or {}
    new_uid = obj["metadata"]["uid"]
    assert {"kumo", f"kumo-owner={new_uid}"} <= set(taken["tags"])
    assert not any(t.startswith("kumo-orphan=") for t in taken["tags"])

    # Deleted by hand: allocated again (Neutron picks the address: the old one is gone).
    demo_conn.network.delete(f"/floatingips/{fip_id}")
    wait_until(
        "a new floating IP",
        lambda: (
            (((get_obj("fip", "again", ns) or {}).get("status") or {}).get("id"))
            not in (None, fip_id)
        ),
        30,
        interval=0.2,
    )
    new_id = (get_obj("fip", "again", ns) or {})["status"]["id"]
    wait_ready("fip", "again", ns)
    kubectl("delete", "fip", "again", "-n", ns, "--wait=false")
    wait_gone("fip", "again", ns, 60)
    wait_until("released", lambda: neutron_fip(demo_conn, new_id) is None, 30)
