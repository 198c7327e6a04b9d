"""VirtualMachineGroup actuator: a Nova server group plus member VirtualMachine objects.

The group never talks to Nova about servers: it creates and deletes VirtualMachine
objects (with ownerReferences, like ReplicaSet → Pod) and each member's own
controller builds, heals and deletes its server. Because the watch cache lags a
create or delete by a moment, the actuator remembers what it just did
("expectations") so two quick passes never create twice.

Import is the same: a new member gets ``spec.import`` naming one server of the
group's ``spec.import.members`` and its own controller takes the server over. Which
refs are taken is read from the members and ``status.imports`` (plan.py decides).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection
from typing import Any, NamedTuple

from kumo.api import kinds
from kumo.api.common import API_VERSION, import_key
from kumo.api.virtualmachinegroup import SERVER_GROUP_POLICY, VirtualMachineGroupSpec
from kumo.engine import conditions, orphan, ownership
from kumo.engine.errors import ObjectGone, TerminalError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import ordering
from kumo.kinds.derived import Derived
from kumo.kinds.labels import (
    GROUP_LABEL,
    ORDINAL_LABEL,
    TEMPLATE_HASH_LABEL,
    VOLUME_TEMPLATE_LABEL,
)
from kumo.kinds.virtualmachinegroup import plan, snapshots
from kumo.ports.model import ServerGroup, owner_word, text_owner, with_word

EXPECTATION_TTL = 60.0
#: Nova's limit on a server group's name: the ``<namespace>-<name>-<policy>`` part is cut
#: short so the marker word fits after it.
SERVER_GROUP_NAME_MAX = 255


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
        # uid → {member name: (expected to exist?, since, the ref it imports)}
        self._expected: dict[str, dict[str, tuple[bool, float, str | None]]] = {}
        # uid → {Volume object name: (its view, since)}: created, not seen yet
        self._expected_volumes: dict[str, dict[str, tuple[plan.VolumeView, float]]] = {}
        #: What each pass reads of each member, derived again only from a changed body
        #: (a cache: kinds/derived.py), so a pass after one member's change does not
        #: parse the other S - 1 again.
        self._derived = Derived(_derive)

    async def reconcile(self, ctx: Context, obj: Obj, spec: VirtualMachineGroupSpec) -> Result:
        problem = plan.validate(spec)
        if problem:
            raise TerminalError("InvalidSpec", problem)
        group = await self._ensure_server_group(ctx, obj, spec)
        hash_ = plan.template_hash(spec, group.id if group else None)
        legacy = plan.template_hash(spec, group.id if group else None, legacy=True)
        everyone = self._members(ctx.store, obj, include_deleting=True)
        bodies, live, going = [], [], []
        for body, member in zip(everyone, self._derived.of(obj.uid, everyone), strict=True):
            if body["metadata"].get("deletionTimestamp"):
                going.append(member.view)
            else:
                bodies.append(body)
                live.append(member)
        # A member made before security groups changed in place carries the legacy hash:
        # it is up to date (and relabelled below), not rolled over.
        seen = [_current(m.view, legacy, hash_) for m in live]
        views = seen + self._pending_views(obj, bodies, hash_)
        if spec.identity == "Ordinal":
            return await self._reconcile_ordinal(
                ctx, obj, spec, group, (hash_, legacy), (views, going), (bodies, live)
            )
        imported = plan.imported_refs(obj.status.get("imports") or [], [*views, *going])
        decision = plan.plan_members(spec, hash_, views, imported, going)

        for name in decision.delete:
            await ctx.kube.delete(kinds.VIRTUAL_MACHINE, obj.namespace, name)
            self._expect(ctx, obj, name, exists=False)
        deleted = set(decision.delete)
        going += [v for v in views if v.name in deleted]
        views = [v for v in views if v.name not in deleted]
        await _sync_deletion_policy(ctx, obj, spec.deletion_policy, bodies, skip=deleted)
        await _sync_security_groups(ctx, obj, spec, (bodies, live), (hash_, legacy), deleted)
        stale = plan.stale_imports(spec, [v for v in seen if v.name not in deleted])
        await _drop_stale_imports(ctx, obj, stale)
        for new in decision.creates:
            body = _member_body(obj, spec, group, hash_, new)
            created = await ctx.kube.create(kinds.VIRTUAL_MACHINE, obj.namespace, body)
            name, key = created["metadata"]["name"], new.import_.key if new.import_ else None
            self._expect(ctx, obj, name, exists=True, import_key=key)
            views.append(plan.MemberView(name, hash_, ready=False, import_key=key))
        if decision.delete or decision.creates:
            imports = sum(new.import_ is not None for new in decision.creates)
            ctx.events.emit(
                obj,
                "Normal",
                "Scaling",
                f"created {len(decision.creates)}"
                + (f" ({imports} importing a server)" if imports else "")
                + f", deleting {len(decision.delete)} member(s)",
            )
        if (
            group is not None
            and not decision.delete
            and all(v.template_hash == hash_ for v in views)
        ):
            await _delete_stale_groups(ctx, obj, keep=group.id)

        entries = plan.import_status(spec, [*going, *views], imported)
        outside = plan.outside_group(views, imported, group.members) if group else []
        _report_imports(ctx, obj, entries, group, outside)
        notes = plan.import_notes(spec, entries, outside, group.id if group else None)
        extra = {"imports": entries or None}
        return _report(obj, spec, group, hash_, views, live, extra, notes)

    async def _reconcile_ordinal(
        self,
        ctx: Context,
        obj: Obj,
        spec: VirtualMachineGroupSpec,
        group: ServerGroup | None,
        hashes: tuple[str, str],
        members: tuple[list[plan.MemberView], list[plan.MemberView]],
        read: tuple[list[Body], list[_Member]],
    ) -> Result:
        """identity Ordinal: members ``<group>-<i>``, each with its Volume objects
        (created before it, named in its spec.volumes); plan.py decides. ``members``:
        the views of the members staying and going; ``read``: the staying ones' bodies
        and what was derived from them."""
        hash_, legacy = hashes
        views, going = members
        bodies, live = read
        # A member deleted that the watch still shows alive is leaving: its ordinal is
        # not made again, nor counted as available, until it is gone.
        expected = self._expected.get(obj.uid, {})
        leaving = {name for name, (exists, _, _) in expected.items() if not exists}
        going = [*going, *(v for v in views if v.name in leaving)]
        views = [v for v in views if v.name not in leaving]
        volume_bodies = self._volumes(ctx.store, obj, include_deleting=True)
        volume_bodies += await _adopt_volumes(ctx, obj)
        volumes = [_volume_view(b) for b in volume_bodies] + self._pending_volumes(
            obj, volume_bodies
        )
        decision = plan.plan_ordinals(spec, obj.name, hash_, views, going, volumes)
        # A Volume object of the name a member's volume gets that is not the group's: the
        # member is not made (it would attach another's volume).
        taken = {
            name: ordinal
            for name, ordinal, _, _ in decision.volumes
            if ctx.store.get(kinds.VOLUME.kind, obj.namespace, name) is not None
        }
        blocked = set(taken.values())
        gate = await _snapshot_gate(ctx, obj, spec, (hash_, views, bodies), decision, volume_bodies)
        if gate is not None and gate.held:
            kept = [n for n in decision.delete if n not in gate.held]
            decision = dataclasses.replace(decision, delete=kept)

        for name in decision.delete:
            await ctx.kube.delete(kinds.VIRTUAL_MACHINE, obj.namespace, name)
            self._expect(ctx, obj, name, exists=False)
        for name in decision.delete_volumes:
            # The Volume kind waits for the member naming it to go, then deletes it.
            await ctx.kube.delete(kinds.VOLUME, obj.namespace, name)
        deleted = set(decision.delete)
        views = [v for v in views if v.name not in deleted]
        await _sync_deletion_policy(ctx, obj, spec.deletion_policy, bodies, skip=deleted)
        await _sync_deletion_policy(
            ctx,
            obj,
            spec.deletion_policy,
            [b for b in volume_bodies if not b["metadata"].get("deletionTimestamp")],
            skip=set(decision.delete_volumes),
            info=kinds.VOLUME,
        )
        await _sync_security_groups(ctx, obj, spec, (bodies, live), (hash_, legacy), deleted)
        for name, ordinal, template, zone in decision.volumes:
            if ordinal in blocked:
                continue
            body = _volume_body(obj, spec, name, ordinal, template, zone)
            await ctx.kube.create(kinds.VOLUME, obj.namespace, body)
            self._expect_volume(ctx, obj, name, ordinal, zone)
        for ordinal, zone in decision.creates:
            if ordinal in blocked:
                continue
            body = _member_body(obj, spec, group, hash_, plan.NewMember(zone), ordinal=ordinal)
            await ctx.kube.create(kinds.VIRTUAL_MACHINE, obj.namespace, body)
            name = plan.member_name(obj.name, ordinal)
            self._expect(ctx, obj, name, exists=True)
            views.append(plan.MemberView(name, hash_, ready=False, zone=zone))
        if decision.delete or decision.creates or decision.delete_volumes:
            ctx.events.emit(
                obj,
                "Normal",
                "Scaling",
                f"created {len(decision.creates)} member(s) and {len(decision.volumes)} "
                f"volume(s), deleting {len(decision.delete)} member(s) and "
                f"{len(decision.delete_volumes)} volume(s)",
            )
        if (
            group is not None
            and not decision.delete
            and all(v.template_hash == hash_ for v in views)
        ):
            await _delete_stale_groups(ctx, obj, keep=group.id)
        retained = decision.retained
        extra: dict[str, Any] = {
            "retainedVolumes": retained or None,
            "retainedVolumeCount": len(retained),
            "snapshotCount": gate.count if gate else obj.status.get("snapshotCount") or 0,
        }
        notes = f"; {len(retained)} volume(s) retained" if retained else ""
        notes += gate.note if gate else ""
        if taken:
            notes += (
                f"; Volume(s) {', '.join(sorted(taken))} exist and are not this group's: "
                f"member(s) {', '.join(plan.member_name(obj.name, i) for i in sorted(blocked))} "
                "not made"
            )
        result = _report(obj, spec, group, hash_, views, live, extra, notes)
        if gate is not None and gate.failure is not None:
            failure = gate.failure
            raise TerminalError(
                failure.reason,
                failure.detail,
                field=failure.field,
                recheck=failure.recheck,
                status=result.status,
            )
        if gate is not None and gate.held:
            result.requeue_after = snapshots.STEP_SECONDS  # snapshots are not watched
        return result

    async def finalize(
        self, ctx: Context, obj: Obj, spec: VirtualMachineGroupSpec | None
    ) -> Result:
        waiting = ordering.wait_for_referrers(ctx.store, obj)
        if waiting:
            return waiting
        members = self._members(ctx.store, obj, include_deleting=True)
        for body in members:
            if not body["metadata"].get("deletionTimestamp"):
                await ctx.kube.delete(
                    kinds.VIRTUAL_MACHINE, obj.namespace, body["metadata"]["name"]
                )
        volumes = self._volumes(ctx.store, obj, include_deleting=True)
        if volumes:
            views = [_volume_view(b) for b in volumes]
            delete, keep = plan.volume_deletion(plan.when_deleted(obj.spec), views)
            for name in delete:
                await ctx.kube.delete(kinds.VOLUME, obj.namespace, name)
            for body in volumes:
                if body["metadata"]["name"] in keep:
                    await _let_go(ctx, obj, body)
            volumes = [b for b in volumes if b["metadata"]["name"] not in keep]
        if members or volumes:
            return Result.waiting(
                "Deleting",
                "Deleting",
                f"waiting for {len(members)} member(s) and {len(volumes)} volume(s) to go",
            )
        groups = await ctx.cloud.list_owned_server_groups(obj.uid)
        for group in groups:
            await ctx.cloud.delete_server_group(group.id)
        self._expected.pop(obj.uid, None)
        self._expected_volumes.pop(obj.uid, None)
        self._derived.forget(obj.uid)
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
            members = self._members(ctx.store, obj, include_deleting=True)
            volumes = self._volumes(ctx.store, obj, include_deleting=True)
            seen = {b["metadata"]["name"] for b in [*members, *volumes]}
            unseen = [  # created by a pass just before, not in the watch's cache yet
                (info, name)
                for info, expected in (
                    (kinds.VIRTUAL_MACHINE, self._expected.get(obj.uid, {})),
                    (kinds.VOLUME, self._expected_volumes.get(obj.uid, {})),
                )
                for name, entry in expected.items()
                if name not in seen and (info is kinds.VOLUME or entry[0])
            ]
            return await _orphan_dependents(ctx, obj, (members, volumes), unseen)

        result = await orphan.release_owned(ctx, obj, dependents_orphaned)
        if result.done:
            self._expected.pop(obj.uid, None)
            self._expected_volumes.pop(obj.uid, None)
            self._derived.forget(obj.uid)
        return result

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
        expected = self._expected if kind == "VirtualMachine" else self._expected_volumes
        for ref in meta.get("ownerReferences") or []:  # the watch has now seen this object
            expected.get(ref.get("uid", ""), {}).pop(meta["name"], None)
        return [
            Key(self.info.kind, meta.get("namespace", "default"), ref["name"])
            for ref in meta.get("ownerReferences") or []
            if ref.get("kind") == self.info.kind
        ]

    # -- helpers -----------------------------------------------------------------------

    async def _ensure_server_group(
        self, ctx: Context, obj: Obj, spec: VirtualMachineGroupSpec
    ) -> ServerGroup | None:
        if spec.ha_policy == "none":
            return None
        policy = SERVER_GROUP_POLICY[spec.ha_policy]
        known = obj.status.get("serverGroupId")
        group = await ctx.cloud.get_server_group(known) if known else None
        if group is not None and text_owner(group.name) != obj.uid:
            # Several of ours may coexist while members move to a new policy, so this
            # kind cannot use find_owned's one-resource rule; the marker rule is the same.
            raise ownership.NotOwned("server group", group.id, "serverGroupId")
        if group is None or group.policy != policy:
            group = next(
                (
                    g
                    for g in await ctx.cloud.list_owned_server_groups(obj.uid)
                    if g.policy == policy
                ),
                None,
            )
        if group is None:
            prefix = f"{obj.namespace}-{obj.name}-{policy}"
            name = with_word(prefix, owner_word(obj.uid), SERVER_GROUP_NAME_MAX)
            group = await ctx.cloud.create_server_group(name, policy)
            ctx.events.emit(obj, "Normal", "Created", f"created server group {group.id} ({policy})")
        if group.id != known:
            obj.body = await ctx.kube.patch_status(obj, {"serverGroupId": group.id})
        return group

    def _members(self, store: Store, obj: Obj, include_deleting: bool = False) -> list[Body]:
        members = []
        for body in store.owned_by(kinds.VIRTUAL_MACHINE.kind, obj.uid):
            meta = body["metadata"]
            here = meta.get("namespace", "default") == obj.namespace
            if here and (include_deleting or not meta.get("deletionTimestamp")):
                members.append(body)
        return members

    def _volumes(self, store: Store, obj: Obj, include_deleting: bool = False) -> list[Body]:
        found = []
        for body in store.owned_by(kinds.VOLUME.kind, obj.uid):
            meta = body["metadata"]
            here = meta.get("namespace", "default") == obj.namespace
            if here and (include_deleting or not meta.get("deletionTimestamp")):
                found.append(body)
        return found

    def _expect_volume(
        self, ctx: Context, obj: Obj, name: str, ordinal: int, zone: str | None
    ) -> None:
        if ctx.dry_run:
            return
        view = plan.VolumeView(name, ordinal, zone)
        self._expected_volumes.setdefault(obj.uid, {})[name] = (view, time.monotonic())

    def _pending_volumes(self, obj: Obj, bodies: list[Body]) -> list[plan.VolumeView]:
        """Volume objects created but not yet seen (so none is created twice)."""
        seen = {b["metadata"]["name"] for b in bodies}
        expected = self._expected_volumes.get(obj.uid, {})
        pending = []
        for name, (view, since) in list(expected.items()):
            if name in seen or time.monotonic() - since > EXPECTATION_TTL:
                del expected[name]
            else:
                pending.append(view)
        return pending

    def _expect(
        self, ctx: Context, obj: Obj, name: str, exists: bool, import_key: str | None = None
    ) -> None:
        if ctx.dry_run:  # nothing was created or deleted: nothing to wait for
            return
        self._expected.setdefault(obj.uid, {})[name] = (exists, time.monotonic(), import_key)

    def _pending_views(self, obj: Obj, bodies: list[Body], hash_: str) -> list[plan.MemberView]:
        """Members created but not yet seen; forget expectations once observed or stale."""
        seen = {b["metadata"]["name"] for b in bodies}
        expected = self._expected.get(obj.uid, {})
        pending = []
        for name, (exists, since, key) in list(expected.items()):
            observed = (name in seen) == exists
            if observed or time.monotonic() - since > EXPECTATION_TTL:
                del expected[name]
            elif exists:
                pending.append(plan.MemberView(name, hash_, ready=False, import_key=key))
        return pending


async def _snapshot_gate(
    ctx: Context,
    obj: Obj,
    spec: VirtualMachineGroupSpec,
    members: tuple[str, list[plan.MemberView], list[Body]],
    decision: plan.OrdinalPlan,
    volumes: list[Body],
) -> snapshots.Gate | None:
    """``snapshotBeforeReplace``: the members this pass replaces for a template change
    go only once their volumes' snapshots are available (None: nothing to snapshot).
    ``members``: the current template hash, the members' views and bodies."""
    hash_, views, bodies = members
    if spec.snapshot_before_replace is None or not spec.volume_templates:
        return None
    names = set(plan.template_replacements(spec, obj.name, hash_, views, decision.delete))
    if not names:
        return None
    replaced = [b for b in bodies if b["metadata"]["name"] in names]
    return await snapshots.gate(ctx, obj, spec, hash_, replaced, volumes)


