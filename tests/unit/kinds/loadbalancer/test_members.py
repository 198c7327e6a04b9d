"""Pool member decisions that stand alone: when a pool being filled holds its additions."""

from __future__ import annotations

import datetime

from kumo.api.loadbalancer import Port
from kumo.cloud.model import Member, marker_tags
from kumo.kinds.loadbalancer import members
from kumo.kinds.loadbalancer.members import DrainClock, WantedMember

UID = "uid-web"
OURS = marker_tags(UID)
T0 = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.UTC)
PORT = Port.model_validate(
    {
        "port": 80,
        "protocol": "http",
        "realServers": {"protocol": "http", "port": 80, "virtualMachineGroupRef": "g"},
    }
)


def serving(*names: str, weight: int = 1) -> list[Member]:
    return [
        Member(f"m-{n}", n, f"10.0.0.{i}", 80, None, OURS, weight) for i, n in enumerate(names, 1)
    ]


def wanted(*names: str) -> list[WantedMember]:
    return [WantedMember(n, f"10.0.0.{i}", 80) for i, n in enumerate(names, 1)]


def hold(
    want: list[WantedMember],
    current: list[Member],
    coming: int = 3,
    since: float | None = 4.0,
    now: datetime.datetime = T0,
) -> float | None:
    """fill_hold for a pool whose last member change was ``since`` seconds ago."""
    change = members.pool_members(PORT, want, current, UID, DrainClock(now))
    last = None if since is None else now - datetime.timedelta(seconds=since)
    return members.fill_hold(change, current, UID, coming, last, now)


def test_a_pool_being_filled_holds_new_members_until_its_interval_is_over() -> None:
    left = hold(wanted("a", "b", "c"), serving("a"), since=4.0)
    assert left == members.FILL_BATCH_SECONDS - 4.0
    assert hold(wanted("a", "b", "c"), serving("a"), since=members.FILL_BATCH_SECONDS) is None


def test_the_last_vm_of_a_fill_and_a_repair_never_wait() -> None:
    """Nothing more coming: the member goes in now, however recent the last batch."""
    assert hold(wanted("a", "b"), serving("a"), coming=0, since=0.5) is None


def test_a_pools_first_capacity_never_waits() -> None:
    """No member of Kumo's in service (none yet, or all draining): add at once."""
    assert hold(wanted("a"), [], since=1.0) is None
    draining = serving("a", weight=0)
    assert hold(wanted("a", "b"), draining, since=1.0) is None


def test_a_change_that_is_more_than_additions_is_not_held() -> None:
    """A member leaving (its drain starts), one wanted again (weight back to 1) or one
    renamed in place goes now, and the additions with it."""
    assert hold(wanted("b", "c"), serving("a", "b"), since=1.0) is None
    back = [*serving("a"), Member("m-b", "b", "10.0.0.2", 80, None, OURS, 0)]
    assert hold(wanted("a", "b", "c"), back, since=1.0) is None
    renamed = [Member("m-a", "old-a", "10.0.0.1", 80, None, OURS, 1)]
    assert hold(wanted("a", "b"), renamed, since=1.0) is None
    assert hold(wanted("a", "b"), serving("a"), since=1.0) is not None


def test_no_recorded_batch_means_no_hold() -> None:
    """After a restart the actuator has no record: the first batch goes at once."""
    assert hold(wanted("a", "b"), serving("a"), since=None) is None


def test_nothing_to_add_is_nothing_to_hold() -> None:
    assert hold(wanted("a"), serving("a"), since=1.0) is None


def test_a_big_pool_fills_in_longer_intervals_up_to_a_minute() -> None:
    """Octavia's batch update costs in proportion to the pool: so does the interval."""
    assert members.fill_interval(10) == members.fill_interval(100) == 15.0
    assert members.fill_interval(300) == 45.0
    assert members.fill_interval(1000) == members.FILL_BATCH_MAX_SECONDS == 60.0
    big = serving(*(f"vm-{i}" for i in range(300)))
    want = wanted(*(f"vm-{i}" for i in range(301)))
    assert hold(want, big, since=40.0) == 5.0
    assert hold(want, big, since=45.0) is None
