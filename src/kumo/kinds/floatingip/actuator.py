"""FloatingIP actuator: observe the Neutron floating IP, point it at its target, report.

Order of a pass (the owned-resource lifecycle): resolve the external network → find the
floating IP (status.id if marked, else adopted by marker, else imported, else created
and its ID recorded at once; the address is allocated even while the target has nothing
to associate with, so it can be published early) → put back a missing marker tag →
correct the description → associate it with its target's port, or hold it (no port)
when there is no target → report.

The address follows its target: a VirtualMachine whose server is replaced (healed,
rolled, deleted behind Kumo's back) records the new server's ID, its event enqueues the
FloatingIPs naming it (:meth:`FloatingIPActuator.dependents`), and the pass associates
the same floating IP with the new server's port as soon as Neutron has one. Whether the
floating IP still points at the VM's server is read from the watch's listing
(``port_details``): the server's ports are listed only when it does not.

Deletion disassociates, then releases the address (``deletionPolicy: Orphan`` keeps it,
released: the marker swapped for the orphan mark, for a later ``import``).
"""

from __future__ import annotations

from kumo.api import kinds
from kumo.api.floatingip import FloatingIPSpec
from kumo.engine import lifecycle, orphan, ownership
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import described, marking, ordering, references
from kumo.kinds.floatingip import plan
from kumo.ports.model import FloatingIP, marker_tags

#: While the target's server has no port yet (it is being built): look again this soon
#: (one port listing per look), so the address follows within seconds of the port.
PORT_SECONDS = 2.0
#: Safety net while the target has no server or load balancer yet (its events enqueue
#: this object anyway).
TARGET_SECONDS = 10.0
#: Seconds between finalize passes while Neutron releases the address.
DELETE_SECONDS = 1.0


class FloatingIPActuator:
    info = kinds.FLOATING_IP

    async def reconcile(self, ctx: Context, obj: Obj, spec: FloatingIPSpec) -> Result:
        plan.check_address(spec.address)
        plan.target(spec)  # both targets given: InvalidSpec before anything is allocated
        network_id = await ctx.cloud.floating_ip_network_id(spec.network)
        description = described.text(spec.description, obj.uid)
        uid = obj.uid

        async def create() -> FloatingIP:
            return await ctx.cloud.create_floating_ip(
                network_id=network_id,
                address=spec.address,
                description=description,
                tags=marker_tags(uid),
            )

        async def retag(fip: FloatingIP) -> lifecycle.Step[FloatingIP]:
            set_tags = ctx.cloud.set_floating_ip_tags
            return lifecycle.Step(await described.complete_tags(fip, uid, set_tags))

        async def describe(fip: FloatingIP) -> lifecycle.Step[FloatingIP]:
            if (fip.description or "") == description:
                return lifecycle.Step(fip)
            return lifecycle.Step(
                await ctx.cloud.update_floating_ip(fip.id, description=description)
            )

        async def associate(fip: FloatingIP) -> lifecycle.Step[FloatingIP]:
            try:
                wanted = plan.wanted(spec, obj.namespace, ctx.store)
            except plan.WaitingForTarget as waiting:
                return lifecycle.Step(fip, _waiting(str(waiting), TARGET_SECONDS))
            except TerminalError as error:
                error.status = error.status or plan.status(fip)
                raise
            if wanted is None:
                return lifecycle.Step(await _hold(ctx, obj, fip))
            return await _follow(ctx, obj, fip, wanted)

        async def report(fip: FloatingIP) -> Result:
            chosen = plan.target(spec)
            if fip.port_id is None:
                phase, what = "Held", "held (not associated)"
            else:
                phase = "Associated"
                towards = f"{chosen.kind} {chosen.name}, " if chosen else ""
                what = f"→ {fip.fixed_address or '?'} ({towards}port {fip.port_id})"
            return Result(
                phase=phase,
                ready=True,
                reason="Ready",
                message=f"floating IP {fip.address} {what}",
                status=plan.status(fip),
            )

        return await lifecycle.reconcile_owned(
            ctx,
            obj,
            lifecycle.Lifecycle(
                owned=_floating_ips(ctx, obj, network_id, spec.address, description),
                create=create,
                created=lambda fip: lifecycle.Wait(
                    f"floating IP {fip.address} allocated", after=0.5
                ),
                report=report,
                status=plan.status,
                updaters=[retag, describe, associate],
            ),
        )

    async def finalize(self, ctx: Context, obj: Obj, spec: FloatingIPSpec | None) -> Result:
        """Disassociate, then release the address (every floating IP carrying the
        marker); done when none is left. A DNSRecord pointing at it, being deleted
        too, goes first."""
        waiting = ordering.wait_for_referrers(ctx.store, obj)
        if waiting:
            return waiting
        owned = _floating_ips(ctx, obj, "", None, "")
        return await ownership.finalize_owned(ctx, obj, owned, DELETE_SECONDS)

    async def release(self, ctx: Context, obj: Obj, spec: FloatingIPSpec | None) -> Result:
        """The address stays allocated — and associated, as it is — released: the
        marker swapped for the orphan mark; ``import`` takes it over again."""
        return await orphan.release_owned(ctx, obj, _floating_ips(ctx, obj, "", None, ""))

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """FloatingIPs whose association changes with this object: the VirtualMachine
        (a new server) or LoadBalancer they name; a DNSRecord that goes first going
        away may unblock the deletion of the FloatingIP it pointed at."""
        if unblocked := ordering.unblocked_by(kind, body, self.info.kind):
            return unblocked
        if kind not in references.referencing(self.info.kind):
            return []
        meta = body.get("metadata") or {}
        namespace = meta.get("namespace", "default")
        wanted = (kind, meta.get("name", ""))
        return [
            Key(self.info.kind, namespace, fip["metadata"]["name"])
            for fip in store.list(self.info.kind, namespace)
            if wanted in plan.referenced(fip.get("spec") or {}).items()
        ]