async def _sync_deletion_policy(
    ctx: Context,
    obj: Obj,
    policy: str,
    bodies: list[Body],
    skip: Collection[str],
    info: kinds.KindInfo = kinds.VIRTUAL_MACHINE,
) -> list[Body]:
    """Give existing members (or Volume objects) the group's deletionPolicy (new ones are
    created with it), so deleting them orphans or deletes their cloud resources as the
    group now says. Returns the patched bodies, as the API server answered."""
    current = {
        b["metadata"]["name"]: (b.get("spec") or {}).get("deletionPolicy")
        for b in bodies
        if b["metadata"]["name"] not in skip
    }
    names = plan.policy_patches(policy, current)
    patched = []
    for name in names:
        patch = {"spec": {"deletionPolicy": policy}}
        patched.append(await ctx.kube.patch(info, obj.namespace, name, patch))
    if names:
        what = "member(s)" if info is kinds.VIRTUAL_MACHINE else "volume(s)"
        ctx.events.emit(
            obj,
            "Normal",
            "DeletionPolicyChanged",
            f"set deletionPolicy {policy} on {len(names)} {what}",
        )
    return patched


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
    members, volumes = read
    patched = await _sync_deletion_policy(ctx, obj, "Orphan", members, skip=())
    patched += await _sync_deletion_policy(ctx, obj, "Orphan", volumes, skip=(), info=kinds.VOLUME)
    for info, name in unseen:
        try:
            orphaned = {"spec": {"deletionPolicy": "Orphan"}}
            patched.append(await ctx.kube.patch(info, obj.namespace, name, orphaned))
        except ObjectGone as gone:
            if not gone.names(info.kind, obj.namespace, name):
                raise  # (not there: nothing of it for the collector to delete)
    left = [
        f"{b.get('kind', 'object')} {b['metadata']['name']} does not say deletionPolicy Orphan"
        for b in patched
        if (b.get("spec") or {}).get("deletionPolicy") != "Orphan"
    ]
    if left:
        return left
    views = [_volume_view(b) for b in volumes]
    _, keep = plan.volume_deletion(plan.when_deleted(obj.spec), views)
    for body in volumes:
        if body["metadata"]["name"] in keep:
            await _let_go(ctx, obj, body)
    return []


