"""`kumo plan`: one dry pass per object, rendered; nothing written anywhere."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path

from kumo.api.kinds import VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP, KindInfo
from kumo.cloud.dryrun import DryRunCloud
from kumo.engine.dryrun import Action, Change, MutedEvents
from kumo.engine.objects import Context, Obj
from kumo.engine.reconciler import Engine
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.runtime import manifests, plan
from kumo.runtime.store import MemoryStore
from tests.unit.fakes import World, make_body

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb", "description": "web"}


def plan_of(
    world: World, name: str, new: bool = False, info: KindInfo = VIRTUAL_MACHINE
) -> plan.ObjectPlan:
    obj = world.obj(info, name)
    ctx = Context(cloud=world.cloud, kube=world.kube, store=world.store, events=MutedEvents())
    return asyncio.run(plan.plan_object(Engine(dry_run=DryRunCloud), ctx, obj, new))


def test_a_new_vm_plans_a_create_then_waits_for_build_and_writes_nothing() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC, uid=plan.NEW_UID)
    before = copy.deepcopy(world.store.get("VirtualMachine", "default", "vm"))
    found = plan_of(world, "vm", new=True)
    assert [a.line() for a in found.actions] == ["create server vm"]
    assert Change("spec.image_id", None, "img-1") in found.actions[0].changes
    assert found.then == "server is building"
    assert world.cloud.servers == {} and world.cloud.calls == []
    assert world.store.get("VirtualMachine", "default", "vm") == before, "no status written"
    assert plan.exit_code([found]) == 2
    text = plan.render_text([found])
    assert "VirtualMachine default/vm (new)\n  + create server vm\n" in text
    assert "then: server is building" in text


def test_an_edited_description_plans_an_update_old_to_new() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.run(VirtualMachineActuator(), "vm")
    world.cloud.settle()
    (sid,) = world.cloud.servers
    world.stored("VirtualMachine", "vm")["spec"]["description"] = "web v2"
    found = plan_of(world, "vm")
    assert found.actions == [
        Action("update", "server", sid, (Change("spec.description", "web", "web v2"),))
    ]
    assert world.cloud.servers[sid]["description"] == "web"
    assert '      spec.description: "web" → "web v2"' in plan.render_text([found])


def test_an_observed_object_never_counts_as_a_change() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "managementPolicy": "Observe"})
    found = plan_of(world, "vm")
    assert found.mode == "observe" and found.actions and not found.changes
    assert plan.exit_code([found]) == 0
    assert "drift server: absent (spec: present)" in plan.render_text([found])


def test_errors_exit_1_and_are_shown() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "image": "nope"})
    found = plan_of(world, "vm")
    assert found.error.startswith("ImageNotFound")
    assert plan.exit_code([found]) == 1
    assert json.loads(plan.render_json([found]))["exitCode"] == 1


def test_manifests_are_laid_over_the_cluster_objects(tmp_path: Path) -> None:
    (tmp_path / "vm.yaml").write_text(
        "apiVersion: kumo.dev/v1alpha1\nkind: VirtualMachine\nmetadata: {name: vm}\n"
        f"spec: {json.dumps({**SPEC, 'description': 'v2'})}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n"
    )
    (manifest,) = manifests.load([str(tmp_path)], "team-a")
    assert manifest["metadata"]["namespace"] == "team-a"
    store = MemoryStore()
    body, new = plan.overlay(store, manifest)
    assert new and body["metadata"]["uid"] == plan.NEW_UID
    live = make_body(VIRTUAL_MACHINE, "vm", SPEC, namespace="team-a")
    live["status"] = {"id": "srv-1"}
    store.put("VirtualMachine", live)
    body, new = plan.overlay(store, manifest)
    assert not new
    assert body["metadata"]["uid"] == "uid-vm" and body["status"] == {"id": "srv-1"}
    assert body["metadata"]["generation"] == 2, "a changed spec is a new generation"
    assert body["spec"]["description"] == "v2"
    Obj(VIRTUAL_MACHINE, body)  # a body the engine can take


def test_a_group_with_import_plans_members_that_import_and_remembers_nothing() -> None:
    world = World()
    template = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}
    refs = [{"name": "legacy-a"}, {"id": "srv-b"}]
    spec = {"replicas": 3, "template": template, "import": {"members": refs}}
    world.add(VIRTUAL_MACHINE_GROUP, "g", spec, uid=plan.NEW_UID)
    found = plan_of(world, "g", new=True, info=VIRTUAL_MACHINE_GROUP)
    members = [a for a in found.actions if a.noun == "VirtualMachine"]
    assert [a.line() for a in members] == [
        "create VirtualMachine g-… (imports name=legacy-a)",
        "create VirtualMachine g-… (imports id=srv-b)",
        "create VirtualMachine g-…",
    ]
    assert Change("spec.import", None, {"name": "legacy-a"}) in members[0].changes
    text = plan.render_text([found])
    assert "  + create VirtualMachine g-… (imports name=legacy-a)\n" in text
    assert '      spec.import: {"name": "legacy-a"}\n' in text
    assert world.store.list("VirtualMachine") == []
    assert plan.ACTUATORS["VirtualMachineGroup"]._expected == {}, "a dry pass expects nothing"
