"""`kubectl kumo why`: the first thing that blocks Ready (kumo.kinds.why)."""

from __future__ import annotations

import json
from typing import Any

from kumo.kinds import tree, why
from tests.unit.kinds.test_tree import obj, seed


def blocked(objects: dict[Any, Any], kind: str, name: str) -> why.Answer:
    return why.why(objects, (kind, "ns", name))


def test_a_ready_object_is_its_own_answer() -> None:
    answer = blocked(seed(), "VirtualMachineGroup", "web")
    assert answer.ready and len(answer.steps) == 1
    assert why.render(answer) == "VirtualMachineGroup/web is Ready.\n"


def test_a_missing_network_the_cloud_lacks_too() -> None:
    vm = obj(
        "VirtualMachine",
        "vm",
        {"networks": ["other", "gone"]},
        ready="False",
        reason="NetworkNotFound",
        message="spec.networks[1]: no network 'gone' found",
        stalled=True,
    )
    answer = blocked(tree.index([vm]), "VirtualMachine", "vm")
    assert not answer.ready
    assert [(s.ref, s.exists, s.via) for s in answer.steps] == [
        ("VirtualMachine/vm", True, ""),
        ("Network/gone", False, "spec.networks[]"),  # the name the message gives
    ]
    assert answer.todo.startswith("create Network 'gone' in namespace ns")
    assert "VirtualMachine/vm's spec.networks[]" in answer.todo
    text = why.render(answer)
    assert "Blocked by: Network/gone (missing)" in text


def test_waiting_for_a_network_follows_it_to_its_own_blocker() -> None:
    objects = tree.index(
        [
            obj(
                "VirtualMachine",
                "vm",
                {"networks": ["net"]},
                ready="False",
                reason="WaitingForNetwork",
                message="spec.networks[0]: Network 'net' is not Ready yet",
            ),
            obj(
                "Network",
                "net",
                {"router": {"externalNetwork": "public"}},
                ready="False",
                reason="NetworkNotFound",
                message="spec.router.externalNetwork: no external network found",
                stalled=True,
            ),
        ]
    )
    answer = blocked(objects, "VirtualMachine", "vm")
    assert [s.ref for s in answer.steps] == ["VirtualMachine/vm", "Network/net"]
    assert answer.blocker.reason == "NetworkNotFound"
    assert answer.todo.startswith("fix what the message names (spec.router.externalNetwork")
    assert "kumo.dev/reconcile-requested-at" in answer.todo


def test_a_name_with_no_object_is_the_clouds_own_and_blocks_nothing() -> None:
    # Waiting for a SecurityGroup; the network has no object (the cloud's is used).
    objects = tree.index(
        [
            obj(
                "VirtualMachine",
                "vm",
                {"networks": ["public"], "securityGroups": ["web"]},
                ready="False",
                reason="WaitingForSecurityGroup",
            ),
            obj("SecurityGroup", "web", ready="False", reason="Creating"),
        ]
    )
    answer = blocked(objects, "VirtualMachine", "vm")
    assert [s.ref for s in answer.steps] == ["VirtualMachine/vm", "SecurityGroup/web"]
    assert answer.todo.startswith("nothing to fix yet: Kumo is working on it (Creating")


def test_a_group_follows_its_first_member_that_is_not_ready() -> None:
    objects = dict(seed())
    objects[("VirtualMachineGroup", "ns", "web")] = obj(
        "VirtualMachineGroup", "web", ready="False", reason="Progressing"
    )
    objects[("VirtualMachine", "ns", "web-1")] = obj(
        "VirtualMachine", "web-1", ready="False", reason="FlavorNotFound", owner="web", stalled=True
    )
    answer = blocked(objects, "VirtualMachineGroup", "web")
    assert [(s.via, s.ref) for s in answer.steps] == [
        ("", "VirtualMachineGroup/web"),
        ("owns", "VirtualMachine/web-1"),
    ]


def test_a_deletion_waits_for_the_objects_that_name_it() -> None:
    objects = dict(seed())
    objects[("LoadBalancer", "ns", "front")]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00Z"
    objects[("LoadBalancer", "ns", "front")]["status"]["conditions"][0].update(
        status="False", reason="WaitingForDNS", message="DNSRecord(s) www go first"
    )
    objects[("DNSRecord", "ns", "www")]["status"]["conditions"][0].update(
        status="False", reason="ZoneNotFound"
    )
    answer = blocked(objects, "LoadBalancer", "front")
    assert [(s.via, s.ref) for s in answer.steps] == [
        ("", "LoadBalancer/front"),
        ("used by: spec.loadBalancerRef", "DNSRecord/www"),
    ]


def test_paused_and_unreconciled_say_what_to_do() -> None:
    paused = obj("VirtualMachine", "p", ready="False", annotations={"kumo.dev/paused": "true"})
    answer = blocked(tree.index([paused]), "VirtualMachine", "p")
    assert "kumo.dev/paused-" in answer.todo
    fresh = obj("VirtualMachine", "f", ready=None)
    answer = blocked(tree.index([fresh]), "VirtualMachine", "f")
    assert answer.todo.startswith("Kumo has not reconciled it")


def test_a_cycle_stops() -> None:
    a = obj("SecurityGroup", "a", {"rules": [{"securityGroupRef": "b"}]}, ready="False")
    b = obj("SecurityGroup", "b", {"rules": [{"securityGroupRef": "a"}]}, ready="False")
    answer = blocked(tree.index([a, b]), "SecurityGroup", "a")
    assert [s.ref for s in answer.steps] == ["SecurityGroup/a", "SecurityGroup/b"]
    assert json.loads(json.dumps(answer.as_json()))["blocker"]["ref"] == "SecurityGroup/b"


def test_reason_kinds() -> None:
    assert why.reason_kinds("WaitingForNetwork") == {"Network"}
    assert why.reason_kinds("WaitingForVirtualMachines") == {"VirtualMachine"}
    assert why.reason_kinds("WaitingForDNS") == {"DNSRecord"}
    assert why.reason_kinds("VolumeNotFound") == {"Volume"}
    assert len(why.reason_kinds("WaitingForTarget")) > 5
    assert why.reason_kinds("Progressing") == set()