async def _drop_stale_imports(ctx: Context, obj: Obj, names: list[str]) -> None:
    """Members still waiting to import a server the list no longer names: they build
    their own (spec.import removed; a server they marked meanwhile is adopted)."""
    for name in names:
        await ctx.kube.patch(kinds.VIRTUAL_MACHINE, obj.namespace, name, {"spec": {"import": None}})
    if names:
        ctx.events.emit(
            obj,
            "Normal",
            "ImportDropped",
            f"member(s) {', '.join(names)} no longer import a server: "
            "it is not in spec.import.members any more",
        )


def _report_imports(
    ctx: Context,
    obj: Obj,
    entries: list[dict[str, Any]],
    group: ServerGroup | None,
    outside: list[str],
) -> None:
    """An event when a member has taken its server over (once: status records it),
    saying when the server stays outside the group's server group."""
    for entry in plan.newly_imported(obj.status.get("imports") or [], entries):
        message = (
            f"member {entry['member']} imported server {entry['serverId']} ({import_key(entry)})"
        )
        if group is not None and entry["member"] in outside:
            message += (
                f"; it stays outside server group {group.id}: Nova cannot add an existing "
                "server to a server group (a template change rolls it over into one)"
            )
        ctx.events.emit(obj, "Normal", "MemberImported", message)


