"""VirtualMachineGroup spec.import: new members take existing servers over, each once,
end to end with the members' own controller against the in-memory Nova."""

from __future__ import annotations

import asyncio
from typing import Any

from kumo.api.kinds import VIRTUAL_MACHINE_GROUP
from kumo.cloud.model import marker_tags
from kumo.kinds.labels import TEMPLATE_HASH_LABEL
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.kinds.virtualmachinegroup.actuator import VirtualMachineGroupActuator
from tests.unit.fakes import World

TEMPLATE = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}


def group_spec(replicas: int, *refs: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"replicas": replicas, "template": TEMPLATE, "import": {"members": list(refs)}, **extra}


def legacy(world: World, name: str, **kw: Any) -> str:
    """A server made by hand, before Kumo."""
    sid = world.cloud.add_server(name, tags=["team-a"], **kw).id
    world.cloud.settle()
    return sid


def members(world: World) -> dict[str, dict[str, Any]]:
    return {
        b["metadata"]["name"]: b
        for b in world.store.list("VirtualMachine")
        if not b["metadata"].get("deletionTimestamp")
    }


def importing(world: World) -> dict[str, dict[str, str]]:
    """Member name → the spec.import it carries."""
    return {
        name: b["spec"]["import"] for name, b in members(world).items() if "import" in b["spec"]
    }


def run_members(world: World, passes: int = 2) -> None:
    """The members' own controller: import or build, then (servers settled) report."""
    for _ in range(passes):
        for name in members(world):
            world.run(VirtualMachineActuator(), name)
        world.cloud.settle()


def status(world: World) -> dict[str, Any]:
    return world.obj(VIRTUAL_MACHINE_GROUP, "g").status


def ready_message(world: World) -> str:
    (ready,) = [c for c in status(world)["conditions"] if c["type"] == "Ready"]
    return str(ready["message"])


def converge(world: World, actuator: VirtualMachineGroupActuator) -> None:
    world.run(actuator, "g")
    run_members(world)
    world.run(actuator, "g")


def test_new_members_import_the_listed_servers_first() -> None:
    world = World()
    legacy(world, "legacy-a")
    b = legacy(world, "legacy-b")
    spec = group_spec(3, {"name": "legacy-a"}, {"id": b}, availabilityZones=["az1"])
    world.add(VIRTUAL_MACHINE_GROUP, "g", spec)
    world.run(VirtualMachineGroupActuator(), "g")

    created = members(world)
    assert sorted(importing(world).values(), key=str) == [{"id": b}, {"name": "legacy-a"}]
    (group,) = world.cloud.groups.values()
    for body in created.values():
        assert body["spec"]["serverGroup"] == group.id, "the member keeps the group's group"
        assert ("availabilityZone" in body["spec"]) == ("import" not in body["spec"])
    assert len({b["metadata"]["labels"][TEMPLATE_HASH_LABEL] for b in created.values()}) == 1
    assert [(e.get("name") or e["id"], e["state"]) for e in status(world)["imports"]] == [
        ("legacy-a", "Importing"),
        (b, "Importing"),
    ]
    assert {e["member"] for e in status(world)["imports"]} == set(importing(world))
    assert ("g", "Normal", "Scaling", "created 3 (2 importing a server), deleting 0 member(s)") in (
        world.events.events
    )


