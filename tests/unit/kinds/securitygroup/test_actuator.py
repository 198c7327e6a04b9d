"""SecurityGroup: the engine drives the actuator against the in-memory Neutron; tests
feed objects and cloud state in and check cloud state and status out."""

from __future__ import annotations

import asyncio
from typing import Any

from kumo.api.kinds import SECURITY_GROUP, VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.cloud.model import (
    MANAGED_TAG,
    ORPHAN_PREFIX,
    cluster_tag,
    marker_tags,
    owner_tag,
    owner_word,
)
from kumo.engine.objects import Key
from kumo.kinds.securitygroup.actuator import SecurityGroupActuator
from tests.unit.fakes import World
from tests.unit.fakes.security_groups import FakeSecurityGroups

SPEC: dict[str, Any] = {
    "description": "web tier",
    "rules": [
        {"protocol": "tcp", "port": 22, "cidr": "192.0.2.0/24"},
        {"protocol": "tcp", "port": 80, "virtualMachineGroupRef": "web"},
        {"protocol": "tcp", "port": 443, "securityGroupRef": "web"},
        {"direction": "egress", "cidr": "0.0.0.0/0"},
    ],
}


def add_vm(world: World, name: str, ip: str, group: str | None = "web", **spec: Any) -> dict:
    return world.add_vm(name, ip, group=group, spec=spec)


def new_world(spec: dict[str, Any] | None = None) -> World:
    world = World(cloud=FakeSecurityGroups())
    world.add(VIRTUAL_MACHINE_GROUP, "web", {"replicas": 2, "template": {}})
    add_vm(world, "web-0", "10.0.1.1")
    add_vm(world, "web-1", "10.0.1.2")
    world.add(SECURITY_GROUP, "web", spec or SPEC)
    return world


def neutron(world: World) -> FakeSecurityGroups:
    return world.cloud_as(FakeSecurityGroups)


def converge(world: World) -> dict:
    world.converge(SecurityGroupActuator(), "web")
    return world.stored("SecurityGroup", "web")


def rule_labels(world: World) -> list[str]:
    return sorted(r["rule"] for r in world.stored("SecurityGroup", "web")["status"]["appliedRules"])


def test_creates_the_group_tagged_with_exactly_the_spec_rules() -> None:
    world = new_world()
    status = converge(world)["status"]
    group = neutron(world).only()
    assert group.tags == marker_tags("uid-web")
    assert (group.name, group.description) == ("default-web", f"web tier {owner_word('uid-web')}")
    assert status["id"] == group.id and status["phase"] == "Active"
    assert status["rules"] == "5/5" and len(group.rules) == 5
    assert rule_labels(world) == sorted(
        [
            "ingress IPv4 tcp 22 from 192.0.2.0/24",
            "ingress IPv4 tcp 80 from 10.0.1.1/32",
            "ingress IPv4 tcp 80 from 10.0.1.2/32",
            f"ingress IPv4 tcp 443 from group {group.id}",
            "egress IPv4 any to any",  # Neutron's default, the same rule as the spec's
        ]
    )
    removed = [e for e in world.events.events if e[2] == "RuleRemoved"]
    assert len(removed) == 1 and "egress IPv6 any to any" in removed[0][3], (
        "Neutron's default IPv6 egress rule goes; the IPv4 one is the spec's"
    )
    assert "Neutron's default" in removed[0][3]


def test_a_rule_deleted_by_hand_comes_back_and_one_added_by_hand_goes() -> None:
    world = new_world()
    group_id = converge(world)["status"]["id"]
    victim = next(r for r in neutron(world).groups[group_id].rules if r.port_range_min == 22)
    neutron(world).delete_rule_out_of_band(group_id, victim.id)
    extra = neutron(world).add_rule_out_of_band(
        group_id, protocol="tcp", port_range_min=3306, port_range_max=3306,
        remote_ip_prefix="0.0.0.0/0",
    )  # fmt: skip
    world.events.events.clear()
    converge(world)  # what the watch's report of the moved revision triggers
    rules = neutron(world).groups[group_id].rules
    assert any(r.port_range_min == 22 for r in rules)
    assert extra.id not in {r.id for r in rules}
    (removed,) = [e for e in world.events.events if e[2] == "RuleRemoved"]
    assert "tcp 3306 from 0.0.0.0/0" in removed[3] and "added outside Kumo" in removed[3]
    assert [e[2] for e in world.events.events].count("RuleAdded") == 1