# -- association -------------------------------------------------------------------------------


async def _hold(ctx: Context, obj: Obj, fip: FloatingIP) -> FloatingIP:
    """No target: the address is held, associated with nothing."""
    if fip.port_id is None:
        return fip
    held = await ctx.cloud.associate_floating_ip(fip.id, None, None)
    ctx.events.emit(
        obj,
        "Normal",
        "Disassociated",
        f"floating IP {fip.address} disassociated from port {fip.port_id} (no target: held)",
    )
    return held


async def _follow(
    ctx: Context, obj: Obj, fip: FloatingIP, wanted: plan.Wanted
) -> lifecycle.Step[FloatingIP]:
    """Associate with the target's port, once it has one."""
    target = wanted.target
    fixed: str | None
    if wanted.server_id is not None:
        if plan.points_at_server(fip, wanted.server_id):
            return lifecycle.Step(fip)
        ports = await ctx.cloud.list_ports_of_device(wanted.server_id)
        chosen = plan.pick_port(ports, wanted.primary_ip)
        if chosen is None:
            return lifecycle.Step(
                fip,
                _waiting(
                    f"{target.kind} {target.name!r}: server {wanted.server_id} has no port "
                    "with an IPv4 address yet",
                    PORT_SECONDS,
                ),
            )
        port_id, fixed = chosen[0].id, chosen[1]
        where = f"{target.kind} {target.name}, server {wanted.server_id}"
    else:
        assert wanted.lb_id is not None
        lb = await ctx.cloud.get_load_balancer(wanted.lb_id)
        if lb is None or not lb.vip_port_id:
            return lifecycle.Step(
                fip,
                _waiting(f"{target.kind} {target.name!r} has no VIP port yet", TARGET_SECONDS),
            )
        port_id, fixed = lb.vip_port_id, lb.vip_address
        where = f"{target.kind} {target.name} VIP"
        if plan.associated(fip, port_id, fixed):
            return lifecycle.Step(fip)
    try:
        moved = await ctx.cloud.associate_floating_ip(fip.id, port_id, fixed)
    except TerminalError as error:  # e.g. the port's network has no router to the network
        raise TerminalError(
            error.reason,
            f"cannot associate floating IP {fip.address} with port {port_id} ({where}): "
            f"{error.detail}",
            field=target.field,
            status=plan.status(fip),
        ) from error
    before = f" (was port {fip.port_id})" if fip.port_id else ""
    ctx.events.emit(
        obj,
        "Normal",
        "Associated",
        f"floating IP {fip.address} → {fixed} on port {port_id} ({where}){before}",
    )
    return lifecycle.Step(moved)


def _waiting(message: str, after: float) -> lifecycle.Wait:
    return lifecycle.Wait(message, reason="WaitingForTarget", phase="Waiting", after=after)


# -- ownership ---------------------------------------------------------------------------------


def _floating_ips(
    ctx: Context, obj: Obj, network_id: str, address: str | None, description: str
) -> ownership.Owned[FloatingIP]:
    """The object's floating IP as the ownership routine sees it: the marker is the
    ``kumo-owner`` tag (or the description's last word). ``spec.import`` finds one by ID
    or by address (``import.name``: a floating IP's address is its name), checks its
    network and address, and marks it (tags, then description)."""
    cloud = ctx.cloud
    uid = obj.uid

    async def list_owned() -> list[FloatingIP]:
        return await cloud.list_owned_floating_ips(uid)

    async def delete(fip: FloatingIP) -> None:
        if fip.port_id is not None:  # disassociated first: the address leaves its port
            await cloud.associate_floating_ip(fip.id, None, None)
            ctx.events.emit(
                obj,
                "Normal",
                "Disassociated",
                f"floating IP {fip.address} disassociated from port {fip.port_id}",
            )
        await cloud.delete_floating_ip(fip.id)

    async def verify(fip: FloatingIP) -> list[Change]:
        return plan.import_mismatches(fip, network_id, address)

    async def set_description(fip_id: str, text: str) -> FloatingIP:
        return await cloud.update_floating_ip(fip_id, description=text)

    async def fetch(fip: FloatingIP) -> FloatingIP | None:
        listed: list[FloatingIP] = await cloud.fetch_floating_ips()  # the API's (one call)
        return next((f for f in listed if f.id == fip.id), None)

    return ownership.Owned(
        noun="floating IP",
        id_of=lambda fip: fip.id,
        **marking.by_description(
            FloatingIP, uid, cloud.set_floating_ip_tags, set_description, description
        ),
        get_by_id=cloud.get_floating_ip,
        list_owned=list_owned,
        delete=delete,
        unfit=lambda fip: plan.unfit(fip, network_id, address),
        find_by_name=cloud.find_floating_ips_by_address,
        verify=verify,
        fetch=fetch,
    )