def test_imported_members_keep_their_servers_without_rollout_churn() -> None:
    world = World()
    a, b = legacy(world, "legacy-a"), legacy(world, "legacy-b")
    world.add(VIRTUAL_MACHINE_GROUP, "g", group_spec(3, {"name": "legacy-a"}, {"id": b}))
    actuator = VirtualMachineGroupActuator()
    converge(world, actuator)
    names = set(members(world))

    assert world.cloud.calls.count("create_server") == 1, "only the third member built one"
    marked = {sid: world.cloud.servers[sid]["tags"] for sid in (a, b)}
    for name, ref in importing(world).items():
        sid = ref.get("id") or a
        assert set(marker_tags(f"uid-{name}")) <= set(marked[sid]), "its member's marker"
    st = status(world)
    assert (st["phase"], st["replicas"], st["readyReplicas"], st["updatedReplicas"]) == (
        "Ready",
        3,
        3,
        3,
    )
    by_server = {e["serverId"]: e for e in st["imports"]}
    assert by_server.keys() == {a, b} and {e["state"] for e in by_server.values()} == {"Imported"}
    for name, body in members(world).items():
        in_group = body["status"].get("serverGroupId")
        assert (in_group is None) == (name in importing(world)), "imported: in no group"
    group_id = st["serverGroupId"]
    imported_events = [e for e in world.events.events if e[2] == "MemberImported"]
    assert len(imported_events) == 2
    assert all(f"outside server group {group_id}" in e[3] for e in imported_events)
    assert f"outside server group {group_id}" in ready_message(world)

    for _ in range(3):  # nothing more happens: no replacement, no rollout, no new event
        converge(world, actuator)
    assert set(members(world)) == names
    assert world.cloud.calls.count("delete_server") == 0
    assert len([e for e in world.events.events if e[2] == "MemberImported"]) == 2


def test_refs_taken_are_read_back_after_a_restart() -> None:
    world = World()
    for name in ("legacy-a", "legacy-b", "legacy-c"):
        legacy(world, name)
    refs = [{"name": "legacy-a"}, {"name": "legacy-b"}, {"name": "legacy-c"}]
    world.add(VIRTUAL_MACHINE_GROUP, "g", group_spec(2, *refs))
    converge(world, VirtualMachineGroupActuator())
    assert sorted(r["name"] for r in importing(world).values()) == ["legacy-a", "legacy-b"]

    # A new process: nothing in memory. Members carrying a and b are out of band deleted
    # (one gone for good, its import recorded in status), and the group scales out.
    gone = next(n for n, r in importing(world).items() if r["name"] == "legacy-a")
    world.store.remove("VirtualMachine", "default", gone)
    world.stored("VirtualMachineGroup", "g")["spec"]["replicas"] = 3
    world.run(VirtualMachineGroupActuator(), "g")
    assert sorted(r["name"] for r in importing(world).values()) == ["legacy-b", "legacy-c"]
    assert len(members(world)) == 3, "the deleted member's place went to a fresh server"
    states = {e["name"]: (e["state"], e.get("member")) for e in status(world)["imports"]}
    assert states["legacy-a"] == ("Imported", gone), "still recorded: never offered again"


def test_refs_members_carry_are_not_handed_out_again_after_a_restart() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", group_spec(1, {"name": "a"}, {"name": "b"}))
    world.run(VirtualMachineGroupActuator(), "g")  # the member has not imported yet
    world.stored("VirtualMachineGroup", "g")["spec"]["replicas"] = 2
    world.run(VirtualMachineGroupActuator(), "g")
    assert sorted(r["name"] for r in importing(world).values()) == ["a", "b"]


def test_a_lagging_cache_does_not_hand_out_a_ref_twice() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", group_spec(1, {"name": "a"}, {"name": "b"}))
    actuator = VirtualMachineGroupActuator()
    world.run(actuator, "g")
    (first,) = members(world)
    world.store.remove("VirtualMachine", "default", first)  # the watch has not seen it yet
    world.stored("VirtualMachineGroup", "g")["spec"]["replicas"] = 2
    world.run(actuator, "g")
    assert [r["name"] for r in importing(world).values()] == ["b"]


def test_refs_beyond_replicas_are_reported_not_imported() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", group_spec(1, {"name": "a"}, {"name": "b"}))
    world.run(VirtualMachineGroupActuator(), "g")
    assert [r["name"] for r in importing(world).values()] == ["a"]
    assert status(world)["imports"][1] == {"name": "b", "state": "BeyondReplicas"}
    assert "spec.import.members: name=b: not imported, beyond replicas (1)" in ready_message(world)


