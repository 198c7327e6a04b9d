"""Port: the engine drives the actuator against the in-memory Neutron ports (and Nova's
network lookup); tests feed objects and cloud state in and check ports, events and
status out."""

from __future__ import annotations

import copy
from typing import Any

from kumo.api.kinds import NETWORK, PORT, SECURITY_GROUP, VIRTUAL_MACHINE
from kumo.cloud import model
from kumo.engine.objects import Key
from kumo.kinds.port.actuator import PortActuator
from tests.unit.fakes import FakeServers, World, make_body
from tests.unit.fakes.ports import FakePorts

UID = "uid-vip"
MARKER = model.owner_word(UID)
#: The marker another cluster's Kumo writes for an object whose UID is this one's.
OTHER = "0123456789ab"
FOREIGN_TAGS = ["kumo", f"kumo-owner={UID}", f"kumo-cluster={OTHER}"]
READY = [{"type": "Ready", "status": "True"}]


class Cloud(FakePorts, FakeServers):
    """Neutron's ports, Nova's network lookup (``network_id``), and the project's
    security groups by name."""

    def __init__(self, tags_in_create: bool = True) -> None:
        FakePorts.__init__(self, tags_in_create)
        FakeServers.__init__(self)

    async def network_id(self, ref: str, field: str = "spec.networks") -> str:
        return ref if ref.startswith("net-") else f"net-{ref}"

    async def find_security_groups_by_name(self, name: str) -> list[model.SecurityGroup]:
        found = self.security_group_ids.get(name)
        return [model.SecurityGroup(found, name, 1)] if found else []


def new_world(tags_in_create: bool = True, **spec: Any) -> World:
    world = World(cloud=Cloud(tags_in_create))
    world.add(PORT, "vip", spec, uid=UID)
    return world


def neutron(world: World) -> Cloud:
    return world.cloud_as(Cloud)


def run(world: World) -> float | None:
    return world.run(PortActuator(), "vip")


def converge(world: World, limit: int = 20) -> int:
    return world.converge(PortActuator(), "vip", limit)


def status(world: World) -> dict[str, Any]:
    return world.obj(PORT, "vip").status


def ready(world: World) -> dict[str, Any]:
    return world.condition("Port", "vip")


def set_spec(world: World, **changes: Any) -> None:
    body = world.stored("Port", "vip")
    body["spec"] = {k: v for k, v in {**body["spec"], **changes}.items() if v is not None}
    body["metadata"]["generation"] += 1


def delete(world: World) -> None:
    world.delete("Port", "vip")


# -- create, adopt, correct --------------------------------------------------------------------


def test_one_create_carries_the_tags_and_the_marker_then_one_read_a_pass() -> None:
    world = new_world(description="the VIP", address="10.0.0.100")
    assert run(world) == 0.5
    port = neutron(world).only_port()
    assert neutron(world).calls == ["create_port"], "no tag call: the create carried them"
    assert port.tags == model.marker_tags(UID)
    assert port.description == f"the VIP {MARKER}"
    assert (port.name, port.network_id, port.fixed_addresses) == (
        "default-vip",
        "net-private",
        ["10.0.0.100"],
    )
    assert port.security_groups == ("sg-default",), "unset: Neutron's default group"
    assert status(world)["id"] == port.id
    assert world.events.reasons()[0] == "Created"

    assert run(world) is None
    st = status(world)
    assert (st["phase"], ready(world)["status"]) == ("Available", "True")
    assert (st["address"], st["macAddress"], st.get("deviceId")) == (
        "10.0.0.100",
        port.mac_address,
        None,
    )
    assert f"port {port.id} 10.0.0.100 on network net-private, free" in ready(world)["message"]
    calls = len(neutron(world).calls)
    assert run(world) is None
    assert neutron(world).calls[calls:] == ["get_port"], "converged: one read"


def test_without_tags_in_the_create_a_tag_call_follows() -> None:
    world = new_world(tags_in_create=False)
    run(world)
    assert neutron(world).calls == ["create_port", "set_port_tags"]
    assert neutron(world).only_port().tags == model.marker_tags(UID)


def test_a_port_a_crash_left_is_adopted_not_made_twice() -> None:
    world = new_world()
    left = neutron(world).add_port("default-vip", tags=[], description=MARKER)
    converge(world)
    assert neutron(world).only_port().id == left.id, "adopted by its description"
    assert neutron(world).only_port().tags == model.marker_tags(UID), "its tags completed"
    assert "create_port" not in neutron(world).calls