def _failing_member(members: list[_Member]) -> tuple[str, str, str] | None:
    """The first member (by name) reporting an error, to say in the group why it is not
    Ready."""
    failing = [m.failing for m in members if m.failing is not None]
    return min(failing) if failing else None


async def _sync_security_groups(
    ctx: Context,
    obj: Obj,
    spec: VirtualMachineGroupSpec,
    read: tuple[list[Body], list[_Member]],
    hashes: tuple[str, str],
    skip: Collection[str],
) -> None:
    """Give existing members the template's security groups in place (each VM applies
    them with Nova's add/remove security group: no rollout). ``read``: the members'
    bodies and what was derived from them; the patch depends only on a member's
    security groups and template-hash label, so it is decided once per distinct pair."""
    current, legacy = hashes
    changed = []
    decided: dict[tuple[tuple[str, ...], str], Body | None] = {}
    for body, member in zip(*read, strict=True):
        name = member.view.name
        if member.groups_label not in decided:
            decided[member.groups_label] = plan.security_group_patch(spec, body, current, legacy)
        patch = decided[member.groups_label]
        if name in skip or patch is None:
            continue
        await ctx.kube.patch(kinds.VIRTUAL_MACHINE, obj.namespace, name, patch)
        if "spec" in patch:
            changed.append(name)
    if changed:
        ctx.events.emit(
            obj,
            "Normal",
            "SecurityGroupsChanged",
            f"securityGroups {list(spec.template.security_groups)} set in place on "
            f"{len(changed)} member(s)",
        )


