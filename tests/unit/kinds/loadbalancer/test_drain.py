"""Pool membership in batches, and graceful drain — pure functions fed ``now``.

One batch per pool carries every member change due; a leaving member goes to weight 0
and is removed drainSeconds later (counted from the start recorded in status)."""

from __future__ import annotations

import datetime
from typing import Any

from kumo.api.loadbalancer import LoadBalancerSpec
from kumo.cloud.model import Member, MemberSpec, marker_tags
from kumo.kinds.loadbalancer import decision, members, plan
from kumo.kinds.loadbalancer import steps as writes
from kumo.kinds.loadbalancer.members import DrainClock, WantedMember
from kumo.kinds.loadbalancer.plan import Tree
from tests.unit.kinds.loadbalancer.test_plan import LB, LISTENER, MONITOR, OURS, POOL, UID, port

T0 = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.UTC)


def at(seconds: float, **started: datetime.datetime) -> DrainClock:
    return DrainClock(T0 + datetime.timedelta(seconds=seconds), dict(started))


def spec(drain: int | None = None) -> LoadBalancerSpec:
    p = port()
    if drain is not None:
        p["realServers"]["drainSeconds"] = drain
    return LoadBalancerSpec.model_validate({"description": "d", "ports": [p]})


def tree(*members: Member) -> Tree:
    return Tree(LB, [LISTENER], [POOL], {POOL.id: list(members)}, {MONITOR.id: MONITOR})


def ours(mid: str, name: str, ip: str, weight: int = 1) -> Member:
    return Member(mid, name, ip, 80, None, OURS, weight)


def want(*names_ips: tuple[str, str]) -> list[list[WantedMember]]:
    return [[WantedMember(n, ip, 80) for n, ip in names_ips]]


def steps(t: Tree, wanted: list, clock: DrainClock, s: LoadBalancerSpec | None = None) -> list:
    return plan.plan_steps(s or spec(), wanted, t, UID, "default-web", clock)


def batch_of(step: writes.Step) -> dict[str, int]:
    """address → weight of the batch a replace_owned_members step sends."""
    assert isinstance(step, writes.ReplaceOwnedMembers)
    pool_id, uid, members = step.pool_id, step.uid, step.members
    assert (pool_id, uid) == (POOL.id, UID)
    assert all(m.tags == marker_tags(UID) for m in members), "members keep Kumo's marker"
    return {m.address: m.weight for m in members}


def added_by(step: writes.Step) -> dict[str, int]:
    """address → weight of the members an add_members step adds (nothing else)."""
    assert isinstance(step, writes.AddMembers)
    pool_id, members = step.pool_id, step.members
    assert pool_id == POOL.id
    assert all(m.tags == marker_tags(UID) for m in members), "members carry Kumo's marker"
    return {m.address: m.weight for m in members}


def test_a_scale_out_is_one_batch_of_additions_alone() -> None:
    """Octavia's additive batch: the pool's other members are neither listed nor read."""
    wanted = want(("a", "10.0.0.1"), ("b", "10.0.0.2"), ("c", "10.0.0.3"))
    (step,) = steps(tree(), wanted, at(0))
    assert isinstance(step, writes.AddMembers)
    assert step.members == [
        MemberSpec("a", "10.0.0.1", 80, None, 1, OURS),
        MemberSpec("b", "10.0.0.2", 80, None, 1, OURS),
        MemberSpec("c", "10.0.0.3", 80, None, 1, OURS),
    ]
    assert "add 3 member(s)" in step.why
    (more,) = steps(tree(ours("m1", "a", "10.0.0.1")), wanted, at(0))
    assert added_by(more) == {"10.0.0.2": 1, "10.0.0.3": 1}, "only the new ones are sent"
    converged = tree(*(ours(f"m{i}", w.name, w.address) for i, w in enumerate(wanted[0])))
    assert steps(converged, wanted, at(0)) == []


def test_foreign_members_are_never_in_kumos_batch_and_keep_their_address() -> None:
    """The adapter sends foreign members back as they are; the plan never lists them,
    and a wanted VM whose address:port a foreign member holds is left to that member."""
    theirs = Member("f1", "by-hand", "10.0.0.2", 80, None, ["team-x"], 5)
    other_lb = Member("f2", "x", "10.0.0.9", 80, None, marker_tags("uid-other-lb"), 0)
    wanted = want(("a", "10.0.0.1"), ("b", "10.0.0.2"))
    (step,) = steps(tree(theirs, other_lb), wanted, at(0))
    assert added_by(step) == {"10.0.0.1": 1}
    # Foreign members alone never make a change: not even a weight-0 one of another LB.
    assert steps(tree(theirs, other_lb, ours("m1", "a", "10.0.0.1")), wanted, at(999)) == []


