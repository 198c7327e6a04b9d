"""VirtualMachine.spec.volumes: Volume objects (once Ready) or the cloud's volumes by name
or ID, attached in place once the server is ACTIVE, detached in place when the spec
drops them; a volume attached to another server is waited for, never taken; a replaced
server gets the same volumes. spec.rootVolume boots from a new volume."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from pydantic import ValidationError

from kumo.api.kinds import VIRTUAL_MACHINE, VOLUME
from kumo.api.virtualmachine import VirtualMachineSpec
from kumo.cloud import model
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Key
from kumo.kinds.virtualmachine import plan
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.kinds.volume.actuator import VolumeActuator
from tests.unit.fakes import FakeServers, World
from tests.unit.fakes.blockstorage import FakeBlockStorage

BASE = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}


class Cloud(FakeServers, FakeBlockStorage):
    """Nova and Cinder agreeing on attachments, as the real pair does: Nova shows the
    volume on the server at once, Cinder shows it ``attaching`` until the next read;
    a server Nova finishes deleting frees its volumes. Nova refuses to attach a volume
    that is attached elsewhere."""

    def __init__(self) -> None:
        FakeServers.__init__(self)
        FakeBlockStorage.__init__(self)

    async def attach_volume(self, server_id: str, volume_id: str, device: str | None) -> None:
        volume = self._read(volume_id)
        assert volume is not None
        if volume.attachments or volume.status != "available":
            raise TerminalError("InvalidVolume", f"volume {volume_id} is {volume.status}")
        await FakeBlockStorage.attach_volume(self, server_id, volume_id, device)
        server = self.servers[server_id]
        server["volumes"] = sorted({*(server.get("volumes") or ()), volume_id})

    async def detach_volume(self, server_id: str, volume_id: str) -> None:
        await FakeBlockStorage.detach_volume(self, server_id, volume_id)
        server = self.servers[server_id]
        server["volumes"] = [v for v in server.get("volumes") or () if v != volume_id]

    async def find_volumes_by_name(self, name: str) -> list[model.Volume]:
        self.calls.append("find_volumes_by_name")
        return await FakeBlockStorage.find_volumes_by_name(self, name)

    def settle(self, status: str = "ACTIVE") -> None:
        going = {sid for sid, s in self.servers.items() if s["status"] == "DELETING"}
        FakeServers.settle(self, status)
        for vid, volume in list(self.volumes.items()):
            kept = tuple(s for s in volume.attachments if s not in going)
            if kept != volume.attachments:
                self.volumes[vid] = replace(
                    volume, attachments=kept, status="in-use" if kept else "available"
                )

    def attached_to(self, volume_id: str) -> tuple[str, ...]:
        volume = self._read(volume_id)
        assert volume is not None
        return volume.attachments


def new_world(**spec: Any) -> World:
    world = World(cloud=Cloud())
    world.add(VIRTUAL_MACHINE, "vm", {**BASE, **spec})
    return world


def cloud(world: World) -> Cloud:
    return world.cloud_as(Cloud)


def volume_object(world: World, name: str = "data", ready: bool = True) -> str:
    """A Volume object with its Cinder volume; Ready or not."""
    marker = {"kumo": "managed", "kumo-owner": f"uid-{name}"}  # Kumo's, the Volume's
    volume = cloud(world).add_volume(f"default-{name}", metadata=marker)
    body = world.add(VOLUME, name, {"size": 1})
    body["status"] = {
        "id": volume.id,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    return volume.id


def run(world: World) -> float | None:
    return world.run(VirtualMachineActuator(), "vm")


def converge(world: World) -> dict[str, Any]:
    """Passes, letting Nova finish between them, until the VM stops asking."""
    for _ in range(10):
        cloud(world).settle()
        if run(world) is None:
            return world.obj(VIRTUAL_MACHINE, "vm").status
    raise AssertionError(world.obj(VIRTUAL_MACHINE, "vm").status)


def ready(world: World) -> dict[str, Any]:
    return world.condition("VirtualMachine", "vm")


def only_server(world: World) -> dict[str, Any]:
    (server,) = cloud(world).live().values()
    return server


def test_a_volume_object_is_waited_for_then_attached_in_place() -> None:
    world = new_world(volumes=[{"volumeRef": "data", "device": "/dev/vdb"}])
    volume_id = volume_object(world, ready=False)
    run(world)
    cloud(world).settle()
    assert run(world) == 30.0
    condition = ready(world)
    assert (condition["status"], condition["reason"]) == ("False", "WaitingForVolume")
    assert condition["message"] == "spec.volumes[0].volumeRef: Volume 'data' is not Ready yet"
    assert "attach_volume" not in cloud(world).calls
    server_id = only_server(world)["id"]

    world.stored("Volume", "data")["status"]["conditions"][0]["status"] = "True"
    status = converge(world)
    assert only_server(world)["id"] == server_id, "the server stays"
    assert only_server(world)["volumes"] == [volume_id]
    assert cloud(world).attached_to(volume_id) == (server_id,)
    assert status["volumes"] == [{"id": volume_id, "name": "data", "device": "/dev/vdb"}]
    assert ready(world)["status"] == "True"
    assert world.events.reasons().count("VolumeAttached") == 1


def test_a_missing_volume_object_names_the_field() -> None:
    world = new_world(volumes=[{"name": "x"}, {"volumeRef": "nope"}])
    cloud(world).add_volume("x")
    run(world)
    cloud(world).settle()
    run(world)
    condition = ready(world)
    assert condition["reason"] == "WaitingForVolume"
    assert "spec.volumes[1].volumeRef: Volume 'nope' not found" in condition["message"]


def test_a_converged_vm_makes_no_cloud_calls() -> None:
    world = new_world(volumes=[{"volumeRef": "data"}, {"name": "scratch"}])
    volume_object(world)
    cloud(world).add_volume("scratch")
    converge(world)
    calls = list(cloud(world).calls)
    assert run(world) is None
    assert cloud(world).calls == calls, "no lookups, no writes"


def test_dropping_a_volume_detaches_it_in_place() -> None:
    world = new_world(volumes=[{"volumeRef": "data"}])
    volume_id = volume_object(world)
    converge(world)
    server_id = only_server(world)["id"]
    world.stored("VirtualMachine", "vm")["spec"]["volumes"] = []
    status = converge(world)
    assert only_server(world)["id"] == server_id, "not replaced"
    assert cloud(world).calls.count("create_server") == 1
    assert "detach_volume" in cloud(world).calls
    assert only_server(world)["volumes"] == []
    assert cloud(world).attached_to(volume_id) == ()
    assert status["volumes"] == []


def test_a_volume_kumo_did_not_attach_is_left_on_the_server() -> None:
    world = new_world()
    converge(world)
    server = only_server(world)
    theirs = cloud(world).add_volume("theirs", attachments=(server["id"],))
    server["volumes"] = [theirs.id]
    assert converge(world)["volumes"] == []
    assert "detach_volume" not in cloud(world).calls


def test_a_volume_cinder_shows_on_the_server_is_not_attached_again() -> None:
    world = new_world()
    converge(world)
    server = only_server(world)
    volume = cloud(world).add_volume("data", attachments=(server["id"],))
    world.stored("VirtualMachine", "vm")["spec"]["volumes"] = [{"name": "data"}]
    status = converge(world)  # the server's listing lags: Cinder's attachment counts
    assert "attach_volume" not in cloud(world).calls
    assert status["volumes"] == [{"id": volume.id, "name": "data"}]


def test_a_volume_in_use_by_another_server_is_waited_for_never_taken() -> None:
    world = new_world(volumes=[{"name": "shared"}])
    foreign = cloud(world).add_server("theirs", tags=[])
    volume = cloud(world).add_volume("shared", attachments=(foreign.id,))
    run(world)
    cloud(world).settle()
    assert run(world) == 10.0
    condition = ready(world)
    assert (condition["status"], condition["reason"]) == ("False", "VolumeInUse")
    assert foreign.id in condition["message"] and "spec.volumes[0].name" in condition["message"]
    assert "detach_volume" not in cloud(world).calls
    assert cloud(world).attached_to(volume.id) == (foreign.id,)

    # They let it go: the VM attaches it.
    cloud(world).volumes[volume.id] = replace(volume, attachments=(), status="available")
    status = converge(world)
    assert cloud(world).attached_to(volume.id) == (status["id"],)


def test_a_replaced_server_gets_the_same_volumes() -> None:
    world = new_world(volumes=[{"volumeRef": "data"}])
    volume_id = volume_object(world)
    converge(world)
    old = only_server(world)["id"]
    asyncio_delete(world, old)  # out of band: Nova is deleting it, the volume still on it
    run(world)  # replaced: this pass forgets it
    run(world)  # the next creates another
    new = only_server(world)["id"]
    assert new != old
    cloud(world).servers[new].update(status="ACTIVE", host="host-a")
    run(world)
    condition = ready(world)
    assert condition["reason"] == "WaitingForVolume"
    assert f"still attached to server {old}" in condition["message"]
    status = converge(world)  # Nova finishes the delete and frees the volume
    assert cloud(world).attached_to(volume_id) == (new,)
    assert status["volumes"] == [{"id": volume_id, "name": "data"}]


def asyncio_delete(world: World, server_id: str) -> None:
    asyncio.run(cloud(world).delete_server(server_id))


def test_a_named_volume_that_does_not_exist_names_the_field() -> None:
    world = new_world(volumes=[{"name": "ghost"}])
    run(world)
    cloud(world).settle()
    run(world)
    condition = ready(world)
    assert (condition["reason"], condition["status"]) == ("VolumeNotFound", "False")
    assert "spec.volumes[0].name" in condition["message"]


def test_exactly_one_of_volume_ref_and_name() -> None:
    for entry in ({"volumeRef": "a", "name": "b"}, {"device": "/dev/vdb"}):
        with pytest.raises(ValidationError, match="exactly one of volumeRef and name"):
            VirtualMachineSpec.model_validate({**BASE, "volumes": [entry]})


def test_a_volume_being_deleted_waits_while_a_vm_names_it_and_is_woken() -> None:
    world = new_world(volumes=[{"volumeRef": "data"}])
    volume_object(world)
    converge(world)
    volume = world.stored("Volume", "data")
    world.delete("Volume", "data", "2099-01-01T00:00:00Z")
    volume["metadata"]["finalizers"] = [VOLUME.finalizer]
    world.run(VolumeActuator(), "data")
    condition = world.condition("Volume", "data")
    assert condition["reason"] == "WaitingForVirtualMachines"
    assert "VirtualMachine(s) vm" in condition["message"]
    assert "delete_volume" not in cloud(world).calls
    assert world.stored("Volume", "data")["metadata"]["finalizers"], "held"
    vm = world.stored("VirtualMachine", "vm")
    assert VolumeActuator().dependents("VirtualMachine", vm, world.store) == [
        Key("Volume", "default", "data")
    ]
    assert VirtualMachineActuator().dependents("Volume", volume, world.store) == [
        Key("VirtualMachine", "default", "vm")
    ]
    # The VM keeps it attached while it names it (its Volume waits for it) ...
    run(world)
    assert "detach_volume" not in cloud(world).calls
    assert world.obj(VIRTUAL_MACHINE, "vm").status["volumes"][0]["name"] == "data"
    # ... and detaches it once it leaves the spec; then the Volume goes.
    world.stored("VirtualMachine", "vm")["spec"]["volumes"] = []
    converge(world)
    assert "detach_volume" in cloud(world).calls
    for _ in range(5):
        if world.store.get("Volume", "default", "data") is None:
            break
        world.run(VolumeActuator(), "data")
    assert world.store.get("Volume", "default", "data") is None
    assert cloud(world).volumes == {}


def test_root_volume_boots_from_a_volume_and_its_change_replaces_the_server() -> None:
    world = new_world(rootVolume={"size": 10, "volumeType": "lvmdriver-1"})
    converge(world)
    server = only_server(world)
    assert server["attrs"]["root_volume"] == (10, "lvmdriver-1")
    plain = VirtualMachineSpec.model_validate(BASE)
    booted = VirtualMachineSpec.model_validate({**BASE, "rootVolume": {"size": 10}})
    assert plan.spec_hash(plain, None) != plan.spec_hash(booted, None)
    world.stored("VirtualMachine", "vm")["spec"]["rootVolume"]["size"] = 20
    converge(world)
    assert only_server(world)["attrs"]["root_volume"] == (20, "lvmdriver-1")
    assert cloud(world).calls.count("create_server") == 2


def test_the_boot_volume_is_not_reported_nor_detached() -> None:
    world = new_world(rootVolume={"size": 10})
    converge(world)
    server = only_server(world)
    server["volumes"] = ["boot-volume"]
    assert converge(world)["volumes"] == []
    assert "detach_volume" not in cloud(world).calls
