"""The LoadBalancer's anchor: the checks only Kumo can make, then its Octavia load
balancer, found or created by the ownership rules (``engine/ownership.py``).

In order: the region, unique frontend ports, the VIP network (a Network object of
Kumo's must be Ready first: a :class:`Wait` while it is not and nothing exists yet),
the groups the ports name; then the load balancer by ``status.id``, else adopted by
its marker (or imported), else created with the marker, its ID recorded at once. One
Octavia put in ERROR is a terminal error.

The pass that creates the load balancer does not end here with a ``Wait``, as the
composite lifecycle's anchor may: it goes on with ``created`` set, and reports the new
load balancer's status (ID, VIP, its ports as yet unbuilt) and the monitors warning,
as every pass does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kumo.api.loadbalancer import LoadBalancerSpec
from kumo.engine import ownership
from kumo.engine.composite import BUSY
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError, TransientError
from kumo.engine.lifecycle import Wait
from kumo.engine.objects import Context, Obj, Store
from kumo.kinds import references
from kumo.kinds.loadbalancer import plan
from kumo.ports import Cloud, markers
from kumo.ports.model import LoadBalancer, marker_tags, owner_of, released_tags

#: Safety net while the VIP's Network is not Ready (its status change wakes the LB).
NETWORK_SECONDS = 30.0


@dataclass(frozen=True)
class Anchored:
    """The load balancer a pass works on, and the spec its references resolved."""

    lb: LoadBalancer
    spec: LoadBalancerSpec
    """``vipNetwork`` naming a Network object of Kumo's: its ID."""
    created: bool = False
    """Created this pass (Octavia has only started building it)."""


async def anchor(ctx: Context, obj: Obj, spec: LoadBalancerSpec) -> Anchored | Wait:
    """Check, then find or create the load balancer (module docstring)."""
    _check_region(ctx.cloud, spec)
    plan.validate(spec)
    vip = references.resolve(ctx.store, obj.namespace, "Network", spec.vip_network, "id")
    if vip.waiting and not obj.status.get("id"):
        message = f"spec.vipNetwork: {vip.waiting}"
        return Wait(message, "WaitingForNetwork", "Pending", NETWORK_SECONDS)
    if vip.value and vip.value != spec.vip_network:  # a Network object's: its ID
        spec = spec.model_copy(update={"vip_network": vip.value})
    _check_groups(ctx.store, obj.namespace, spec)
    owned = load_balancers(ctx, obj, spec)
    lb = await ownership.find_owned(ctx, obj, owned)
    if lb is None:
        lb = await ownership.create_owned(
            ctx, obj, owned, lambda: _create(ctx, obj, spec), "after-lb-create"
        )
        return Anchored(lb, spec, created=True)
    if lb.provisioning_status == plan.ERROR:
        raise TerminalError(
            "LoadBalancerError", f"Octavia put load balancer {lb.id} in ERROR", field="spec"
        )
    return Anchored(lb, spec)


def _check_region(cloud: Cloud, spec: LoadBalancerSpec) -> None:
    if spec.region and spec.region != cloud.region:
        raise TerminalError(
            "RegionMismatch",
            f"region {spec.region!r} is not the region of this namespace's cloud "
            f"credentials ({cloud.region or 'unset'!r})",
            field="spec.region",
        )


def _check_groups(store: Store, namespace: str, spec: LoadBalancerSpec) -> None:
    """A dangling group reference is the user's to fix (and must not empty the pools:
    bad input never deletes anything). ``groupObject: false``: no VirtualMachineGroup
    object stands behind the label the pool follows (a KumoCluster's control plane)."""
    for i, port in enumerate(spec.ports):
        group = port.real_servers.virtual_machine_group_ref
        if not port.real_servers.group_object:
            continue
        if store.get("VirtualMachineGroup", namespace, group) is None:
            raise TerminalError(
                "GroupNotFound",
                f"VirtualMachineGroup {group!r} not found in namespace {namespace!r}",
                field=f"spec.ports[{i}].realServers.virtualMachineGroupRef",
            )


def load_balancers(
    ctx: Context, obj: Obj, spec: LoadBalancerSpec | None = None
) -> ownership.Owned[LoadBalancer]:
    """The object's Octavia LB as the ownership routine sees it (tag ``kumo-owner=<uid>``).
    Deleting cascades to its listeners, pools, members and monitors; one already going
    (PENDING_DELETE) or busy (409) is left for the next pass. ``spec.import`` checks
    the fields Octavia cannot change (zone, VIP network, flavor) and tags only the load
    balancer: its listeners, pools, monitors and members are used as they are where
    they fit the spec, and never removed (they carry no marker)."""
    cloud = ctx.cloud

    async def delete(lb: LoadBalancer) -> None:
        if not plan.is_pending(lb):
            try:
                await cloud.delete_load_balancer(lb.id)
            except TransientError as error:  # busy: the next pass deletes it
                if error.reason != BUSY:
                    raise

    async def verify(lb: LoadBalancer) -> list[Change]:
        assert spec is not None
        network_id, flavor_id = await placement(cloud, spec)
        return plan.immutable_changes(spec, lb, network_id, flavor_id)

    async def mark(lb: LoadBalancer) -> LoadBalancer:
        tags = markers.marked_tags(lb.tags, obj.uid)
        await cloud.set_load_balancer_tags(lb.id, tags)
        return dataclasses.replace(lb, tags=tags, provisioning_status="PENDING_UPDATE")

    async def release(lb: LoadBalancer) -> None:
        # A 409 (CloudBusy) is the Orphan step's to wait for: not swallowed here.
        await cloud.set_load_balancer_tags(lb.id, released_tags(lb.tags, obj.uid))

    return ownership.Owned(
        noun="load balancer",
        id_of=lambda lb: lb.id,
        owner_of=lambda lb: owner_of(lb.tags),
        legacy=lambda lb: markers.legacy_tags(lb.tags),
        get_by_id=cloud.get_load_balancer,
        list_owned=lambda: cloud.list_owned_load_balancers(obj.uid),
        delete=delete,
        find_by_name=lambda name: cloud.find_load_balancers_by_name(name),
        name_of=lambda lb: lb.name,
        verify=verify,
        mark=mark,
        release=release,
        fetch=lambda lb: cloud.fetch_load_balancer(lb.id),
    )


async def _create(ctx: Context, obj: Obj, spec: LoadBalancerSpec) -> LoadBalancer:
    """Resolve every reference first (bad input fails before anything exists), then
    create with the marker (the ownership routine records the ID)."""
    network_id, flavor_id = await placement(ctx.cloud, spec)
    return await ctx.cloud.create_load_balancer(
        name=plan.lb_name(obj.namespace, obj.name),
        vip_network_id=network_id,
        description=spec.description,
        availability_zone=spec.zone,
        flavor_id=flavor_id,
        tags=marker_tags(obj.uid),
        vip_address=spec.vip_address,
    )


async def placement(cloud: Cloud, spec: LoadBalancerSpec) -> tuple[str, str | None]:
    """The VIP network and Octavia flavor the spec asks for."""
    if spec.vip_network:
        network_id = await cloud.network_id(spec.vip_network, field="spec.vipNetwork")
    else:
        network_id = await cloud.default_network_id(
            external=spec.vip_type == "public", field="spec.vipType"
        )
    flavor_id = None
    if spec.service_type != "generic":
        flavor_id = await cloud.lb_flavor_id(spec.service_type)
    return network_id, flavor_id
