"""VirtualMachine: markers name the cluster. A server another cluster's Kumo made for an
object with the same UID is never this object's; a legacy marker (no cluster) is its
object's and gets this cluster's marker at the next pass."""

from __future__ import annotations

import copy
from typing import Any

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.cloud.model import cluster, marker_tags, owner_of
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from tests.unit.fakes import World

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb", "description": "web"}
#: The marker another cluster's Kumo writes for an object whose UID is this one's ("uid-vm").
OTHER = "0123456789ab"
FOREIGN_TAGS = ["kumo", "kumo-owner=uid-vm", f"kumo-cluster={OTHER}"]
LEGACY_TAGS = ["kumo", "kumo-owner=uid-vm"]


def reconcile(world: World) -> float | None:
    return world.run(VirtualMachineActuator(), "vm")


def status(world: World) -> dict[str, Any]:
    return world.obj(VIRTUAL_MACHINE, "vm").status


def ready(world: World) -> dict[str, Any]:
    return world.condition("VirtualMachine", "vm")


def test_a_server_another_cluster_made_for_the_same_uid_is_never_adopted() -> None:
    world = World()
    theirs = world.cloud.add_server("vm", tags=list(FOREIGN_TAGS), description="web")
    world.cloud.settle()
    assert owner_of(FOREIGN_TAGS) == f"uid-vm@{OTHER}", "no object's UID"
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    assert status(world)["id"] != theirs.id, "this object made its own"
    assert world.cloud.calls.count("create_server") == 1
    assert "Adopted" not in world.events.reasons()
    assert world.cloud.servers[theirs.id]["tags"] == FOREIGN_TAGS, "theirs untouched"

    world.cloud.settle()
    reconcile(world)
    assert "DuplicateDeleted" not in world.events.reasons(), "not a duplicate of ours"
    world.delete("VirtualMachine", "vm")
    world.settle(VirtualMachineActuator(), "vm")
    assert list(world.cloud.live()) == [theirs.id], "deleting ours leaves theirs"


def test_another_clusters_server_named_by_status_is_not_owned() -> None:
    world = World()
    theirs = world.cloud.add_server("vm", tags=list(FOREIGN_TAGS))
    world.cloud.settle()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.stored("VirtualMachine", "vm")["status"] = {"id": theirs.id}
    before = copy.deepcopy(world.cloud.servers)
    reconcile(world)
    assert ready(world)["reason"] == "NotOwned"
    assert world.cloud.servers == before, "nothing changed, nothing created"


def test_importing_another_clusters_server_is_refused_naming_spec_import() -> None:
    world = World()
    theirs = world.cloud.add_server("legacy-web", tags=list(FOREIGN_TAGS))
    world.cloud.settle()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": theirs.id}})
    before = copy.deepcopy(world.cloud.servers)
    reconcile(world)
    condition = ready(world)
    assert (condition["reason"], condition["status"]) == ("AlreadyOwned", "False")
    assert condition["message"].startswith("spec.import:")
    assert f"another cluster (uid uid-vm, cluster {OTHER})" in condition["message"]
    assert world.cloud.servers == before


def test_a_legacy_server_is_adopted_by_its_uid_and_remarked_once() -> None:
    world = World()
    legacy = world.cloud.add_server("vm", tags=["team-a", *LEGACY_TAGS], description="web")
    world.cloud.settle()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    assert status(world)["id"] == legacy.id
    assert world.cloud.calls.count("create_server") == 0
    tags = world.cloud.servers[legacy.id]["tags"]
    assert tags == ["team-a", *marker_tags("uid-vm")]
    assert f"kumo-cluster={cluster()}" in tags
    assert world.events.reasons().count("Remarked") == 1
    reconcile(world)
    assert world.events.reasons().count("Remarked") == 1, "marked as this cluster's already"


def test_a_recorded_legacy_server_is_remarked_at_the_next_pass() -> None:
    world = World()
    legacy = world.cloud.add_server("vm", tags=list(LEGACY_TAGS), description="web")
    world.cloud.settle()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.stored("VirtualMachine", "vm")["status"] = {"id": legacy.id}
    reconcile(world)
    assert world.cloud.servers[legacy.id]["tags"] == marker_tags("uid-vm")
    assert "Remarked" in world.events.reasons()


def test_a_legacy_server_of_another_uid_is_left_alone() -> None:
    world = World()
    other = world.cloud.add_server("vm", tags=["kumo", "kumo-owner=uid-else"])
    world.cloud.settle()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    assert status(world)["id"] != other.id
    assert world.cloud.servers[other.id]["tags"] == ["kumo", "kumo-owner=uid-else"]
    assert "Remarked" not in world.events.reasons()


def test_observing_a_legacy_server_writes_nothing() -> None:
    world = World()
    legacy = world.cloud.add_server("vm", tags=list(LEGACY_TAGS), description="web")
    world.cloud.settle()
    spec = {**SPEC, "managementPolicy": "Observe", "import": {"id": legacy.id}}
    world.add(VIRTUAL_MACHINE, "vm", spec)
    world.stored("VirtualMachine", "vm")["status"] = {"id": legacy.id}
    reconcile(world)
    assert world.cloud.servers[legacy.id]["tags"] == LEGACY_TAGS
    assert "Remarked" not in world.events.reasons()
