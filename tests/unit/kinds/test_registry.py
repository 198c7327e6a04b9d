"""The registry of kinds covers every kind of the API table, once each."""

from __future__ import annotations

from kumo.api.kinds import KINDS
from kumo.kinds import registry


def test_every_kind_has_one_record() -> None:
    recorded = [record.info.kind for record in registry.RECORDS]
    assert sorted(recorded) == sorted(info.kind for info in KINDS)


def test_each_record_builds_the_actuator_of_its_kind() -> None:
    for record in registry.RECORDS:
        assert record.actuator().info is record.info


def test_actuators_are_fresh_each_call() -> None:
    first, second = registry.actuators(), registry.actuators()
    assert [a.info.kind for a in first] == [r.info.kind for r in registry.RECORDS]
    assert all(a is not b for a, b in zip(first, second, strict=True))
