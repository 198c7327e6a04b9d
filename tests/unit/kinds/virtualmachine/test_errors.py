"""A server Nova keeps putting in ERROR is replaced with exponential backoff, not every 60 s."""

from __future__ import annotations

import datetime

import pytest

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.kinds.virtualmachine.plan import fault_reason
from tests.unit.fakes import World

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}
FAULT = "No valid host was found. There are not enough hosts available."


def reconcile(world: World) -> float | None:
    return world.run(VirtualMachineActuator(), "vm")


def status(world: World) -> dict:
    return world.obj(VIRTUAL_MACHINE, "vm").status


def ago(seconds: float) -> str:
    then = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds)
    return then.strftime("%Y-%m-%dT%H:%M:%SZ")


def fail_server(world: World) -> None:
    world.cloud.settle("ERROR")
    for server in world.cloud.servers.values():
        server["fault"] = FAULT


def test_error_replacements_back_off_and_are_reported() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    fail_server(world)
    reconcile(world)  # reported; replacement after the grace period
    assert "replacing it at " in status(world)["conditions"][0]["message"]
    world.stored("VirtualMachine", "vm")["status"]["conditions"][0]["lastTransitionTime"] = ago(61)
    reconcile(world)  # first replacement
    assert world.cloud.calls.count("delete_server") == 1
    assert status(world)["errorReplacements"] == 1
    assert world.events.events[-1][2] == "Replacing"
    assert "replaced 1 time" in world.events.events[-1][3]

    reconcile(world)  # the new server
    assert world.cloud.calls.count("create_server") == 2
    assert status(world)["errorReplacements"] == 1, "kept while the new server builds"
    fail_server(world)
    reconcile(world)
    assert world.cloud.calls.count("delete_server") == 1, "no replacement right away"
    message = status(world)["conditions"][0]["message"]
    assert "replaced 1 time, next attempt at " in message and "2m after the last" in message

    world.stored("VirtualMachine", "vm")["status"]["lastErrorReplacement"] = ago(121)
    reconcile(world)  # second replacement, after 2 minutes
    assert world.cloud.calls.count("delete_server") == 2
    assert status(world)["errorReplacements"] == 2
    assert "4m after the last" in world.events.events[-1][3]


def test_an_active_server_resets_the_count() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    world.stored("VirtualMachine", "vm")["status"].update(
        errorReplacements=4, lastErrorReplacement=ago(10)
    )
    world.cloud.settle()
    reconcile(world)
    assert status(world)["phase"] == "Running"
    assert "errorReplacements" not in status(world)
    assert "lastErrorReplacement" not in status(world)


def test_in_a_server_group_the_replacement_boots_once_the_old_server_is_gone() -> None:
    """Nova counts a group member being deleted on its host: booted at once, the
    replacement finds no host under hard anti-affinity (the lab's CI saw it)."""
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "serverGroup": "sg-1"})
    reconcile(world)
    fail_server(world)
    reconcile(world)
    world.stored("VirtualMachine", "vm")["status"]["conditions"][0]["lastTransitionTime"] = ago(61)
    reconcile(world)  # the replacement: the ERROR server is deleted (DELETING in Nova)
    (old,) = world.cloud.servers
    assert status(world)["replacingId"] == old
    assert reconcile(world) == 2.0
    assert world.cloud.calls.count("create_server") == 1, "not while the old one is there"
    assert "left the server group" in status(world)["conditions"][0]["message"]
    world.cloud.settle()  # Nova finishes the deletion
    reconcile(world)
    assert world.cloud.calls.count("create_server") == 2
    assert "replacingId" not in status(world)


def test_outside_a_server_group_the_replacement_boots_at_once() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    fail_server(world)
    reconcile(world)
    world.stored("VirtualMachine", "vm")["status"]["conditions"][0]["lastTransitionTime"] = ago(61)
    reconcile(world)
    reconcile(world)
    assert world.cloud.calls.count("create_server") == 2
    assert "replacingId" not in status(world)


@pytest.mark.parametrize(
    "fault",
    [
        "No valid host was found. There are not enough hosts available.",
        "Build of instance 5b0f was re-scheduled: Max scheduling attempts 3 exceeded",
        # Zed's words when every host tried failed the build (a late anti-affinity check).
        "Exceeded maximum number of retries. Exhausted all hosts available for retrying "
        "build failures for instance 5b0f2c1e-8d5a-4b1e-9a44-0c2b1f3d6e7a.",
    ],
)
def test_every_way_nova_says_no_host_reads_novalidhost(fault: str) -> None:
    assert fault_reason(fault) == "NoValidHost"


def test_other_faults_are_not_novalidhost() -> None:
    assert fault_reason("Quota exceeded for instances") == "QuotaExceeded"
    assert fault_reason("Unexpected error while running command") == "ServerError"
