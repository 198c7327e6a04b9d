"""VirtualMachineGroup actuator: a Nova server group plus member VirtualMachine objects
(and, identity Ordinal, their Volume objects), on the engine's composite lifecycle
(``engine/composite.py``): anchor (the server group) → observe → one pure decision
(``decision.py``) → apply (members, volumes, snapshots, server group, in one order) →
report; the engine writes status once, at the end.

The group never talks to Nova about servers: it creates and deletes VirtualMachine
objects (with ownerReferences, like ReplicaSet → Pod) and each member's own
controller builds, heals and deletes its server. Both identities take the one path;
which pure plan decides the members is the only difference (``decision.member_plan``).

Import is the same: a new member gets ``spec.import`` naming one server of the
group's ``spec.import.members`` and its own controller takes the server over. Which
refs are taken is read from the members and ``status.imports`` (plan.py decides).
"""

from __future__ import annotations

import dataclasses

from kumo.api import kinds
from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.engine import composite, orphan
from kumo.engine.errors import ObjectGone, TerminalError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import ordering
from kumo.kinds.derived import Derived
from kumo.kinds.virtualmachinegroup import (
    decision,
    members,
    plan,
    server_group,
    snapshots,
    volumes,
)
from kumo.ports.model import ServerGroup

Decision = decision.Decision
Observed = decision.Observed