class _Member(NamedTuple):
    """What a pass reads of one member's body (derived once per body: ``_derive``)."""

    view: plan.MemberView  # template_hash: its label, as it is
    #: (name, reason, message) of its Ready condition when it reports an error
    failing: tuple[str, str, str] | None
    #: its spec.securityGroups and template-hash label: all its security-group patch
    #: depends on
    groups_label: tuple[tuple[str, ...], str]


def _derive(body: Body) -> _Member:
    view = _view(body)
    status = body.get("status") or {}
    failing = None
    if status.get("phase") == "Error":
        ready = conditions.get_condition(status.get("conditions") or [], "Ready") or {}
        failing = (view.name, ready.get("reason", ""), ready.get("message", ""))
    groups = tuple((body.get("spec") or {}).get("securityGroups") or [])
    return _Member(view, failing, (groups, view.template_hash))


def _current(view: plan.MemberView, legacy: str, current: str) -> plan.MemberView:
    """A member labelled with the legacy template hash is up to date: it counts as
    carrying the current one."""
    if current and view.template_hash == legacy and legacy != current:
        return dataclasses.replace(view, template_hash=current)
    return view


def _view(body: Body) -> plan.MemberView:
    meta = body["metadata"]
    status = body.get("status") or {}
    spec = body.get("spec") or {}
    ref = spec.get("import")
    ready = conditions.get_condition(status.get("conditions") or [], "Ready") or {}
    label = (meta.get("labels") or {}).get(TEMPLATE_HASH_LABEL, "")
    return plan.MemberView(
        name=meta["name"],
        template_hash=label,
        ready=conditions.is_true(status.get("conditions") or []),
        zone=spec.get("availabilityZone"),
        created=meta.get("creationTimestamp", ""),
        import_key=import_key(ref) if isinstance(ref, dict) else None,
        server_id=status.get("id"),
        reason=str(ready.get("reason") or ""),
    )


