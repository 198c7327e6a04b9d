"""VirtualMachine: spec.import, managementPolicy Observe and driftPolicy Report against
the in-memory Nova (the ownership routine and the engine's dry passes, end to end)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.cloud.model import marker_tags, owner_of
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from tests.unit.fakes import World

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb", "description": "web"}


def reconcile(world: World, name: str = "vm") -> float | None:
    return world.run(VirtualMachineActuator(), name)


def status(world: World, name: str = "vm") -> dict[str, Any]:
    return world.obj(VIRTUAL_MACHINE, name).status


def condition(world: World, type_: str) -> dict[str, Any]:
    return world.condition("VirtualMachine", "vm", type_)


def hand_made(world: World, **kw: Any) -> str:
    server = world.cloud.add_server("legacy-web", tags=["team-a"], description="old", **kw)
    world.cloud.settle()
    return server.id


def snapshot(world: World) -> dict[str, Any]:
    return copy.deepcopy(world.cloud.servers)


def test_import_by_name_marks_records_and_then_manages() -> None:
    world = World()
    sid = hand_made(world)
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"name": "legacy-web"}})
    reconcile(world)
    server = world.cloud.servers[sid]
    assert status(world)["id"] == sid
    assert set(marker_tags("uid-vm")) <= set(server["tags"]) and "team-a" in server["tags"]
    assert server["description"] == "web", "managed like its own from then on"
    assert "Imported" in world.events.reasons()
    assert world.cloud.calls.count("create_server") == 0
    assert condition(world, "Ready")["status"] == "True"


def test_import_refuses_a_server_another_object_owns() -> None:
    world = World()
    sid = hand_made(world)
    world.cloud.servers[sid]["tags"] = marker_tags("uid-other")
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": sid}})
    before = snapshot(world)
    reconcile(world)
    ready = condition(world, "Ready")
    assert (ready["reason"], ready["status"]) == ("AlreadyOwned", "False")
    assert ready["message"].startswith("spec.import:")
    assert world.cloud.servers == before, "nothing changed, nothing created"


def test_an_immutable_mismatch_is_reported_naming_the_field_never_replaced() -> None:
    world = World()
    sid = hand_made(world, flavor_id="flv-9")
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": sid}})
    before = snapshot(world)
    reconcile(world)
    ready = condition(world, "Ready")
    assert ready["reason"] == "ImportMismatch"
    assert ready["message"].startswith("spec.flavor:")
    assert condition(world, "Stalled")["status"] == "True"
    assert world.cloud.servers == before


def test_import_of_a_missing_or_ambiguous_name_is_reported() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"name": "legacy-web"}})
    reconcile(world)
    assert condition(world, "Ready")["reason"] == "ImportNotFound"
    hand_made(world)
    hand_made(world)
    reconcile(world)
    assert condition(world, "Ready")["reason"] == "ImportAmbiguous"
    assert world.cloud.calls.count("create_server") == 0


def test_without_import_a_same_named_server_is_not_touched() -> None:
    world = World()
    sid = hand_made(world)
    world.add(VIRTUAL_MACHINE, "legacy-web", SPEC)
    world.run(VirtualMachineActuator(), "legacy-web")
    assert world.cloud.servers[sid]["tags"] == ["team-a"]
    assert len(world.cloud.live()) == 2, "Kumo created its own"


def test_observe_reports_drift_field_by_field_and_changes_nothing() -> None:
    world = World()
    sid = hand_made(world, metadata={"role": "db"})
    spec = {**SPEC, "metadata": {"role": "web"}, "managementPolicy": "Observe"}
    world.add(VIRTUAL_MACHINE, "vm", {**spec, "import": {"id": sid}})
    before = snapshot(world)
    assert reconcile(world) == 30.0, "observed objects are re-read on their own"
    assert world.cloud.servers == before, "not even the marker"
    drift = status(world)["drift"]
    assert {"field": "spec.description", "desired": "web", "actual": "old"} in drift
    assert {"field": "spec.metadata.role", "desired": "web", "actual": "db"} in drift
    assert all(d["field"].startswith("spec.") for d in drift), "bookkeeping is not drift"
    assert condition(world, "Drifted")["status"] == "True"
    assert status(world)["phase"] == "Observed"
    assert status(world)["id"] == sid
    assert "Drifted" in world.events.reasons()
    assert "finalizers" not in world.obj(VIRTUAL_MACHINE, "vm").meta


def test_observe_by_name_lists_by_name_once_then_compares_the_recorded_name() -> None:
    """An observed object is passed over every 30 s: its server, recorded by ID, still
    has the name ``import`` gives, so no listing by name (issue 24, item 8)."""
    world = World()
    sid = hand_made(world)
    spec = {**SPEC, "import": {"name": "legacy-web"}, "managementPolicy": "Observe"}
    world.add(VIRTUAL_MACHINE, "vm", spec)
    for _ in range(3):
        reconcile(world)
    assert status(world)["id"] == sid
    assert world.cloud.calls.count("find_servers_by_name") == 1
    assert condition(world, "Drifted")["status"] == "True"  # description "old" vs "web"
    world.cloud.servers[sid]["name"] = "renamed"  # no longer the one import names
    reconcile(world)
    assert world.cloud.calls.count("find_servers_by_name") == 2
    assert condition(world, "Ready")["reason"] == "NotOwned"


def test_observe_reports_an_image_mismatch_as_drift() -> None:
    world = World()
    sid = hand_made(world, image_id="img-other")
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": sid}, "managementPolicy": "Observe"})
    reconcile(world)
    assert {"field": "spec.image", "desired": "centos79", "actual": "img-other"} in status(world)[
        "drift"
    ]


def test_observe_of_a_missing_resource_creates_nothing() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "managementPolicy": "Observe"})
    reconcile(world)
    assert world.cloud.servers == {}
    assert condition(world, "Ready")["reason"] == "NotFound"
    assert {"field": "server", "desired": "present", "actual": "absent"} in status(world)["drift"]


def test_switching_observe_to_manage_imports_and_applies_the_spec() -> None:
    world = World()
    sid = hand_made(world)
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": sid}, "managementPolicy": "Observe"})
    reconcile(world)
    assert world.cloud.servers[sid]["description"] == "old"
    world.stored("VirtualMachine", "vm")["spec"]["managementPolicy"] = "Manage"
    reconcile(world)
    assert world.cloud.servers[sid]["description"] == "web"
    assert set(marker_tags("uid-vm")) <= set(world.cloud.servers[sid]["tags"])
    assert "drift" not in status(world)
    assert [c["type"] for c in status(world)["conditions"]] == ["Ready", "Stalled", "Reconciling"]


def test_deleting_an_observed_object_leaves_the_server() -> None:
    world = World()
    sid = hand_made(world)
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": sid}})
    reconcile(world)  # imported and managed: the finalizer is on
    world.stored("VirtualMachine", "vm")["spec"]["managementPolicy"] = "Observe"
    asyncio.run(world.kube.delete(VIRTUAL_MACHINE, "default", "vm"))
    reconcile(world)
    assert sid in world.cloud.live()
    assert world.cloud.calls.count("delete_server") == 0
    assert world.store.get("VirtualMachine", "default", "vm") is None


def test_drift_policy_report_applies_spec_changes_but_not_out_of_band_edits() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "driftPolicy": "Report"})
    world.settle(VirtualMachineActuator(), "vm")
    assert status(world)["appliedGeneration"] == 1
    (sid,) = world.cloud.servers
    world.cloud.servers[sid]["description"] = "edited by hand"
    reconcile(world)
    assert world.cloud.servers[sid]["description"] == "edited by hand", "reported, not reverted"
    assert {"field": "spec.description", "desired": "web", "actual": "edited by hand"} in status(
        world
    )["drift"]
    body = world.stored("VirtualMachine", "vm")
    body["spec"]["description"] = "web v2"
    body["metadata"]["generation"] = 2
    reconcile(world)
    assert world.cloud.servers[sid]["description"] == "web v2", "a spec change goes through"
    assert status(world)["appliedGeneration"] == 2
    assert "drift" not in status(world)


def test_drift_policy_report_does_not_recreate_a_deleted_server() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "driftPolicy": "Report"})
    world.settle(VirtualMachineActuator(), "vm")
    (sid,) = world.cloud.servers
    asyncio.run(world.cloud.delete_server(sid))
    world.cloud.settle()
    reconcile(world)
    assert world.cloud.servers == {}
    assert condition(world, "Ready")["reason"] == "NotFound"


def test_status_naming_another_foreign_server_is_not_taken_over_by_an_import_by_name() -> None:
    """Status alone never hands Kumo a foreign resource, even with import set."""
    world = World()
    hand_made(world)
    stranger = world.cloud.add_server("someone-elses", tags=["team-b"]).id
    world.cloud.settle()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"name": "legacy-web"}})
    body = world.store.get("VirtualMachine", "default", "vm")
    body["status"] = {"id": stranger}  # written by someone else
    reconcile(world)
    assert condition(world, "Ready")["reason"] == "NotOwned"
    assert world.cloud.servers[stranger]["tags"] == ["team-b"], "untouched"


def test_an_imported_server_deleted_later_is_rebuilt_like_kumo_s_own() -> None:
    """Once imported, the server is managed like one Kumo created: deleted out of band,
    it is replaced from the spec instead of the object stalling on ImportNotFound."""
    world = World()
    sid = hand_made(world)
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"name": "legacy-web"}})
    reconcile(world)
    assert status(world)["id"] == sid
    asyncio.run(world.cloud.delete_server(sid))
    world.cloud.settle()
    reconcile(world)
    (new,) = world.cloud.servers
    assert new != sid and status(world)["id"] == new
    assert set(marker_tags("uid-vm")) <= set(world.cloud.servers[new]["tags"])
    assert "ImportedServerGone" in world.events.reasons()


def test_an_import_that_never_happened_is_still_not_found() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": "no-such-server"}})
    body = world.store.get("VirtualMachine", "default", "vm")
    body["status"] = {"id": "another-server-long-gone"}
    reconcile(world)
    assert condition(world, "Ready")["reason"] == "ImportNotFound"
    assert world.cloud.servers == {}, "an import names one server: nothing built in its stead"


def test_orphan_deletion_releases_the_server_and_an_import_takes_it_back() -> None:
    """deletionPolicy: Orphan leaves the server with the orphan mark instead of the
    marker (the orphan sweep never takes it for a leak), and a new object imports it."""
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "deletionPolicy": "Orphan"})
    world.settle(VirtualMachineActuator(), "vm")
    assert condition(world, "Ready")["status"] == "True"
    sid = status(world)["id"]
    world.delete("VirtualMachine", "vm")
    reconcile(world)
    assert world.store.get("VirtualMachine", "default", "vm") is None, "released at once"
    tags = world.cloud.servers[sid]["tags"]
    assert owner_of(tags) is None and "kumo" not in tags
    assert "kumo-orphan=uid-vm" in tags
    assert world.cloud.calls.count("delete_server") == 0
    assert "Released" in world.events.reasons()

    world.add(VIRTUAL_MACHINE, "again", {**SPEC, "import": {"id": sid}}, uid="uid-again")
    reconcile(world, "again")
    assert status(world, "again")["id"] == sid
    assert world.cloud.servers[sid]["tags"] == marker_tags("uid-again"), "orphan mark gone"
    assert world.cloud.calls.count("create_server") == 1, "only the first VM's"


def test_a_release_that_does_not_read_back_keeps_the_finalizer() -> None:
    """All or nothing: Nova answers the tag write but the server still shows the marker
    when read back (a write lost on the way): the finalizer stays, the object says which
    server is left, and goes once the server reads back released."""
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "deletionPolicy": "Orphan"})
    world.settle(VirtualMachineActuator(), "vm")
    sid = status(world)["id"]
    world.delete("VirtualMachine", "vm")
    written = world.cloud.set_server_tags
    world.cloud.set_server_tags = lambda server_id, tags: asyncio.sleep(0)  # lost

    assert reconcile(world) is not None
    assert world.store.get("VirtualMachine", "default", "vm") is not None, "finalizer kept"
    assert status(world)["phase"] == "Releasing"
    ready = condition(world, "Ready")
    assert ready["reason"] == "Releasing"
    assert f"server {sid} still carries Kumo's marker when read back" in ready["message"]
    assert owner_of(world.cloud.servers[sid]["tags"]) == "uid-vm"

    world.cloud.set_server_tags = written
    assert reconcile(world) is None
    assert world.store.get("VirtualMachine", "default", "vm") is None
    assert owner_of(world.cloud.servers[sid]["tags"]) is None
    assert world.cloud.calls.count("delete_server") == 0
