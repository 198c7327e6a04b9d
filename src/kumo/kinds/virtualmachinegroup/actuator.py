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

import time
from collections.abc import Collection
from typing import Any

from kumo.api import kinds
from kumo.api.common import API_VERSION, import_key
from kumo.api.virtualmachinegroup import SERVER_GROUP_POLICY, VirtualMachineGroupSpec
from kumo.cloud.model import ServerGroup, owner_tag
from kumo.engine import conditions, ownership
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import ordering
from kumo.kinds.labels import GROUP_LABEL, TEMPLATE_HASH_LABEL
from kumo.kinds.virtualmachinegroup import plan

EXPECTATION_TTL = 60.0


class VirtualMachineGroupActuator:
    info = kinds.VIRTUAL_MACHINE_GROUP
    #: A member's change is looked at after this long, so a burst of member changes (a
    #: scale-out's creates, a fleet turning ACTIVE) costs one pass over all members, not
    #: one each. What it delays is the group's status and rollout steps, not any server.
    coalesce_seconds = 0.5

    def __init__(self) -> None:
        # uid → {member name: (expected to exist?, since, the ref it imports)}
        self._expected: dict[str, dict[str, tuple[bool, float, str | None]]] = {}

    async def reconcile(self, ctx: Context, obj: Obj, spec: VirtualMachineGroupSpec) -> Result:
        problem = plan.validate(spec)
        if problem:
            raise TerminalError("InvalidSpec", problem)
        group = await self._ensure_server_group(ctx, obj, spec)
        hash_ = plan.template_hash(spec, group.id if group else None)
        legacy = plan.template_hash(spec, group.id if group else None, legacy=True)
        bodies = self._members(ctx.store, obj)
        # A member made before security groups changed in place carries the legacy hash:
        # it is up to date (and relabelled below), not rolled over.
        seen = [_view(b, legacy, hash_) for b in bodies]
        views = seen + self._pending_views(obj, bodies, hash_)
        going = [
            _view(b)
            for b in self._members(ctx.store, obj, include_deleting=True)
            if b["metadata"].get("deletionTimestamp")
        ]
        imported = plan.imported_refs(obj.status.get("imports") or [], [*views, *going])
        decision = plan.plan_members(spec, hash_, views, imported, going)

        for name in decision.delete:
            await ctx.kube.delete(kinds.VIRTUAL_MACHINE, obj.namespace, name)
            self._expect(ctx, obj, name, exists=False)
        deleted = set(decision.delete)
        going += [v for v in views if v.name in deleted]
        views = [v for v in views if v.name not in deleted]
        await _sync_deletion_policy(ctx, obj, spec, bodies, skip=deleted)
        await _sync_security_groups(ctx, obj, spec, bodies, (hash_, legacy), deleted)
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

        ready = sum(v.ready for v in views)
        updated = sum(v.template_hash == hash_ for v in views)
        entries = plan.import_status(spec, [*going, *views], imported)
        outside = plan.outside_group(views, imported, group.members) if group else []
        _report_imports(ctx, obj, entries, group, outside)
        status = {
            "replicas": len(views),
            "readyReplicas": ready,
            "updatedReplicas": updated,
            "serverGroupId": group.id if group else None,
            "selector": f"{GROUP_LABEL}={obj.name}",
            "members": sorted(v.name for v in views),
            "imports": entries or None,
        }
        converged = len(views) == ready == updated == spec.replicas
        message = f"{ready}/{spec.replicas} members ready, {updated} up to date"
        failing = _failing_member(bodies)
        if failing and not converged:
            name, reason, detail = failing
            where = "spec.haPolicy: " if reason == "NoValidHost" else ""
            message = f"{where}{message}; member {name}: {reason}: {detail}"
        message += plan.import_notes(spec, entries, outside, group.id if group else None)
        return Result(
            phase="Ready" if converged else ("Degraded" if failing else "Scaling"),
            ready=converged,
            reason="Ready" if converged else ("MemberFailed" if failing else "Progressing"),
            message=message,
            status=status,
        )

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
        if members:
            return Result.waiting(
                "Deleting", "Deleting", f"waiting for {len(members)} member(s) to go"
            )
        groups = await ctx.cloud.list_owned_server_groups(obj.uid)
        for group in groups:
            await ctx.cloud.delete_server_group(group.id)
        self._expected.pop(obj.uid, None)
        return Result(phase="Deleted", done=True)

    async def release(self, ctx: Context, obj: Obj, spec: VirtualMachineGroupSpec | None) -> None:
        """Members release their own servers (they carry the group's deletionPolicy). The
        server group keeps its name (Nova cannot rename one); the orphan sweep deletes a
        server group only once no server is left in it, which loses nothing."""
        self._expected.pop(obj.uid, None)

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """A member changed: its group must recount. A referrer that goes first (a
        DNSRecord) going away may unblock the group's deletion."""
        if unblocked := ordering.unblocked_by(kind, body, self.info.kind):
            return unblocked
        if kind != "VirtualMachine":
            return []
        meta = body["metadata"]
        for ref in meta.get("ownerReferences") or []:  # the watch has now seen this member
            self._expected.get(ref.get("uid", ""), {}).pop(meta["name"], None)
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
        if group is not None and owner_tag(obj.uid) not in group.name.split():
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
            name = f"{obj.namespace}-{obj.name}-{policy} {owner_tag(obj.uid)}"
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


