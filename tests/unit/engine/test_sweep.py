"""The orphan sweep's decisions: grace, the circuit breaker, what is never deleted."""

from __future__ import annotations

from kumo.engine.sweep import OrphanSweep
from kumo.ports.model import Marked


def server(id_: str, owner: str, **kw: object) -> Marked:
    return Marked("server", id_, f"name-{id_}", owner, **kw)  # type: ignore[arg-type]


LIVE = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
FLEET = [server(f"s{i}", uid) for i, uid in enumerate(sorted(LIVE))]


def test_a_resource_of_a_live_object_is_never_orphaned() -> None:
    verdict = OrphanSweep(grace=0).judge(FLEET, LIVE, now=0)
    assert verdict.orphaned == [] and verdict.delete == []


def test_an_orphan_is_reported_at_once_and_deleted_only_after_the_grace() -> None:
    sweep = OrphanSweep(grace=600)
    leak = server("leak", "gone")
    first = sweep.judge([*FLEET, leak], LIVE, now=1000)
    assert first.orphaned == [leak] and first.delete == []
    assert sweep.judge([*FLEET, leak], LIVE, now=1599).delete == []
    assert sweep.judge([*FLEET, leak], LIVE, now=1600).delete == [leak]


def test_the_grace_starts_again_when_the_owner_came_back_in_between() -> None:
    sweep = OrphanSweep(grace=600)
    leak = server("x", "late")
    sweep.judge([*FLEET, leak], LIVE, now=0)
    sweep.judge([*FLEET, leak], LIVE | {"late"}, now=300)  # its object is seen: not a leak
    assert sweep.judge([*FLEET, leak], LIVE, now=700).delete == [], "counted from 700 again"
    assert sweep.judge([*FLEET, leak], LIVE, now=1299).delete == []
    assert sweep.judge([*FLEET, leak], LIVE, now=1300).delete == [leak]


def test_busy_resources_and_server_groups_in_use_are_reported_not_deleted() -> None:
    sweep = OrphanSweep(grace=0)
    going = server("going", "gone", busy=True)
    group = Marked("server_group", "sg", "g kumo-owner=gone", "gone", in_use=True)
    empty = Marked("server_group", "sg2", "h kumo-owner=gone", "gone")
    verdict = sweep.judge([*FLEET, going, group, empty], LIVE, now=0)
    assert {m.id for m in verdict.orphaned} == {"going", "sg", "sg2"}
    assert verdict.delete == [empty]


def test_the_circuit_breaker_deletes_nothing_when_most_owners_are_missing() -> None:
    """A missing informer or another cluster sharing the project looks like this."""
    sweep = OrphanSweep(grace=0)
    verdict = sweep.judge(FLEET, {"a", "b"}, now=0)
    assert len(verdict.orphaned) == 8 and verdict.delete == []
    assert verdict.suspended is not None and "8 of 10" in verdict.suspended


def test_a_few_orphans_in_a_small_project_are_not_suspended() -> None:
    sweep = OrphanSweep(grace=0)
    verdict = sweep.judge([server("only", "gone")], set(), now=0)
    assert verdict.suspended is None and [m.id for m in verdict.delete] == ["only"]
