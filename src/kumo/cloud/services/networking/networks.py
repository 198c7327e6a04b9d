"""Neutron calls: networks, their subnets, routers and router interfaces.

Plain REST on the network proxy (``/v2.0`` is the proxy's), like the security groups.

Ownership: a network and a router carry Neutron tags ``kumo`` and ``kumo-owner=<uid>``.
Neutron (Zed) refuses tags in a create's body, so the POST carries the marker word at
the end of the description (kumo/kinds/described.py writes it) and the tags follow in a
second call: one whose tags never came (the POST's answer lost, a crash between the
calls — the failpoints ``after-network-create`` and ``after-router-create`` sit there)
is still Kumo's (:func:`kumo.ports.model.described_owner`), listed by the watch and
adopted by the next pass, never made twice. Subnets carry no marker: a subnet on Kumo's
network is Kumo's, as a rule in Kumo's security group is.

Reads come from the watch's listings (:class:`~kumo.cloud.services.networking.watch.NetworkWatcher`): the
project's networks (kept when marked, by tag or description), their subnets, the
project's routers (likewise) and their interface ports — four calls per interval
whatever the number of networks. Ports on a network are read from the API, and only
when a subnet or the network is about to be deleted.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from openstack import exceptions as os_exc

from kumo.cloud import model
from kumo.cloud.services.networking.floating_ips import port_from
from kumo.cloud.services.networking.rest import NeutronBase
from kumo.cloud.services.networking.security_groups import marked
from kumo.cloud.services.networking.watch import NetworkWatcher
from kumo.engine.errors import TerminalError
from kumo.engine.failpoints import failpoint

NETWORK_FIELDS = ["id", "name", "status", "mtu", "port_security_enabled", "description", "tags"]
INTERFACE_OWNER = "network:router_interface"


class NetworksCalls(NeutronBase):
    # -- networks --------------------------------------------------------------------------

    async def get_network(self, network_id: str) -> model.Network | None:
        hit = self.watch.of(NetworkWatcher).networks.lookup(network_id)
        if isinstance(hit, model.Network):
            return hit
        # Not in the cache, or dropped from it (GONE): the watch keeps Kumo's marked
        # networks only, so one it no longer lists may live on untagged (released,
        # to be imported): only the API can say.
        return await self.fetch_network(network_id)

    async def fetch_network(self, network_id: str) -> model.Network | None:
        """The network (with its subnets) from the API, not the cache (None: gone)."""
        found = await self._get("get network", self._neutron, "get", f"/networks/{network_id}")
        if found is None:
            return None
        (network,) = await self._with_subnets([_network(found["network"])])
        return network

    async def list_owned_networks(self, uid: str) -> list[model.Network]:
        cache = self.watch.of(NetworkWatcher).networks
        if cache.answers_for(uid):
            return cache.owned_by(uid)

        async def listing() -> list[model.Network]:
            found = await self._project_networks()
            return await self._with_subnets([n for n in found if model.described_owner(n) == uid])

        return await self._relist(cache, uid, listing)

    async def find_networks_by_name(self, name: str) -> list[model.Network]:
        found = await self._call(
            "list networks",
            self._neutron_list,
            "/networks",
            "networks",
            {"name": name, "fields": NETWORK_FIELDS},
        )
        return await self._with_subnets([_network(x) for x in found])

    async def fetch_networks(self) -> list[model.Network]:
        return await self._with_subnets(marked(await self._project_networks()))

    async def _project_networks(self) -> list[model.Network]:
        """The project's own networks, without their subnets."""
        found = await self._call(
            "list networks",
            self._neutron_project,
            "/networks",
            "networks",
            {"fields": NETWORK_FIELDS},
        )
        return [_network(x) for x in found]

    async def _with_subnets(self, networks: list[model.Network]) -> list[model.Network]:
        """The networks with their subnets: one listing for all of them."""
        if not networks:
            return []
        found = await self._call(
            "list subnets",
            self._neutron_list,
            "/subnets",
            "subnets",
            {"network_id": [n.id for n in networks]},
        )
        by_network: dict[str, list[model.Subnet]] = {}
        for x in found:
            by_network.setdefault(x.get("network_id") or "", []).append(_subnet(x))
        return [
            dataclasses.replace(n, subnets=tuple(sorted(by_network.get(n.id, []), key=_cidr)))
            for n in networks
        ]

    async def network_ports(self, network_id: str) -> list[model.Port]:
        found = await self._call(
            "list ports on network",
            self._neutron_list,
            "/ports",
            "ports",
            {
                "network_id": network_id,
                "fields": ["id", "network_id", "device_id", "device_owner", "fixed_ips", "status"],
            },
        )
        return [port_from(x) for x in found]

    async def create_network(
        self,
        *,
        name: str,
        description: str,
        mtu: int | None,
        port_security: bool,
        tags: list[str],
    ) -> model.Network:
        """Create the network with ``description`` (carrying the marker word), then tag it."""
        body: dict[str, Any] = {
            "name": name,
            "description": description,
            "port_security_enabled": port_security,
            "admin_state_up": True,
        }
        if mtu is not None:
            body["mtu"] = mtu
        created = await self._create(
            "create network",
            self._neutron,
            "post",
            "/networks",
            resolved=[],
            in_doubt=(self.watch.of(NetworkWatcher).networks, model.owner_of(tags) or ""),
            json={"network": body},
            field="spec",
        )
        network = _network(created["network"])
        self.watch.of(NetworkWatcher).networks.put(network)  # marked by its description already
        failpoint("after-network-create")  # crash tests: adopted by its description
        await self.set_network_tags(network.id, tags)
        return dataclasses.replace(network, tags=list(tags))

    async def update_network(self, network_id: str, changes: dict[str, Any]) -> None:
        await self._call(
            "update network",
            self._neutron,
            "put",
            f"/networks/{network_id}",
            json={"network": changes},
            field=_spec_field(changes),
        )
        self.watch.of(NetworkWatcher).networks.update(
            network_id,
            lambda n: dataclasses.replace(
                n,
                mtu=changes.get("mtu", n.mtu),
                port_security=changes.get("port_security_enabled", n.port_security),
                description=changes.get("description", n.description),
            ),
        )
        self.watch.nudge(NetworkWatcher.service)

    async def set_network_tags(self, network_id: str, tags: list[str]) -> None:
        await self._put_neutron_tags(f"/networks/{network_id}", tags)
        self.watch.of(NetworkWatcher).networks.update(
            network_id, lambda n: dataclasses.replace(n, tags=list(tags))
        )
        self.watch.nudge(NetworkWatcher.service)

    async def delete_network(self, network_id: str) -> None:
        """Delete (Neutron deletes its subnets with it); one already gone is fine.
        Neutron answers 409 while ports use it (raised as CloudBusy: the caller waits)."""
        await self._delete("delete network", f"/networks/{network_id}")
        self.watch.of(NetworkWatcher).networks.forget(network_id)
        self.watch.nudge(NetworkWatcher.service)

    # -- subnets ---------------------------------------------------------------------------

    async def create_subnet(
        self,
        network_id: str,
        *,
        name: str,
        cidr: str,
        ip_version: int,
        gateway: str | None,
        dns_nameservers: list[str],
        allocation_pools: list[tuple[str, str]],
        enable_dhcp: bool,
    ) -> model.Subnet:
        body: dict[str, Any] = {
            "network_id": network_id,
            "name": name,
            "cidr": cidr,
            "ip_version": ip_version,
            "enable_dhcp": enable_dhcp,
        }
        if gateway == "none":
            body["gateway_ip"] = None
        elif gateway:
            body["gateway_ip"] = gateway
        if dns_nameservers:
            body["dns_nameservers"] = dns_nameservers
        if allocation_pools:
            body["allocation_pools"] = [{"start": s, "end": e} for s, e in allocation_pools]
        created = await self._call(
            "create subnet",
            self._neutron,
            "post",
            "/subnets",
            json={"subnet": body},
            field="spec.subnets",
        )
        subnet = _subnet(created["subnet"])
        self.watch.of(NetworkWatcher).networks.update(
            network_id,
            lambda n: dataclasses.replace(
                n, subnets=tuple(sorted((*n.subnets, subnet), key=_cidr))
            ),
        )
        self.watch.nudge(NetworkWatcher.service)
        return subnet

    async def update_subnet(self, network_id: str, subnet_id: str, changes: dict[str, Any]) -> None:
        await self._call(
            "update subnet",
            self._neutron,
            "put",
            f"/subnets/{subnet_id}",
            json={"subnet": changes},
            field="spec.subnets",
        )
        self.watch.nudge(NetworkWatcher.service)

    async def delete_subnet(self, network_id: str, subnet_id: str) -> None:
        await self._delete("delete subnet", f"/subnets/{subnet_id}")
        self.watch.of(NetworkWatcher).networks.update(
            network_id,
            lambda n: dataclasses.replace(
                n, subnets=tuple(s for s in n.subnets if s.id != subnet_id)
            ),
        )
        self.watch.nudge(NetworkWatcher.service)

    # -- routers ---------------------------------------------------------------------------

    async def get_router(self, router_id: str) -> model.Router | None:
        hit = self.watch.of(NetworkWatcher).routers.lookup(router_id)
        if isinstance(hit, model.Router):
            return hit
        return await self.fetch_router(router_id)

    async def fetch_router(self, router_id: str) -> model.Router | None:
        """The router (with its interfaces) from the API, not the cache (None: gone)."""
        found = await self._get("get router", self._neutron, "get", f"/routers/{router_id}")
        if found is None:
            return None
        (router,) = await self._with_interfaces([_router(found["router"])])
        return router

    async def list_owned_routers(self, uid: str) -> list[model.Router]:
        cache = self.watch.of(NetworkWatcher).routers
        if cache.answers_for(uid):
            return cache.owned_by(uid)

        async def listing() -> list[model.Router]:
            found = await self._project_routers()
            return await self._with_interfaces(
                [r for r in found if model.described_owner(r) == uid]
            )

        return await self._relist(cache, uid, listing)

    async def fetch_routers(self) -> list[model.Router]:
        return await self._with_interfaces(marked(await self._project_routers()))

    async def _project_routers(self) -> list[model.Router]:
        """The project's own routers, without their interfaces."""
        found = await self._call("list routers", self._neutron_project, "/routers", "routers")
        return [_router(x) for x in found]

    async def _with_interfaces(self, routers: list[model.Router]) -> list[model.Router]:
        """The routers with the subnets they have an interface on: one port listing."""
        if not routers:
            return []
        found = await self._call(
            "list router interfaces",
            self._neutron_list,
            "/ports",
            "ports",
            {
                "device_owner": INTERFACE_OWNER,
                "device_id": [r.id for r in routers],
                "fields": ["id", "device_id", "fixed_ips"],
            },
        )
        by_router: dict[str, set[str]] = {}
        for port in found:
            subnets = by_router.setdefault(port.get("device_id") or "", set())
            subnets.update(ip["subnet_id"] for ip in port.get("fixed_ips") or [])
        return [
            dataclasses.replace(r, interfaces=tuple(sorted(by_router.get(r.id, set()))))
            for r in routers
        ]

    async def create_router(
        self,
        *,
        name: str,
        description: str,
        external_network_id: str,
        enable_snat: bool,
        tags: list[str],
    ) -> model.Router:
        """Create the router with its gateway and ``description`` (carrying the marker
        word), then tag it."""
        created = await self._create(
            "create router",
            self._neutron,
            "post",
            "/routers",
            resolved=[],
            in_doubt=(self.watch.of(NetworkWatcher).routers, model.owner_of(tags) or ""),
            json={
                "router": {
                    "name": name,
                    "description": description,
                    "external_gateway_info": _gateway(external_network_id, enable_snat),
                }
            },
            field="spec.router",
        )
        router = _router(created["router"])
        self.watch.of(NetworkWatcher).routers.put(router)  # marked by its description already
        failpoint("after-router-create")  # crash tests: adopted by its description
        await self.set_router_tags(router.id, tags)
        return dataclasses.replace(router, tags=list(tags))

    async def update_router(self, router_id: str, *, description: str) -> None:
        await self._call(
            "update router",
            self._neutron,
            "put",
            f"/routers/{router_id}",
            json={"router": {"description": description}},
        )
        self.watch.of(NetworkWatcher).routers.update(
            router_id, lambda r: dataclasses.replace(r, description=description)
        )
        self.watch.nudge(NetworkWatcher.service)

    async def set_router_gateway(
        self, router_id: str, external_network_id: str, enable_snat: bool
    ) -> None:
        await self._call(
            "set router gateway",
            self._neutron,
            "put",
            f"/routers/{router_id}",
            json={"router": {"external_gateway_info": _gateway(external_network_id, enable_snat)}},
            field="spec.router",
        )
        self.watch.nudge(NetworkWatcher.service)

    async def set_router_tags(self, router_id: str, tags: list[str]) -> None:
        await self._put_neutron_tags(f"/routers/{router_id}", tags)
        self.watch.of(NetworkWatcher).routers.update(
            router_id, lambda r: dataclasses.replace(r, tags=list(tags))
        )
        self.watch.nudge(NetworkWatcher.service)

    async def add_router_interface(self, router_id: str, subnet_id: str) -> None:
        await self._call(
            "add router interface",
            self._neutron,
            "put",
            f"/routers/{router_id}/add_router_interface",
            json={"subnet_id": subnet_id},
            field="spec.router",
        )
        self.watch.of(NetworkWatcher).routers.update(
            router_id,
            lambda r: dataclasses.replace(r, interfaces=tuple(sorted({*r.interfaces, subnet_id}))),
        )
        self.watch.nudge(NetworkWatcher.service)

    async def remove_router_interface(self, router_id: str, subnet_id: str) -> None:
        """Remove; one already gone (or a router already gone) is fine."""
        try:
            await self._call(
                "remove router interface",
                self._neutron,
                "put",
                f"/routers/{router_id}/remove_router_interface",
                json={"subnet_id": subnet_id},
            )
        except TerminalError as error:
            if not isinstance(error.__cause__, os_exc.NotFoundException):
                raise
        self.watch.of(NetworkWatcher).routers.update(
            router_id,
            lambda r: dataclasses.replace(
                r, interfaces=tuple(s for s in r.interfaces if s != subnet_id)
            ),
        )
        self.watch.nudge(NetworkWatcher.service)

    async def delete_router(self, router_id: str) -> None:
        await self._delete("delete router", f"/routers/{router_id}")
        self.watch.of(NetworkWatcher).routers.forget(router_id)
        self.watch.nudge(NetworkWatcher.service)

    # -- plumbing --------------------------------------------------------------------------

    async def _put_neutron_tags(self, path: str, tags: list[str]) -> None:
        await self._call("set tags", self._neutron, "put", f"{path}/tags", json={"tags": tags})

    async def _delete(self, action: str, path: str) -> None:
        """DELETE; a 404 (already gone) is success."""
        try:
            await self._call(action, self._neutron, "delete", path)
        except TerminalError as error:
            if not isinstance(error.__cause__, os_exc.NotFoundException):
                raise


