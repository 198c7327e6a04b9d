"""Octavia pool members: read per pool, written in batches (``PUT .../members``) or one at a
time, always only Kumo's own (the ``kumo-owner`` tag) — a user's members stay."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from openstack import exceptions

from kumo.cloud import model
from kumo.cloud.services.loadbalancing.calls import LoadBalancerCalls, _as_is
from kumo.cloud.services.loadbalancing.watch import LoadBalancerWatcher
from kumo.engine.errors import TerminalError, TransientError

#: A pool's members oldest first (Octavia's own default is newest first), ties by ID: the
#: last one read is the marker past which a later read finds only newer members.
MEMBERS_IN_ORDER: dict[str, Any] = {"sort": "created_at:asc,id:asc"}


class MemberCalls(LoadBalancerCalls):
    """Pool members, on top of the load balancers' calls (their caches and pending state)."""

    async def list_members(self, pool_id: str) -> list[model.Member]:
        """A pool's members: read again only when the pool lists other member IDs than
        last time (or Kumo changed them); when it only gained members, only those are
        read (:meth:`_members_added`)."""
        pool = self.watch.of(LoadBalancerWatcher).pools.lookup(pool_id)
        cached = self.watch.of(LoadBalancerWatcher).members.get(pool_id)
        if isinstance(pool, model.Pool) and cached and cached[0] == frozenset(pool.member_ids):
            return cached[1]
        members = None
        if isinstance(pool, model.Pool) and cached:
            members = await self._members_added(pool, cached[1])
        if members is None:
            members = await self.fetch_members(pool_id)
        if isinstance(pool, model.Pool):
            self.watch.of(LoadBalancerWatcher).members[pool_id] = (
                frozenset(m.id for m in members),
                members,
            )
        return members

    async def _members_added(
        self, pool: model.Pool, known: list[model.Member]
    ) -> list[model.Member] | None:
        """``known`` and the members created after the newest of them, read as one page
        that starts past it (Octavia's marker, in creation order); None when that cannot
        be the pool (it lost a member, or it gained one the read did not return): then
        the whole pool is read.

        A pool being filled as its group builds gains a few members per batch, and a
        read of the whole pool after each costs Octavia's API O(pool size) (≈ 1 s at 100
        members on the lab): a fill was quadratic in reads. Members are compared by ID
        only, as a whole read is: the cache never notices an edit in place until the
        watch's periodic full relist."""
        newest = self.watch.of(LoadBalancerWatcher).newest_members.get(pool.id)
        listed = frozenset(pool.member_ids)
        if newest not in listed or not {m.id for m in known} <= listed:
            return None
        try:
            found = await self._call(
                "list new members",
                lambda: self._raw_members(pool.id, {**MEMBERS_IN_ORDER, "marker": newest}),
            )
        except TerminalError:  # e.g. the marker went in between: read the pool whole
            return None
        added = [_member(x) for x in found]
        fresh = {m.id for m in added}
        members = [m for m in known if m.id not in fresh] + added
        if {m.id for m in members} != listed:
            return None
        if found:
            self.watch.of(LoadBalancerWatcher).newest_members[pool.id] = found[-1]["id"]
        return members

    async def list_known_members(self, pool_id: str) -> list[model.Member]:
        """A pool's members as last read, even if a change of Kumo's made them stale —
        what a load balancer Octavia holds ``PENDING_*`` reports, instead of reading its
        members again on every pass until the change is applied (at 100 members a read
        takes Octavia 0.5 s, and each VM turning Ready while a fleet builds is a pass).
        Read from Octavia only if never read."""
        cached = self.watch.of(LoadBalancerWatcher).members.get(pool_id)
        return cached[1] if cached else await self.list_members(pool_id)

    async def fetch_members(self, pool_id: str) -> list[model.Member]:
        """The pool's every member, in creation order: the newest is remembered for
        :meth:`_members_added`."""
        found = await self._call(
            "list members", lambda: self._raw_members(pool_id, MEMBERS_IN_ORDER)
        )
        if found:
            self.watch.of(LoadBalancerWatcher).newest_members[pool_id] = found[-1]["id"]
        else:
            self.watch.of(LoadBalancerWatcher).newest_members.pop(pool_id, None)
        return [_member(x) for x in found]

    def _raw_members(
        self, pool_id: str, params: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """In the call's thread: the pool's members as Octavia's JSON, every page. Not the
        SDK's ``Member`` resources: building one per member was most of the cost of a
        read, and a pool that follows a group is read at every change of its members."""
        return self._raw_list(f"pools/{pool_id}/members", "members", params)

    def _members_changing(self, pool_id: str, *, additions_only: bool = False) -> None:
        """Kumo is changing the pool's members: read them again when next asked, shown as
        they were meanwhile. Only a change that adds members and touches no other one
        (``add_members``) leaves the cached members right as far as they go, so a read of
        the new ones alone may complete them; after any other change (a weight, a
        removal, a replace, a write whose outcome is unknown) the pool is read whole."""
        cached = self.watch.of(LoadBalancerWatcher).members.get(pool_id)
        if cached:
            self.watch.of(LoadBalancerWatcher).members[pool_id] = (None, cached[1])
        if not additions_only:
            self.watch.of(LoadBalancerWatcher).newest_members.pop(pool_id, None)
        self._lb_changing(self.watch.of(LoadBalancerWatcher).pool_lb(pool_id))

    async def replace_owned_members(
        self, pool_id: str, uid: str, members: list[model.MemberSpec]
    ) -> None:
        """Make ``members`` the pool's members tagged ``kumo-owner=<uid>``, in ONE change.

        Octavia's batch update (``PUT /v2/lbaas/pools/{pool_id}/members``) replaces the
        pool's whole member set, matching members by address + port: listed ones are
        updated or created, unlisted ones deleted. So the pool's members are read right
        before the PUT, and every member without this owner's tag (someone else's) is
        sent back exactly as it is — address, port, name, weight, admin state, backup,
        subnet, monitor address/port, tags — and ours are never listed over it (a
        wanted address + port a foreign member holds is left to that member).

        Residual race: a foreign member added or edited in the milliseconds between the
        read and the PUT is deleted or reverted by the PUT. Octavia has no conditional
        batch update that could close that window.
        """
        path = f"/lbaas/pools/{pool_id}/members"

        def replace() -> None:
            current = self._raw_members(pool_id)
            foreign = [m for m in current if model.owner_of(m.get("tags") or []) != uid]
            taken = {(m.get("address"), m.get("protocol_port")) for m in foreign}
            body = [_as_is(m) for m in foreign]
            body += [_member_body(m) for m in members if (m.address, m.port) not in taken]
            self._rest(
                self.conn.load_balancer,
                "put",
                path,
                json={"members": body},
                error_message=f"PUT {path}",
            )

        await self._call("replace pool members", replace)
        self._members_changing(pool_id)

    async def add_members(self, pool_id: str, members: list[model.MemberSpec]) -> None:
        """Add ``members`` to the pool in ONE change that touches no other member:
        Octavia's batch update with ``additive_only=true`` creates the listed members
        and leaves every unlisted one as it is — never deletes one. So, unlike
        :meth:`replace_owned_members`, nothing is read first: a pool being filled as its
        group builds took one read of the whole pool per batch (the read that lets a
        replace send foreign members back), and Octavia's API updated every listed
        member in its database besides.

        A listed address + port that already holds a member would update that member,
        so those the pool's last listing shows (anyone's) are left out. A member someone
        adds at a new VM's address + port after that listing, before the PUT, would take
        this member's name, weight and tags: the same kind of window the replace's
        read-then-PUT leaves, as long as the listing is old."""
        cached = self.watch.of(LoadBalancerWatcher).members.get(pool_id)
        held = cached[1] if cached else await self.list_members(pool_id)  # never read yet
        taken = {(m.address, m.port) for m in held}
        body = [_member_body(m) for m in members if (m.address, m.port) not in taken]
        if not body:
            return
        path = f"/lbaas/pools/{pool_id}/members"

        def add() -> None:
            self._rest(
                self.conn.load_balancer,
                "put",
                path,
                json={"members": body},
                params={"additive_only": "true"},
                error_message=f"PUT {path}",
            )

        await self._call("add pool members", add)
        self._members_changing(pool_id, additions_only=True)

    async def create_member(self, pool_id: str, member: model.MemberSpec) -> None:
        """Add one member. Octavia refuses a second member at the same address + port
        (409, a wait like a busy LB), so a create whose answer was lost is found by the
        next pass's member listing and never doubled: no doubt to record."""
        body = _member_body(member)
        await self._member_write(
            pool_id,
            "create member",
            lambda: self.conn.load_balancer.create_member(pool_id, **body),
            written=lambda created: (created.id, _written_member(created.id, member)),
        )

    async def update_owned_member(
        self, pool_id: str, member_id: str, uid: str, member: model.MemberSpec
    ) -> None:
        """Change one of ``uid``'s members (name, weight, monitor port) — read first: one
        without that marker, whatever the last listing said, is not changed."""

        def update() -> None:
            found = self._owned_member(pool_id, member_id, uid)
            if found is None:
                return
            attrs: dict[str, Any] = {"name": member.name, "weight": member.weight}
            if member.monitor_port != found.monitor_port:
                attrs["monitor_port"] = member.monitor_port  # None: back to the member port
            self.conn.load_balancer.update_member(member_id, pool_id, **attrs)
            return found

        await self._member_write(
            pool_id,
            "update member",
            update,
            written=lambda found: (
                (member_id, _written_member(member_id, member)) if found is not None else None
            ),
        )

    async def delete_owned_member(self, pool_id: str, member_id: str, uid: str) -> None:
        """Remove one of ``uid``'s members — read first, as for an update; one already
        gone is done."""

        def delete() -> None:
            if self._owned_member(pool_id, member_id, uid) is not None:
                self.conn.load_balancer.delete_member(member_id, pool_id, ignore_missing=True)

        await self._member_write(
            pool_id, "delete member", delete, written=lambda _: (member_id, None)
        )

    async def _member_write(
        self,
        pool_id: str,
        action: str,
        write: Callable[[], Any],
        written: Callable[[Any], tuple[str, model.Member | None] | None],
    ) -> None:
        """One single-member write. The pool's cached members are dropped first (a lost
        answer may still have changed them); once the write succeeded, ``written`` (its
        answer → the member ID and the member as it is now, None: gone) is applied to
        them if they were up to date before it (:meth:`_member_written`)."""
        cached = self.watch.of(LoadBalancerWatcher).members.get(pool_id)
        known = cached is not None and cached[0] is not None
        self._members_changing(pool_id)
        answer = await self._call(action, write)
        if known and (change := written(answer)) is not None:
            self._member_written(pool_id, *change)

    def _member_written(self, pool_id: str, member_id: str, member: model.Member | None) -> None:
        """A single-member write succeeded: apply it to the pool's cached members (and the
        pool's member IDs) instead of reading the whole pool again. A pool that follows a
        group changes one member at a time, so reading it back after each write cost
        Octavia O(pool size) per member (0.5 s of its API at 100 members) — most of its
        load while a fleet built. Only for members read before the write and not made
        stale since (a batch update's, which Octavia answers without them)."""
        cached = self.watch.of(LoadBalancerWatcher).members.get(pool_id)
        if not cached:
            return
        members = [m for m in cached[1] if m.id != member_id]
        if member is not None:
            members.append(member)
        ids = frozenset(m.id for m in members)
        self.watch.of(LoadBalancerWatcher).members[pool_id] = (ids, members)
        self.watch.of(LoadBalancerWatcher).pools.update(
            pool_id,
            lambda p: dataclasses.replace(
                p,
                member_ids=[i for i in p.member_ids if i != member_id]
                + ([member_id] if member is not None else []),
            ),
        )

    def _owned_member(self, pool_id: str, member_id: str, uid: str) -> Any:
        """In the call's thread: the member, None when it is gone; NotOwned (a transient
        error: look again) when it does not
        carry ``uid``'s marker (the one check single-member writes need: a batch sends
        foreign members back as they are)."""
        try:
            found = self.conn.load_balancer.get_member(member_id, pool_id)
        except exceptions.NotFoundException:
            return None
        if model.owner_of(found.tags or []) != uid:
            # Transient: the listing was stale; the next pass lists the pool again and
            # leaves the member alone (it is no longer Kumo's to touch).
            raise TransientError(
                "NotOwned",
                f"pool member {member_id} ({found.address}:{found.protocol_port}) does not "
                "carry Kumo's marker for this object: Kumo will not change or remove it",
                field="spec.ports",
            )
        return found


def _written_member(member_id: str, m: model.MemberSpec) -> model.Member:
    """A member as Kumo's write made it (Octavia stores what it was sent)."""
    return model.Member(
        id=member_id,
        name=m.name,
        address=m.address,
        port=m.port,
        monitor_port=m.monitor_port,
        tags=list(m.tags),
        weight=m.weight,
    )


def _member_body(m: model.MemberSpec) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": m.name,
        "address": m.address,
        "protocol_port": m.port,
        "weight": m.weight,
        "tags": list(m.tags),
    }
    if m.monitor_port:
        body["monitor_port"] = m.monitor_port
    return body


def _member(x: dict[str, Any]) -> model.Member:
    """A listed member, from Octavia's JSON."""
    weight = x.get("weight")
    return model.Member(
        id=x["id"],
        name=x.get("name") or "",
        address=x["address"],
        port=x["protocol_port"],
        monitor_port=x.get("monitor_port"),
        tags=list(x.get("tags") or []),
        weight=1 if weight is None else weight,
    )
