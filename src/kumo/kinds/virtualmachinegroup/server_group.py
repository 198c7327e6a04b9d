"""A VirtualMachineGroup's Nova server group: the anchor of its pass (a member's template
hash names it), found by the ownership rule or made, and those of an earlier haPolicy
deleted once no member uses them.

Several of the group's server groups may coexist while members move to a new policy, so
this is not ``ownership.find_owned``'s one-resource rule; the marker rule is the same
(the owner word in the name), and it is what makes a create crash-safe: the next pass
finds the server group by its marker, so no ID is recorded mid-pass — ``serverGroupId``
is written with the pass's one status write.
"""

from __future__ import annotations

from kumo.api.virtualmachinegroup import SERVER_GROUP_POLICY, VirtualMachineGroupSpec
from kumo.engine import ownership
from kumo.engine.objects import Context, Obj
from kumo.ports.model import ServerGroup, owner_word, text_owner, with_word

#: Nova's limit on a server group's name: the ``<namespace>-<name>-<policy>`` part is cut
#: short so the marker word fits after it.
SERVER_GROUP_NAME_MAX = 255


async def ensure(ctx: Context, obj: Obj, spec: VirtualMachineGroupSpec) -> ServerGroup | None:
    """The group's server group of its haPolicy: by ``status.serverGroupId`` if it carries
    the group's marker (else ``NotOwned``), else found by marker, else created."""
    if spec.ha_policy == "none":
        return None
    policy = SERVER_GROUP_POLICY[spec.ha_policy]
    known = obj.status.get("serverGroupId")
    group = await ctx.cloud.get_server_group(known) if known else None
    if group is not None and text_owner(group.name) != obj.uid:
        raise ownership.NotOwned("server group", group.id, "serverGroupId")
    if group is None or group.policy != policy:
        owned = await ctx.cloud.list_owned_server_groups(obj.uid)
        group = next((g for g in owned if g.policy == policy), None)
    if group is None:
        prefix = f"{obj.namespace}-{obj.name}-{policy}"
        name = with_word(prefix, owner_word(obj.uid), SERVER_GROUP_NAME_MAX)
        group = await ctx.cloud.create_server_group(name, policy)
        ctx.events.emit(obj, "Normal", "Created", f"created server group {group.id} ({policy})")
    return group


async def delete_stale(ctx: Context, obj: Obj, keep: str) -> None:
    """Server groups of an earlier haPolicy, once no member uses them."""
    for group in await ctx.cloud.list_owned_server_groups(obj.uid):
        if group.id != keep and not group.members:
            await ctx.cloud.delete_server_group(group.id)


async def delete_all(ctx: Context, obj: Obj) -> None:
    """The group is being deleted and its members are gone: every server group it owns."""
    for group in await ctx.cloud.list_owned_server_groups(obj.uid):
        await ctx.cloud.delete_server_group(group.id)
