"""Member planning: scale, self-heal, rolling replacement, zone spreading."""

from __future__ import annotations

from typing import Any

import pytest

from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.kinds.virtualmachinegroup.plan import (
    Imported,
    MemberPlan,
    MemberView,
    import_notes,
    import_status,
    imported_refs,
    newly_imported,
    outside_group,
    plan_members,
    policy_patches,
    stale_imports,
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


# -- import (spec.import.members) ----------------------------------------------------------


def importing(replicas: int, *refs: dict[str, str], **extra: object) -> VirtualMachineGroupSpec:
    return spec(replicas, **{"import": {"members": list(refs)}}, **extra)


def carrying(
    name: str, key: str, server_id: str | None = None, reason: str = "", hash_: str = "h1"
) -> MemberView:
    return MemberView(name, hash_, True, import_key=key, server_id=server_id, reason=reason)


def keys(decision: MemberPlan) -> list[str | None]:
    return [c.import_.key if c.import_ else None for c in decision.creates]


def test_new_members_import_the_refs_first_in_order_and_without_a_zone() -> None:
    group = importing(3, {"name": "a"}, {"id": "b"}, availabilityZones=["az1", "az2"])
    decision = plan_members(group, "h1", [])
    assert keys(decision) == ["name=a", "id=b", None]
    assert decision.create_zones == [None, None, "az1"], "an imported server stays where it is"


def test_refs_carried_or_imported_are_never_offered_again() -> None:
    group = importing(4, {"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"})
    members = [carrying("m0", "name=a")]
    imported = {"name=b": Imported("gone", "srv-b")}  # its member was deleted since
    going = [carrying("m9", "name=c", reason="Building")]  # being deleted, may hold the server
    decision = plan_members(group, "h1", members, imported, going)
    assert keys(decision) == ["name=d", None, None]


@pytest.mark.parametrize("reason", ["ImportMismatch", "ImportNotAllowed"])
def test_a_ref_whose_import_failed_passes_to_the_member_replacing_it(reason: str) -> None:
    """The user fixes an ImportMismatch by changing the template: the old member (never
    ready) goes, and its replacement imports the same server with the new template. An
    import the namespace was not allowed marked nothing either."""
    group = importing(1, {"name": "a"})
    stuck = MemberView("m0", "old", False, import_key="name=a", reason=reason)
    decision = plan_members(group, "new", [stuck])
    assert decision.delete == ["m0"]
    assert keys(decision) == ["name=a"]


def test_refs_beyond_replicas_are_not_imported_and_reported() -> None:
    group = importing(2, {"name": "a"}, {"name": "b"}, {"name": "c"})
    decision = plan_members(group, "h1", [])
    assert keys(decision) == ["name=a", "name=b"]
    created = [carrying(f"n{i}", k) for i, k in enumerate(["name=a", "name=b"])]
    entries = import_status(group, created, {})
    assert [(e["name"], e["state"], e.get("member")) for e in entries] == [
        ("a", "Importing", "n0"),
        ("b", "Importing", "n1"),
        ("c", "BeyondReplicas", None),
    ]
    assert "name=c: not imported, beyond replicas (2)" in import_notes(group, entries, [], None)


def test_a_ref_added_to_a_full_group_waits_for_a_new_member() -> None:
    group = importing(2, {"name": "a"})
    assert plan_members(group, "h1", members(2)).creates == [], "no server is replaced for it"
    entries = import_status(group, members(2), {})
    assert entries == [{"id": None, "name": "a", "state": "Pending"}]
    assert "name=a: not imported yet, until the group creates a member" in import_notes(
        group, entries, [], None
    )


def test_import_does_not_change_the_template_hash() -> None:
    assert template_hash(importing(2, {"name": "a"}), "sg") == template_hash(spec(2), "sg")


def test_rollouts_and_scale_in_treat_imported_members_like_any_other() -> None:
    group = importing(2, {"name": "a"}, {"name": "b"})
    old = [
        carrying("m0", "name=a", "srv-a", hash_="old"),
        carrying("m1", "name=b", "srv-b", hash_="old"),
    ]
    imported = imported_refs([], old)
    first = plan_members(group, "new", old, imported)
    assert (keys(first), first.delete) == ([None], []), "new servers: the refs were imported"
    then = plan_members(group, "new", [*old, MemberView("n0", "new", True)], imported)
    assert len(then.delete) == 1 and then.delete[0].startswith("m"), "rolled over"
    current = [
        MemberView("m0", "h1", True, created="2026-11-22T00:00:00Z", import_key="name=a"),
        MemberView("x0", "h1", True, created="2026-11-22T00:00:09Z"),
    ]
    assert plan_members(importing(1, {"name": "a"}), "h1", current, imported).delete == ["x0"]
    assert plan_members(spec(1), "h1", current[::-1], imported).delete == ["x0"], "newest first"


def test_a_ref_never_imported_and_not_found_is_reported_and_kept() -> None:
    group = importing(1, {"name": "a"})
    stuck = MemberView("m0", "h1", False, import_key="name=a", reason="ImportNotFound")
    decision = plan_members(group, "h1", [stuck], {})
    assert decision.delete == [] and decision.creates == [], "the user's to fix"


def test_what_was_imported_is_read_from_status_and_members() -> None:
    recorded = [
        {"name": "a", "state": "Imported", "member": "m0", "serverId": "srv-a"},
        {"name": "b", "state": "Importing", "member": "m1"},
    ]
    found = imported_refs(recorded, [carrying("m2", "id=c", "srv-c"), carrying("m1", "name=b")])
    assert found == {"name=a": Imported("m0", "srv-a"), "id=c": Imported("m2", "srv-c")}
    entries = import_status(importing(3, {"name": "a"}, {"id": "c"}), [], found)
    assert newly_imported(recorded, entries) == [entries[1]], "name=a was imported before"


def test_members_waiting_on_a_ref_no_longer_listed_drop_it() -> None:
    group = importing(3, {"name": "a"})
    current = [carrying("m0", "name=a"), carrying("m1", "name=x"), carrying("m2", "name=y", "s")]
    assert stale_imports(group, current) == ["m1"], "m2 has its server: it keeps it"


def test_imported_members_outside_the_server_group_are_named() -> None:
    imported = {"name=a": Imported("m0", "srv-a"), "name=b": Imported("m1", "srv-b")}
    current = [carrying("m0", "name=a", "srv-a"), carrying("m1", "name=b", "srv-b"), *members(1)]
    assert outside_group(current, imported, ["srv-b"]) == ["m0"]
    note = import_notes(spec(3), [], ["m0"], "sg-1")
    assert "imported member(s) m0 outside server group sg-1" in note


def test_a_pass_with_many_members_leaving_stays_linear(monkeypatch: Any) -> None:
    """Scaling 300 in to 150: every pass while the 150 go compared each member with
    each leaving one (45,000 comparisons a pass, a pass per member event)."""
    compared = []
    real_eq = MemberView.__eq__

    def counting_eq(self: MemberView, other: object) -> bool:
        compared.append(1)
        return real_eq(self, other)

    monkeypatch.setattr(MemberView, "__eq__", counting_eq)
    staying = [MemberView(f"s{i}", "h1", True) for i in range(150)]
    going = [MemberView(f"g{i}", "h1", True) for i in range(150)]
    decision = plan_members(spec(150), "h1", staying, going=going)
    assert decision == MemberPlan([], [])
    assert len(compared) <= 10 * len(staying + going)