def test_a_leaving_member_drains_for_drain_seconds_then_goes() -> None:
    stay, leave = ours("m1", "a", "10.0.0.1"), ours("m2", "b", "10.0.0.2")
    wanted = want(("a", "10.0.0.1"))
    # Its VM is being deleted: weight 0, in the same pool, with an event.
    (first,) = steps(tree(stay, leave), wanted, at(0.4), spec(drain=5))
    assert batch_of(first) == {"10.0.0.1": 1, "10.0.0.2": 0}
    assert first.events == (
        ("Draining", "member b (10.0.0.2:80) of port 80: weight 0 for 5s, then removed"),
    )
    drains = plan.draining(spec(drain=5), wanted, tree(stay, leave), UID, at(0.4))
    assert drains["m2"].since == T0 + datetime.timedelta(seconds=1), "rounded up, never early"

    since = drains["m2"].since
    drained = tree(stay, ours("m2", "b", "10.0.0.2", weight=0))
    for seconds in (1, 3, 5.5):  # still draining: nothing to do, look again at the end
        clock = at(seconds, m2=since)
        assert steps(drained, wanted, clock, spec(drain=5)) == []
        left = members.next_drain_end(
            plan.draining(spec(drain=5), wanted, drained, UID, clock), clock.now
        )
        assert left == 6 - seconds
    (last,) = steps(drained, wanted, at(6, m2=since), spec(drain=5))
    assert batch_of(last) == {"10.0.0.1": 1}
    assert last.events == (("MemberRemoved", "member b (10.0.0.2:80) removed from port 80"),)


def test_one_batch_carries_additions_drains_and_removals_together() -> None:
    done = ours("m1", "old", "10.0.0.1", weight=0)
    going = ours("m2", "b", "10.0.0.2")
    wanted = want(("b2", "10.0.0.3"), ("c", "10.0.0.4"))
    (step,) = steps(tree(done, going), wanted, at(20, m1=T0))
    assert batch_of(step) == {"10.0.0.3": 1, "10.0.0.4": 1, "10.0.0.2": 0}
    assert step.why == "port 80: update members (2 to add, 1 to drain, 1 to remove)"
    assert [r for r, _ in step.events] == ["Draining", "MemberRemoved"]


def test_a_member_wanted_again_goes_back_to_weight_one() -> None:
    draining = ours("m1", "a", "10.0.0.1", weight=0)
    (step,) = steps(tree(draining), want(("a", "10.0.0.1")), at(3, m1=T0))
    assert batch_of(step) == {"10.0.0.1": 1}
    assert step.events == ()
    assert plan.draining(spec(), want(("a", "10.0.0.1")), tree(draining), UID, at(3)) == {}


def test_a_weight_zero_member_with_no_recorded_start_restarts_the_clock() -> None:
    """After a restart that lost status (or a drain set by hand): the drain is counted
    from now, not guessed — removing it early could cut connections."""
    found = ours("m1", "a", "10.0.0.1", weight=0)
    assert steps(tree(found), want(), at(100), spec(drain=10)) == []
    (drain,) = plan.draining(spec(drain=10), want(), tree(found), UID, at(100)).values()
    assert drain.since == T0 + datetime.timedelta(seconds=100)
    assert steps(tree(found), want(), at(109, m1=drain.since), spec(drain=10)) == []
    (step,) = steps(tree(found), want(), at(110, m1=drain.since), spec(drain=10))
    assert batch_of(step) == {}


def test_a_recorded_start_counts_only_once_octavia_shows_weight_zero() -> None:
    """The update that set weight 0 was refused (409): the clock starts again."""
    still_up = ours("m1", "a", "10.0.0.1", weight=1)
    (step,) = steps(tree(still_up), want(), at(60, m1=T0), spec(drain=10))
    assert batch_of(step) == {"10.0.0.1": 0}
    (drain,) = plan.draining(spec(drain=10), want(), tree(still_up), UID, at(60, m1=T0)).values()
    assert drain.since == T0 + datetime.timedelta(seconds=60)