def test_a_template_change_rolls_imported_members_over_like_any_other() -> None:
    world = World()
    legacy(world, "legacy-a")
    legacy(world, "legacy-b")
    refs = [{"name": "legacy-a"}, {"name": "legacy-b"}]
    world.add(VIRTUAL_MACHINE_GROUP, "g", group_spec(1, *refs))
    actuator = VirtualMachineGroupActuator()
    converge(world, actuator)
    (imported,) = members(world)
    world.stored("VirtualMachineGroup", "g")["spec"]["template"]["description"] = "v2"
    converge(world, actuator)
    assert imported not in members(world)
    (successor,) = members(world).values()
    assert "import" not in successor["spec"], "legacy-a was imported once, legacy-b is beyond"
    assert [e["state"] for e in status(world)["imports"]] == ["Imported", "BeyondReplicas"]


def test_a_template_that_fixes_a_mismatch_passes_the_ref_to_the_new_member() -> None:
    world = World()
    world.cloud.flavors["big"] = "flv-9"
    sid = legacy(world, "legacy-a", flavor_id="flv-9")
    world.add(VIRTUAL_MACHINE_GROUP, "g", group_spec(1, {"name": "legacy-a"}))
    actuator = VirtualMachineGroupActuator()
    converge(world, actuator)
    (stuck,) = members(world)
    assert "ImportMismatch" in ready_message(world) and stuck in ready_message(world)

    world.stored("VirtualMachineGroup", "g")["spec"]["template"]["flavor"] = "big"
    converge(world, actuator)
    (member,) = members(world).values()
    assert member["metadata"]["name"] != stuck and member["spec"]["import"] == {"name": "legacy-a"}
    assert member["status"]["id"] == sid
    assert world.cloud.calls.count("create_server") == 0


def test_a_ref_removed_from_the_list_releases_the_member_stuck_on_it() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", group_spec(1, {"name": "nope"}))
    actuator = VirtualMachineGroupActuator()
    converge(world, actuator)
    (member,) = members(world)
    assert "ImportNotFound" in ready_message(world)

    world.stored("VirtualMachineGroup", "g")["spec"]["import"]["members"] = []
    converge(world, actuator)
    assert members(world)[member]["spec"].get("import") is None, "same member, no import"
    assert "ImportDropped" in world.events.reasons()
    assert world.cloud.calls.count("create_server") == 1
    assert status(world)["phase"] == "Ready"


def test_a_member_whose_imported_server_is_gone_rebuilds_it() -> None:
    world = World()
    sid = legacy(world, "legacy-a")
    world.add(VIRTUAL_MACHINE_GROUP, "g", group_spec(1, {"name": "legacy-a"}))
    actuator = VirtualMachineGroupActuator()
    converge(world, actuator)
    (member,) = members(world)
    asyncio.run(world.cloud.delete_server(sid))  # by hand
    world.cloud.settle()
    run_members(world)  # the member rebuilds it like a server of its own
    world.cloud.settle()
    run_members(world)
    world.run(actuator, "g")
    assert list(members(world)) == [member], "the same member: nothing to replace"
    (rebuilt,) = world.cloud.servers
    assert rebuilt != sid and members(world)[member]["status"]["id"] == rebuilt
    assert status(world)["phase"] == "Ready"


def test_duplicate_refs_are_invalid_naming_the_field() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", group_spec(2, {"name": "a"}, {"name": "a"}))
    world.run(VirtualMachineGroupActuator(), "g")
    assert ready_message(world).startswith(
        "spec.import.members: Value error, members[1] repeats members[0] (name=a)"
    )
    assert members(world) == {}


def test_a_group_without_import_has_no_imports_status() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", {"replicas": 1, "template": TEMPLATE})
    world.run(VirtualMachineGroupActuator(), "g")
    assert "imports" not in status(world) and importing(world) == {}
