"""A VirtualMachineGroup's member VirtualMachine objects: read from the store, created
from the template, deleted, and patched in place (deletionPolicy, security groups, a
dropped import). Each member's own controller builds, heals and deletes its server.

Because the watch cache lags a create or delete by a moment, the group remembers what
it just did (:class:`Expectations`) so two quick passes never create twice, nor count a
member it deleted as staying.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from kumo.api import kinds
from kumo.api.common import API_VERSION, import_key
from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.engine.objects import Body, Context, Obj, Store
from kumo.kinds.labels import GROUP_LABEL, ORDINAL_LABEL, TEMPLATE_HASH_LABEL
from kumo.kinds.virtualmachinegroup import decision, plan
from kumo.ports.model import ServerGroup

EXPECTATION_TTL = 60.0


class Expectations:
    """Per group UID: {member name: (expected to exist?, since, the ref it imports)}."""

    def __init__(self) -> None:
        self.by_uid: dict[str, dict[str, tuple[bool, float, str | None]]] = {}

    def expect(
        self, ctx: Context, obj: Obj, name: str, exists: bool, ref: str | None = None
    ) -> None:
        if ctx.dry_run:  # nothing was created or deleted: nothing to wait for
            return
        self.by_uid.setdefault(obj.uid, {})[name] = (exists, time.monotonic(), ref)

    def pending(self, obj: Obj, bodies: list[Body], hash_: str) -> list[plan.MemberView]:
        """Members created but not yet seen; forget expectations once observed or stale."""
        seen = {b["metadata"]["name"] for b in bodies}
        expected = self.by_uid.get(obj.uid, {})
        found = []
        for name, (exists, since, key) in list(expected.items()):
            observed = (name in seen) == exists
            if observed or time.monotonic() - since > EXPECTATION_TTL:
                del expected[name]
            elif exists:
                found.append(plan.MemberView(name, hash_, ready=False, import_key=key))
        return found

    def leaving(self, obj: Obj) -> set[str]:
        """Members this process deleted that the watch still shows alive."""
        expected = self.by_uid.get(obj.uid, {})
        return {name for name, (exists, _, _) in expected.items() if not exists}

    def unseen(self, obj: Obj, seen: set[str]) -> list[str]:
        """Members created and not in the watch's cache yet."""
        expected = self.by_uid.get(obj.uid, {})
        return [name for name, entry in expected.items() if entry[0] and name not in seen]

    def seen(self, uid: str, name: str) -> None:
        self.by_uid.get(uid, {}).pop(name, None)

    def forget(self, uid: str) -> None:
        self.by_uid.pop(uid, None)


def owned(store: Store, obj: Obj, info: kinds.KindInfo, include_deleting: bool) -> list[Body]:
    """The objects of ``info`` (members, Volume objects) ``obj`` owns, in its namespace."""
    found = []
    for body in store.owned_by(info.kind, obj.uid):
        meta = body["metadata"]
        here = meta.get("namespace", "default") == obj.namespace
        if here and (include_deleting or not meta.get("deletionTimestamp")):
            found.append(body)
    return found


def owner(obj: Obj) -> Body:
    return {
        "apiVersion": API_VERSION,
        "kind": obj.info.kind,
        "name": obj.name,
        "uid": obj.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


async def set_policy(
    ctx: Context,
    obj: Obj,
    policy: str,
    names: list[str],
    info: kinds.KindInfo = kinds.VIRTUAL_MACHINE,
) -> list[Body]:
    """Give existing members (or Volume objects) ``names`` the group's deletionPolicy (new
    ones are created with it), so deleting them orphans or deletes their cloud resources
    as the group now says. Returns the patched bodies, as the API server answered."""
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


def policy_names(policy: str, bodies: Iterable[Body]) -> list[str]:
    current = {b["metadata"]["name"]: (b.get("spec") or {}).get("deletionPolicy") for b in bodies}
    return plan.policy_patches(policy, current)


async def delete(ctx: Context, obj: Obj, names: list[str], expect: Expectations) -> None:
    for name in names:
        await ctx.kube.delete(kinds.VIRTUAL_MACHINE, obj.namespace, name)
        expect.expect(ctx, obj, name, exists=False)


async def set_security_groups(
    ctx: Context, obj: Obj, spec: VirtualMachineGroupSpec, patches: list[tuple[str, Body]]
) -> None:
    """Give members the template's security groups in place (each VM applies them with
    Nova's add/remove security group: no rollout), and the current template hash where
    they carry the legacy one."""
    changed = []
    for name, patch in patches:
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


async def drop_imports(ctx: Context, obj: Obj, names: list[str]) -> None:
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


async def create(
    ctx: Context,
    obj: Obj,
    o: decision.Observed,
    creates: list[plan.NewMember],
    expect: Expectations,
) -> list[plan.MemberView]:
    """Create ``creates``; return their views (not ready, the current template)."""
    made = []
    for new in creates:
        body = member_body(obj, o.spec, o.server_group, o.hash, new)
        created = await ctx.kube.create(kinds.VIRTUAL_MACHINE, obj.namespace, body)
        name, key = created["metadata"]["name"], new.import_.key if new.import_ else None
        expect.expect(ctx, obj, name, exists=True, ref=key)
        made.append(plan.MemberView(name, o.hash, ready=False, zone=new.zone, import_key=key))
    return made


def report_imports(ctx: Context, obj: Obj, o: decision.Observed) -> None:
    """An event when a member has taken its server over (once: status records it),
    saying when the server stays outside the group's server group."""
    for entry, out in decision.newly_imported(o):
        message = (
            f"member {entry['member']} imported server {entry['serverId']} ({import_key(entry)})"
        )
        if o.server_group is not None and out:
            message += (
                f"; it stays outside server group {o.server_group.id}: Nova cannot add an "
                "existing server to a server group (a template change rolls it over into one)"
            )
        ctx.events.emit(obj, "Normal", "MemberImported", message)


def member_body(
    obj: Obj,
    spec: VirtualMachineGroupSpec,
    group: ServerGroup | None,
    hash_: str,
    new: plan.NewMember,
) -> Body:
    """A member built from the template. One that imports a server carries it in
    ``spec.import`` (not in the template hash: it does not make the member out of
    date) and keeps ``serverGroup``: Nova does not check it on import, and a server the
    member builds itself later (the import dropped) belongs in the group. An Ordinal
    member (``new.ordinal``) is named ``<group>-<i>`` and names its volumes."""
    member_spec: dict[str, Any] = spec.template.model_dump(by_alias=True, exclude_none=True)
    for name in plan.NEW_TEMPLATE_FIELDS:  # unset: a member's spec as before they existed
        if not member_spec.get(name):
            member_spec.pop(name, None)
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
        "ownerReferences": [owner(obj)],
    }
    if new.ordinal is not None:  # identity Ordinal: its name, and its volumes by name
        del metadata["generateName"]
        metadata["name"] = plan.member_name(obj.name, new.ordinal)
        metadata["labels"][ORDINAL_LABEL] = str(new.ordinal)
        if spec.volume_templates:
            member_spec["volumes"] = [
                {"volumeRef": plan.volume_name(obj.name, t.name, new.ordinal)}
                for t in spec.volume_templates
            ]
    return {
        "apiVersion": API_VERSION,
        "kind": kinds.VIRTUAL_MACHINE.kind,
        "metadata": metadata,
        "spec": member_spec,
    }