def test_drain_seconds_zero_removes_at_once() -> None:
    (step,) = steps(tree(ours("m1", "a", "10.0.0.1")), want(), at(0), spec(drain=0))
    assert batch_of(step) == {}
    assert [r for r, _ in step.events] == ["MemberRemoved"]


def test_a_reused_address_under_another_vm_is_taken_over_in_place() -> None:
    """Octavia matches by address:port: the old VM's server is gone (its IP was freed),
    so the member is renamed, not drained."""
    stale = ours("m1", "old-vm", "10.0.0.1")
    (step,) = steps(tree(stale), want(("new-vm", "10.0.0.1")), at(0))
    assert isinstance(step, writes.ReplaceOwnedMembers)
    assert step.members == [MemberSpec("new-vm", "10.0.0.1", 80, None, 1, OURS)]
    assert step.events == ()


def test_status_records_weight_and_drain_start_and_reads_them_back() -> None:
    leaving = ours("m2", "b", "10.0.0.2", weight=0)
    t = tree(ours("m1", "a", "10.0.0.1"), leaving)
    clock = at(4, m2=T0)
    drains = plan.draining(spec(), want(("a", "10.0.0.1")), t, UID, clock)
    written = {"ports": [decision.port_status(p, t, UID, drains) for p in spec().ports]}
    assert written["ports"][0]["members"] == [
        {"id": "m1", "name": "a", "address": "10.0.0.1", "port": 80, "weight": 1},
        {
            "id": "m2",
            "name": "b",
            "address": "10.0.0.2",
            "port": 80,
            "weight": 0,
            "drainingSince": "2026-11-22T12:00:00Z",
        },
    ]
    assert members.recorded_drains(written) == {"m2": T0}
    assert (
        members.recorded_drains({"ports": [{"members": [{"id": "m", "drainingSince": "x"}]}]}) == {}
    )


# -- a few changes to a big pool: one member at a time -------------------------------


def big_pool(n: int) -> list[Member]:
    return [ours(f"m{i}", f"vm-{i}", f"10.0.{i // 250}.{i % 250 + 2}") for i in range(n)]


def wanted_from(pool: list[Member], **replaced: str) -> list[list[WantedMember]]:
    """The pool's VMs as wanted members; ``replaced`` gives VMs a new address."""
    return want(*((m.name, replaced.get(m.name.replace("-", "_"), m.address)) for m in pool))


def test_a_replaced_server_in_a_big_pool_is_an_add_then_a_remove_not_a_batch() -> None:
    """A batch update of a 100-member pool locks Octavia's LB ≈ 6.5 s (≈ 200 s at 1,000):
    a repair adds the new address and removes the dead one by single calls."""
    pool = big_pool(100)
    clock = DrainClock(T0, {}, {m.name: m.address for m in pool} | {"vm-7": "10.9.9.9"})
    add, remove = steps(tree(*pool), wanted_from(pool, vm_7="10.9.9.9"), clock)
    assert isinstance(add, writes.CreateMember)
    assert (add.pool_id, add.member) == (POOL.id, MemberSpec("vm-7", "10.9.9.9", 80, None, 1, OURS))
    assert isinstance(remove, writes.DeleteOwnedMember)
    assert (remove.pool_id, remove.member_id, remove.uid) == (POOL.id, "m7", UID)
    assert [e[0] for e in remove.events] == ["MemberRemoved"]
    assert "(1/2)" in add.why and "(2/2)" in remove.why


def test_a_drain_in_a_big_pool_is_one_weight_update() -> None:
    pool = big_pool(100)
    wanted = wanted_from(pool[1:])  # vm-0 is leaving (no longer Ready)
    (step,) = steps(tree(*pool), wanted, at(0))
    assert isinstance(step, writes.UpdateOwnedMember)
    drained = MemberSpec("vm-0", pool[0].address, 80, None, 0, OURS)
    assert (step.pool_id, step.member_id, step.uid, step.member) == (POOL.id, "m0", UID, drained)
    assert [e[0] for e in step.events] == ["Draining"]
    # Restored when wanted again: weight back to 1, the same member.
    draining = [replace_weight(pool[0], 0), *pool[1:]]
    (back,) = steps(tree(*draining), wanted_from(pool), at(1))
    assert isinstance(back, writes.UpdateOwnedMember)
    assert (back.member_id, back.member.weight) == ("m0", 1)


