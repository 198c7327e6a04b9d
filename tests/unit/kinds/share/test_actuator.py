"""Share: the engine drives the actuator against the in-memory Manila; tests feed objects
and cloud state in and check cloud state and status out."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from kumo.api.kinds import SHARE, VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.cloud.model import cluster
from kumo.engine.objects import Key
from kumo.engine.reconciler import Engine
from kumo.kinds.share.actuator import ShareActuator
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from tests.unit.fakes import FakeServers, World
from tests.unit.fakes.sharedfs import EXPORTS, TYPE_ID, FakeSharedFS

SPEC = {
    "protocol": "NFS",
    "size": 10,
    "shareType": "default",
    "access": [
        {"virtualMachineGroupRef": "web", "accessLevel": "rw"},
        {"virtualMachineRef": "backup-vm", "accessLevel": "ro"},
        {"cidr": "10.10.0.0/24", "accessLevel": "ro"},
    ],
}


def add_vm(world: World, name: str, ip: str, group: str | None = "web", **meta: Any) -> dict:
    return world.add_vm(name, ip, group=group, **meta)


class NovaAndManila(FakeServers, FakeSharedFS):
    """One project's cloud: VMs and shares side by side (for the deletion order)."""

    def __init__(self) -> None:
        FakeServers.__init__(self)
        FakeSharedFS.__init__(self)


def new_world(members: int = 2, spec: dict | None = None) -> World:
    world = World(cloud=NovaAndManila())
    world.add(VIRTUAL_MACHINE_GROUP, "web", {"replicas": members, "template": {}})
    for i in range(members):
        add_vm(world, f"web-{i}", f"10.0.1.{i}")
    add_vm(world, "backup-vm", "10.0.2.1", group=None)
    world.add(SHARE, "data", spec or SPEC)
    return world


def manila(world: World) -> FakeSharedFS:
    return world.cloud_as(FakeSharedFS)


def converge(world: World) -> dict:
    world.converge(ShareActuator(), "data")
    return world.stored("Share", "data")


def test_creates_the_share_marked_and_grants_every_address() -> None:
    world = new_world()
    obj = converge(world)
    share = manila(world).only()
    assert share.metadata == {
        "kumo": "managed",
        "kumo-owner": "uid-data",
        "kumo-cluster": cluster(),
    }
    assert (share.name, share.size, share.protocol, share.share_type_id) == (
        "default-data",
        10,
        "NFS",
        TYPE_ID,
    )
    assert manila(world).active(share.id) == {
        "10.0.1.0": "rw",
        "10.0.1.1": "rw",
        "10.0.2.1": "ro",
        "10.10.0.0/24": "ro",
    }
    status = obj["status"]
    assert status["id"] == share.id and status["phase"] == "Available"
    assert (status["exportLocation"], status["exportLocations"]) == (EXPORTS[0], EXPORTS)
    assert status["rules"] == "4/4"
    assert {r["accessTo"]: r.get("virtualMachine") for r in status["accessRules"]} == {
        "10.0.1.0": "web-0",
        "10.0.1.1": "web-1",
        "10.0.2.1": "backup-vm",
        "10.10.0.0/24": None,
    }


def test_rules_follow_the_group_in_both_directions() -> None:
    world = new_world()
    share_id = converge(world)["status"]["id"]
    add_vm(world, "web-2", "10.0.1.2")
    converge(world)
    assert "10.0.1.2" in manila(world).active(share_id)
    world.store.remove("VirtualMachine", "default", "web-0")
    world.delete("VirtualMachine", "web-1", "2099-01-01T00:00:00Z")
    converge(world)
    assert set(manila(world).active(share_id)) == {"10.0.1.2", "10.0.2.1", "10.10.0.0/24"}


def test_a_foreign_rule_stays_and_a_stray_kumo_rule_goes() -> None:
    world = new_world()
    share_id = converge(world)["status"]["id"]
    foreign = manila(world).add_rule(share_id, "10.0.1.0", "ro")  # also a member's address
    manila(world).rules[share_id] = {
        k: r
        for k, r in manila(world).rules[share_id].items()
        if r.access_to != "10.0.1.0" or r is foreign
    }
    manila(world).add_rule(share_id, "10.0.9.9", "rw", {"kumo-owner": "uid-data"})
    status = converge(world)["status"]
    rules = manila(world).rules[share_id]
    assert foreign.id in rules and rules[foreign.id].access_level == "ro", "never touched"
    assert "10.0.9.9" not in manila(world).active(share_id)
    assert status["foreignRules"] == ["ip:10.0.1.0 ro"]
    assert status["rules"] == "4/4", "the foreign rule covers the member's address"


