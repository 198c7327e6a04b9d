"""Pool membership decisions, free of I/O: Kumo's members of one pool as they should
be after this pass, in one batch, and graceful drain.

A member whose VM leaves (deleted, scaled in, rolled over, no longer Ready) is first
set to weight 0, kept for the port's ``drainSeconds`` so open connections finish, and
only then left out of the batch (removed) — unless its server is already gone (the VM
was deleted, or its server replaced: a new address), then at once; its VM's server is deleted after that (the
VirtualMachine waits until no LoadBalancer lists it). When each drain began is recorded
in LoadBalancer status (``members[].drainingSince``), so it survives an operator
restart. The time comes in as :class:`DrainClock`: nothing here reads a clock.

How the changes reach Octavia (:func:`one_by_one`): a batch update is ONE change, but
Octavia's worker then processes every member of the pool, not just the changed ones —
on the lab the load balancer stays ``PENDING_UPDATE`` ≈ 6.5 s at 100 members and
≈ 200 s at 1,000 to change one of them, while a single member's create, update or
delete holds it ≈ 0.6 s at 100 and 1.5 to 3 s at 1,000. So a few changes to a big pool go
one member at a time (one per pass), and many changes in one batch
(:func:`member_steps` turns a pool's change into those writes).
"""

from __future__ import annotations

import datetime
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kumo.api.loadbalancer import Port
from kumo.engine.conditions import RFC3339
from kumo.engine.objects import Body
from kumo.kinds.loadbalancer import steps
from kumo.ports.model import Member, MemberSpec, marker_tags, owner_of


@dataclass(frozen=True, order=True)
class WantedMember:
    """A pool member the spec asks for: one ready VM of the referenced group."""

    name: str
    address: str
    port: int
    monitor_port: int | None = None

    def fields(self) -> tuple[str, str, int, int | None]:
        """Its fields in order: what its order compares (a sort key)."""
        return (self.name, self.address, self.port, self.monitor_port)


@dataclass(frozen=True)
class DrainClock:
    """What drain decisions need from outside: the time, and the drain starts status
    recorded (Octavia member ID → when its weight went to 0)."""

    now: datetime.datetime
    started: dict[str, datetime.datetime] = field(default_factory=dict)
    addresses: dict[str, str | None] | None = None
    """VM name → the address its server has now (None: none known), for the VMs the
    pool's members are named after; None when unknown. A member whose VM is gone, or
    whose VM has a server at a new address, has no backend left to drain: it is removed
    at once."""
    live: frozenset[str] | None = None
    """Addresses of Kumo's servers the cloud watch holds alive (None: unknown). A leaving
    member at none of them lost its server (deleted out of band, noticed by the watch):
    removed at once, while its VM's new server builds — so the new member is the only
    change left when that server is ready."""


@dataclass(frozen=True)
class Draining:
    """One of Kumo's members leaving its pool: weight 0 from ``since``, gone at ``until``."""

    member: Member
    since: datetime.datetime
    until: datetime.datetime


@dataclass(frozen=True)
class PoolMembers:
    """Kumo's members of one pool after this pass, and how they differ from Octavia's."""

    batch: list[MemberSpec]
    """Kumo's members as they should be: wanted ones at weight 1, draining ones at 0."""
    draining: list[Draining]
    """Kumo's members in the pool that are leaving (including those removed now)."""
    started: list[Draining]
    """Members whose drain starts with this batch (their weight goes to 0)."""
    removed: list[Draining]
    """Members this batch removes (their drain is over)."""
    added: list[MemberSpec]
    """Members this batch creates."""
    changed: bool
    """The batch differs from what Octavia holds: one update is needed."""


