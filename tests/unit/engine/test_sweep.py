"""The orphan sweep's decisions: grace, the circuit breaker, what is never deleted."""

from __future__ import annotations

import pytest

from kumo.engine.sweep import DATA_KINDS, OrphanSweep, router_interfaces
from kumo.ports.model import Marked


def server(id_: str, owner: str, **kw: object) -> Marked:
    return Marked("server", id_, f"name-{id_}", owner, **kw)  # type: ignore[arg-type]


LIVE = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
FLEET = [server(f"s{i}", uid) for i, uid in enumerate(sorted(LIVE))]


def project(live: int, orphaned: int) -> tuple[list[Marked], set[str]]:
    """``live`` resources of live objects and ``orphaned`` of gone ones."""
    mine = [server(f"live-{i}", f"uid-{i}") for i in range(live)]
    leaks = [server(f"leak-{i}", f"gone-{i}") for i in range(orphaned)]
    return mine + leaks, {f"uid-{i}" for i in range(live)}


def test_a_resource_of_a_live_object_is_never_orphaned() -> None:
    verdict = OrphanSweep(grace=0).judge(FLEET, LIVE, now=0)
    assert verdict.orphaned == [] and verdict.delete == [] and verdict.suspended is None


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


# -- data: reported, never deleted unless the operator names the kind -------------------------


DATA = [
    Marked("volume", "vol-1", "data", "gone-v"),
    Marked("share", "shr-1", "files", "gone-s"),
    Marked("floatingip", "fip-1", "203.0.113.9", "gone-f"),
    Marked("snapshot", "snap-1", "before-upgrade", "gone-n"),
]


def test_data_kinds_are_volumes_snapshots_shares_and_floating_ips() -> None:
    assert set(DATA_KINDS) == {"volume", "snapshot", "share", "floatingip"}


def test_orphaned_data_is_kept_without_the_operators_opt_in() -> None:
    sweep = OrphanSweep(grace=0)
    leak = server("leak", "gone")
    for now in (0, 10_000):
        verdict = sweep.judge([*FLEET, *DATA, leak], LIVE, now=now)
        assert verdict.suspended is None
        assert {m.id for m in verdict.orphaned} == {"vol-1", "shr-1", "fip-1", "snap-1", "leak"}
        assert verdict.kept == sorted(DATA, key=lambda m: (m.kind, m.id))
        assert verdict.delete == [leak], "the server goes, the data stays"
    assert set(sweep.since) == {("server", "leak")}, "no grace runs for what is kept"


@pytest.mark.parametrize("kind", sorted(DATA_KINDS))
def test_data_of_a_kind_the_operator_names_is_deleted_after_the_grace(kind: str) -> None:
    sweep = OrphanSweep(grace=600, delete_data=frozenset({kind}))
    (named,) = [m for m in DATA if m.kind == kind]
    assert named not in sweep.judge([*FLEET, *DATA], LIVE, now=0).delete
    verdict = sweep.judge([*FLEET, *DATA], LIVE, now=600)
    assert verdict.delete == [named], "only the named kind"
    assert named not in verdict.kept and len(verdict.kept) == len(DATA) - 1


# -- the circuit breaker ---------------------------------------------------------------------


def test_exactly_half_orphaned_trips_the_breaker() -> None:
    marked, live = project(live=10, orphaned=10)
    verdict = OrphanSweep(grace=0).judge(marked, live, now=0)
    assert verdict.delete == [] and verdict.suspended is not None
    assert "10 of 20" in verdict.suspended and "50%" in verdict.suspended


def test_just_under_half_orphaned_does_not_trip_it() -> None:
    marked, live = project(live=51, orphaned=49)  # 49 %
    verdict = OrphanSweep(grace=0, max_orphans=100).judge(marked, live, now=0)
    assert verdict.suspended is None and len(verdict.delete) == 49


def test_more_than_the_absolute_count_trips_it_whatever_the_share() -> None:
    marked, live = project(live=100, orphaned=20)
    assert OrphanSweep(grace=0).judge(marked, live, now=0).suspended is None, "20: not more"
    marked, live = project(live=100, orphaned=21)
    verdict = OrphanSweep(grace=0).judge(marked, live, now=0)
    assert verdict.delete == [] and verdict.suspended is not None
    assert "21 of 121" in verdict.suspended and "more than 20" in verdict.suspended
    verdict = OrphanSweep(grace=0, max_orphans=21).judge(marked, live, now=0)
    assert verdict.suspended is None, "--orphan-sweep-max moves it"


def test_a_project_whose_only_marked_resource_is_a_leak_is_reported_never_swept() -> None:
    """1 of 1 is 100 %: the breaker cannot tell it from a missing watch. Documented."""
    sweep = OrphanSweep(grace=0)
    verdict = sweep.judge([server("only", "gone")], set(), now=10_000)
    assert verdict.suspended is not None and "1 of 1" in verdict.suspended
    assert [m.id for m in verdict.orphaned] == ["only"] and verdict.delete == []


def test_kept_data_counts_toward_the_breaker() -> None:
    marked, live = project(live=4, orphaned=0)
    verdict = OrphanSweep(grace=0).judge([*marked, *DATA], live, now=0)
    assert verdict.suspended is not None, "4 orphaned volumes etc. of 8: a restore?"


def test_no_grace_runs_while_suspended_and_each_candidate_starts_anew_after() -> None:
    """The old breaker kept counting: when the share fell, everything overdue went in the
    same sweep. Now the clocks are cleared while suspended."""
    sweep = OrphanSweep(grace=600)
    marked, live = project(live=10, orphaned=4)
    leaks = [m for m in marked if m.owner not in live]
    assert sweep.judge(marked, live, now=0).suspended is None
    assert sweep.since, "the grace runs"
    mass = [server(f"x{i}", f"gone-x{i}") for i in range(10)]  # a restore: 14 of 24
    for now in (100, 5_000):
        verdict = sweep.judge([*marked, *mass], live, now=now)
        assert verdict.suspended is not None and verdict.delete == []
        assert sweep.since == {}, "no clock runs while suspended"
    verdict = sweep.judge(marked, live, now=5_001)  # the objects are back: resumed
    assert verdict.suspended is None and verdict.delete == [], "a new grace period"
    assert sweep.judge(marked, live, now=5_600).delete == []
    assert sweep.judge(marked, live, now=5_601).delete == leaks


# -- a leaked router: only its own network's subnets ------------------------------------------


def test_a_router_is_detached_only_from_its_own_networks_subnets() -> None:
    owners = {"sub-own": "uid-net", "sub-other": "uid-other", "sub-released": None}
    own, foreign = router_interfaces(
        "uid-net", ["sub-own", "sub-other", "sub-released", "sub-users"], owners
    )
    assert own == ["sub-own"]
    assert foreign == ["sub-other", "sub-released", "sub-users"], "unknown is foreign"
    assert router_interfaces("uid-net", ["sub-own"], owners) == (["sub-own"], [])