def test_tags_description_groups_and_pairs_are_put_back_in_place() -> None:
    world = new_world(description="the VIP", securityGroups=["web"])
    converge(world)
    port = neutron(world).only_port()
    assert port.security_groups == ("sg-web",), "by name, looked up"
    neutron(world).edit_out_of_band(
        port.id,
        tags=["kumo"],  # the marker stays in the description
        description=f"by hand {MARKER}",
        security_groups=("sg-default",),
        allowed_address_pairs=(model.AddressPair("10.9.9.9"),),
    )
    converge(world)
    again = neutron(world).only_port()
    assert again.id == port.id, "in place, never replaced"
    assert again.tags == ["kumo", *model.marker_tags(UID)[1:]]
    assert again.description == f"the VIP {MARKER}"
    assert again.security_groups == ("sg-web",)
    assert again.allowed_address_pairs == ()
    assert {"SecurityGroupsChanged", "AddressPairsSet"} <= set(world.events.reasons())


def test_allowed_address_pairs_are_set_in_place_and_compared_as_neutron_does() -> None:
    world = new_world()
    converge(world)
    set_spec(world, allowedAddressPairs=[{"ipAddress": "10.0.0.200"}])
    converge(world)
    port = neutron(world).only_port()
    assert port.allowed_address_pairs == (model.AddressPair("10.0.0.200"),)
    assert status(world)["allowedAddressPairs"] == [{"ipAddress": "10.0.0.200"}]
    # Neutron shows the port's MAC and may write a host as a /32: the same pair.
    neutron(world).edit_out_of_band(
        port.id, allowed_address_pairs=(model.AddressPair("10.0.0.200/32", port.mac_address),)
    )
    updates = neutron(world).calls.count("update_port")
    converge(world)
    assert neutron(world).calls.count("update_port") == updates, "nothing to change"


def test_security_group_objects_are_waited_for_then_used_by_id() -> None:
    world = new_world(securityGroups=["app"])
    world.add(SECURITY_GROUP, "app", {})
    assert run(world) == 30.0
    assert ready(world)["reason"] == "WaitingForSecurityGroup"
    assert neutron(world).ports == {}, "not created before its groups are Ready"
    world.stored("SecurityGroup", "app")["status"] = {"id": "sg-app", "conditions": READY}
    converge(world)
    assert neutron(world).only_port().security_groups == ("sg-app",)


def test_an_empty_list_means_no_group_and_an_unknown_name_names_the_field() -> None:
    world = new_world(securityGroups=[])
    converge(world)
    assert neutron(world).only_port().security_groups == ()
    world = new_world(securityGroups=["nope"])
    run(world)
    assert ready(world)["reason"] == "SecurityGroupNotFound"
    assert ready(world)["message"].startswith("spec.securityGroups: security group 'nope' not")
    assert neutron(world).ports == {}


def test_a_network_object_is_waited_for_then_its_network_used() -> None:
    world = new_world(network="app")
    world.add(NETWORK, "app", {})
    assert run(world) == 30.0
    assert (ready(world)["reason"], status(world)["phase"]) == ("WaitingForNetwork", "Pending")
    world.stored("Network", "app")["status"] = {"id": "net-app-1", "conditions": READY}
    converge(world)
    assert neutron(world).only_port().network_id == "net-app-1"


def test_bad_input_is_refused_before_anything_is_made() -> None:
    world = new_world(address="10.0.0.999")
    run(world)
    assert ready(world)["reason"] == "InvalidAddress"
    assert neutron(world).ports == {}


# -- ownership, per cluster ---------------------------------------------------------------------


def test_another_clusters_port_is_neither_changed_nor_deleted() -> None:
    world = new_world(description="the VIP")
    theirs = neutron(world).add_port("default-vip", tags=list(FOREIGN_TAGS), description="x")
    before = copy.deepcopy(theirs)
    converge(world)
    ours = status(world)["id"]
    assert ours != theirs.id, "this object made its own"
    assert neutron(world).ports[theirs.id] == before, "theirs untouched"
    delete(world)
    converge(world)
    assert list(neutron(world).ports) == [theirs.id], "deleting ours leaves theirs"
    assert neutron(world).ports[theirs.id] == before


