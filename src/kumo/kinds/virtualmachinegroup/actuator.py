"""VirtualMachineGroup actuator: a Nova server group plus member VirtualMachine objects.

The group never talks to Nova about servers: it creates and deletes VirtualMachine
objects (with ownerReferences, like ReplicaSet → Pod) and each member's own
controller builds, heals and deletes its server. Because the watch cache lags a
create or delete by a moment, the actuator remembers what it just did
("expectations") so two quick passes never create twice.
"""

from __future__ import annotations

import time
from typing import Any

from kumo.api import kinds
from kumo.api.common import API_VERSION
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

    def __init__(self) -> None:
        # uid → {member name: (expected to exist?, since)}
        self._expected: dict[str, dict[str, tuple[bool, float]]] = {}

    async def reconcile(self, ctx: Context, obj: Obj, spec: VirtualMachineGroupSpec) -> Result:
        problem = plan.validate(spec)
        if problem:
            raise TerminalError("InvalidSpec", problem)
        group = await self._ensure_server_group(ctx, obj, spec)
        hash_ = plan.template_hash(spec, group.id if group else None)
        bodies = self._members(ctx.store, obj)
        views = [_view(b) for b in bodies] + self._pending_views(obj, bodies, hash_)
        decision = plan.plan_members(spec, hash_, views)

        for name in decision.delete:
            await ctx.kube.delete(kinds.VIRTUAL_MACHINE, obj.namespace, name)
            self._expect(obj, name, exists=False)
        views = [v for v in views if v.name not in decision.delete]
        await _sync_deletion_policy(ctx, obj, spec, bodies, skip=decision.delete)
        for zone in decision.create_zones:
            created = await ctx.kube.create(
                kinds.VIRTUAL_MACHINE, obj.namespace, _member_body(obj, spec, group, hash_, zone)
            )
            self._expect(obj, created["metadata"]["name"], exists=True)
            views.append(plan.MemberView(created["metadata"]["name"], hash_, ready=False))
        if decision.delete or decision.create_zones:
            ctx.events.emit(
                obj,
                "Normal",
                "Scaling",
                f"created {len(decision.create_zones)}, deleting {len(decision.delete)} member(s)",
            )
        if (
            group is not None
            and not decision.delete
            and all(v.template_hash == hash_ for v in views)
        ):
            await _delete_stale_groups(ctx, obj, keep=group.id)

        ready = sum(v.ready for v in views)
        updated = sum(v.template_hash == hash_ for v in views)
        status = {
            "replicas": len(views),
            "readyReplicas": ready,
            "updatedReplicas": updated,
            "serverGroupId": group.id if group else None,
            "selector": f"{GROUP_LABEL}={obj.name}",
            "members": sorted(v.name for v in views),
        }
        converged = len(views) == ready == updated == spec.replicas
        message = f"{ready}/{spec.replicas} members ready, {updated} up to date"
        failing = _failing_member(bodies)
        if failing and not converged:
            name, reason, detail = failing
            where = "spec.haPolicy: " if reason == "NoValidHost" else ""
            message = f"{where}{message}; member {name}: {reason}: {detail}"
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
        records = ordering.dns_records_going(ctx.store, obj)
        if records:
            return Result.waiting(
                "Deleting", "WaitingForDNS", f"DNSRecord(s) {', '.join(records)} go first"
            )
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

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """A member changed: its group must recount. A DNSRecord going away may unblock
        the group's deletion."""
        if kind == "DNSRecord":
            return ordering.dns_target(body, self.info.kind)
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
        for body in store.list(kinds.VIRTUAL_MACHINE.kind, obj.namespace):
            meta = body["metadata"]
            owned = any(r.get("uid") == obj.uid for r in meta.get("ownerReferences") or [])
            if owned and (include_deleting or not meta.get("deletionTimestamp")):
                members.append(body)
        return members

    def _expect(self, obj: Obj, name: str, exists: bool) -> None:
        self._expected.setdefault(obj.uid, {})[name] = (exists, time.monotonic())

    def _pending_views(self, obj: Obj, bodies: list[Body], hash_: str) -> list[plan.MemberView]:
        """Members created but not yet seen; forget expectations once observed or stale."""
        seen = {b["metadata"]["name"] for b in bodies}
        expected = self._expected.get(obj.uid, {})
        pending = []
        for name, (exists, since) in list(expected.items()):
            observed = (name in seen) == exists
            if observed or time.monotonic() - since > EXPECTATION_TTL:
                del expected[name]
            elif exists:
                pending.append(plan.MemberView(name=name, template_hash=hash_, ready=False))
        return pending


async def _sync_deletion_policy(
    ctx: Context, obj: Obj, spec: VirtualMachineGroupSpec, bodies: list[Body], skip: list[str]
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


def _failing_member(bodies: list[Body]) -> tuple[str, str, str] | None:
    """The first member reporting an error, to say in the group why it is not Ready."""
    for body in sorted(bodies, key=lambda b: b["metadata"]["name"]):
        status = body.get("status") or {}
        ready = conditions.get_condition(status.get("conditions") or [], "Ready") or {}
        if status.get("phase") == "Error":
            return body["metadata"]["name"], ready.get("reason", ""), ready.get("message", "")
    return None


def _view(body: Body) -> plan.MemberView:
    meta = body["metadata"]
    status = body.get("status") or {}
    return plan.MemberView(
        name=meta["name"],
        template_hash=(meta.get("labels") or {}).get(TEMPLATE_HASH_LABEL, ""),
        ready=conditions.is_true(status.get("conditions") or []),
        zone=(body.get("spec") or {}).get("availabilityZone"),
        created=meta.get("creationTimestamp", ""),
    )


def _member_body(
    obj: Obj, spec: VirtualMachineGroupSpec, group: ServerGroup | None, hash_: str, zone: str | None
) -> Body:
    member_spec: dict[str, Any] = spec.template.model_dump(by_alias=True, exclude_none=True)
    member_spec["deletionPolicy"] = spec.deletion_policy
    if group is not None:
        member_spec["serverGroup"] = group.id
    if zone:
        member_spec["availabilityZone"] = zone
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