def pool_members(
    port: Port, wanted: list[WantedMember], current: list[Member], uid: str, clock: DrainClock
) -> PoolMembers:
    """Kumo's members of one pool as they should be after this pass.

    Octavia identifies a member by address + port. A wanted VM gets weight 1 (a member
    that was draining and is wanted again goes back to 1; one at a reused IP under
    another VM's name is renamed in place: that IP's old server is gone). A foreign
    member holding an address + port keeps it. Each other member of Kumo's drains:
    weight 0, and out of the batch once ``drainSeconds`` have passed since its weight
    went to 0 — as recorded in status; a member found at weight 0 with no record
    starts its clock now."""
    drain = datetime.timedelta(seconds=port.real_servers.drain_seconds)
    foreign: set[tuple[str, int]] = set()
    mine = []
    for m in current:  # (each member's owner read once: this runs per pass per pool)
        if owner_of(m.tags) == uid:
            mine.append(m)
        else:
            foreign.add((m.address, m.port))
    ours = sorted(mine, key=_ADDRESS_PORT)
    tags = marker_tags(uid)
    batch: list[MemberSpec] = []
    claimed: set[tuple[str, int]] = set()
    for w in wanted:
        key = (w.address, w.port)
        if key not in foreign and key not in claimed:
            batch.append(MemberSpec(w.name, w.address, w.port, w.monitor_port, 1, list(tags)))
            claimed.add(key)
    draining: list[Draining] = []
    started: list[Draining] = []
    removed: list[Draining] = []
    for m in ours:
        if (m.address, m.port) in claimed:
            continue
        since = (clock.started.get(m.id) if m.weight == 0 else None) or ceil_second(clock.now)
        leaving = Draining(m, since, since + drain)
        draining.append(leaving)
        dead = clock.addresses is not None and _server_gone(clock.addresses, m)
        dead = dead or (clock.live is not None and m.address not in clock.live)
        if not drain or dead or (m.weight == 0 and clock.now >= leaving.until):
            removed.append(leaving)
            continue
        if m.weight != 0:
            started.append(leaving)
        batch.append(MemberSpec(m.name, m.address, m.port, m.monitor_port, 0, list(tags)))
    held = set(map(_ADDRESS_PORT, ours))
    return PoolMembers(
        batch=batch,
        draining=draining,
        started=started,
        removed=removed,
        added=[b for b in batch if _ADDRESS_PORT(b) not in held],
        changed=_shape(batch) != _shape(ours),
    )


#: A batch update costs about as much as this many single-member calls (lock time plus a
#: pass to notice the end of each), measured on the lab at 100 and 1,000 members.
SINGLES_PER_BATCH = 20


@dataclass(frozen=True)
class MemberCall:
    """One member changed through Octavia's per-member API."""

    op: str
    """``create_member``, ``update_owned_member`` or ``delete_owned_member`` (the
    cloud adapter's methods)."""
    spec: MemberSpec
    """The member as it should be (for a delete: as it is)."""
    member_id: str | None = None
    """The member changed (None for a create)."""


def one_by_one(change: PoolMembers, current: list[Member], uid: str) -> list[MemberCall] | None:
    """The batch as single-member calls — additions first (capacity before anything
    leaves), then updates (weights, names), then removals — or None when a batch update
    is as cheap: a pool of fewer than ``2 * SINGLES_PER_BATCH`` members (its batch takes
    about as long as one single call), or more changes than ``pool size //
    SINGLES_PER_BATCH``. So a pool being filled (or emptied) is one batch; a repair or a
    drain in a big pool is not."""
    ours = {(m.address, m.port): m for m in current if owner_of(m.tags) == uid}
    added = {(m.address, m.port) for m in change.added}
    calls = [MemberCall("create_member", spec) for spec in change.added]
    for spec in change.batch:
        old = ours.get((spec.address, spec.port))
        if (spec.address, spec.port) in added or old is None:
            continue
        if _state(old) != _state(spec):
            calls.append(MemberCall("update_owned_member", spec, old.id))
    for gone in change.removed:
        m = gone.member
        spec = MemberSpec(m.name, m.address, m.port, m.monitor_port, m.weight, list(m.tags))
        calls.append(MemberCall("delete_owned_member", spec, m.id))
    if len(calls) > len(current) // SINGLES_PER_BATCH or len(current) < 2 * SINGLES_PER_BATCH:
        return None
    return calls