def test_another_clusters_port_named_by_status_is_not_owned() -> None:
    world = new_world()
    theirs = neutron(world).add_port("x", tags=list(FOREIGN_TAGS))
    world.stored("Port", "vip")["status"] = {"id": theirs.id}
    before = copy.deepcopy(neutron(world).ports)
    run(world)
    assert ready(world)["reason"] == "NotOwned"
    delete(world)
    run(world)
    assert neutron(world).ports == before, "nothing changed, created or deleted"


def test_import_marks_a_port_and_checks_what_cannot_change() -> None:
    world = new_world(network="net-other")
    mine = neutron(world).add_port("legacy-vip", tags=["team-a"], address="10.0.0.50")
    set_spec(world, **{"import": {"name": "legacy-vip"}})
    run(world)
    assert ready(world)["reason"] == "ImportMismatch"
    assert "spec.network" in ready(world)["message"]
    set_spec(world, network="net-demo", address="10.0.0.50")
    converge(world)
    taken = neutron(world).ports[mine.id]
    assert taken.tags == ["team-a", *model.marker_tags(UID)]
    assert taken.description == MARKER
    assert status(world)["id"] == mine.id

    world = new_world()
    theirs = neutron(world).add_port("x", tags=list(FOREIGN_TAGS))
    set_spec(world, **{"import": {"id": theirs.id}})
    run(world)
    assert ready(world)["reason"] == "AlreadyOwned"


def test_observe_reports_drift_and_changes_nothing() -> None:
    world = new_world(description="the VIP")
    converge(world)
    port = neutron(world).only_port()
    set_spec(world, managementPolicy="Observe")
    neutron(world).edit_out_of_band(port.id, description=f"by hand {MARKER}")
    calls = len(neutron(world).calls)
    run(world)
    assert not [c for c in neutron(world).calls[calls:] if c != "get_port"], "read only"
    assert [d["field"] for d in status(world)["drift"]] == ["spec.description"]


def test_orphan_keeps_the_port_released_and_an_import_takes_it_back() -> None:
    world = new_world(description="the VIP")
    converge(world)
    kept = neutron(world).only_port()
    world.stored("Port", "vip")["spec"]["deletionPolicy"] = "Orphan"
    delete(world)
    converge(world)
    assert world.store.get("Port", "default", "vip") is None
    released = neutron(world).only_port()
    assert released.id == kept.id
    assert released.tags == [f"kumo-orphan={UID}"]
    assert released.description == f"the VIP kumo-orphan={UID}"
    assert model.described_owner(released) is None

    world.add(PORT, "again", {"import": {"id": kept.id}}, uid="uid-again")
    world.converge(PortActuator(), "again")
    assert neutron(world).only_port().tags == model.marker_tags("uid-again")


# -- deletion ----------------------------------------------------------------------------------


def test_deletion_waits_for_the_vms_naming_it_then_for_the_server_holding_it() -> None:
    world = new_world()
    converge(world)
    port = neutron(world).only_port()
    vm = world.add(
        VIRTUAL_MACHINE, "web", {"image": "i", "flavor": "f", "ports": [{"name": "vip"}]}
    )
    neutron(world).bind(port.id, "srv-1")
    delete(world)
    assert run(world) == 3.0
    assert (ready(world)["reason"], status(world)["phase"]) == ("WaitingForUsers", "Deleting")
    assert "VirtualMachine(s) web" in ready(world)["message"]
    assert PortActuator().dependents("VirtualMachine", vm, world.store) == [
        Key("Port", "default", "vip")
    ]

    world.store.remove("VirtualMachine", "default", "web")
    assert run(world) == 3.0
    assert ready(world)["reason"] == "PortInUse"
    assert "by server srv-1" in ready(world)["message"]
    assert port.id in neutron(world).ports and neutron(world).torn == []

    neutron(world).unbind("srv-1")  # Nova deleted the server
    converge(world)
    assert neutron(world).ports == {} and neutron(world).torn == []
    assert world.store.get("Port", "default", "vip") is None


def test_dependents_wake_ports_waiting_for_their_network() -> None:
    world = new_world(network="app")
    actuator = PortActuator()
    network = make_body(NETWORK, "app", {})
    assert actuator.dependents("Network", network, world.store) == [Key("Port", "default", "vip")]
    world.stored("Port", "vip")["status"] = {"id": "port-1"}
    assert actuator.dependents("Network", network, world.store) == []