def test_grows_in_place_and_refuses_to_shrink() -> None:
    world = new_world()
    share_id = converge(world)["status"]["id"]
    world.stored("Share", "data")["spec"]["size"] = 20
    converge(world)
    assert manila(world).shares[share_id].size == 20
    assert "extend_share" in manila(world).calls

    world.stored("Share", "data")["spec"]["size"] = 5
    world.stored("Share", "data")["spec"]["access"] = SPEC["access"][:1]
    for _ in range(5):  # the rules are put right first, then the shrink is reported
        world.run(ShareActuator(), "data")
    obj = world.obj(SHARE, "data")
    ready = world.condition("Share", "data")
    stalled = world.condition("Share", "data", "Stalled")
    assert (ready["reason"], stalled["status"]) == ("ShrinkRefused", "True")
    assert ready["message"].startswith("spec.size")
    assert manila(world).shares[share_id].size == 20
    assert obj.status["unappliedChanges"] == ["spec.size"]
    assert "10.0.2.1" not in {
        r["accessTo"] for r in obj.status["accessRules"] if r["state"] == "active"
    }, "rules were still reconciled before the shrink was reported"


def test_a_dangling_group_revokes_nothing() -> None:
    world = new_world()
    share_id = converge(world)["status"]["id"]
    world.store.remove("VirtualMachineGroup", "default", "web")
    world.run(ShareActuator(), "data")
    ready = world.condition("Share", "data")
    assert ready["reason"] == "GroupNotFound"
    assert len(manila(world).active(share_id)) == 4


def test_deletion_deletes_the_share() -> None:
    world = new_world()
    converge(world)
    world.delete("Share", "data", "2099-01-01T00:00:00Z")
    world.run(ShareActuator(), "data")
    assert manila(world).shares == {}
    assert world.stored("Share", "data")["metadata"]["finalizers"], "held until it is gone"
    world.run(ShareActuator(), "data")
    assert world.store.get("Share", "default", "data") is None, "finalizer released"


def test_a_vm_is_not_deleted_while_a_share_lists_its_rule() -> None:
    world = new_world()
    converge(world)
    vm = world.stored("VirtualMachine", "web-0")
    world.delete("VirtualMachine", "web-0", "2099-01-01T00:00:00Z")
    vm["metadata"]["finalizers"] = [VIRTUAL_MACHINE.finalizer]
    world.run(VirtualMachineActuator(), "web-0")
    assert world.stored("VirtualMachine", "web-0")["status"]["phase"] == "Draining"
    assert world.stored("VirtualMachine", "web-0")["metadata"]["finalizers"], "still held"

    converge(world)  # the Share revokes web-0's rule and stops listing it
    assert "web-0" not in {
        r.get("virtualMachine") for r in world.stored("Share", "data")["status"]["accessRules"]
    }
    world.run(VirtualMachineActuator(), "web-0")
    assert world.store.get("VirtualMachine", "default", "web-0") is None, "finalizer released"


def test_dependents_and_an_out_of_band_removal_repaired() -> None:
    world = new_world()
    converge(world)
    actuator = ShareActuator()
    key = Key("Share", "default", "data")
    assert actuator.dependents(
        "VirtualMachine", world.stored("VirtualMachine", "web-0"), world.store
    ) == [key]
    assert actuator.dependents(
        "VirtualMachine", world.stored("VirtualMachine", "backup-vm"), world.store
    ) == [key]
    assert actuator.dependents(
        "VirtualMachineGroup", world.stored("VirtualMachineGroup", "web"), world.store
    ) == [key]
    stranger = add_vm(world, "db-0", "10.0.3.1", group="db")
    assert actuator.dependents("VirtualMachine", stranger, world.store) == []
    assert (
        VirtualMachineActuator().dependents("Share", world.stored("Share", "data"), world.store)
        == []
    )

    obj = world.obj(SHARE, "data")
    share_id = obj.status["id"]
    victim = next(r for r in manila(world).rules[share_id].values() if r.access_to == "10.0.2.1")
    del manila(world).rules[share_id][victim.id]  # removed out of band
    converge(world)  # what the cloud watch's report of the change triggers
    assert "10.0.2.1" in manila(world).active(share_id)


def test_a_copy_of_the_share_carrying_its_marker_is_reported_and_kept() -> None:
    """A share holds data: a second one with the marker (made from a snapshot of it, by
    hand) is no duplicate Kumo made (issue 38, finding 5): DuplicateFound, kept."""
    world = new_world()
    original = converge(world)["status"]["id"]
    source = manila(world).shares[original]
    copy = replace(source, id="share-copy", name="restored", snapshot_id="snap-1")
    manila(world).shares[copy.id] = copy
    ctx = replace(world.ctx(), audit=True)
    asyncio.run(Engine().run(ShareActuator(), ctx, world.obj(SHARE, "data")))
    assert {original, copy.id} <= set(manila(world).shares)
    assert "delete_share" not in manila(world).calls
    found = [m for _, t, r, m in world.events.events if r == "DuplicateFound"]
    assert len(found) == 1 and copy.id in found[0] and original in found[0]
