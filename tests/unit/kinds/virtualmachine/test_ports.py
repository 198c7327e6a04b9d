"""VirtualMachine.spec.ports and allowedAddressPairs: a server boots on its Port objects'
ports once they are Ready and free (WaitingForPort), a replaced server boots on the same
ports (same ID, same address), and the allowed address pairs go on the server's own
port, in place (AddressPairsSet). Hashes of VMs and groups that use neither keep the
values main computed before these fields existed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kumo.api.kinds import PORT, VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.api.virtualmachine import VirtualMachineSpec
from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.cloud import model
from kumo.engine.objects import Key, Obj
from kumo.kinds.virtualmachine import plan
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.kinds.virtualmachinegroup import members
from kumo.kinds.virtualmachinegroup import plan as group_plan
from tests.unit.fakes import FakeServers, World, make_body
from tests.unit.fakes.ports import FakePorts

BASE = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}
READY = [{"type": "Ready", "status": "True"}]


class Cloud(FakeServers, FakePorts):
    """Nova and Neutron agreeing on ports, as the real pair does: a server boots on the
    ports it is given (bound to it; Neutron refuses one another server holds) and gets
    a port of its own on each network; once Nova has deleted it, its own ports go and
    the ports it was given are free again."""

    def __init__(self) -> None:
        FakeServers.__init__(self)
        FakePorts.__init__(self)

    async def create_server(self, **attrs: Any) -> model.Server:
        for port_id in attrs.get("port_ids") or ():
            if self.ports[port_id].device_id:
                raise AssertionError(f"Nova refuses: port {port_id} is in use")
        server = await FakeServers.create_server(self, **attrs)
        for port_id in attrs.get("port_ids") or ():
            self.bind(port_id, server.id)
        for network_id in attrs["network_ids"]:
            own = self.add_port("", network_id=network_id, device_id=server.id)
            self.ports[own.id] = model.Port(
                own.id,
                network_id,
                server.id,
                "compute:nova",
                [self.servers[server.id]["ip"]],
                mac_address="fa:16:3e:00:00:aa",
            )
        return server

    def settle(self, status: str = "ACTIVE") -> None:
        going = {sid for sid, s in self.servers.items() if s["status"] == "DELETING"}
        FakeServers.settle(self, status)
        for sid in going:
            for port in list(self.ports.values()):
                if port.device_id == sid and model.described_marker(port) is None:
                    del self.ports[port.id]  # Nova's own port goes with the server
            self.unbind(sid)

    async def list_ports_of_device(self, device_id: str) -> list[model.Port]:
        self.calls.append("list_ports_of_device")
        return [p for p in self.ports.values() if p.device_id == device_id]


def new_world(**spec: Any) -> World:
    world = World(cloud=Cloud())
    world.add(VIRTUAL_MACHINE, "vm", {**BASE, **spec})
    return world


def cloud(world: World) -> Cloud:
    return world.cloud_as(Cloud)


def add_port_object(world: World, name: str = "vip", ready: bool = True) -> model.Port:
    """A Port object and its port (as the Port kind made them)."""
    uid = f"uid-{name}"
    port = cloud(world).add_port(f"default-{name}", tags=model.marker_tags(uid))
    body = make_body(PORT, name, {}, uid=uid)
    if ready:
        body["status"] = {"id": port.id, "address": port.fixed_addresses[0], "conditions": READY}
    world.store.put("Port", body)
    return port


def run(world: World) -> float | None:
    return world.run(VirtualMachineActuator(), "vm")


def converge(world: World) -> int:
    return world.converge(VirtualMachineActuator(), "vm")


def status(world: World) -> dict[str, Any]:
    return world.obj(VIRTUAL_MACHINE, "vm").status


def ready(world: World) -> dict[str, Any]:
    return world.condition("VirtualMachine", "vm")


def server_of(world: World) -> dict[str, Any]:
    return cloud(world).servers[status(world)["id"]]


# -- spec.ports ----------------------------------------------------------------------------------


def test_a_server_boots_on_its_ports_once_the_port_objects_are_ready() -> None:
    world = new_world(ports=[{"name": "vip"}])
    run(world)
    assert (ready(world)["reason"], status(world)["phase"]) == ("WaitingForPort", "Pending")
    assert ready(world)["message"].startswith(
        "spec.ports[0]: Port 'vip' not found in namespace default"
    )
    port = add_port_object(world, ready=False)
    run(world)
    assert "spec.ports[0]: Port 'vip' is not Ready yet" in ready(world)["message"]
    assert "create_server" not in cloud(world).calls

    world.stored("Port", "vip")["status"] = {"id": port.id, "conditions": READY}
    run(world)
    attrs = server_of(world)["attrs"]
    assert (attrs["port_ids"], attrs["network_ids"]) == ((port.id,), []), "its ports only"
    assert cloud(world).ports[port.id].device_id == status(world)["id"]
    cloud(world).settle()
    converge(world)
    assert ready(world)["status"] == "True"


def test_a_replaced_server_boots_on_the_same_port_once_nova_lets_it_go() -> None:
    world = new_world(ports=[{"name": "vip"}], networks=["net-a"])
    port = add_port_object(world)
    run(world)
    cloud(world).settle()
    converge(world)
    first = status(world)["id"]
    assert server_of(world)["attrs"]["network_ids"] == ["net-net-a"]

    asyncio.run(cloud(world).delete_server(first))  # deleted behind Kumo's back
    run(world)
    assert "ServerDeleted" in world.events.reasons()
    run(world)
    assert ready(world)["reason"] == "WaitingForPort"
    assert (
        f"port {port.id} of Port 'vip' is still held by server {first}" in (ready(world)["message"])
    )
    assert cloud(world).calls.count("create_server") == 1, "never booted on a held port"

    cloud(world).settle()  # Nova deleted it: the port is free
    run(world)
    second = status(world)["id"]
    assert second != first
    assert server_of(world)["attrs"]["port_ids"] == (port.id,)
    held = cloud(world).ports[port.id]
    assert (held.device_id, held.fixed_addresses) == (second, port.fixed_addresses)


def test_a_port_another_server_holds_is_waited_for_never_taken() -> None:
    world = new_world(ports=[{"name": "vip"}])
    port = add_port_object(world)
    cloud(world).bind(port.id, "srv-someone")
    assert run(world) == 2.0
    assert "is still held by server srv-someone" in ready(world)["message"]
    assert "create_server" not in cloud(world).calls
    assert VirtualMachineActuator().dependents(
        "Port", world.stored("Port", "vip"), world.store
    ) == [Key("VirtualMachine", "default", "vm")]


def test_changing_the_ports_replaces_the_server_and_unset_keeps_the_hash() -> None:
    spec = VirtualMachineSpec.model_validate(BASE)
    with_ports = VirtualMachineSpec.model_validate({**BASE, "ports": [{"name": "vip"}]})
    other = VirtualMachineSpec.model_validate({**BASE, "ports": [{"name": "vip2"}]})
    hashes = {plan.spec_hash(s, None) for s in (spec, with_ports, other)}
    assert len(hashes) == 3
    pairs = VirtualMachineSpec.model_validate(
        {**BASE, "allowedAddressPairs": [{"ipAddress": "10.0.0.100"}]}
    )
    assert plan.spec_hash(pairs, None) == plan.spec_hash(spec, None), "pairs: in place"


#: (spec, its hash, with user data "echo hi", the legacy one), computed on main before
#: spec.ports and allowedAddressPairs existed: a VM that uses neither keeps its server.
MAIN_VM_HASHES = [
    (BASE, "1b4ecafaf6adb912", "ca051ebb26bd303f", "1b4ecafaf6adb912"),
    (
        {
            **BASE,
            "networks": ["net-a", "net-b"],
            "securityGroups": ["web"],
            "keyName": "k",
            "availabilityZone": "az1",
            "serverGroup": "sg-1",
            "description": "d",
            "metadata": {"a": "b"},
        },
        "e1c5478b03418f6c",
        "af0c2e6393061ccd",
        "d33366f5ddfdc046",
    ),
    (
        {**BASE, "rootVolume": {"size": 20, "volumeType": "ssd"}, "volumes": [{"name": "data"}]},
        "3200b32243e92df9",
        "c57430aaf2bc17c1",
        "3200b32243e92df9",
    ),
]
#: (group spec, template hash without and with server group "sg-1", the legacy one).
MAIN_GROUP_HASHES = [
    (
        {"replicas": 2, "haPolicy": "soft", "template": BASE},
        "a744720655",
        "d4be4a9271",
        "d4be4a9271",
    ),
    (
        {
            "replicas": 3,
            "haPolicy": "hard",
            "template": {
                **BASE,
                "networks": ["net-a"],
                "securityGroups": ["web"],
                "initScript": {"value": "echo hi"},
                "metadata": {"a": "b"},
            },
        },
        "36f14df561",
        "b132e49850",
        "470470c148",
    ),
]


@pytest.mark.parametrize(("spec", "plain", "scripted", "legacy"), MAIN_VM_HASHES)
def test_existing_vms_keep_their_spec_hash(
    spec: dict[str, Any], plain: str, scripted: str, legacy: str
) -> None:
    parsed = VirtualMachineSpec.model_validate(spec)
    assert plan.spec_hash(parsed, None) == plain
    assert plan.spec_hash(parsed, "echo hi") == scripted
    assert plan.spec_hash(parsed, None, legacy=True) == legacy


@pytest.mark.parametrize(("spec", "plain", "grouped", "legacy"), MAIN_GROUP_HASHES)
def test_existing_groups_keep_their_template_hash(
    spec: dict[str, Any], plain: str, grouped: str, legacy: str
) -> None:
    parsed = VirtualMachineGroupSpec.model_validate(spec)
    assert group_plan.template_hash(parsed, None) == plain
    assert group_plan.template_hash(parsed, "sg-1") == grouped
    assert group_plan.template_hash(parsed, "sg-1", legacy=True) == legacy


def test_a_template_s_pairs_count_when_set_and_reach_its_members() -> None:
    spec = {"replicas": 2, "haPolicy": "soft", "template": BASE}
    plain = VirtualMachineGroupSpec.model_validate(spec)
    vip = {**BASE, "allowedAddressPairs": [{"ipAddress": "10.0.0.100"}]}
    shared = VirtualMachineGroupSpec.model_validate({**spec, "template": vip})
    assert group_plan.template_hash(shared, None) != group_plan.template_hash(plain, None)
    group = Obj(VIRTUAL_MACHINE_GROUP, make_body(VIRTUAL_MACHINE_GROUP, "web", spec))
    body = members.member_body(group, plain, None, "h", group_plan.NewMember())
    assert "allowedAddressPairs" not in body["spec"], "unset: a member's spec as before"
    body = members.member_body(group, shared, None, "h", group_plan.NewMember())
    assert body["spec"]["allowedAddressPairs"] == [{"ipAddress": "10.0.0.100"}]


# -- allowedAddressPairs -------------------------------------------------------------------------


def test_pairs_go_on_the_server_s_own_port_in_place() -> None:
    world = new_world(
        networks=["net-a"], ports=[{"name": "x"}], allowedAddressPairs=[{"ipAddress": "10.0.0.100"}]
    )
    given = add_port_object(world, "x")
    run(world)
    cloud(world).settle()
    converge(world)
    server = status(world)["id"]
    own = next(p for p in cloud(world).ports.values() if p.device_id == server and p.id != given.id)
    assert own.allowed_address_pairs == (model.AddressPair("10.0.0.100"),)
    assert cloud(world).ports[given.id].allowed_address_pairs == (), "not on the Port's"
    assert status(world)["allowedAddressPairs"] == [{"ipAddress": "10.0.0.100"}]
    assert "AddressPairsSet" in world.events.reasons()
    assert ready(world)["status"] == "True"

    updates = cloud(world).calls.count("update_port")
    converge(world)
    assert cloud(world).calls.count("update_port") == updates, "held already: no write"

    world.stored("VirtualMachine", "vm")["spec"].pop("allowedAddressPairs")
    converge(world)
    assert cloud(world).ports[own.id].allowed_address_pairs == ()
    assert not status(world).get("allowedAddressPairs")
    calls = cloud(world).calls.count("list_ports_of_device")
    converge(world)
    assert cloud(world).calls.count("list_ports_of_device") == calls, "none asked: no look"


def test_pairs_follow_a_replaced_server() -> None:
    world = new_world(networks=["net-a"], allowedAddressPairs=[{"ipAddress": "10.0.0.100"}])
    run(world)
    cloud(world).settle()
    converge(world)
    first = status(world)["id"]
    asyncio.run(cloud(world).delete_server(first))
    run(world)
    cloud(world).settle()
    run(world)
    cloud(world).settle()
    converge(world)
    second = status(world)["id"]
    assert second != first
    (own,) = [p for p in cloud(world).ports.values() if p.device_id == second]
    assert own.allowed_address_pairs == (model.AddressPair("10.0.0.100"),)


def test_pairs_on_a_server_with_no_port_of_its_own_name_the_field() -> None:
    world = new_world(ports=[{"name": "vip"}], allowedAddressPairs=[{"ipAddress": "10.0.0.9"}])
    add_port_object(world)
    run(world)
    cloud(world).settle()
    run(world)
    assert (ready(world)["reason"], ready(world)["message"].split(":")[0]) == (
        "InvalidSpec",
        "spec.allowedAddressPairs",
    )
