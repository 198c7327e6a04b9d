"""FloatingIP: the engine drives the actuator against the in-memory Neutron; tests feed
objects and cloud state in and check floating IPs, events and status out."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kumo.api.kinds import DNS_RECORD, FLOATING_IP, LOAD_BALANCER, VIRTUAL_MACHINE
from kumo.cloud import model
from kumo.engine.objects import Key
from kumo.kinds.floatingip.actuator import PORT_SECONDS, TARGET_SECONDS, FloatingIPActuator
from tests.unit.fakes import World, make_body
from tests.unit.fakes.floating_ips import PUBLIC, FakeFloatingIPs

UID = "uid-ip"
MARKER = model.owner_word(UID)
DELETING = "2026-11-22T00:00:00Z"


def new_world(admin: bool = False, **spec: Any) -> World:
    world = World(cloud=FakeFloatingIPs(admin=admin))
    world.add(FLOATING_IP, "ip", spec)
    return world


def neutron(world: World) -> FakeFloatingIPs:
    return world.cloud_as(FakeFloatingIPs)


def run(world: World) -> float | None:
    return world.run(FloatingIPActuator(), "ip")


def converge(world: World, limit: int = 20) -> int:
    return world.converge(FloatingIPActuator(), "ip", limit)


def status(world: World) -> dict[str, Any]:
    return world.obj(FLOATING_IP, "ip").status


def ready(world: World) -> dict[str, Any]:
    return world.condition("FloatingIP", "ip")


def set_spec(world: World, **changes: Any) -> None:
    body = world.stored("FloatingIP", "ip")
    body["spec"] = {k: v for k, v in {**body["spec"], **changes}.items() if v is not None}
    body["metadata"]["generation"] += 1


def add_vm(world: World, name: str, server: str | None, ip: str | None = None) -> None:
    world.add_vm(name, ip, ready=None, status={"id": server} if server else {})


def vm_server(world: World, name: str, server: str, ip: str) -> None:
    """The VM recorded a new server (replaced: healed, rolled, deleted out of band)."""
    world.stored("VirtualMachine", name)["status"] = {"id": server, "ip": ip}


def delete(world: World) -> None:
    world.delete("FloatingIP", "ip")


# -- held -----------------------------------------------------------------------------------------


def test_no_target_allocates_and_holds_the_address() -> None:
    world = new_world(description="web's address")
    assert run(world) == 0.5
    fip = neutron(world).only()
    assert (fip.network_id, fip.port_id) == (PUBLIC, None)
    assert fip.tags == model.marker_tags(UID)
    assert fip.description == f"web's address {MARKER}"
    assert (status(world)["id"], status(world)["address"]) == (fip.id, fip.address)
    assert world.events.reasons()[0] == "Created"

    assert run(world) is None
    st = status(world)
    assert (st["phase"], ready(world)["status"]) == ("Held", "True")
    assert f"floating IP {fip.address} held" in ready(world)["message"]
    assert neutron(world).calls == ["create_floating_ip", "set_floating_ip_tags", "get_floating_ip"]

    calls = len(neutron(world).calls)
    assert run(world) is None
    assert neutron(world).calls[calls:] == ["get_floating_ip"], "converged: one read"


def test_an_association_made_by_hand_is_undone_while_held() -> None:
    world = new_world()
    converge(world)
    port = neutron(world).add_port("srv-x", "10.10.0.9")
    fip = neutron(world).only()
    neutron(world).fips[fip.id] = model.FloatingIP(
        fip.id, fip.address, PUBLIC, "ACTIVE", port, "10.10.0.9", "srv-x", fip.tags, fip.description
    )
    assert run(world) is None
    assert neutron(world).only().port_id is None
    assert "Disassociated" in world.events.reasons()


def test_a_named_network_and_an_unknown_one() -> None:
    world = new_world(network="public")
    converge(world)
    assert neutron(world).only().network_id == PUBLIC

    world = new_world(network="private")
    assert run(world) == 60.0
    assert (ready(world)["reason"], "spec.network") == ("NetworkNotFound", "spec.network")
    assert ready(world)["message"].startswith("spec.network: no external network 'private'")
    assert neutron(world).fips == {}


def test_several_external_networks_need_the_spec_to_name_one() -> None:
    world = new_world()
    neutron(world).external["net-v6"] = "public-v6"
    run(world)
    assert ready(world)["reason"] == "InvalidSpec"
    assert ready(world)["message"].startswith("spec.network: required")
    set_spec(world, network="public-v6")
    converge(world)
    assert neutron(world).only().network_id == "net-v6"


def test_a_chosen_address_needs_the_cloud_to_allow_it() -> None:
    world = new_world(address="203.0.113.77")
    run(world)
    assert (ready(world)["reason"], neutron(world).fips) == ("CloudForbidden", {})
    assert ready(world)["message"].startswith("spec.address: ")

    world = new_world(admin=True, address="203.0.113.77")
    converge(world)
    assert neutron(world).only().address == "203.0.113.77"


def test_bad_input_is_refused_before_anything_is_allocated() -> None:
    for spec, reason, field in [
        ({"address": "nope"}, "InvalidAddress", "spec.address"),
        ({"virtualMachineRef": "a", "loadBalancerRef": "b"}, "InvalidSpec", "spec"),
        ({"description": "x" * 208}, "InvalidSpec", "spec.description"),
    ]:
        world = World(cloud=FakeFloatingIPs())
        world.add(FLOATING_IP, "ip", spec)
        run(world)
        assert ready(world)["reason"] == reason, spec
        assert ready(world)["message"].startswith(f"{field}: "), spec
        assert neutron(world).fips == {}


# -- following a VirtualMachine -----------------------------------------------------------------


def test_associates_with_the_vm_server_port() -> None:
    world = new_world(virtualMachineRef="web")
    add_vm(world, "web", "srv-1", "10.10.0.5")
    port = neutron(world).add_port("srv-1", "10.10.0.5")
    converge(world)
    fip = neutron(world).only()
    assert (fip.port_id, fip.fixed_address, fip.device_id) == (port, "10.10.0.5", "srv-1")
    st = status(world)
    assert (st["phase"], st["portId"], st["fixedAddress"], st["deviceId"]) == (
        "Associated",
        port,
        "10.10.0.5",
        "srv-1",
    )
    assert f"→ 10.10.0.5 (VirtualMachine web, port {port})" in ready(world)["message"]
    assert "Associated" in world.events.reasons()

    calls = len(neutron(world).calls)
    assert run(world) is None
    assert neutron(world).calls[calls:] == ["get_floating_ip"], "no port lookup while it points"


def test_follows_the_vm_through_a_server_replacement() -> None:
    world = new_world(virtualMachineRef="web")
    add_vm(world, "web", "srv-1", "10.10.0.5")
    neutron(world).add_port("srv-1", "10.10.0.5")
    converge(world)
    fip = neutron(world).only()

    # The server is deleted out of band: Neutron deletes its port and frees the address.
    neutron(world).drop_device("srv-1")
    assert run(world) == TARGET_SECONDS or neutron(world).only().port_id is None
    # The VM builds a new server; its port comes a moment later.
    vm_server(world, "web", "srv-2", "10.10.0.8")
    assert run(world) == PORT_SECONDS
    assert ready(world)["reason"] == "WaitingForTarget"
    assert "server srv-2 has no port" in ready(world)["message"]
    assert status(world)["address"] == fip.address, "the address is kept while waiting"
    new_port = neutron(world).add_port("srv-2", "10.10.0.8")
    assert run(world) is None

    again = neutron(world).only()
    assert (again.id, again.address) == (fip.id, fip.address), "the same floating IP"
    assert (again.port_id, again.device_id) == (new_port, "srv-2")
    assert neutron(world).calls.count("create_floating_ip") == 1
    (message,) = [e[3] for e in world.events.events if e[2] == "Associated" and "srv-2" in e[3]]
    assert message == (
        f"floating IP {fip.address} → 10.10.0.8 on port {new_port} "
        "(VirtualMachine web, server srv-2)"
    )


def test_a_vm_without_a_server_yet_waits_with_the_address_allocated() -> None:
    world = new_world(virtualMachineRef="web")
    add_vm(world, "web", None)
    run(world)
    assert run(world) == TARGET_SECONDS
    assert (status(world)["phase"], ready(world)["reason"]) == ("Waiting", "WaitingForTarget")
    assert "VirtualMachine 'web' has no server yet" in ready(world)["message"]
    assert status(world)["address"] == neutron(world).only().address


def test_a_missing_target_is_reported_and_keeps_the_address() -> None:
    world = new_world(virtualMachineRef="ghost")
    run(world)
    assert run(world) == 60.0
    assert ready(world)["reason"] == "TargetNotFound"
    assert ready(world)["message"].startswith("spec.virtualMachineRef: VirtualMachine 'ghost'")
    assert status(world)["address"] == neutron(world).only().address


def test_removing_the_target_holds_the_address() -> None:
    world = new_world(virtualMachineRef="web")
    add_vm(world, "web", "srv-1", "10.10.0.5")
    neutron(world).add_port("srv-1", "10.10.0.5")
    converge(world)
    set_spec(world, virtualMachineRef=None)
    converge(world)
    assert neutron(world).only().port_id is None
    assert status(world)["phase"] == "Held" and status(world).get("portId") is None


def test_the_port_with_the_vm_primary_address_is_chosen() -> None:
    world = new_world(virtualMachineRef="web")
    add_vm(world, "web", "srv-1", "10.10.0.5")
    neutron(world).add_port("srv-1", "10.20.0.3", network_id="net-other")
    chosen = neutron(world).add_port("srv-1", "10.10.0.5")
    converge(world)
    assert neutron(world).only().port_id == chosen


def test_an_unreachable_port_is_reported_on_the_target_field() -> None:
    class NoRouter(FakeFloatingIPs):
        async def associate_floating_ip(
            self, fip_id: str, port_id: str | None, fixed_address: str | None
        ) -> model.FloatingIP:
            from kumo.engine.errors import TerminalError

            raise TerminalError("NotFound", "External network net-public is not reachable")

    world = World(cloud=NoRouter())
    world.add(FLOATING_IP, "ip", {"virtualMachineRef": "web"})
    add_vm(world, "web", "srv-1", "10.10.0.5")
    neutron(world).add_port("srv-1", "10.10.0.5")
    run(world)
    run(world)
    assert ready(world)["reason"] == "NotFound"
    message = ready(world)["message"]
    assert message.startswith("spec.virtualMachineRef: cannot associate floating IP")
    assert "not reachable" in message
    assert status(world)["address"] == neutron(world).only().address


# -- out of band -------------------------------------------------------------------------------


def test_an_out_of_band_disassociation_is_repaired() -> None:
    world = new_world(virtualMachineRef="web")
    add_vm(world, "web", "srv-1", "10.10.0.5")
    port = neutron(world).add_port("srv-1", "10.10.0.5")
    converge(world)
    neutron(world).disassociate_out_of_band(neutron(world).only().id)
    assert run(world) is None
    assert neutron(world).only().port_id == port


def test_an_out_of_band_deletion_allocates_again_and_follows() -> None:
    world = new_world(virtualMachineRef="web")
    add_vm(world, "web", "srv-1", "10.10.0.5")
    port = neutron(world).add_port("srv-1", "10.10.0.5")
    converge(world)
    gone = neutron(world).only()
    neutron(world).delete_out_of_band(gone.id)
    converge(world)
    fip = neutron(world).only()
    assert fip.id != gone.id and fip.port_id == port
    assert status(world)["id"] == fip.id


def test_a_removed_kumo_tag_is_put_back() -> None:
    world = new_world()
    converge(world)
    fip = neutron(world).only()
    neutron(world).fips[fip.id] = model.FloatingIP(
        fip.id, fip.address, PUBLIC, "DOWN", tags=[model.owner_tag(UID)], description=MARKER
    )
    converge(world)
    assert neutron(world).only().tags == model.marker_tags(UID)


def test_a_create_whose_tags_never_came_is_adopted_by_its_description() -> None:
    world = new_world()
    orphan = neutron(world).add_fip("203.0.113.50", [], description=MARKER)  # crash after POST
    converge(world)
    fip = neutron(world).only()
    assert fip.id == orphan.id and fip.tags == model.marker_tags(UID)
    assert "Adopted" in world.events.reasons()


def test_a_foreign_floating_ip_is_never_touched() -> None:
    world = new_world()
    theirs = neutron(world).add_fip("203.0.113.60", ["team-a"], "by hand")
    world.stored("FloatingIP", "ip")["status"] = {"id": theirs.id}
    run(world)
    assert ready(world)["reason"] == "NotOwned"
    delete(world)
    run(world)
    assert neutron(world).fips == {theirs.id: theirs}


# -- a LoadBalancer's VIP ----------------------------------------------------------------------


def test_associates_with_the_load_balancer_vip_port() -> None:
    world = new_world(loadBalancerRef="front")
    body = make_body(LOAD_BALANCER, "front", {})
    body["status"] = {"id": "lb-1", "vip": "10.10.0.20"}
    world.store.put("LoadBalancer", body)
    vip = neutron(world).add_port("lb-lb-1", "10.10.0.20")
    run(world)
    assert run(world) == TARGET_SECONDS
    assert "LoadBalancer 'front' has no VIP port yet" in ready(world)["message"]
    neutron(world).lbs["lb-1"] = model.LoadBalancer(
        "lb-1", "front", "ACTIVE", "ONLINE", "10.10.0.20", vip_port_id=vip
    )
    assert run(world) is None
    assert (neutron(world).only().port_id, neutron(world).only().fixed_address) == (
        vip,
        "10.10.0.20",
    )
    assert "LoadBalancer front" in ready(world)["message"]


# -- deletion, Orphan, import ------------------------------------------------------------------


def test_delete_disassociates_then_releases() -> None:
    world = new_world(virtualMachineRef="web")
    add_vm(world, "web", "srv-1", "10.10.0.5")
    neutron(world).add_port("srv-1", "10.10.0.5")
    converge(world)
    delete(world)
    calls = len(neutron(world).calls)
    assert run(world) == 1.0
    assert neutron(world).calls[calls:] == [
        "get_floating_ip",
        "disassociate_floating_ip",
        "delete_floating_ip",
    ]
    assert neutron(world).fips == {}
    assert run(world) is None
    assert world.store.get("FloatingIP", "default", "ip") is None


def test_orphan_keeps_the_address_released_and_an_import_takes_it_back() -> None:
    world = new_world(virtualMachineRef="web", description="web")
    add_vm(world, "web", "srv-1", "10.10.0.5")
    port = neutron(world).add_port("srv-1", "10.10.0.5")
    converge(world)
    kept = neutron(world).only()
    world.stored("FloatingIP", "ip")["spec"]["deletionPolicy"] = "Orphan"
    delete(world)
    converge(world)
    assert world.store.get("FloatingIP", "default", "ip") is None
    released = neutron(world).only()
    assert (released.id, released.port_id) == (kept.id, port), "kept as it was"
    assert released.tags == [f"kumo-orphan={UID}"]
    assert released.description == f"web kumo-orphan={UID}"
    assert model.floating_ip_owner(released) is None
    assert "Released" in world.events.reasons()

    world.add(FLOATING_IP, "again", {"import": {"name": kept.address}}, uid="uid-again")
    world.converge(FloatingIPActuator(), "again")
    taken = neutron(world).only()
    assert taken.id == kept.id
    assert taken.tags == model.marker_tags("uid-again")
    assert taken.description == model.owner_word("uid-again")
    assert world.obj(FLOATING_IP, "again").status["address"] == kept.address
    assert taken.port_id is None, "no target: held"


def test_import_by_id_checks_the_address() -> None:
    world = new_world()
    theirs = neutron(world).add_fip("203.0.113.70", ["team-a"], "by hand")
    set_spec(world, **{"import": {"id": theirs.id}, "address": "203.0.113.71"})
    run(world)
    assert ready(world)["reason"] == "ImportMismatch"
    assert (
        "spec.address is '203.0.113.71' but the floating IP has '203.0.113.70'"
        in (ready(world)["message"])
    )
    set_spec(world, address="203.0.113.70")
    converge(world)
    assert neutron(world).only().tags == ["team-a", *model.marker_tags(UID)]


def test_observe_reports_a_disassociation_and_changes_nothing() -> None:
    world = new_world(virtualMachineRef="web")
    add_vm(world, "web", "srv-1", "10.10.0.5")
    port = neutron(world).add_port("srv-1", "10.10.0.5")
    converge(world)
    fip = neutron(world).only()
    set_spec(world, managementPolicy="Observe")
    neutron(world).disassociate_out_of_band(fip.id)
    run(world)
    assert neutron(world).only().port_id is None
    assert status(world)["drift"] == [
        {"field": "spec.target", "desired": f"port {port}", "actual": "held (no port)"}
    ]


# -- dependents ---------------------------------------------------------------------------------


def test_dependents_follow_references() -> None:
    world = World(cloud=FakeFloatingIPs())
    world.add(FLOATING_IP, "by-vm", {"virtualMachineRef": "web"})
    world.add(FLOATING_IP, "by-lb", {"loadBalancerRef": "front"})
    world.add(FLOATING_IP, "held", {})
    actuator = FloatingIPActuator()

    def keys(*names: str) -> list[Key]:
        return [Key("FloatingIP", "default", n) for n in names]

    vm = make_body(VIRTUAL_MACHINE, "web", {})
    assert actuator.dependents("VirtualMachine", vm, world.store) == keys("by-vm")
    lb = make_body(LOAD_BALANCER, "front", {})
    assert actuator.dependents("LoadBalancer", lb, world.store) == keys("by-lb")
    assert actuator.dependents("LoadBalancer", vm, world.store) == []
    elsewhere = make_body(VIRTUAL_MACHINE, "web", {}, namespace="team-b")
    assert actuator.dependents("VirtualMachine", elsewhere, world.store) == []
    record = make_body(DNS_RECORD, "www", {"zone": "z", "name": "www", "values": ["1.2.3.4"]})
    assert actuator.dependents("DNSRecord", record, world.store) == []


def test_a_dns_record_pointing_at_it_goes_first() -> None:
    world = new_world()
    converge(world)
    record = world.add(
        DNS_RECORD,
        "www",
        {"zone": "z", "name": "www", "floatingIPRef": "ip"},
        deletionTimestamp=DELETING,
        finalizers=[DNS_RECORD.finalizer],
    )
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # the wait is bounded from here
    world.stored("FloatingIP", "ip")["metadata"]["deletionTimestamp"] = now
    assert run(world) is not None
    assert ready(world)["reason"] == "WaitingForDNS"
    assert neutron(world).fips, "the address stays while DNS still names it"
    assert FloatingIPActuator().dependents("DNSRecord", record, world.store) == [
        Key("FloatingIP", "default", "ip")
    ]
    world.store.remove("DNSRecord", "default", "www")
    converge(world)
    assert neutron(world).fips == {}
