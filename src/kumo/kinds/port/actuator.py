"""Port actuator: observe the Neutron port, put it back to the spec, report.

Order of a pass (the owned-resource lifecycle): find the port (status.id if marked, else
adopted by marker, else imported, else created — before a create, wait for the Network
and SecurityGroup objects it names — and its ID recorded at once) → put back missing
marker tags → the description, the security groups and the allowed address pairs, in
place → report (its address, the server holding it).

A VirtualMachine naming the Port in ``spec.ports`` boots its server on it; the port
outlives that server, and the VM's next server boots on it again (same ID, same
address). The port's binding is read from the watch's listing of Kumo's ports.

Deletion waits while a VirtualMachine names the Port (``WaitingForUsers``: it lets go
first), then while a server still holds the port (``PortInUse``: Neutron would tear it
from the server), then deletes it. ``deletionPolicy: Orphan`` leaves it, released.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from kumo.api import kinds
from kumo.api.port import PortSpec
from kumo.engine import lifecycle, orphan, ownership
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import address_pairs, described, marking, references
from kumo.kinds.port import plan
from kumo.ports.model import Port, marker_tags

#: Safety net while a Network or SecurityGroup object it names is not Ready yet (their
#: status change wakes the Port).
WAITING_SECONDS = 30.0
#: Between finalize passes while users or a server hold the port.
DELETE_SECONDS = 3.0


class PortActuator:
    info = kinds.PORT

    async def reconcile(self, ctx: Context, obj: Obj, spec: PortSpec) -> Result:
        plan.check_address(spec.address)
        description = described.text(spec.description, obj.uid)
        network = references.resolve(ctx.store, obj.namespace, "Network", spec.network, "id")
        groups = plan.groups(spec, obj.namespace, ctx.store)
        wanted_pairs = address_pairs.from_spec(spec.allowed_address_pairs)
        uid = obj.uid

        async def network_id() -> str:
            if spec.network is None:
                return await ctx.cloud.default_network_id(external=False, field="spec.network")
            return await ctx.cloud.network_id(network.value or spec.network, "spec.network")

        async def before_create() -> lifecycle.Wait | None:
            if not groups.waiting:
                return None
            return lifecycle.Wait(
                f"spec.securityGroups: SecurityGroup(s) {', '.join(groups.waiting)} not Ready yet",
                reason="WaitingForSecurityGroup",
                phase="Pending",
                after=WAITING_SECONDS,
            )

        async def create() -> Port:
            return await ctx.cloud.create_port(
                name=plan.port_name(obj.namespace, obj.name),
                network_id=await network_id(),
                address=spec.address,
                description=description,
                security_groups=await _group_ids(ctx, groups) if groups.managed else None,
                allowed_address_pairs=wanted_pairs,
                tags=marker_tags(uid),
            )

        async def retag(port: Port) -> lifecycle.Step[Port]:
            set_tags = ctx.cloud.set_port_tags
            return lifecycle.Step(await described.complete_tags(port, uid, set_tags))

        async def describe(port: Port) -> lifecycle.Step[Port]:
            if (port.description or "") == description:
                return lifecycle.Step(port)
            return lifecycle.Step(await ctx.cloud.update_port(port.id, description=description))

        async def security_groups(port: Port) -> lifecycle.Step[Port]:
            if not groups.managed or groups.waiting:  # not Ready yet: it keeps what it has
                return lifecycle.Step(port)
            wanted = plan.group_changes(await _group_ids(ctx, groups), port)
            if wanted is None:
                return lifecycle.Step(port)
            changed = await ctx.cloud.update_port(port.id, security_groups=wanted)
            ctx.events.emit(
                obj,
                "Normal",
                "SecurityGroupsChanged",
                f"port {port.id}: security groups {', '.join(wanted) or '(none)'} (in place)",
            )
            return lifecycle.Step(changed)

        async def pairs(port: Port) -> lifecycle.Step[Port]:
            if address_pairs.same(port, wanted_pairs):
                return lifecycle.Step(port)
            changed = await ctx.cloud.update_port(port.id, allowed_address_pairs=wanted_pairs)
            shown = ", ".join(p.ip_address for p in wanted_pairs) or "(none)"
            ctx.events.emit(
                obj, "Normal", "AddressPairsSet", f"port {port.id}: allowed address pairs {shown}"
            )
            return lifecycle.Step(changed)

        async def report(port: Port) -> Result:
            address = port.fixed_addresses[0] if port.fixed_addresses else "(no address)"
            where = f"held by server {port.device_id}" if port.device_id else "free"
            return Result(
                phase=plan.phase(port),
                ready=True,
                reason="Ready",
                message=f"port {port.id} {address} on network {port.network_id}, {where}",
                status=plan.status(port),
            )

        async def verify(port: Port) -> list[Change]:
            return plan.import_mismatches(port, await network_id(), spec.address)

        if network.waiting and not obj.status.get("id"):  # nothing to create or import on
            return Result.waiting(
                "Pending", "WaitingForNetwork", f"spec.network: {network.waiting}", WAITING_SECONDS
            )
        return await lifecycle.reconcile_owned(
            ctx,
            obj,
            lifecycle.Lifecycle(
                owned=_ports(ctx, obj, description, verify),
                create=create,
                created=lambda port: lifecycle.Wait(f"port {port.id} created", after=0.5),
                report=report,
                status=plan.status,
                before_create=before_create,
                updaters=[retag, describe, security_groups, pairs],
            ),
        )

    async def finalize(self, ctx: Context, obj: Obj, spec: PortSpec | None) -> Result:
        """Once no VirtualMachine names it and no server holds it: delete the port."""
        users = references.users_of(ctx.store, obj.namespace, self.info.kind, obj.name)
        if users:
            who = "; ".join(f"{kind}(s) {', '.join(names)}" for kind, names in users.items())
            return Result.waiting(
                "Deleting",
                "WaitingForUsers",
                f"{who} use the port (spec.ports); it is deleted once they let it go",
                after=DELETE_SECONDS,
            )
        owned = _ports(ctx, obj, "")
        bound = [p for p in await ownership.carrying_marker(obj, owned) if p.device_id]
        if bound:
            held = ", ".join(f"port {p.id} by server {p.device_id}" for p in bound)
            return Result.waiting(
                "Deleting",
                "PortInUse",
                f"{held}: deleted once the server lets it go (Kumo never takes a port "
                "from a server)",
                after=DELETE_SECONDS,
            )
        return await ownership.finalize_owned(ctx, obj, owned, DELETE_SECONDS)

    async def release(self, ctx: Context, obj: Obj, spec: PortSpec | None) -> Result:
        """The port stays — bound or not — released: the marker swapped for the orphan
        mark; ``import`` takes it over again."""
        return await orphan.release_owned(ctx, obj, _ports(ctx, obj, ""))

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """Ports being deleted that wait for a VM naming them (its change or deletion may
        end the wait); Ports waiting for the Network or SecurityGroup they name."""
        if going := references.deleting_targets(store, kind, body, self.info.kind):
            return going
        return references.unbuilt_referrers(store, self.info.kind, kind, body)


async def _group_ids(ctx: Context, groups: plan.Groups) -> list[str]:
    """The IDs of the spec's security groups: those the namespace tells, then the cloud's
    by name (exactly one each)."""
    ids = list(groups.ids)
    for name in groups.names:
        found = await ctx.cloud.find_security_groups_by_name(name)
        if len(found) != 1:
            what = "not found" if not found else f"names {len(found)} groups: give its ID"
            raise TerminalError(
                "SecurityGroupNotFound" if not found else "AmbiguousName",
                f"security group {name!r} {what}",
                field="spec.securityGroups",
            )
        ids.append(found[0].id)
    return ids


def _ports(
    ctx: Context,
    obj: Obj,
    description: str,
    verify: Callable[[Port], Awaitable[list[Change]]] | None = None,
) -> ownership.Owned[Port]:
    """The object's port as the ownership routine sees it: the marker is the
    ``kumo-owner`` tag (or the description's last word). ``spec.import`` finds one by ID
    or name, checks its network and address, and marks it (tags, then description). A
    port a server holds is never deleted here: the finalizer waits for it first."""
    cloud = ctx.cloud
    uid = obj.uid

    async def list_owned() -> list[Port]:
        return await cloud.list_owned_ports(uid)

    async def delete(port: Port) -> None:
        if port.device_id:
            raise TerminalError(
                "PortInUse",
                f"port {port.id} is bound to server {port.device_id}: Kumo does not delete it",
                field="spec",
            )
        await cloud.delete_port(port.id)

    async def set_description(port_id: str, text: str) -> Port:
        return await cloud.update_port(port_id, description=text)

    return ownership.Owned(
        noun="port",
        id_of=lambda port: port.id,
        **marking.by_description(Port, uid, cloud.set_port_tags, set_description, description),
        get_by_id=cloud.get_port,
        list_owned=list_owned,
        delete=delete,
        find_by_name=cloud.find_ports_by_name,
        name_of=lambda port: port.name,
        verify=verify,
        fetch=lambda port: cloud.fetch_port(port.id),
    )