async def _sync_deletion_policy(
    ctx: Context,
    obj: Obj,
    spec: VirtualMachineGroupSpec,
    bodies: list[Body],
    skip: Collection[str],
) -> None:
    """Give existing members the group's deletionPolicy (new ones are created with it),
    so deleting the group orphans or deletes their servers as the group now says."""
    current = {
        b["metadata"]["name"]: (b.get("spec") or {}).get("deletionPolicy")
        for b in bodies
        if b["metadata"]["name"] not in skip
    }
    names = plan.policy_patches(spec.deletion_policy, current)
    for name in names:
        await ctx.kube.patch(
            kinds.VIRTUAL_MACHINE,
            obj.namespace,
            name,
            {"spec": {"deletionPolicy": spec.deletion_policy}},
        )
    if names:
        ctx.events.emit(
            obj,
            "Normal",
            "DeletionPolicyChanged",
            f"set deletionPolicy {spec.deletion_policy} on {len(names)} member(s)",
        )


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


def _failing_member(bodies: list[Body]) -> tuple[str, str, str] | None:
    """The first member reporting an error, to say in the group why it is not Ready."""
    for body in sorted(bodies, key=lambda b: b["metadata"]["name"]):
        status = body.get("status") or {}
        ready = conditions.get_condition(status.get("conditions") or [], "Ready") or {}
        if status.get("phase") == "Error":
            return body["metadata"]["name"], ready.get("reason", ""), ready.get("message", "")
    return None


async def _sync_security_groups(
    ctx: Context,
    obj: Obj,
    spec: VirtualMachineGroupSpec,
    bodies: list[Body],
    hashes: tuple[str, str],
    skip: Collection[str],
) -> None:
    """Give existing members the template's security groups in place (each VM applies
    them with Nova's add/remove security group: no rollout)."""
    current, legacy = hashes
    changed = []
    for body in bodies:
        name = body["metadata"]["name"]
        patch = plan.security_group_patch(spec, body, current, legacy)
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


def _view(body: Body, legacy: str | None = None, current: str | None = None) -> plan.MemberView:
    meta = body["metadata"]
    status = body.get("status") or {}
    spec = body.get("spec") or {}
    ref = spec.get("import")
    ready = conditions.get_condition(status.get("conditions") or [], "Ready") or {}
    label = (meta.get("labels") or {}).get(TEMPLATE_HASH_LABEL, "")
    return plan.MemberView(
        name=meta["name"],
        template_hash=current if current and label == legacy else label,
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
    return {
        "apiVersion": API_VERSION,
        "kind": kinds.VIRTUAL_MACHINE.kind,
        "metadata": {
            "generateName": f"{obj.name}-",
            "namespace": obj.namespace,
            "labels": {GROUP_LABEL: obj.name, TEMPLATE_HASH_LABEL: hash_},
            "ownerReferences": [
                {
                    "apiVersion": API_VERSION,
                    "kind": obj.info.kind,
                    "name": obj.name,
                    "uid": obj.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": member_spec,
    }


async def _delete_stale_groups(ctx: Context, obj: Obj, keep: str) -> None:
    """Server groups of an earlier haPolicy, once no member uses them."""
    for group in await ctx.cloud.list_owned_server_groups(obj.uid):
        if group.id != keep and not group.members:
            await ctx.cloud.delete_server_group(group.id)
