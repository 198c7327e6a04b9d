"""A VirtualMachine's spec.volumes against the in-memory Nova and Cinder: attached and
detached in place (the same server), waited for while a Volume is not Ready or another
server holds it, attached again to a replacement server; a Volume's deletion waits for
the VMs naming it."""

from __future__ import annotations

import asyncio
from typing import Any

from kumo.api.kinds import VIRTUAL_MACHINE, VOLUME
from kumo.cloud import model
from kumo.engine.objects import Key
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.kinds.volume.actuator import VolumeActuator
from tests.unit.fakes import FakeNova, World
from tests.unit.kinds.volume.fake_cinder import FakeCinder

SPEC: dict[str, Any] = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}


class NovaCinder(FakeNova):
    """One cloud with Nova and Cinder: Cinder's calls go to a FakeCinder."""

    def __init__(self) -> None:
        super().__init__()
        self.cinder = FakeCinder()

    async def get_volume(self, volume_id: str) -> model.Volume | None:
        return await self.cinder.get_volume(volume_id)

    async def find_volumes_by_name(self, name: str) -> list[model.Volume]:
        return await self.cinder.find_volumes_by_name(name)

    async def attach_volume(self, server_id: str, volume_id: str, device: str | None) -> None:
        await self.cinder.attach_volume(server_id, volume_id, device)

    async def detach_volume(self, server_id: str, volume_id: str) -> None:
        await self.cinder.detach_volume(server_id, volume_id)


def new_world(volumes: list[dict[str, Any]]) -> tuple[World, NovaCinder]:
    cloud = NovaCinder()
    world = World(cloud=cloud)
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "volumes": volumes})
    return world, cloud


def ready_volume(world: World, cloud: NovaCinder, name: str) -> model.Volume:
    volume = cloud.cinder.add_volume(name, metadata=model.marker_metadata(f"uid-{name}"))
    world.add(VOLUME, name, {"size": 1})
    world.stored("Volume", name)["status"] = {
        "id": volume.id,
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    return volume


def attachments(cloud: NovaCinder, volume_id: str) -> tuple[str, ...]:
    """As Cinder reads now (the fake finishes an attach or detach when it is read)."""
    volume = asyncio.run(cloud.cinder.get_volume(volume_id))
    return volume.attachments if volume is not None else ()


def run(world: World) -> None:
    world.run(VirtualMachineActuator(), "vm")


def converge(world: World) -> dict[str, Any]:
    world.converge(VirtualMachineActuator(), "vm")
    return world.stored("VirtualMachine", "vm")["status"]


def ready(world: World) -> dict[str, Any]:
    status = world.stored("VirtualMachine", "vm")["status"]
    return next(c for c in status["conditions"] if c["type"] == "Ready")


def boot(world: World, cloud: NovaCinder) -> str:
    run(world)
    cloud.settle()
    return str(world.stored("VirtualMachine", "vm")["status"]["id"])


def test_a_volume_object_is_waited_for_then_attached_in_place() -> None:
    world, cloud = new_world([{"volumeRef": "data"}])
    world.add(VOLUME, "data", {"size": 1})  # not Ready yet
    server_id = boot(world, cloud)
    run(world)
    assert ready(world)["reason"] == "WaitingForVolume"
    assert "spec.volumes[0].volumeRef" in ready(world)["message"]
    volume = ready_volume(world, cloud, "data2")
    world.stored("VirtualMachine", "vm")["spec"]["volumes"] = [{"volumeRef": "data2"}]
    status = converge(world)
    assert attachments(cloud, volume.id) == (server_id,)
    assert status["volumes"] == [{"id": volume.id, "name": "data2"}]
    assert status["id"] == server_id and ready(world)["status"] == "True"
    calls = len(cloud.cinder.calls)
    run(world)
    writes = {"attach_volume", "detach_volume"} & set(cloud.cinder.calls[calls:])
    assert not writes, "a converged VM makes no Cinder writes"


def test_removing_a_volume_detaches_it_in_place_and_leaves_hand_attached_ones() -> None:
    world, cloud = new_world([])
    server_id = boot(world, cloud)
    volume = ready_volume(world, cloud, "data")
    theirs = cloud.cinder.add_volume("theirs", attachments=(server_id,))  # by hand
    world.stored("VirtualMachine", "vm")["spec"]["volumes"] = [{"volumeRef": "data"}]
    converge(world)
    assert attachments(cloud, volume.id) == (server_id,)
    world.stored("VirtualMachine", "vm")["spec"]["volumes"] = []
    status = converge(world)
    assert attachments(cloud, volume.id) == ()
    assert cloud.cinder.calls.count("detach_volume") == 1
    assert attachments(cloud, theirs.id) == (server_id,), "not Kumo's to detach"
    assert status["volumes"] == [] and status["id"] == server_id
    assert any(e[2] == "VolumeDetached" for e in world.events.events)


def test_a_volume_held_by_another_server_is_waited_for_never_taken() -> None:
    world, cloud = new_world([{"name": "shared"}])
    shared = cloud.cinder.add_volume("shared", attachments=("other-server",))
    server_id = boot(world, cloud)
    run(world)
    assert ready(world)["reason"] == "VolumeInUse" and "other-server" in ready(world)["message"]
    assert "detach_volume" not in cloud.cinder.calls
    cloud.cinder.volumes[shared.id] = model.Volume(shared.id, "shared", "available", 1)
    converge(world)
    assert attachments(cloud, shared.id) == (server_id,)


def test_a_replaced_server_gets_the_same_volume_again() -> None:
    world, cloud = new_world([{"volumeRef": "data"}])
    volume = ready_volume(world, cloud, "data")
    first = boot(world, cloud)
    converge(world)
    assert attachments(cloud, volume.id) == (first,)
    # Deleted out of band: Nova frees the volume with the server.
    del cloud.servers[first]
    cloud.cinder.volumes[volume.id] = model.Volume(
        volume.id, "data", "available", 1, metadata=volume.metadata
    )
    for _ in range(6):
        run(world)
        cloud.settle()
    status = converge(world)
    assert status["id"] != first
    assert attachments(cloud, volume.id) == (status["id"],)


def test_a_missing_volume_name_is_an_error_naming_the_field() -> None:
    world, cloud = new_world([{"name": "nowhere"}])
    boot(world, cloud)
    run(world)
    assert ready(world)["reason"] == "VolumeNotFound"
    assert "spec.volumes[0].name" in ready(world)["message"]


def test_a_volume_waits_for_the_vms_naming_it_before_it_goes() -> None:
    world, cloud = new_world([{"volumeRef": "data"}])
    volume = ready_volume(world, cloud, "data")
    body = world.stored("Volume", "data")
    body["metadata"]["deletionTimestamp"] = "2099-01-01T00:00:00Z"
    body["metadata"]["finalizers"] = [VOLUME.finalizer]
    world.run(VolumeActuator(), "data")
    status = world.stored("Volume", "data")["status"]
    cond = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert cond["reason"] == "WaitingForVirtualMachines" and "vm" in cond["message"]
    vm = world.stored("VirtualMachine", "vm")
    assert VolumeActuator().dependents("VirtualMachine", vm, world.store) == [
        Key("Volume", "default", "data")
    ]
    assert volume.id in cloud.cinder.volumes