def member_steps(
    port: Port, change: PoolMembers, current: list[Member], pool_id: str, uid: str
) -> list[steps.Step]:
    """Every member change the pool needs now — additions, drains starting (weight 0),
    removals whose drain is over — as ONE batch update, or, when only a few members of
    a big pool change, as single-member calls (:func:`one_by_one`), applied one per
    pass. Foreign members are not Kumo's to list: the adapter sends them back as they
    are (batch) or refuses to touch them (single calls)."""
    if not change.changed:
        return []
    started = {d.member.id for d in change.started}
    calls = one_by_one(change, current, uid)
    if calls is not None:
        found: list[steps.Step] = []
        for i, call in enumerate(calls, 1):
            what = f"{label(call.spec)} ({i}/{len(calls)})"
            if call.member_id is None:  # a create
                why = f"port {port.port}: add member {what}"
                found.append(steps.CreateMember(pool_id, call.spec, why=why))
            elif call.op == "delete_owned_member":
                why = f"port {port.port}: remove member {what}"
                events: steps.Events = (_removed_event(port, call.spec),)
                found.append(
                    steps.DeleteOwnedMember(pool_id, call.member_id, uid, why=why, events=events)
                )
            else:
                verb, events = "update member", ()
                if call.member_id in started:
                    verb, events = "drain member", (_draining_event(port, call.spec),)
                why = f"port {port.port}: {verb} {what}"
                found.append(
                    steps.UpdateOwnedMember(
                        pool_id, call.member_id, uid, call.spec, why=why, events=events
                    )
                )
        return found
    if only_additions(change, current, uid):
        why = f"port {port.port}: add {len(change.added)} member(s)"
        return [steps.AddMembers(pool_id, change.added, why=why)]
    parts = [f"{len(change.added)} to add"] if change.added else []
    parts += [f"{len(change.started)} to drain"] if change.started else []
    parts += [f"{len(change.removed)} to remove"] if change.removed else []
    said = tuple(_draining_event(port, d.member) for d in change.started)
    said += tuple(_removed_event(port, d.member) for d in change.removed)
    why = f"port {port.port}: update members ({', '.join(parts) or 'correct weights'})"
    return [steps.ReplaceOwnedMembers(pool_id, uid, change.batch, why=why, events=said)]


def _draining_event(port: Port, m: Member | MemberSpec) -> tuple[str, str]:
    leaving = f"weight 0 for {port.real_servers.drain_seconds}s, then removed"
    return ("Draining", f"member {label(m)} of port {port.port}: {leaving}")


def _removed_event(port: Port, m: Member | MemberSpec) -> tuple[str, str]:
    return ("MemberRemoved", f"member {label(m)} removed from port {port.port}")


#: While more of a group's VMs are on their way, a pool that already serves takes its
#: new members at most once per this many seconds. Each member change is a flow in
#: Octavia's worker and a fresh listing of the tree: a pool filled as each VM turned
#: Ready cost 30 of them at N = 100, a sixth of the lab's two cores, taken from the
#: Nova and Neutron building the rest.
FILL_BATCH_SECONDS = 15.0
#: ... and longer for a big pool: Octavia's worker handles every member of the pool on
#: a batch update, so a flow costs in proportion to the pool (on the lab ≈ 1.9 CPU-s
#: at 50 members on average, 4.9 at 100). With the interval in proportion too, filling
#: a pool costs Octavia linear, not quadratic, work in its size.
FILL_SECONDS_PER_MEMBER = 0.15
#: ... up to this: the longest a Ready VM waits for its member while its pool fills.
FILL_BATCH_MAX_SECONDS = 60.0


def fill_interval(members: int) -> float:
    """Seconds between batches of additions to a pool of ``members`` being filled."""
    return min(FILL_BATCH_MAX_SECONDS, max(FILL_BATCH_SECONDS, members * FILL_SECONDS_PER_MEMBER))


