"""Volume decisions: what cannot be applied, what an import must match, which servers
block a delete."""

from __future__ import annotations

from kumo.api.volume import VolumeSpec
from kumo.cloud.model import Volume
from kumo.kinds.volume import plan

VOLUME = Volume("v-1", "default-data", "available", 5, "lvmdriver-1", "nova")


def spec(**fields: object) -> VolumeSpec:
    return VolumeSpec.model_validate({"size": 5, **fields})


def test_a_smaller_size_and_another_type_are_unapplied() -> None:
    assert plan.unapplied_changes(spec(), VOLUME, "lvmdriver-1") == []
    assert plan.unapplied_changes(spec(size=9), VOLUME, None) == [], "growing is applied"
    assert plan.unapplied_changes(spec(size=4, availabilityZone="az2"), VOLUME, "ssd") == [
        "spec.size",
        "spec.volumeType",
        "spec.availabilityZone",
    ]


def test_an_import_must_match_what_cannot_change() -> None:
    assert plan.import_mismatches(spec(size=8), VOLUME, "lvmdriver-1", None) == []
    fields = [
        c.field
        for c in plan.import_mismatches(spec(size=1, snapshot="snap-1"), VOLUME, "ssd", "img-1")
    ]
    assert fields == ["spec.size", "spec.volumeType", "spec.image", "spec.snapshot"]


def test_foreign_servers_are_those_kumo_does_not_own() -> None:
    attached = Volume("v-1", "x", "in-use", 1, attachments=("s-1", "s-2"))
    assert plan.foreign_servers(attached, {"s-1"}) == ["s-2"]
    assert plan.foreign_servers(attached, {"s-1", "s-2"}) == []


def test_busy_is_neither_settled_nor_failed() -> None:
    assert not plan.is_busy(VOLUME)
    assert plan.is_busy(Volume("v", "x", "extending", 1))
    assert not plan.is_busy(Volume("v", "x", "error", 1))
