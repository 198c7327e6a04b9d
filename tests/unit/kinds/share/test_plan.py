"""Share decisions as plain values: who has access, which rules change, what drifted."""

from __future__ import annotations

from typing import Any

import pytest

from kumo.api.share import ShareSpec
from kumo.cloud.model import AccessRule, Share
from kumo.engine.errors import TerminalError
from kumo.kinds.labels import GROUP_LABEL
from kumo.kinds.share import plan
from kumo.kinds.share.plan import WantedRule
from kumo.runtime.store import MemoryStore

UID = "uid-share"
NOW_ISH = "2099-01-01T00:00:00Z"  # a deletion that started "just now" (in the future)


def vm(
    name: str, ip: str | None, group: str | None = "web", ready: bool = True, **meta: Any
) -> dict:
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {GROUP_LABEL: group} if group else {},
            **meta,
        },
        "status": {
            "ip": ip,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def store_with(*bodies: tuple[str, dict]) -> MemoryStore:
    store = MemoryStore()
    store.put("VirtualMachineGroup", {"metadata": {"name": "web", "namespace": "default"}})
    for kind, body in bodies:
        store.put(kind, body)
    return store


def spec(*access: dict) -> ShareSpec:
    return ShareSpec.model_validate({"size": 1, "access": list(access)})


def rule(
    rid: str, to: str, level: str = "rw", state: str = "active", mine: bool = True
) -> AccessRule:
    return AccessRule(rid, "ip", to, level, state, {"kumo-owner": UID} if mine else {})


def test_ready_members_named_vms_and_cidrs_are_wanted_rw_winning() -> None:
    store = store_with(
        ("VirtualMachine", vm("web-1", "10.0.0.1")),
        ("VirtualMachine", vm("web-2", "10.0.0.2", ready=False)),
        ("VirtualMachine", vm("web-3", None)),
        ("VirtualMachine", vm("web-4", "10.0.0.4", deletionTimestamp=NOW_ISH)),
        ("VirtualMachine", vm("other", "10.0.0.9", group="db")),
        ("VirtualMachine", vm("backup", "10.0.0.1", group=None)),
    )
    wanted = plan.wanted_rules(
        spec(
            {"virtualMachineRef": "backup", "accessLevel": "ro"},
            {"virtualMachineGroupRef": "web", "accessLevel": "rw"},
            {"cidr": "10.1.0.0/24", "accessLevel": "ro"},
            {"cidr": "10.1.0.7/32", "accessLevel": "ro"},
        ),
        "default",
        store,
    )
    assert wanted == [
        WantedRule("10.0.0.1", "rw", "web-1"),
        WantedRule("10.1.0.0/24", "ro"),
        WantedRule("10.1.0.7", "ro"),
    ]


def test_a_vm_being_deleted_keeps_access_while_a_load_balancer_still_lists_it() -> None:
    going = vm("web-4", "10.0.0.4", deletionTimestamp=NOW_ISH)
    lb = {
        "metadata": {"name": "lb", "namespace": "default"},
        "status": {"ports": [{"members": [{"name": "web-4"}]}]},
    }
    store = store_with(("VirtualMachine", going), ("LoadBalancer", lb))
    wanted = plan.wanted_rules(spec({"virtualMachineGroupRef": "web"}), "default", store)
    assert wanted == [WantedRule("10.0.0.4", "rw", "web-4")]

    lb["status"] = {"ports": [{"members": []}]}  # drained from the pool: storage next
    store.put("LoadBalancer", lb)
    assert plan.wanted_rules(spec({"virtualMachineGroupRef": "web"}), "default", store) == []


@pytest.mark.parametrize(
    ("access", "reason", "field"),
    [
        (
            {"virtualMachineGroupRef": "nope"},
            "GroupNotFound",
            "spec.access[0].virtualMachineGroupRef",
        ),
        (
            {"virtualMachineRef": "nope"},
            "VirtualMachineNotFound",
            "spec.access[0].virtualMachineRef",
        ),
        ({"cidr": "10.0.0.1/8"}, "InvalidCIDR", "spec.access[0].cidr"),
        ({"cidr": "web"}, "InvalidCIDR", "spec.access[0].cidr"),
    ],
)
def test_bad_references_are_errors_not_empty_lists(access: dict, reason: str, field: str) -> None:
    with pytest.raises(TerminalError) as caught:
        plan.wanted_rules(spec(access), "default", store_with())
    assert (caught.value.reason, caught.value.field) == (reason, field)


def test_plan_adds_missing_removes_unwanted_and_never_touches_foreign_rules() -> None:
    wanted = [
        WantedRule("10.0.0.1", "rw", "a"),
        WantedRule("10.0.0.2", "rw", "b"),
        WantedRule("10.0.0.3", "ro"),
    ]
    rules = [
        rule("r1", "10.0.0.1"),  # kept
        rule("r2", "10.0.0.9"),  # mine, not wanted: removed
        rule("r3", "10.0.0.3", mine=False, level="rw"),  # foreign: covers .3, stays
        rule("r4", "10.0.0.8", mine=False),  # foreign, unrelated: stays
    ]
    changes = plan.plan_rules(wanted, rules, UID)
    assert [r.id for r in changes.remove] == ["r2"]
    assert changes.add == [WantedRule("10.0.0.2", "rw", "b")]
    assert changes.covered_by_foreign == [WantedRule("10.0.0.3", "ro")]


def test_a_level_change_replaces_the_rule_once_the_old_one_is_gone() -> None:
    wanted = [WantedRule("10.0.0.1", "ro")]
    first = plan.plan_rules(wanted, [rule("r1", "10.0.0.1", "rw")], UID)
    assert [r.id for r in first.remove] == ["r1"] and first.add == []
    denying = plan.plan_rules(wanted, [rule("r1", "10.0.0.1", "rw", state="queued_to_deny")], UID)
    assert denying.remove == [] and denying.add == [], "Manila refuses a second rule meanwhile"
    assert plan.plan_rules(wanted, [], UID).add == wanted


def test_a_second_kumo_rule_for_one_address_is_removed() -> None:
    changes = plan.plan_rules(
        [WantedRule("10.0.0.1", "rw")], [rule("r1", "10.0.0.1"), rule("r2", "10.0.0.1")], UID
    )
    assert [r.id for r in changes.remove] == ["r2"]


def test_status_lists_kumos_rules_with_their_vm_and_the_foreign_ones_apart() -> None:
    mine = AccessRule(
        "r1", "ip", "10.0.0.1", "rw", "active", {"kumo-owner": UID, "kumo-vm": "web-1"}
    )
    rules = [
        mine,
        rule("r2", "10.0.0.2", state="queued_to_apply"),
        rule("r3", "10.9.9.9", mine=False),
    ]
    assert plan.rules_status(rules, UID) == [
        {
            "accessTo": "10.0.0.1",
            "accessLevel": "rw",
            "id": "r1",
            "state": "active",
            "virtualMachine": "web-1",
        },
        {
            "accessTo": "10.0.0.2",
            "accessLevel": "rw",
            "id": "r2",
            "state": "queued_to_apply",
            "virtualMachine": None,
        },
    ]
    assert plan.foreign_rules(rules, UID) == ["ip:10.9.9.9 rw"]
    assert (
        plan.rules_summary(rules, [WantedRule("10.0.0.1", "rw"), WantedRule("10.0.0.2", "rw")])
        == "1/2"
    )


def test_unapplied_changes_name_shrink_and_fixed_fields() -> None:
    share = Share("s1", "n", "available", 10, "NFS", "type-a", "nova")
    same = ShareSpec.model_validate({"size": 12, "protocol": "NFS"})
    assert plan.unapplied_changes(same, share, "type-a") == []
    other = ShareSpec.model_validate({"size": 5, "protocol": "CIFS", "availabilityZone": "az2"})
    assert plan.unapplied_changes(other, share, "type-b") == [
        "spec.size",
        "spec.protocol",
        "spec.shareType",
        "spec.availabilityZone",
    ]
