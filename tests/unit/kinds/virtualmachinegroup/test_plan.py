"""Member planning: scale, self-heal, rolling replacement, zone spreading."""

from __future__ import annotations

from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.kinds.virtualmachinegroup.plan import (
    MemberView,
    plan_members,
    policy_patches,
    template_hash,
    validate,
)

TEMPLATE = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}


def spec(replicas: int, **extra: object) -> VirtualMachineGroupSpec:
    return VirtualMachineGroupSpec.model_validate(
        {"replicas": replicas, "template": TEMPLATE, **extra}
    )


def members(n: int, hash_: str = "h1", ready: bool = True, prefix: str = "m") -> list[MemberView]:
    return [
        MemberView(f"{prefix}{i}", hash_, ready, created=f"2026-11-22T00:00:0{i}Z")
        for i in range(n)
    ]


def test_scale_up_creates_the_missing_members() -> None:
    assert len(plan_members(spec(3), "h1", members(2)).create_zones) == 1
    assert plan_members(spec(3), "h1", members(2)).delete == []


def test_scale_down_removes_not_ready_first_then_newest() -> None:
    current = [*members(2), MemberView("sick", "h1", False, created="2026-11-22T00:00:00Z")]
    assert plan_members(spec(2), "h1", current).delete == ["sick"]
    assert plan_members(spec(1), "h1", members(3)).delete == ["m2", "m1"]


def test_steady_state_does_nothing() -> None:
    decision = plan_members(spec(2), "h1", members(2))
    assert decision.create_zones == [] and decision.delete == []


def test_rolling_update_respects_surge_and_availability() -> None:
    group = spec(2)  # maxSurge 1, maxUnavailable 0
    old = members(2, "old")
    first = plan_members(group, "new", old)
    assert (len(first.create_zones), first.delete) == (1, [])
    # new member exists but is not ready yet: nothing more happens
    waiting = plan_members(group, "new", [*old, MemberView("n0", "new", False)])
    assert (len(waiting.create_zones), waiting.delete) == (0, [])
    # new member ready: one old member may go
    ready = plan_members(group, "new", [*old, MemberView("n0", "new", True)])
    assert len(ready.delete) == 1 and ready.delete[0].startswith("m")
    # all new ready: remaining old go
    done = plan_members(
        group, "new", [old[0], MemberView("n0", "new", True), MemberView("n1", "new", True)]
    )
    assert done.delete == ["m0"]


def test_rolling_update_with_unavailability_and_no_surge() -> None:
    group = spec(2, strategy={"maxSurge": 0, "maxUnavailable": 1})
    decision = plan_members(group, "new", members(2, "old"))
    assert (len(decision.create_zones), len(decision.delete)) == (0, 1)


def test_broken_old_members_are_replaced_without_waiting() -> None:
    decision = plan_members(spec(1), "new", members(1, "old", ready=False))
    assert decision.delete == ["m0"]
    assert len(decision.create_zones) == 1


def test_members_spread_over_zones() -> None:
    group = spec(4, availabilityZones=["az1", "az2"])
    current = [MemberView("a", "h1", True, zone="az1")]
    assert plan_members(group, "h1", current).create_zones == ["az2", "az1", "az2"]


def test_template_hash_changes_with_template_and_server_group() -> None:
    assert template_hash(spec(1), "sg1") != template_hash(spec(1), "sg2")
    changed = VirtualMachineGroupSpec.model_validate({"template": {**TEMPLATE, "image": "x"}})
    assert template_hash(spec(1), None) != template_hash(changed, None)
    assert template_hash(spec(1), None) == template_hash(spec(5), None)


def test_strategy_that_cannot_progress_is_rejected() -> None:
    message = validate(spec(1, strategy={"maxSurge": 0, "maxUnavailable": 0}))
    assert message is not None and message.startswith("spec.strategy")


def test_policy_patches_only_members_that_differ() -> None:
    current = {"a": "Delete", "b": "Orphan", "c": None}
    assert policy_patches("Orphan", current) == ["a", "c"]
    assert policy_patches("Delete", current) == ["b"]
