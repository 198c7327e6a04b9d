"""VirtualMachineGroup: server group + member objects, no double creates, teardown order."""

from __future__ import annotations

import asyncio

from kumo.api.kinds import VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.kinds.labels import GROUP_LABEL
from kumo.kinds.virtualmachinegroup.actuator import VirtualMachineGroupActuator
from tests.unit.fakes import World

SPEC = {
    "replicas": 2,
    "haPolicy": "soft",
    "template": {"image": "centos79", "flavor": "n3-1vcpu-2gb", "initScript": {"value": "ls"}},
    "description": "generated operator",
}


def run(world: World, actuator: VirtualMachineGroupActuator) -> float | None:
    return world.run(actuator, "g")


def members(world: World) -> list[dict]:
    return [
        b for b in world.store.list("VirtualMachine") if not b["metadata"].get("deletionTimestamp")
    ]


def mark_ready(world: World) -> None:
    for body in members(world):
        body["status"] = {"conditions": [{"type": "Ready", "status": "True"}], "ip": "10.0.0.9"}


def test_creates_server_group_and_owned_members() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", SPEC)
    actuator = VirtualMachineGroupActuator()
    run(world, actuator)
    (group,) = world.cloud.groups.values()
    assert group.policy == "soft-anti-affinity"
    created = members(world)
    assert len(created) == 2
    for body in created:
        assert body["metadata"]["labels"][GROUP_LABEL] == "g"
        assert body["metadata"]["ownerReferences"][0]["uid"] == "uid-g"
        assert body["spec"]["serverGroup"] == group.id
        assert body["spec"]["description"] == "generated operator"
    status = world.obj(VIRTUAL_MACHINE_GROUP, "g").status
    assert (status["replicas"], status["readyReplicas"], status["serverGroupId"]) == (
        2,
        0,
        group.id,
    )
    assert status["selector"] == "kumo.dev/group=g"


def test_a_lagging_cache_does_not_cause_double_creates() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", SPEC)
    actuator = VirtualMachineGroupActuator()
    run(world, actuator)
    for body in members(world):  # the watch has not delivered the new members yet
        world.store.remove("VirtualMachine", "default", body["metadata"]["name"])
    run(world, actuator)
    assert len(world.store.list("VirtualMachine")) == 0, (
        "no new member created while expected ones are pending"
    )


def test_scale_and_readiness() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", SPEC)
    actuator = VirtualMachineGroupActuator()
    run(world, actuator)
    mark_ready(world)
    run(world, actuator)
    status = world.obj(VIRTUAL_MACHINE_GROUP, "g").status
    assert status["readyReplicas"] == 2 and status["phase"] == "Ready"
    world.store.get("VirtualMachineGroup", "default", "g")["spec"]["replicas"] = 3
    run(world, actuator)
    assert len(members(world)) == 3
    world.store.get("VirtualMachineGroup", "default", "g")["spec"]["replicas"] = 1
    mark_ready(world)
    run(world, actuator)
    assert len(members(world)) == 1


def test_member_deleted_out_of_band_is_replaced() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", SPEC)
    actuator = VirtualMachineGroupActuator()
    run(world, actuator)
    mark_ready(world)
    run(world, actuator)  # members observed: expectations met
    victim = members(world)[0]["metadata"]["name"]
    world.store.remove("VirtualMachine", "default", victim)
    run(world, actuator)
    assert len(members(world)) == 2


def test_hard_policy_and_deletion_order() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", {**SPEC, "haPolicy": "hard"})
    actuator = VirtualMachineGroupActuator()
    run(world, actuator)
    assert next(iter(world.cloud.groups.values())).policy == "anti-affinity"
    world.store.get("VirtualMachineGroup", "default", "g")["metadata"]["deletionTimestamp"] = (
        "2026-11-22T00:00:00Z"
    )
    run(world, actuator)
    # members are being deleted; the server group must outlive them
    assert all(b["metadata"].get("deletionTimestamp") for b in world.store.list("VirtualMachine"))
    assert len(world.cloud.groups) == 1
    for body in world.store.list("VirtualMachine"):
        world.store.remove("VirtualMachine", "default", body["metadata"]["name"])
    run(world, actuator)
    assert world.cloud.groups == {}
    assert world.store.get("VirtualMachineGroup", "default", "g") is None