def _gateway(external_network_id: str, enable_snat: bool) -> dict[str, Any]:
    """Neutron's default policy lets only admins set ``enable_snat``: it is sent only to
    turn it off (the default is on)."""
    info: dict[str, Any] = {"network_id": external_network_id}
    if not enable_snat:
        info["enable_snat"] = False
    return info


def _spec_field(changes: dict[str, Any]) -> str:
    names = {"mtu": "spec.mtu", "port_security_enabled": "spec.portSecurity"}
    return next((names[k] for k in changes if k in names), "spec")


def _cidr(subnet: model.Subnet) -> str:
    return subnet.cidr


def _network(x: dict[str, Any]) -> model.Network:
    return model.Network(
        id=x["id"],
        name=x.get("name") or "",
        status=x.get("status") or "",
        mtu=x.get("mtu"),
        port_security=bool(x.get("port_security_enabled", True)),
        description=x.get("description"),
        tags=list(x.get("tags") or []),
    )


def _subnet(x: dict[str, Any]) -> model.Subnet:
    return model.Subnet(
        id=x["id"],
        network_id=x.get("network_id") or "",
        cidr=x.get("cidr") or "",
        ip_version=int(x.get("ip_version") or 4),
        gateway=x.get("gateway_ip"),
        dns_nameservers=tuple(x.get("dns_nameservers") or ()),
        allocation_pools=tuple(
            (p["start"], p["end"]) for p in x.get("allocation_pools") or [] if "start" in p
        ),
        enable_dhcp=bool(x.get("enable_dhcp", True)),
        name=x.get("name") or "",
    )


def _router(x: dict[str, Any]) -> model.Router:
    gateway = x.get("external_gateway_info") or {}
    return model.Router(
        id=x["id"],
        name=x.get("name") or "",
        status=x.get("status") or "",
        tags=list(x.get("tags") or []),
        description=x.get("description"),
        external_network_id=gateway.get("network_id"),
        enable_snat=gateway.get("enable_snat"),
        external_addresses=tuple(
            ip["ip_address"]
            for ip in gateway.get("external_fixed_ips") or []
            if ip.get("ip_address")
        ),
    )