def fill_hold(
    change: PoolMembers,
    current: list[Member],
    uid: str,
    coming: int,
    last_added: datetime.datetime | None,
    now: datetime.datetime,
    seconds: float | None = None,
) -> float | None:
    """Seconds to hold this pool's new members so that they go in one batch with those
    of the VMs still on their way (``coming``), or None to add them now. Only a pool
    being filled waits: its change adds members and does nothing else, it already has
    one of Kumo's members in service (a pool's first capacity never waits), more of its
    group's VMs are coming (the last one's member never waits: nor does a repair's), and
    a batch of additions went in less than ``seconds`` ago (``last_added``; by default
    :func:`fill_interval` of the pool's size)."""
    if not change.added or change.started or change.removed or coming <= 0:
        return None
    if seconds is None:
        seconds = fill_interval(len(current))
    if last_added is None or seconds <= 0:
        return None
    left = (last_added - now).total_seconds() + seconds
    if left <= 0:
        return None
    if not any(m.weight for m in current if owner_of(m.tags) == uid):
        return None
    return left if only_additions(change, current, uid) else None


def only_additions(change: PoolMembers, current: list[Member], uid: str) -> bool:
    """The change adds members and does nothing else: no drain starts, nothing leaves,
    and every member of Kumo's already there stays as it is (no weight or name to
    correct). Such a change can go to Octavia as the additions alone."""
    if not change.added or change.started or change.removed:
        return False
    new = set(map(_ADDRESS_PORT, change.added))
    ours = [m for m in current if owner_of(m.tags) == uid]
    return _shape([b for b in change.batch if _ADDRESS_PORT(b) not in new]) == _shape(ours)


def _server_gone(addresses: dict[str, str | None], m: Member) -> bool:
    """The member's VM is gone, or has a server at another address now. A VM without an
    address (being deleted: its status is cut down; or a new server still building) is
    not proof: its member drains."""
    if m.name not in addresses:
        return True
    now = addresses[m.name]
    return now is not None and now != m.address


def _shape(members: list[Member] | list[MemberSpec]) -> set[tuple[Any, ...]]:
    """What a batch update would change about a member set (tags aside)."""
    return set(map(_state, members))


#: What an update would change about one member (tags aside); its identity in a pool.
#: (attrgetter: in C, as a pass reads them for every member of every pool.)
_state: Callable[[Member | MemberSpec], tuple[Any, ...]] = operator.attrgetter(
    "name", "address", "port", "monitor_port", "weight"
)
_ADDRESS_PORT: Callable[[Member | MemberSpec], tuple[str, int]] = operator.attrgetter(
    "address", "port"
)


def label(m: Member | MemberSpec) -> str:
    return f"{m.name} ({m.address}:{m.port})"


def ceil_second(t: datetime.datetime) -> datetime.datetime:
    """Status records whole seconds: round a drain start (or a batch's due time) up, so a
    drain never ends early."""
    whole = t.replace(microsecond=0)
    return whole if whole == t else whole + datetime.timedelta(seconds=1)


def next_drain_end(drains: dict[str, Draining], now: datetime.datetime) -> float | None:
    """Seconds until the earliest drain still running ends (when to look again)."""
    ends = [(d.until - now).total_seconds() for d in drains.values() if d.until > now]
    return min(ends) if ends else None


def recorded_drains(status: Body) -> dict[str, datetime.datetime]:
    """Drain starts a previous pass wrote to status (member ID → drainingSince)."""
    found = {}
    for port in status.get("ports") or []:
        for m in port.get("members") or []:
            if m.get("id") and m.get("drainingSince"):
                try:
                    found[m["id"]] = datetime.datetime.fromisoformat(m["drainingSince"])
                except ValueError:  # not ours to trust: the clock restarts
                    continue
    return found


def rfc3339(t: datetime.datetime) -> str:
    return t.astimezone(datetime.UTC).strftime(RFC3339)
