"""replacementPolicy: Never: a server lost, in ERROR or whose replaced-on-change field
changed is reported (ServerLost, ServerError, ReplacementRefused, naming the field),
never rebuilt; Always (the default) keeps replacing it."""

from __future__ import annotations

import asyncio

import pytest

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from tests.unit.fakes import World

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb", "initScript": {"value": "ls"}}
NEVER = {**SPEC, "replacementPolicy": "Never"}


def reconcile(world: World) -> float | None:
    return world.run(VirtualMachineActuator(), "vm")


def status(world: World) -> dict:
    return world.obj(VIRTUAL_MACHINE, "vm").status


def ready(world: World) -> dict:
    return next(c for c in status(world)["conditions"] if c["type"] == "Ready")


def running(spec: dict) -> tuple[World, str]:
    """A VM of ``spec`` whose server is ACTIVE, and that server's ID."""
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", spec)
    reconcile(world)
    world.cloud.settle()
    reconcile(world)
    assert ready(world)["status"] == "True"
    return world, status(world)["id"]


def test_the_first_server_is_made_as_always() -> None:
    world, server = running(NEVER)
    assert world.cloud.calls.count("create_server") == 1
    assert world.cloud.servers[server]["attrs"]["user_data"] == "ls"


def test_a_lost_server_is_reported_and_no_second_one_is_made() -> None:
    world, server = running(NEVER)
    world.cloud.servers.clear()  # deleted outside Kumo, and gone
    reconcile(world)
    assert ready(world)["reason"] == "ServerLost"
    assert ready(world)["message"].startswith("spec.replacementPolicy: ")
    assert server in ready(world)["message"]
    assert status(world)["id"] == server, "still names the lost server"
    stalled = next(c for c in status(world)["conditions"] if c["type"] == "Stalled")
    assert stalled["status"] == "True"
    reconcile(world)
    assert world.cloud.calls.count("create_server") == 1
    assert world.cloud.servers == {}


def test_a_server_deleted_behind_kumos_back_is_lost_not_replaced() -> None:
    world, server = running(NEVER)
    asyncio.run(world.cloud.delete_server(server))  # someone else; Nova is still at it
    reconcile(world)
    assert ready(world)["reason"] == "ServerLost"
    assert "being deleted outside Kumo" in ready(world)["message"]
    assert "ServerDeleted" not in world.events.reasons()
    world.cloud.settle()
    reconcile(world)
    assert ready(world)["reason"] == "ServerLost"
    assert world.cloud.calls.count("create_server") == 1
    assert world.cloud.calls.count("delete_server") == 1, "only the outside delete"


def test_a_server_in_error_is_reported_never_deleted() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", NEVER)
    reconcile(world)
    world.cloud.settle("ERROR")
    for server in world.cloud.servers.values():
        server["fault"] = "No valid host was found. There are not enough hosts available."
    reconcile(world)
    assert ready(world)["reason"] == "ServerError"
    message = ready(world)["message"]
    assert message.startswith("spec.replacementPolicy: ") and "NoValidHost" in message
    reconcile(world)
    assert world.cloud.calls.count("delete_server") == 0
    assert world.cloud.calls.count("create_server") == 1


def test_a_change_nova_cannot_make_in_place_is_refused() -> None:
    world, server = running(NEVER)
    world.stored("VirtualMachine", "vm")["spec"] = {**NEVER, "image": "centos8"}
    world.stored("VirtualMachine", "vm")["metadata"]["generation"] = 2
    reconcile(world)
    assert ready(world)["reason"] == "ReplacementRefused"
    assert "image, flavor, initScript" in ready(world)["message"]
    assert world.cloud.servers[server]["status"] == "ACTIVE", "kept as it is"
    assert world.cloud.calls.count("delete_server") == 0


@pytest.mark.parametrize("policy", [None, "Always"])
def test_always_replaces_a_lost_server(policy: str | None) -> None:
    spec = SPEC if policy is None else {**SPEC, "replacementPolicy": policy}
    world, server = running(spec)
    world.cloud.servers.clear()
    reconcile(world)
    assert status(world)["id"] not in (None, server)
    assert world.cloud.calls.count("create_server") == 2