def test_dependents_maps_member_to_owner() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", SPEC)
    actuator = VirtualMachineGroupActuator()
    run(world, actuator)
    (key,) = actuator.dependents("VirtualMachine", members(world)[0], world.store)
    assert (key.kind, key.name) == ("VirtualMachineGroup", "g")
    assert actuator.dependents("LoadBalancer", members(world)[0], world.store) == []
    assert VIRTUAL_MACHINE.kind == "VirtualMachine"


def test_a_changed_deletion_policy_reaches_existing_members_without_replacing_them() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", SPEC)
    actuator = VirtualMachineGroupActuator()
    run(world, actuator)
    mark_ready(world)
    run(world, actuator)
    before = {b["metadata"]["name"]: b["spec"] for b in members(world)}
    assert {s["deletionPolicy"] for s in before.values()} == {"Delete"}

    world.stored("VirtualMachineGroup", "g")["spec"]["deletionPolicy"] = "Orphan"
    run(world, actuator)
    after = {b["metadata"]["name"]: b["spec"] for b in members(world)}
    assert after.keys() == before.keys(), "no member replaced"
    for name, spec in after.items():
        assert spec == {**before[name], "deletionPolicy": "Orphan"}, "only the policy changed"
    assert "DeletionPolicyChanged" in world.events.reasons()

    patches = len(world.kube.patches)
    run(world, actuator)
    assert len(world.kube.patches) == patches, "nothing to patch when members match"


def test_members_being_deleted_are_not_patched() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", SPEC)
    actuator = VirtualMachineGroupActuator()
    run(world, actuator)
    going = members(world)[0]
    going["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    world.stored("VirtualMachineGroup", "g")["spec"]["deletionPolicy"] = "Orphan"
    run(world, actuator)
    assert going["spec"]["deletionPolicy"] == "Delete"
    patched = {name for name, _ in world.kube.patches}
    assert going["metadata"]["name"] not in patched


def test_status_naming_a_foreign_server_group_is_not_used() -> None:
    """Members would be placed into (and the group would report) someone else's group."""
    world = World()
    theirs = asyncio.run(world.cloud.create_server_group("db-team-group", "anti-affinity"))
    world.add(VIRTUAL_MACHINE_GROUP, "web", SPEC)["status"] = {"serverGroupId": theirs.id}
    world.run(VirtualMachineGroupActuator(), "web")
    cond = world.obj(VIRTUAL_MACHINE_GROUP, "web").status["conditions"][0]
    assert cond["reason"] == "NotOwned" and theirs.id in cond["message"]
    assert world.store.list("VirtualMachine") == [], "no member created into it"
    assert theirs.id in world.cloud.groups


def test_a_pass_parses_only_the_members_that_changed_and_a_restart_agrees() -> None:
    """The group derives each member's view again only from a changed body, so a pass
    after one member's change costs O(1) parsing, not O(S); a fresh actuator (after a
    restart, nothing cached) computes the same status from the bodies alone."""
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", {**SPEC, "replicas": 20})
    actuator = VirtualMachineGroupActuator()
    run(world, actuator)
    mark_ready(world)
    run(world, actuator)
    derived = actuator._derived.derived
    victim = members(world)[7]
    replaced = {
        **victim,
        "status": {
            "phase": "Error",
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "ServerError", "message": "boom"}
            ],
        },
    }
    world.store.put("VirtualMachine", replaced)  # as a watch event replaces it
    run(world, actuator)
    assert actuator._derived.derived - derived == 1
    status = world.obj(VIRTUAL_MACHINE_GROUP, "g").status
    assert status["readyReplicas"] == 19 and status["phase"] == "Degraded"
    assert f"member {victim['metadata']['name']}: ServerError: boom" in next(
        c["message"] for c in status["conditions"] if c["type"] == "Ready"
    )
    fresh = World()
    fresh.store = world.store
    fresh.kube = world.kube
    fresh.cloud = world.cloud
    before = dict(status)
    run(fresh, VirtualMachineGroupActuator())
    after = fresh.obj(VIRTUAL_MACHINE_GROUP, "g").status
    assert {k: v for k, v in after.items() if k != "conditions"} == {
        k: v for k, v in before.items() if k != "conditions"
    }
    assert [(c["type"], c["status"], c["message"]) for c in after["conditions"]] == [
        (c["type"], c["status"], c["message"]) for c in before["conditions"]
    ]