def _member_body(
    obj: Obj,
    spec: VirtualMachineGroupSpec,
    group: ServerGroup | None,
    hash_: str,
    new: plan.NewMember,
    ordinal: int | None = None,
) -> Body:
    """A member built from the template. One that imports a server carries it in
    ``spec.import`` (not in the template hash: it does not make the member out of
    date) and keeps ``serverGroup``: Nova does not check it on import, and a server the
    member builds itself later (the import dropped) belongs in the group."""
    member_spec: dict[str, Any] = spec.template.model_dump(by_alias=True, exclude_none=True)
    member_spec["deletionPolicy"] = spec.deletion_policy
    if group is not None:
        member_spec["serverGroup"] = group.id
    if new.zone:
        member_spec["availabilityZone"] = new.zone
    if new.import_ is not None:
        member_spec["import"] = new.import_.model_dump(exclude_none=True)
    if not spec.template.description and spec.description:
        member_spec["description"] = spec.description
    metadata: Body = {
        "generateName": f"{obj.name}-",
        "namespace": obj.namespace,
        "labels": {GROUP_LABEL: obj.name, TEMPLATE_HASH_LABEL: hash_},
        "ownerReferences": [_owner(obj)],
    }
    if ordinal is not None:  # identity Ordinal: its name, and its volumes by name
        del metadata["generateName"]
        metadata["name"] = plan.member_name(obj.name, ordinal)
        metadata["labels"][ORDINAL_LABEL] = str(ordinal)
        if spec.volume_templates:
            member_spec["volumes"] = [
                {"volumeRef": plan.volume_name(obj.name, t.name, ordinal)}
                for t in spec.volume_templates
            ]
    return {
        "apiVersion": API_VERSION,
        "kind": kinds.VIRTUAL_MACHINE.kind,
        "metadata": metadata,
        "spec": member_spec,
    }