def test_rules_follow_the_group_members() -> None:
    world = new_world()
    converge(world)
    add_vm(world, "web-2", "10.0.1.3")
    world.delete("VirtualMachine", "web-0", "2099-01-01T00:00:00Z")
    converge(world)
    v80 = [label for label in rule_labels(world) if "tcp 80 " in label]
    assert v80 == ["ingress IPv4 tcp 80 from 10.0.1.2/32", "ingress IPv4 tcp 80 from 10.0.1.3/32"]


def test_a_dangling_reference_removes_nothing() -> None:
    world = new_world()
    group_id = converge(world)["status"]["id"]
    world.store.remove("VirtualMachineGroup", "default", "web")
    world.run(SecurityGroupActuator(), "web")
    ready = world.condition("SecurityGroup", "web")
    assert ready["reason"] == "GroupNotFound"
    assert "spec.rules[1].virtualMachineGroupRef" in ready["message"]
    assert len(neutron(world).groups[group_id].rules) == 5


def test_observe_changes_nothing_and_reports_drift() -> None:
    world = new_world()
    group_id = converge(world)["status"]["id"]
    world.stored("SecurityGroup", "web")["spec"]["managementPolicy"] = "Observe"
    extra = neutron(world).add_rule_out_of_band(group_id, protocol="udp")
    world.run(SecurityGroupActuator(), "web")
    assert extra in neutron(world).groups[group_id].rules
    drift = world.stored("SecurityGroup", "web")["status"]["drift"]
    assert any("udp" in str(d) for d in drift), drift


def test_import_tags_the_group_and_makes_it_whole() -> None:
    world = World(cloud=FakeSecurityGroups())
    legacy = neutron(world).groups
    made = asyncio.run(
        neutron(world).create_security_group(name="legacy", description="", tags=["team-a"])
    )
    world.add(
        SECURITY_GROUP,
        "web",
        {"import": {"name": "legacy"}, "rules": [{"direction": "egress", "cidr": "0.0.0.0/0"}]},
    )
    converge(world)
    group = legacy[made.id]
    assert group.tags == ["team-a", MANAGED_TAG, owner_tag("uid-web"), cluster_tag()]
    assert group.description == owner_word("uid-web")
    assert [(r.direction, r.ethertype) for r in group.rules] == [("egress", "IPv4")]


def test_deletion_waits_for_vms_then_ports_then_deletes() -> None:
    world = new_world()
    group_id = converge(world)["status"]["id"]
    add_vm(world, "app", "10.0.2.1", group=None, securityGroups=["web"])
    world.delete("SecurityGroup", "web", "2099-01-01T00:00:00Z")
    world.run(SecurityGroupActuator(), "web")
    ready = world.condition("SecurityGroup", "web")
    assert ready["reason"] == "WaitingForVirtualMachines" and "app" in ready["message"]
    assert group_id in neutron(world).groups

    world.store.remove("VirtualMachine", "default", "app")
    neutron(world).ports[group_id] = ["port-1"]
    world.run(SecurityGroupActuator(), "web")
    ready = world.condition("SecurityGroup", "web")
    assert ready["reason"] == "SecurityGroupInUse" and "port-1" in ready["message"]

    neutron(world).ports.clear()
    world.run(SecurityGroupActuator(), "web")
    world.run(SecurityGroupActuator(), "web")
    assert neutron(world).groups == {}
    assert world.store.get("SecurityGroup", "default", "web") is None