class VirtualMachineGroupActuator:
    info = kinds.VIRTUAL_MACHINE_GROUP
    #: A member's change is looked at after this long, so a burst of member changes (a
    #: scale-out's creates, a fleet turning ACTIVE) costs one pass over all members, not
    #: one each. What it delays is the group's status and its next step (rollout, a
    #: member object replaced), not any server, pool member or DNS value (LoadBalancers
    #: and DNSRecords follow the members themselves).
    coalesce_seconds = 0.5
    #: ... for a group of up to this many members; a bigger one waits in proportion, up
    #: to COALESCE_MAX_SECONDS: a pass costs O(members) (its status lists them all), and
    #: members change one at a time as Nova works through them (one every ~0.5 s), so
    #: a fixed window made a group's passes O(members²) over a fleet.
    COALESCE_MEMBERS = 100
    COALESCE_MAX_SECONDS = 2.0

    def __init__(self) -> None:
        self.expected = members.Expectations()
        self.expected_volumes = volumes.Expectations()
        #: What each pass reads of each member, derived again only from a changed body
        #: (a cache: kinds/derived.py), so a pass after one member's change does not
        #: parse the other S - 1 again.
        self._derived = Derived(decision.derive)

    @property
    def _expected(self) -> dict[str, dict[str, tuple[bool, float, str | None]]]:
        return self.expected.by_uid

    async def reconcile(self, ctx: Context, obj: Obj, spec: VirtualMachineGroupSpec) -> Result:
        async def anchor() -> ServerGroup | None:
            problem = plan.validate(spec)
            if problem:
                raise TerminalError("InvalidSpec", problem)
            return await server_group.ensure(ctx, obj, spec)

        async def observe(group: ServerGroup | None) -> Observed:
            return await self._observe(ctx, obj, spec, group)

        async def apply(o: Observed, d: Decision) -> Observed:
            return await self._apply(ctx, obj, o, d)

        def report(o: Observed, d: Decision) -> Result:
            return decision.report(o, d, snapshots.STEP_SECONDS)

        lifecycle = composite.Composite(anchor, observe, decision.decide, apply, report)
        return await composite.reconcile_composite(lifecycle)

    async def _observe(
        self, ctx: Context, obj: Obj, spec: VirtualMachineGroupSpec, group: ServerGroup | None
    ) -> Observed:
        """Read the members (and Volume objects, snapshots) the decision needs; no write."""
        hash_ = plan.template_hash(spec, group.id if group else None)
        legacy = plan.template_hash(spec, group.id if group else None, legacy=True)
        everyone = members.owned(ctx.store, obj, kinds.VIRTUAL_MACHINE, include_deleting=True)
        bodies, live, going = [], [], []
        for body, member in zip(everyone, self._derived.of(obj.uid, everyone), strict=True):
            if body["metadata"].get("deletionTimestamp"):
                going.append(member.view)
            else:
                bodies.append(body)
                live.append(member)
        # A member made before security groups changed in place carries the legacy hash:
        # it is up to date (and relabelled), not rolled over.
        views = [decision.current(m.view, legacy, hash_) for m in live]
        views += self.expected.pending(obj, bodies, hash_)
        # A member deleted that the watch still shows alive is leaving: it is not made
        # again, nor counted as available, until it is gone.
        leaving = self.expected.leaving(obj)
        going += [v for v in views if v.name in leaving]
        views = [v for v in views if v.name not in leaving]
        o = Observed(spec, obj.name, obj.status, group, hash_, legacy, bodies, live, views, going)
        if spec.identity != "Ordinal":
            return o
        owned = members.owned(ctx.store, obj, kinds.VOLUME, include_deleting=True)
        strays = volumes.strays(ctx.store, obj)
        volume_bodies = owned + strays
        o = dataclasses.replace(
            o,
            volume_bodies=volume_bodies,
            volumes=volumes.views(volume_bodies)
            + self.expected_volumes.pending(obj, volume_bodies),
            strays=[b["metadata"]["name"] for b in strays],
            existing_volumes=volumes.existing(ctx.store, obj, spec),
        )
        if decision.wants_snapshots(o):
            o = dataclasses.replace(o, snapshots=await snapshots.listed(ctx, obj))
        return o

    async def _apply(self, ctx: Context, obj: Obj, o: Observed, d: Decision) -> Observed:
        """Carry out ``d``, in this order whatever the identity (an empty step writes
        nothing); return what the pass now knows of its members."""
        spec = o.spec
        await volumes.adopt(ctx, obj, d.adopt_volumes, o.volume_bodies)
        applied = None
        if d.snapshots is not None:
            applied = await snapshots.apply(ctx, obj, spec, o.hash, d.snapshots, o.volume_bodies)
        await members.delete(ctx, obj, d.delete, self.expected)
        await volumes.delete(ctx, obj, d.delete_volumes)
        await members.set_policy(ctx, obj, spec.deletion_policy, d.member_policy)
        await members.set_policy(ctx, obj, spec.deletion_policy, d.volume_policy, kinds.VOLUME)
        await members.set_security_groups(ctx, obj, spec, d.security_groups)
        await members.drop_imports(ctx, obj, d.drop_imports)
        await volumes.create(ctx, obj, spec, d.create_volumes, self.expected_volumes)
        made = await members.create(ctx, obj, o, d.creates, self.expected)
        if d.scaling is not None:
            ctx.events.emit(obj, "Normal", "Scaling", d.scaling)
        if d.settled and o.server_group is not None:
            await server_group.delete_stale(ctx, obj, keep=o.server_group.id)
        deleted = set(d.delete)
        after = dataclasses.replace(
            o,
            views=[v for v in o.views if v.name not in deleted] + made,
            going=o.going + [v for v in o.views if v.name in deleted],
            applied=applied,
        )
        members.report_imports(ctx, obj, after)
        return after

    async def finalize(
        self, ctx: Context, obj: Obj, spec: VirtualMachineGroupSpec | None
    ) -> Result:
        waiting = ordering.wait_for_referrers(ctx.store, obj)
        if waiting:
            return waiting
        found = members.owned(ctx.store, obj, kinds.VIRTUAL_MACHINE, include_deleting=True)
        for body in found:
            if not body["metadata"].get("deletionTimestamp"):
                await ctx.kube.delete(
                    kinds.VIRTUAL_MACHINE, obj.namespace, body["metadata"]["name"]
                )
        left = members.owned(ctx.store, obj, kinds.VOLUME, include_deleting=True)
        if left:
            delete, keep = plan.volume_deletion(plan.when_deleted(obj.spec), volumes.views(left))
            await volumes.delete(ctx, obj, delete)
            for body in left:
                if body["metadata"]["name"] in keep:
                    await volumes.let_go(ctx, obj, body)
            left = [b for b in left if b["metadata"]["name"] not in keep]
        if found or left:
            return Result.waiting(
                "Deleting",
                "Deleting",
                f"waiting for {len(found)} member(s) and {len(left)} volume(s) to go",
            )
        await server_group.delete_all(ctx, obj)
        self._forget(obj.uid)
        return Result(phase="Deleted", done=True)

    async def release(self, ctx: Context, obj: Obj, spec: VirtualMachineGroupSpec | None) -> Result:
        """Members release their own servers and Volume objects their volumes, once
        deleted with ``deletionPolicy: Orphan`` — and the garbage collector deletes them
        after the group, so they must say Orphan before the group goes. A pass of the
        group gives them its policy, but none may have got through since the switch (an
        invalid spec, the server group step or the snapshot gate failing): so the release
        sets it first, from the body alone (``spec`` is not needed), and the group goes
        only once the API server answers Orphan for every one (:func:`_orphan_dependents`).
        Then the Volume objects it retains (whenDeleted: Retain) are let go of; the
        others go with it, their volumes released. The server group keeps its name (Nova
        cannot rename one); the orphan sweep deletes a server group only once no server is
        left in it, which loses nothing."""

        async def dependents_orphaned() -> list[str]:
            found = members.owned(ctx.store, obj, kinds.VIRTUAL_MACHINE, include_deleting=True)
            left = members.owned(ctx.store, obj, kinds.VOLUME, include_deleting=True)
            seen = {b["metadata"]["name"] for b in [*found, *left]}
            unseen = [(kinds.VIRTUAL_MACHINE, n) for n in self.expected.unseen(obj, seen)]
            unseen += [(kinds.VOLUME, n) for n in self.expected_volumes.unseen(obj, seen)]
            return await _orphan_dependents(ctx, obj, (found, left), unseen)

        result = await orphan.release_owned(ctx, obj, dependents_orphaned)
        if result.done:
            self._forget(obj.uid)
        return result

    def _forget(self, uid: str) -> None:
        self.expected.forget(uid)
        self.expected_volumes.forget(uid)
        self._derived.forget(uid)

    def coalesce_for(self, key: Key, store: Store) -> float:
        """How long the group ``key`` waits before the pass a member's change asks of it:
        0.5 s up to 100 members (``spec.replicas``), in proportion above (1.5 s at 300),
        2 s at most. 0.5 s while its status says a rollout is under way (members not up
        to date): each of its steps waits for a member's change, and no step of it waits
        longer than before."""
        body = store.get(key.kind, key.namespace, key.name) or {}
        replicas = (body.get("spec") or {}).get("replicas")
        size = replicas if isinstance(replicas, int) else 0
        status = body.get("status") or {}
        if (status.get("updatedReplicas") or 0) < (status.get("replicas") or 0):
            return self.coalesce_seconds
        scaled = self.coalesce_seconds * size / self.COALESCE_MEMBERS
        return min(self.COALESCE_MAX_SECONDS, max(self.coalesce_seconds, scaled))

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """A member changed: its group must recount. A referrer that goes first (a
        DNSRecord) going away may unblock the group's deletion."""
        if unblocked := ordering.unblocked_by(kind, body, self.info.kind):
            return unblocked
        if kind not in ("VirtualMachine", "Volume"):
            return []
        meta = body["metadata"]
        expected = self.expected if kind == "VirtualMachine" else self.expected_volumes
        for ref in meta.get("ownerReferences") or []:  # the watch has now seen this object
            expected.seen(ref.get("uid", ""), meta["name"])
        return [
            Key(self.info.kind, meta.get("namespace", "default"), ref["name"])
            for ref in meta.get("ownerReferences") or []
            if ref.get("kind") == self.info.kind
        ]