def _owner(obj: Obj) -> Body:
    return {
        "apiVersion": API_VERSION,
        "kind": obj.info.kind,
        "name": obj.name,
        "uid": obj.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _volume_body(
    obj: Obj,
    spec: VirtualMachineGroupSpec,
    name: str,
    ordinal: int,
    template: str,
    zone: str | None,
) -> Body:
    """Member ``ordinal``'s Volume object of ``template``: in the member's zone, with the
    group's deletionPolicy, owned by the group."""
    tmpl = next(t for t in spec.volume_templates if t.name == template)
    volume_spec: Body = {
        "size": tmpl.size,
        "deletionPolicy": spec.deletion_policy,
        "description": f"volume {template} of {plan.member_name(obj.name, ordinal)}",
    }
    if tmpl.volume_type:
        volume_spec["volumeType"] = tmpl.volume_type
    if zone:
        volume_spec["availabilityZone"] = zone
    return {
        "apiVersion": API_VERSION,
        "kind": kinds.VOLUME.kind,
        "metadata": {
            "name": name,
            "namespace": obj.namespace,
            "labels": {
                GROUP_LABEL: obj.name,
                ORDINAL_LABEL: str(ordinal),
                VOLUME_TEMPLATE_LABEL: template,
            },
            "ownerReferences": [_owner(obj)],
        },
        "spec": volume_spec,
    }


def _volume_view(body: Body) -> plan.VolumeView:
    meta = body["metadata"]
    label = (meta.get("labels") or {}).get(ORDINAL_LABEL, "")
    return plan.VolumeView(
        name=meta["name"],
        ordinal=int(label) if label.isdigit() else -1,
        zone=(body.get("spec") or {}).get("availabilityZone"),
        deleting=bool(meta.get("deletionTimestamp")),
    )


async def _adopt_volumes(ctx: Context, obj: Obj) -> list[Body]:
    """Volume objects labelled with the group's name that no controller owns (retained
    when a group of this name was deleted): this group takes them back, so its members
    of those ordinals get the same volumes."""
    adopted = []
    for body in ctx.store.list(kinds.VOLUME.kind, obj.namespace):
        meta = body["metadata"]
        labels = meta.get("labels") or {}
        owners = meta.get("ownerReferences") or []
        if (
            labels.get(GROUP_LABEL) != obj.name
            or ORDINAL_LABEL not in labels
            or meta.get("deletionTimestamp")
            or any(r.get("controller") for r in owners)
        ):
            continue
        adopted.append(
            await ctx.kube.patch(
                kinds.VOLUME,
                obj.namespace,
                meta["name"],
                {"metadata": {"ownerReferences": [*owners, _owner(obj)]}},
            )
        )
    if adopted:
        names = ", ".join(b["metadata"]["name"] for b in adopted)
        ctx.events.emit(obj, "Normal", "VolumesAdopted", f"took back retained Volume(s) {names}")
    return adopted


async def _let_go(ctx: Context, obj: Obj, body: Body) -> None:
    """Remove the group's owner reference from a Volume object it keeps (retained at the
    group's deletion): Kubernetes' garbage collector would delete it after the group."""
    refs = body["metadata"].get("ownerReferences") or []
    rest = [r for r in refs if r.get("uid") != obj.uid]
    if len(rest) != len(refs):
        await ctx.kube.patch(
            kinds.VOLUME,
            obj.namespace,
            body["metadata"]["name"],
            {"metadata": {"ownerReferences": rest or None}},
        )


def _report(
    obj: Obj,
    spec: VirtualMachineGroupSpec,
    group: ServerGroup | None,
    hash_: str,
    views: list[plan.MemberView],
    members: list[_Member],
    extra: dict[str, Any],
    notes: str,
) -> Result:
    ready = sum(v.ready for v in views)
    updated = sum(v.template_hash == hash_ for v in views)
    status = {
        "replicas": len(views),
        "readyReplicas": ready,
        "updatedReplicas": updated,
        "serverGroupId": group.id if group else None,
        "selector": f"{GROUP_LABEL}={obj.name}",
        # Ordinal names in ordinal order (g-2 before g-10).
        "members": sorted(
            (v.name for v in views),
            key=(lambda n: (len(n), n)) if spec.identity == "Ordinal" else None,
        ),
        **extra,
    }
    converged = len(views) == ready == updated == spec.replicas
    message = f"{ready}/{spec.replicas} members ready, {updated} up to date"
    failing = _failing_member(members)
    if failing and not converged:
        name, reason, detail = failing
        where = "spec.haPolicy: " if reason == "NoValidHost" else ""
        message = f"{where}{message}; member {name}: {reason}: {detail}"
    message += notes
    return Result(
        phase="Ready" if converged else ("Degraded" if failing else "Scaling"),
        ready=converged,
        reason="Ready" if converged else ("MemberFailed" if failing else "Progressing"),
        message=message,
        status=status,
    )


async def _delete_stale_groups(ctx: Context, obj: Obj, keep: str) -> None:
    """Server groups of an earlier haPolicy, once no member uses them."""
    for group in await ctx.cloud.list_owned_server_groups(obj.uid):
        if group.id != keep and not group.members:
            await ctx.cloud.delete_server_group(group.id)
