"""Network actuator: a Neutron network, its subnets and, optionally, one router.

Order of a pass (the engine's lifecycle): find the network (status.id only if marked,
else adopt by its marker, else import, else create it and record its ID at once) →
complete its marker tags → put its own attributes right (MTU, port security,
description) → subnets: delete those the spec
no longer has and no port uses (their router interface first), update the rest in
place, create the missing ones (a new CIDR overlapping a subnet still in use waits) →
the router: create it with its gateway (recorded at once as ``routerId``), complete its
marker tags, correct the gateway, add and remove interfaces so there is one on every
subnet with a gateway → report. Without ``spec.router`` a router Kumo made is taken
apart.

Marked at create: Neutron takes no tags in a create, so the network's and the router's
POST carry the marker word in their description (kinds/described.py) and the tags
follow. One whose create answer was lost, or whose tags never came (Kumo killed between
the calls), is adopted by its description on the next pass and its tags completed —
never made a second time.

Drift — a subnet deleted or an interface removed by hand — reaches the object through the
cloud watch (:class:`~kumo.cloud.services.networking.watch.NetworkWatcher`) within one interval.

Deletion waits while Kumo objects name the network (``WaitingForUsers``) and while other
ports remain on it (``NetworkInUse``: Neutron refuses to delete a network with ports);
then interfaces → router → network (Neutron deletes the subnets with it).
``deletionPolicy: Orphan`` swaps the network's and the router's marker (tags and
description word) for the orphan mark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from kumo.api import kinds
from kumo.api.network import NetworkSpec
from kumo.engine import lifecycle, orphan, ownership
from kumo.engine.errors import TransientError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import described, marking
from kumo.kinds.network import plan
from kumo.kinds.references import deleting_targets, users_of
from kumo.ports.model import Network, Router, marker_tags

#: Between finalize passes while objects or ports still use the network.
DELETE_SECONDS = 3.0
#: While a subnet change waits for ports to leave a subnet.
BLOCKED_SECONDS = 15.0


class NetworkActuator:
    info = kinds.NETWORK

    async def reconcile(self, ctx: Context, obj: Obj, spec: NetworkSpec) -> Result:
        blocked: list[str] = []
        router_status: dict[str, Any] = {}

        async def create() -> Network:
            network: Network = await ctx.cloud.create_network(
                name=plan.network_name(obj.namespace, obj.name),
                description=described.text(spec.description, obj.uid),
                mtu=spec.mtu,
                port_security=spec.port_security,
                tags=marker_tags(obj.uid),
            )
            return network

        async def retag(network: Network) -> lifecycle.Step[Network]:
            return lifecycle.Step(
                await described.complete_tags(network, obj.uid, ctx.cloud.set_network_tags)
            )

        async def attributes(network: Network) -> lifecycle.Step[Network]:
            changes = plan.network_updates(spec, observed_network(network), obj.uid)
            if changes:
                await ctx.cloud.update_network(network.id, changes)
                network = dataclasses.replace(
                    network,
                    mtu=changes.get("mtu", network.mtu),
                    port_security=changes.get("port_security_enabled", network.port_security),
                    description=changes.get("description", network.description),
                )
            return lifecycle.Step(network)

        async def subnets(network: Network) -> lifecycle.Step[Network]:
            network, why = await _keep_subnets(ctx, obj, spec, network)
            blocked.extend(why)
            return lifecycle.Step(network)

        async def router(network: Network) -> lifecycle.Step[Network]:
            router_status.update(await _keep_router(ctx, obj, spec, network))
            return lifecycle.Step(network)

        def observed(network: Network) -> dict[str, Any]:
            return {
                "name": network.name,
                "subnets": [
                    {"cidr": s.cidr, "id": s.id, "gateway": s.gateway} for s in network.subnets
                ],
                **router_status,
            }

        async def report(network: Network) -> Result:
            status = observed(network)
            described = f"network {network.id} with {len(network.subnets)} subnet(s)" + (
                f" and router {router_status['routerId']}" if router_status.get("routerId") else ""
            )
            return Result(
                phase="Active",
                ready=True,
                reason="Ready",
                message="; ".join([described, *blocked]),
                status=status,
                requeue_after=BLOCKED_SECONDS if blocked else None,
            )

        return await lifecycle.reconcile_owned(
            ctx,
            obj,
            lifecycle.Lifecycle(
                owned=_networks(ctx, obj),
                create=create,
                created=lambda _: lifecycle.Wait("network created", after=0.2),
                report=report,
                status=observed,
                updaters=[retag, attributes, subnets, router],
            ),
        )

    async def finalize(self, ctx: Context, obj: Obj, spec: NetworkSpec | None) -> Result:
        """Once no Kumo object names it and no other port is on it: the router's
        interfaces, the router, then the network (its subnets go with it)."""
        users = network_users(ctx.store, obj.namespace, obj.name)
        if users:
            return Result.waiting(
                "Deleting",
                "WaitingForUsers",
                f"{'; '.join(users)} use the network; it is deleted once they are gone",
                after=DELETE_SECONDS,
            )
        network_id = await _own_network_id(ctx, obj)
        if network_id is not None:
            ports = [_observed_port(p) for p in await ctx.cloud.network_ports(network_id)]
            if why := plan.deletion_wait(ports):
                return Result.waiting("Deleting", "NetworkInUse", why, after=DELETE_SECONDS)
        for router in await _own_routers(ctx, obj):
            await _take_router_apart(ctx, router)
        try:
            return await ownership.finalize_owned(ctx, obj, _networks(ctx, obj), DELETE_SECONDS)
        except TransientError as error:
            if error.reason != "CloudBusy":
                raise
            return Result.waiting(
                "Deleting",
                "NetworkInUse",
                f"Neutron refuses to delete network {network_id}: ports still use it",
                after=DELETE_SECONDS,
            )

    async def release(self, ctx: Context, obj: Obj, spec: NetworkSpec | None) -> Result:
        """The network, its subnets and the router stay, their tags swapped for the
        orphan mark."""
        return await orphan.release_owned(ctx, obj, _routers(ctx, obj), _networks(ctx, obj))

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """Networks being deleted that wait for an object naming them (its change, its
        deletion, may end the wait)."""
        return deleting_targets(store, kind, body, self.info.kind)


def network_users(store: Store, namespace: str, name: str) -> list[str]:
    """Kumo objects in ``namespace`` that name the Network ``name`` in a declared
    reference (a VM's ``networks``, a group's template, a LoadBalancer's ``vipNetwork``),
    as ``Kind(s) a, b`` phrases."""
    users = users_of(store, namespace, kinds.NETWORK.kind, name)
    return [f"{kind}(s) {', '.join(names)}" for kind, names in users.items()]


def observed_network(network: Network) -> plan.ObservedNetwork:
    return plan.ObservedNetwork(
        id=network.id,
        mtu=network.mtu,
        port_security=network.port_security,
        description=network.description,
    )


def observed_subnets(network: Network, used: Collection[str] = ()) -> list[plan.ObservedSubnet]:
    return [
        plan.ObservedSubnet(
            id=s.id,
            cidr=s.cidr,
            gateway=s.gateway,
            dns_nameservers=s.dns_nameservers,
            allocation_pools=s.allocation_pools,
            enable_dhcp=s.enable_dhcp,
            used=s.id in used,
        )
        for s in network.subnets
    ]


def _observed_port(port: Any) -> plan.ObservedPort:
    return plan.ObservedPort(port.id, port.device_owner, tuple(port.subnet_ids))


async def _keep_subnets(
    ctx: Context, obj: Obj, spec: NetworkSpec, network: Network
) -> tuple[Network, list[str]]:
    """Subnets as the spec has them; what cannot change now, naming the field. Ports
    are read only when a subnet would go (whether a port still uses it)."""
    changes = plan.plan_subnets(spec, observed_subnets(network))
    if changes.delete:
        ports = [_observed_port(p) for p in await ctx.cloud.network_ports(network.id)]
        used = plan.subnets_in_use(ports)
        changes = plan.plan_subnets(spec, observed_subnets(network, used))
    if changes.empty:
        return network, changes.blocked
    subnets = {s.id: s for s in network.subnets}
    routers = await _own_routers(ctx, obj) if changes.delete else []
    for gone in changes.delete:
        for router in routers:
            if gone.id in router.interfaces:
                await ctx.cloud.remove_router_interface(router.id, gone.id)
        await ctx.cloud.delete_subnet(network.id, gone.id)
        subnets.pop(gone.id, None)
        ctx.events.emit(obj, "Normal", "SubnetDeleted", f"deleted subnet {gone.cidr} ({gone.id})")
    for subnet_id, update in changes.update:
        await ctx.cloud.update_subnet(network.id, subnet_id, update)
        ctx.events.emit(
            obj,
            "Normal",
            "SubnetUpdated",
            f"updated subnet {subnets[subnet_id].cidr}: {', '.join(sorted(update))}",
        )
    for wanted in changes.create:
        created = await ctx.cloud.create_subnet(
            network.id,
            name=f"{network.name}-{wanted.cidr}",
            cidr=wanted.cidr,
            ip_version=wanted.ip_version,
            gateway=wanted.gateway,
            dns_nameservers=list(wanted.dns_nameservers),
            allocation_pools=[(p.start, p.end) for p in wanted.allocation_pools],
            enable_dhcp=wanted.enable_dhcp,
        )
        subnets[created.id] = created
        ctx.events.emit(
            obj, "Normal", "SubnetCreated", f"created subnet {created.cidr} ({created.id})"
        )
    kept = tuple(sorted(subnets.values(), key=lambda s: s.cidr))
    return dataclasses.replace(network, subnets=kept), changes.blocked


async def _keep_router(
    ctx: Context, obj: Obj, spec: NetworkSpec, network: Network
) -> dict[str, Any]:
    """The router as the spec has it; its status fields."""
    routers = await _own_routers(ctx, obj)
    if spec.router is None:
        for router in routers:
            await _take_router_apart(ctx, router)
            ctx.events.emit(obj, "Normal", "RouterDeleted", f"deleted router {router.id}")
        if routers or obj.status.get("routerId"):
            await ownership.record(ctx, obj, {"routerId": None})
        return {"routerId": None, "externalAddress": None}
    external_id = await ctx.cloud.floating_ip_network_id(
        spec.router.external_network, field="spec.router.externalNetwork"
    )
    owned = _routers(ctx, obj)
    if routers:
        router, *duplicates = sorted(
            routers, key=lambda r: (r.id != obj.status.get("routerId"), r.id)
        )
        for duplicate in duplicates:
            await _take_router_apart(ctx, duplicate)
            ctx.events.emit(
                obj, "Normal", "DuplicateDeleted", f"deleted duplicate router {duplicate.id}"
            )
        if obj.status.get("routerId") != router.id:
            ctx.events.emit(
                obj, "Normal", "Adopted", f"adopted router {router.id} carrying Kumo's marker"
            )
            await ownership.record(ctx, obj, {"routerId": router.id})
        router = await ownership.remark(ctx, obj, owned, router)
    else:

        async def create() -> Router:
            made: Router = await ctx.cloud.create_router(
                name=plan.network_name(obj.namespace, obj.name),
                description=described.text(None, obj.uid, field="spec.router"),
                external_network_id=external_id,
                enable_snat=spec.router.enable_snat if spec.router else True,
                tags=marker_tags(obj.uid),
            )
            return made

        router = await ownership.create_owned(ctx, obj, owned, create)
    # Tags missing: a lost create answer, or a crash between the create and the tags.
    router = await described.complete_tags(router, obj.uid, ctx.cloud.set_router_tags)
    if router.external_network_id != external_id or (
        router.enable_snat is not None and router.enable_snat != spec.router.enable_snat
    ):
        await ctx.cloud.set_router_gateway(router.id, external_id, spec.router.enable_snat)
        ctx.events.emit(
            obj,
            "Normal",
            "RouterGatewaySet",
            f"router {router.id}: gateway on network {external_id}",
        )
    interfaces = plan.plan_interfaces(spec, observed_subnets(network), set(router.interfaces))
    for subnet_id in interfaces.add:
        await ctx.cloud.add_router_interface(router.id, subnet_id)
        ctx.events.emit(
            obj, "Normal", "InterfaceAdded", f"router {router.id}: interface on subnet {subnet_id}"
        )
    for subnet_id in interfaces.remove:
        await ctx.cloud.remove_router_interface(router.id, subnet_id)
        ctx.events.emit(
            obj,
            "Normal",
            "InterfaceRemoved",
            f"router {router.id}: removed interface on subnet {subnet_id}",
        )
    address = router.external_addresses[0] if router.external_addresses else None
    return {"routerId": router.id, "externalAddress": address}


async def _take_router_apart(ctx: Context, router: Router) -> None:
    """Interfaces first: Neutron refuses to delete a router that has them."""
    for subnet_id in router.interfaces:
        await ctx.cloud.remove_router_interface(router.id, subnet_id)
    await ctx.cloud.delete_router(router.id)


async def _own_routers(ctx: Context, obj: Obj) -> list[Router]:
    """The routers carrying this object's marker (the recorded one included)."""
    return await ownership.carrying_marker(obj, _routers(ctx, obj))


async def _own_network_id(ctx: Context, obj: Obj) -> str | None:
    owned = await ownership.carrying_marker(obj, _networks(ctx, obj))
    return owned[0].id if owned else None


# -- ownership -------------------------------------------------------------------------------


def _networks(ctx: Context, obj: Obj) -> ownership.Owned[Network]:
    """The object's Neutron network as the ownership routine sees it (tags ``kumo``,
    ``kumo-owner=<uid>``, or before they came the description's marker word);
    ``spec.import`` finds one by ID or name and marks it (tags, then description)."""
    cloud = ctx.cloud

    async def delete(network: Network) -> None:
        await cloud.delete_network(network.id)

    async def set_description(network_id: str, text: str) -> None:
        await cloud.update_network(network_id, {"description": text})

    return ownership.Owned(
        noun="network",
        id_of=lambda n: n.id,
        **marking.by_description(Network, obj.uid, cloud.set_network_tags, set_description),
        get_by_id=cloud.get_network,
        list_owned=lambda: cloud.list_owned_networks(obj.uid),
        delete=delete,
        find_by_name=cloud.find_networks_by_name,
        fetch=lambda n: cloud.fetch_network(n.id),
    )


def _routers(ctx: Context, obj: Obj) -> ownership.Owned[Router]:
    """The object's router: made by Kumo only (never imported), recorded as ``routerId``."""
    cloud = ctx.cloud

    async def delete(router: Router) -> None:
        await _take_router_apart(ctx, router)

    async def set_description(router_id: str, text: str) -> None:
        await cloud.update_router(router_id, description=text)

    return ownership.Owned(
        noun="router",
        id_of=lambda r: r.id,
        # its ``mark`` is a legacy marker's (a router is never imported)
        **marking.by_description(Router, obj.uid, cloud.set_router_tags, set_description),
        get_by_id=cloud.get_router,
        list_owned=lambda: cloud.list_owned_routers(obj.uid),
        delete=delete,
        id_field="routerId",
        fetch=lambda r: cloud.fetch_router(r.id),
    )
