"""Security groups change in place: a VM's through Nova's add/remove security group (same
server), a group template's by patching its members (no rollout); servers and members
made before carry the legacy hash (security groups in it) and are not replaced for it."""

from __future__ import annotations

from kumo.api.kinds import VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.api.virtualmachine import VirtualMachineSpec
from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.kinds.labels import GROUP_LABEL, TEMPLATE_HASH_LABEL
from kumo.kinds.virtualmachine import plan as vm_plan
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.kinds.virtualmachinegroup import plan as vmg_plan
from kumo.kinds.virtualmachinegroup.actuator import VirtualMachineGroupActuator
from tests.unit.fakes import FakeServers, World

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb", "securityGroups": ["web"]}


def nova(world: World) -> FakeServers:
    return world.cloud_as(FakeServers)


def running_vm(spec: dict | None = None) -> tuple[World, str]:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", spec or SPEC)
    world.run(VirtualMachineActuator(), "vm")
    nova(world).settle()
    world.converge(VirtualMachineActuator(), "vm")
    (server_id,) = nova(world).servers
    return world, server_id


def test_a_vm_s_security_groups_change_on_the_same_server() -> None:
    world, server_id = running_vm()
    world.stored("VirtualMachine", "vm")["spec"]["securityGroups"] = ["web", "ssh"]
    world.converge(VirtualMachineActuator(), "vm")
    assert list(nova(world).servers) == [server_id], "not replaced"
    assert nova(world).servers[server_id]["attrs"]["security_groups"] == ["ssh", "web"]
    world.stored("VirtualMachine", "vm")["spec"]["securityGroups"] = []
    world.converge(VirtualMachineActuator(), "vm")
    assert nova(world).servers[server_id]["attrs"]["security_groups"] == ["default"]
    assert list(nova(world).servers) == [server_id]
    assert "SecurityGroupsChanged" in world.events.reasons()
    assert nova(world).calls.count("create_server") == 1


def test_a_server_with_the_legacy_hash_is_kept_and_restamped() -> None:
    world, server_id = running_vm()
    spec = VirtualMachineSpec.model_validate(SPEC)
    legacy = vm_plan.spec_hash(spec, None, legacy=True)
    assert legacy != vm_plan.spec_hash(spec, None)
    nova(world).servers[server_id]["metadata"][vm_plan.HASH_KEY] = legacy
    world.converge(VirtualMachineActuator(), "vm")
    assert list(nova(world).servers) == [server_id]
    current = vm_plan.spec_hash(spec, None)
    assert nova(world).servers[server_id]["metadata"][vm_plan.HASH_KEY] == current
    no_groups = VirtualMachineSpec.model_validate({**SPEC, "securityGroups": []})
    assert vm_plan.spec_hash(no_groups, None) == vm_plan.spec_hash(no_groups, None, legacy=True)


def test_a_template_change_of_security_groups_patches_members_without_a_rollout() -> None:
    world = World()
    template = {"image": "centos79", "flavor": "n3-1vcpu-2gb", "securityGroups": ["web"]}
    world.add(VIRTUAL_MACHINE_GROUP, "g", {"replicas": 2, "haPolicy": "none", "template": template})
    world.run(VirtualMachineGroupActuator(), "g")
    members = sorted(b["metadata"]["name"] for b in world.store.list("VirtualMachine"))
    assert len(members) == 2

    world.stored("VirtualMachineGroup", "g")["spec"]["template"]["securityGroups"] = ["ssh"]
    world.run(VirtualMachineGroupActuator(), "g")
    after = world.store.list("VirtualMachine")
    assert sorted(b["metadata"]["name"] for b in after) == members, "no member replaced"
    assert all(b["spec"]["securityGroups"] == ["ssh"] for b in after)
    assert not any(b["metadata"].get("deletionTimestamp") for b in after)
    assert "SecurityGroupsChanged" in world.events.reasons()


def test_a_member_with_the_legacy_label_is_relabelled_not_rolled() -> None:
    spec = VirtualMachineGroupSpec.model_validate(
        {"replicas": 1, "template": {**SPEC, "securityGroups": ["web"]}}
    )
    current = vmg_plan.template_hash(spec, None)
    legacy = vmg_plan.template_hash(spec, None, legacy=True)
    member = {
        "metadata": {"labels": {GROUP_LABEL: "g", TEMPLATE_HASH_LABEL: legacy}},
        "spec": {"securityGroups": ["web"]},
    }
    patch = vmg_plan.security_group_patch(spec, member, current, legacy)
    assert patch == {"metadata": {"labels": {TEMPLATE_HASH_LABEL: current}}}
    member["metadata"]["labels"][TEMPLATE_HASH_LABEL] = current
    assert vmg_plan.security_group_patch(spec, member, current, legacy) is None