async def _orphan_dependents(
    ctx: Context,
    obj: Obj,
    read: tuple[list[Body], list[Body]],
    unseen: list[tuple[kinds.KindInfo, str]],
) -> list[str]:
    """The group's release (``deletionPolicy: Orphan``): set its members' and Volume
    objects' deletionPolicy to Orphan — ``read``: those the watch's cache shows, being
    deleted or not; ``unseen``: those a pass just created that it does not show yet —
    then let go of the Volume objects the group retains. Returns what does not say Orphan
    in the API server's answer (the group waits for them; nothing is let go of then)."""
    found, left = read
    orphan_ = "Orphan"
    patched = await members.set_policy(ctx, obj, orphan_, members.policy_names(orphan_, found))
    patched += await members.set_policy(
        ctx, obj, orphan_, members.policy_names(orphan_, left), kinds.VOLUME
    )
    for info, name in unseen:
        try:
            orphaned = {"spec": {"deletionPolicy": orphan_}}
            patched.append(await ctx.kube.patch(info, obj.namespace, name, orphaned))
        except ObjectGone as gone:
            if not gone.names(info.kind, obj.namespace, name):
                raise  # (not there: nothing of it for the collector to delete)
    waiting = [
        f"{b.get('kind', 'object')} {b['metadata']['name']} does not say deletionPolicy Orphan"
        for b in patched
        if (b.get("spec") or {}).get("deletionPolicy") != orphan_
    ]
    if waiting:
        return waiting
    _, keep = plan.volume_deletion(plan.when_deleted(obj.spec), volumes.views(left))
    for body in left:
        if body["metadata"]["name"] in keep:
            await volumes.let_go(ctx, obj, body)
    return []