def replace_weight(m: Member, weight: int) -> Member:
    return Member(m.id, m.name, m.address, m.port, m.monitor_port, m.tags, weight)


def test_many_changes_or_a_small_pool_stay_one_batch() -> None:
    pool = big_pool(100)
    more = [*wanted_from(pool)[0], *(WantedMember(f"new-{i}", f"10.1.0.{i}", 80) for i in range(6))]
    (step,) = steps(tree(*pool), [more], at(0))
    assert isinstance(step, writes.AddMembers), "6 additions to 100 members: one batch"
    assert len(step.members) == 6
    small = big_pool(39)
    (step,) = steps(tree(*small), wanted_from(small[1:]), at(0))
    assert isinstance(step, writes.ReplaceOwnedMembers), "a 39-member batch is as quick as one call"


def test_additions_with_anything_else_to_change_are_one_full_batch() -> None:
    """The additive batch only adds: a fill that also starts a drain, removes a member or
    corrects one of Kumo's weights sends the whole set, as before."""
    stay, leave = ours("m1", "a", "10.0.0.1"), ours("m2", "b", "10.0.0.2")
    wanted = want(("a", "10.0.0.1"), ("c", "10.0.0.3"))
    (step,) = steps(tree(stay, leave), wanted, at(0), spec(drain=5))
    assert batch_of(step) == {"10.0.0.1": 1, "10.0.0.2": 0, "10.0.0.3": 1}
    assert "1 to add, 1 to drain" in step.why
    off = ours("m1", "a", "10.0.0.1", weight=0)  # weight changed out of band
    (step,) = steps(tree(off), want(("a", "10.0.0.1"), ("c", "10.0.0.3")), at(0))
    assert batch_of(step) == {"10.0.0.1": 1, "10.0.0.3": 1}


def test_one_by_one_never_lists_foreign_members() -> None:
    pool = [*big_pool(99), Member("f1", "by-hand", "10.5.5.5", 80, None, ["team-x"], 3)]
    wanted = [[*wanted_from(pool[:99])[0], WantedMember("vm-x", "10.5.5.5", 80)]]
    assert steps(tree(*pool), wanted, at(0)) == [], "the foreign member keeps its address"
    leaving = [[w for w in wanted[0] if w.name != "vm-3"]]
    (step,) = steps(tree(*pool), leaving, at(0))
    assert isinstance(step, writes.UpdateOwnedMember) and step.member_id == "m3"


def test_a_leaving_member_whose_server_the_watch_lost_is_removed_not_drained() -> None:
    """Its VM is rebuilding (no address yet): no proof. No live server at the member's
    address in the cloud watch is."""
    a, b = ours("m1", "a", "10.0.0.1"), ours("m2", "b", "10.0.0.2")
    wanted = want(("a", "10.0.0.1"))
    rebuilding = {"a": "10.0.0.1", "b": None}
    drains = DrainClock(T0, {}, rebuilding, frozenset({"10.0.0.1", "10.0.0.2"}))
    (step,) = steps(tree(a, b), wanted, drains)
    assert batch_of(step) == {"10.0.0.1": 1, "10.0.0.2": 0}, "server alive: it drains"
    lost = DrainClock(T0, {}, rebuilding, frozenset({"10.0.0.1"}))
    (step,) = steps(tree(a, b), wanted, lost)
    assert batch_of(step) == {"10.0.0.1": 1}, "server gone: removed at once"
    assert [e[0] for e in step.events] == ["MemberRemoved"]


def test_a_pool_batch_costs_linear_work_in_the_pool_size(monkeypatch: Any) -> None:
    """Each member event makes the LoadBalancer recompute its pools: a quadratic batch
    made the fleet's per-event CPU grow with the group (300 members: 90,000 reads)."""

    class Counting(MemberSpec):
        reads = 0

        def __getattribute__(self, name: str) -> Any:
            if name == "address":
                Counting.reads += 1
            return super().__getattribute__(name)

    monkeypatch.setattr(members, "MemberSpec", Counting)
    n = 400
    wanted = [WantedMember(f"vm{i}", f"10.1.{i // 250}.{i % 250}", 80) for i in range(n)]
    change = members.pool_members(spec().ports[0], wanted, [], UID, at(0))
    assert len(change.batch) == len(change.added) == n
    assert Counting.reads <= 10 * n