def test_orphan_releases_the_group() -> None:
    world = new_world()
    group_id = converge(world)["status"]["id"]
    body = world.stored("SecurityGroup", "web")
    body["spec"]["deletionPolicy"] = "Orphan"
    body["metadata"]["deletionTimestamp"] = "2099-01-01T00:00:00Z"
    world.run(SecurityGroupActuator(), "web")
    released = neutron(world).groups[group_id]
    orphan = f"{ORPHAN_PREFIX}uid-web"
    assert (released.tags, released.description) == ([orphan], f"web tier {orphan}")
    assert world.store.get("SecurityGroup", "default", "web") is None


def test_dependents() -> None:
    world = new_world()
    world.add(SECURITY_GROUP, "db", {"rules": [{"securityGroupRef": "web"}]})
    actuator = SecurityGroupActuator()
    web, db = Key("SecurityGroup", "default", "web"), Key("SecurityGroup", "default", "db")
    vm = world.stored("VirtualMachine", "web-0")
    assert actuator.dependents("VirtualMachine", vm, world.store) == [web]
    group = world.stored("VirtualMachineGroup", "web")
    assert actuator.dependents("VirtualMachineGroup", group, world.store) == [web]
    sg = world.stored("SecurityGroup", "web")
    assert actuator.dependents("SecurityGroup", sg, world.store) == [db]
    stranger = add_vm(world, "db-0", "10.0.3.1", group="db")
    assert actuator.dependents("VirtualMachine", stranger, world.store) == []


def test_a_vm_naming_a_security_group_waits_for_it_then_uses_its_id() -> None:
    from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
    from tests.unit.fakes import FakeServers

    world = World(cloud=FakeServers())
    spec = {"image": "centos79", "flavor": "n3-1vcpu-2gb", "securityGroups": ["web", "default"]}
    world.add(SECURITY_GROUP, "web", {"rules": []})
    world.add(VIRTUAL_MACHINE, "app", spec)
    world.run(VirtualMachineActuator(), "app")
    ready = world.condition("VirtualMachine", "app")
    assert ready["reason"] == "WaitingForSecurityGroup" and "web" in ready["message"]
    assert world.cloud.servers == {}

    sg = world.stored("SecurityGroup", "web")
    sg["status"] = {"id": "sg-1", "conditions": [{"type": "Ready", "status": "True"}]}
    assert VirtualMachineActuator().dependents("SecurityGroup", sg, world.store) == [
        Key("VirtualMachine", "default", "app")
    ]
    world.run(VirtualMachineActuator(), "app")
    (server,) = world.cloud.servers.values()
    assert server["attrs"]["security_groups"] == ["sg-1", "default"], "the cloud's by name"


# -- marked at create: a lost answer or a crash between the POST and the tags -----------------


def test_a_lost_create_answer_is_adopted_by_its_description_not_made_again() -> None:
    world = new_world()
    neutron(world).lose_creates = 1
    world.run(SecurityGroupActuator(), "web")  # the POST went through; its answer did not
    lost = neutron(world).only()
    assert (lost.tags, lost.description) == ([], f"web tier {owner_word('uid-web')}")
    status = converge(world)["status"]
    assert neutron(world).calls.count("create_security_group") == 1, "never made twice"
    group = neutron(world).only()
    assert group.id == lost.id == status["id"] and group.tags == marker_tags("uid-web")
    assert "Adopted" in world.events.reasons() and status["rules"] == "5/5"


def test_a_group_left_untagged_by_a_crash_is_adopted() -> None:
    """Kumo killed between the POST and the tag call (after-security-group-create)."""
    world = new_world()
    made = asyncio.run(
        neutron(world).create_security_group(
            name="default-web", description=f"web tier {owner_word('uid-web')}", tags=[]
        )
    )
    status = converge(world)["status"]
    assert status["id"] == made.id and len(neutron(world).groups) == 1
    assert neutron(world).only().tags == marker_tags("uid-web")
