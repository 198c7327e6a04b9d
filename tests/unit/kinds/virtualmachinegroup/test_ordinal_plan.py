"""Stateful groups (identity Ordinal): names, scale-down order, volume objects, retention,
no surge."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.kinds.virtualmachinegroup.plan import (
    MemberView,
    VolumeView,
    member_name,
    ordinal_of,
    ordinal_zone,
    plan_ordinals,
    validate,
    volume_deletion,
    volume_name,
    when_deleted,
)

TEMPLATE = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}
NO_SURGE = {"maxSurge": 0, "maxUnavailable": 1}


def spec(replicas: int, **extra: Any) -> VirtualMachineGroupSpec:
    body = {"replicas": replicas, "template": TEMPLATE, "identity": "Ordinal"}
    body["strategy"] = NO_SURGE
    return VirtualMachineGroupSpec.model_validate({**body, **extra})


def members(*ordinals: int, hash_: str = "h1", ready: bool = True) -> list[MemberView]:
    return [MemberView(f"g-{i}", hash_, ready) for i in ordinals]


DATA = [{"name": "data", "size": 10}]


def test_names() -> None:
    assert member_name("g", 3) == "g-3"
    assert volume_name("g", "data", 3) == "g-data-3"
    assert ordinal_of("g", "g-12") == 12
    assert ordinal_of("g", "g-x7") is None  # a Random name
    assert ordinal_of("g", "g-01") is None  # not the name ordinal 1 gets
    assert ordinal_of("g", "gg-1") is None
    assert ordinal_of("web", "web-data-1") is None


def test_members_are_made_by_ordinal() -> None:
    decision = plan_ordinals(spec(3), "g", "h1", [])
    assert [i for i, _ in decision.creates] == [0, 1, 2]
    assert decision.delete == []


def test_a_missing_ordinal_is_made_again_under_its_name() -> None:
    decision = plan_ordinals(spec(3), "g", "h1", members(0, 2))
    assert [i for i, _ in decision.creates] == [1]


def test_an_ordinal_is_not_made_again_while_its_predecessor_goes() -> None:
    going = members(1, ready=False)
    decision = plan_ordinals(spec(3), "g", "h1", members(0, 2), going=going)
    assert decision.creates == []


def test_scale_down_removes_the_highest_ordinals_first() -> None:
    decision = plan_ordinals(spec(2), "g", "h1", members(0, 1, 2, 3, 10))
    assert decision.delete == ["g-10", "g-3", "g-2"]
    assert decision.creates == []


def test_a_name_not_of_an_ordinal_is_removed() -> None:
    stray = [MemberView("g-abcd", "h1", True)]
    decision = plan_ordinals(spec(1), "g", "h1", [*members(0), *stray])
    assert decision.delete == ["g-abcd"]


def test_rollout_deletes_then_recreates_within_max_unavailable() -> None:
    decision = plan_ordinals(spec(3), "g", "h2", members(0, 1, 2))
    assert decision.delete == ["g-2"], "one at a time, highest ordinal first"
    assert decision.creates == [], "no surge: nothing made before the old one is gone"
    # g-2 gone: it is made again (current template), nothing else goes meanwhile.
    decision = plan_ordinals(spec(3), "g", "h2", members(0, 1))
    assert [i for i, _ in decision.creates] == [2] and decision.delete == []
    # g-2 back, not ready yet: no further deletion.
    now = [*members(0, 1), MemberView("g-2", "h2", ready=False)]
    assert plan_ordinals(spec(3), "g", "h2", now).delete == []


def test_old_members_that_are_not_ready_go_at_once() -> None:
    now = [*members(0, 1), *members(2, ready=False)]
    decision = plan_ordinals(spec(3), "g", "h2", now)
    assert decision.delete == ["g-2"]


def test_volumes_are_made_before_their_members_per_template() -> None:
    templates = [{"name": "data", "size": 10}, {"name": "log", "size": 1, "volumeType": "ssd"}]
    decision = plan_ordinals(spec(2, volumeTemplates=templates), "g", "h1", [])
    assert [(n, i, t) for n, i, t, _ in decision.volumes] == [
        ("g-data-0", 0, "data"),
        ("g-log-0", 0, "log"),
        ("g-data-1", 1, "data"),
        ("g-log-1", 1, "log"),
    ]


def test_an_existing_volume_is_reused_not_made_again() -> None:
    volumes = [VolumeView("g-data-1", 1, "az2")]
    decision = plan_ordinals(spec(2, volumeTemplates=DATA), "g", "h1", members(0), (), volumes)
    assert decision.volumes == []
    assert decision.creates == [(1, "az2")]


def test_zones_are_round_robin_by_ordinal_and_fixed_by_volumes() -> None:
    s = spec(3, availabilityZones=["a", "b"], volumeTemplates=DATA)
    decision = plan_ordinals(s, "g", "h1", [])
    assert decision.creates == [(0, "a"), (1, "b"), (2, "a")]
    assert [z for *_, z in decision.volumes] == ["a", "b", "a"]
    # The zone list changed: ordinal 1's volume is in b, so its member goes to b.
    s2 = spec(3, availabilityZones=["c"], volumeTemplates=DATA)
    assert ordinal_zone(s2, 1, [VolumeView("g-data-1", 1, "b")]) == "b"
    assert ordinal_zone(s2, 0, []) == "c"


def test_scale_down_retains_volumes_by_default() -> None:
    volumes = [VolumeView(f"g-data-{i}", i) for i in range(3)]
    s = spec(1, volumeTemplates=DATA)
    decision = plan_ordinals(s, "g", "h1", members(0, 1, 2), (), volumes)
    assert decision.delete == ["g-2", "g-1"]
    assert decision.delete_volumes == []
    assert decision.retained == ["g-data-1", "g-data-2"]


def test_scale_down_with_delete_deletes_the_volumes_beyond_replicas() -> None:
    volumes = [VolumeView(f"g-data-{i}", i) for i in range(3)]
    s = spec(1, volumeTemplates=DATA, volumeRetention={"whenScaledDown": "Delete"})
    decision = plan_ordinals(s, "g", "h1", members(0, 1, 2), (), volumes)
    assert decision.delete_volumes == ["g-data-2", "g-data-1"]
    assert decision.retained == []
    # A Volume object being deleted already is not deleted again.
    gone = [VolumeView("g-data-1", 1, deleting=True)]
    assert plan_ordinals(s, "g", "h1", members(0), (), gone).delete_volumes == []


def test_scaling_back_up_takes_the_retained_volume() -> None:
    volumes = [VolumeView(f"g-data-{i}", i) for i in range(3)]
    decision = plan_ordinals(spec(3, volumeTemplates=DATA), "g", "h1", members(0, 1), (), volumes)
    assert [i for i, _ in decision.creates] == [2]
    assert decision.volumes == [] and decision.retained == []


def test_retention_when_the_group_is_deleted() -> None:
    volumes = [VolumeView("g-data-0", 0), VolumeView("g-data-1", 1, deleting=True)]
    assert volume_deletion(when_deleted({"volumeTemplates": DATA}), volumes) == ([], ["g-data-0"])
    s = {"volumeTemplates": DATA, "volumeRetention": {"whenDeleted": "Delete"}}
    assert volume_deletion(when_deleted(s), volumes) == (["g-data-0"], [])


def test_retention_is_read_from_a_spec_that_does_not_validate() -> None:
    """A group deleted with an invalid spec still knows what to keep; anything but an
    explicit Delete retains."""
    assert when_deleted({"replicas": -1, "volumeRetention": {"whenDeleted": "Delete"}}) == "Delete"
    assert when_deleted({"volumeRetention": {"whenDeleted": "Sometimes"}}) == "Retain"
    assert when_deleted({"volumeRetention": "x"}) == when_deleted({}) == "Retain"


def test_surge_is_refused_with_identity_ordinal() -> None:
    s = spec(2, volumeTemplates=DATA, strategy={"maxSurge": 1, "maxUnavailable": 0})
    assert "maxSurge" in (validate(s) or "")
    assert validate(spec(2, volumeTemplates=DATA)) is None


def test_volume_templates_require_identity_ordinal() -> None:
    s = spec(2, identity="Random", volumeTemplates=DATA)
    assert "identity: Ordinal" in (validate(s) or "")


def test_volume_template_names_are_unique() -> None:
    with pytest.raises(ValidationError, match="unique"):
        spec(1, volumeTemplates=[{"name": "a", "size": 1}, {"name": "a", "size": 2}])


def test_defaults_are_random_and_retain() -> None:
    s = VirtualMachineGroupSpec.model_validate({"template": TEMPLATE})
    assert s.identity == "Random" and s.volume_templates == []
    assert (s.volume_retention.when_scaled_down, s.volume_retention.when_deleted) == (
        "Retain",
        "Retain",
    )


def test_the_crd_refuses_surge_and_templates_without_ordinal_and_their_changes() -> None:
    from kumo.api.crd import crd_document
    from kumo.api.kinds import VIRTUAL_MACHINE_GROUP

    schema = crd_document(VIRTUAL_MACHINE_GROUP)["spec"]["versions"][0]["schema"]
    root = schema["openAPIV3Schema"]
    spec_rules = [v["message"] for v in root["properties"]["spec"]["x-kubernetes-validations"]]
    assert any(m.startswith("spec.volumeTemplates: requires spec.identity") for m in spec_rules)
    assert any(m.startswith("spec.strategy.maxSurge: must be 0") for m in spec_rules)
    object_rules = [v["message"] for v in root["x-kubernetes-validations"]]
    assert any(m.startswith("spec.identity is immutable") for m in object_rules)
    assert any(m.startswith("spec.volumeTemplates is immutable") for m in object_rules)


def test_an_ordinal_whose_volume_is_being_deleted_waits_for_it_to_go() -> None:
    s = spec(2, volumeTemplates=DATA, volumeRetention={"whenScaledDown": "Delete"})
    volumes = [VolumeView("g-data-0", 0), VolumeView("g-data-1", 1, deleting=True)]
    decision = plan_ordinals(s, "g", "h1", members(0), (), volumes)
    assert decision.creates == [] and decision.volumes == []
    decision = plan_ordinals(s, "g", "h1", members(0), (), volumes[:1])
    assert [i for i, _ in decision.creates] == [1]
    assert [n for n, *_ in decision.volumes] == ["g-data-1"]
