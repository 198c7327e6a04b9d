"""Port on the real kube-apiserver and the lab's Nova and Neutron (fake drivers: nothing
answers on an address, the ports and their pairs are real at the API): a group of 2
whose members share a VIP through ``allowedAddressPairs`` — on both members' own ports,
through a member's replacement too — and a standalone VM keeping its Port (same port
ID, same address) through an out-of-band delete of its server; nothing is left after
the deletes.

Nova binds a port to a server asynchronously: with the lab's driver a server may be
ACTIVE, and its VM Ready, while its port's ``device_id`` is still empty. So every check
of a port's binding (and of a server's ports) waits, with a deadline, for what it
expects; none reads it once.
"""

from __future__ import annotations

from typing import Any

from tests.integration.helpers import (
    VM_SPEC,
    apply,
    condition,
    kumo_leftovers,
    members_of,
    vm,
    wait_gone,
    wait_ready,
    wait_reason,
)
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until

#: A build on the lab (queued behind other tests' servers) and Nova's binding after it.
BUILD_SECONDS = 300


def port_manifest(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kumo.dev/v1alpha1", "kind": "Port", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


def neutron_port(conn: Any, port_id: str) -> dict[str, Any] | None:
    response = conn.network.get(f"/ports/{port_id}")
    return None if response.status_code == 404 else response.json()["port"]


def ports_of(conn: Any, server_id: str) -> list[dict[str, Any]]:
    """The ports Neutron shows bound to ``server_id``."""
    response = conn.network.get("/ports", params={"device_id": server_id})
    return list(response.json()["ports"])


def pair_addresses(port: dict[str, Any]) -> set[str]:
    return {p["ip_address"].removesuffix("/32") for p in port.get("allowed_address_pairs") or []}


def wait_bound(conn: Any, port_id: str, server_id: str) -> dict[str, Any]:
    """The port once Neutron shows it bound to ``server_id`` (Nova binds it after the
    build, asynchronously)."""

    def bound() -> dict[str, Any] | None:
        port = neutron_port(conn, port_id) or {}
        return port if port.get("device_id") == server_id else None

    return wait_until(f"port {port_id} bound to {server_id}", bound, BUILD_SECONDS, interval=1.0)  # type: ignore[no-any-return]


def wait_pair_on_own_port(conn: Any, server_id: str, vip: str) -> dict[str, Any]:
    """The server's own port once Neutron shows it bound and carrying the VIP's pair."""

    def shows() -> dict[str, Any] | None:
        own = [p for p in ports_of(conn, server_id) if "kumo" not in (p.get("tags") or [])]
        return next((p for p in own if vip in pair_addresses(p)), None)

    return wait_until(f"{vip} on server {server_id}'s port", shows, BUILD_SECONDS, interval=1.0)  # type: ignore[no-any-return]


def status_of(kind: str, name: str, ns: str) -> dict[str, Any]:
    return dict((get_obj(kind, name, ns) or {}).get("status") or {})


def ready_server(kind: str, name: str, ns: str, not_: str | None = None) -> str | None:
    """The object's server ID once it is Ready on a server other than ``not_``."""
    obj = get_obj(kind, name, ns)
    server = ((obj or {}).get("status") or {}).get("id")
    ok = condition(obj).get("status") == "True" and server and server != not_
    return str(server) if ok else None


def nothing_left(conn: Any, ns: str) -> None:
    wait_until("no Kumo resources left", lambda: not any(kumo_leftovers(conn, ns).values()), 180)


def test_a_group_shares_a_vip_through_allowed_address_pairs_through_a_replacement(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    ns = namespace
    # The VIP's address is held by a Port of its own (no server is on it): no one else
    # gets it from Neutron.
    apply(ns, port_manifest("vip", description="keepalived VIP"))
    vip_port = wait_ready("port", "vip", ns, timeout=120)["status"]
    vip = vip_port["address"]
    assert vip and vip_port["phase"] == "Available"

    template = {**VM_SPEC, "allowedAddressPairs": [{"ipAddress": vip}]}
    apply(ns, {
        "apiVersion": "kumo.dev/v1alpha1", "kind": "VirtualMachineGroup",
        "metadata": {"name": "lb"},
        "spec": {"replicas": 2, "haPolicy": "soft", "template": template},
    })  # fmt: skip

    def two_ready() -> list[str] | None:
        servers = [ready_server("vm", m["metadata"]["name"], ns) for m in members_of(ns, "lb")]
        return servers if len(servers) == 2 and all(servers) else None  # type: ignore[return-value]

    servers = wait_until("both members Ready", two_ready, BUILD_SECONDS, interval=1.0)
    for server in servers:
        wait_pair_on_own_port(demo_conn, server, vip)
    names = sorted(m["metadata"]["name"] for m in members_of(ns, "lb"))

    def status_shows_pair() -> bool:
        pairs = status_of("vm", names[0], ns).get("allowedAddressPairs") or []
        return vip in {p["ipAddress"] for p in pairs}

    wait_until("the member's status shows the pair", status_shows_pair, 60)

    # A member's server deleted behind Kumo's back: the member builds a new one, and the
    # new server's own port carries the pair too; the other member's keeps it.
    old = status_of("vm", names[0], ns)["id"]
    demo_conn.compute.delete_server(old)
    new = wait_until(
        f"{names[0]} Ready on a new server",
        lambda: ready_server("vm", names[0], ns, not_=old),
        BUILD_SECONDS,
        interval=1.0,
    )
    wait_pair_on_own_port(demo_conn, new, vip)
    other = ready_server("vm", names[1], ns)
    assert other is not None
    wait_pair_on_own_port(demo_conn, other, vip)
    assert vip in pair_addresses(
        next(p for p in ports_of(demo_conn, other) if "kumo" not in (p.get("tags") or []))
    )

    kubectl("delete", "vmg", "lb", "-n", ns, "--wait=false")
    wait_gone("vmg", "lb", ns, timeout=BUILD_SECONDS)
    kubectl("delete", "port", "vip", "-n", ns, "--wait=false")
    wait_gone("port", "vip", ns, timeout=120)
    assert neutron_port(demo_conn, vip_port["id"]) is None
    nothing_left(demo_conn, ns)


def test_a_vm_keeps_its_port_through_an_out_of_band_delete_of_its_server(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    ns = namespace
    apply(ns, port_manifest("fixed", description="db's address"))
    port = wait_ready("port", "fixed", ns, timeout=120)["status"]
    port_id, address = port["id"], port["address"]
    neutron = neutron_port(demo_conn, port_id)
    assert neutron is not None and "kumo" in neutron["tags"]
    assert neutron["description"].startswith("db's address kumo-owner=")

    def has(server_id: str) -> bool:
        """Nova lists the port's address among the server's (it learns it when it binds)."""
        server = demo_conn.compute.get_server(server_id)
        found = {a.get("addr") for entries in (server.addresses or {}).values() for a in entries}
        return address in found

    db = vm("db")
    db["spec"]["ports"] = [{"name": "fixed"}]
    apply(ns, db)
    first = wait_until(
        "db Ready", lambda: ready_server("vm", "db", ns), BUILD_SECONDS, interval=1.0
    )
    wait_bound(demo_conn, port_id, first)
    wait_until("Nova shows the port's address on db's server", lambda: has(first), 120)
    wait_until(
        "the Port reports its server",
        lambda: status_of("port", "fixed", ns).get("deviceId") == first,
        60,
    )

    # The server deleted out of band: the VM boots a new one on the same port once Nova
    # has let it go (WaitingForPort meanwhile), same ID, same address.
    demo_conn.compute.delete_server(first)
    second = wait_until(
        "db Ready on a new server",
        lambda: ready_server("vm", "db", ns, not_=first),
        BUILD_SECONDS,
        interval=1.0,
    )
    bound = wait_bound(demo_conn, port_id, second)
    assert [ip["ip_address"] for ip in bound["fixed_ips"]] == [address], "the same address"
    again = status_of("port", "fixed", ns)
    assert (again["id"], again["address"]) == (port_id, address), "the same port"
    wait_until("Nova shows the same address on the new server", lambda: has(second), 120)

    # Deleting the Port waits while the VM names it; the VM goes, then the port.
    kubectl("delete", "port", "fixed", "-n", ns, "--wait=false")
    wait_reason("port", "fixed", ns, "WaitingForUsers", timeout=60)
    assert neutron_port(demo_conn, port_id) is not None
    kubectl("delete", "vm", "db", "-n", ns, "--wait=false")
    wait_gone("vm", "db", ns, timeout=BUILD_SECONDS)
    wait_gone("port", "fixed", ns, timeout=BUILD_SECONDS)
    assert neutron_port(demo_conn, port_id) is None
    nothing_left(demo_conn, ns)
