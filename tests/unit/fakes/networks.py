"""An in-memory Neutron (networks, subnets, routers, interfaces, ports) with the manners
that matter to Kumo.

* Deleting a network with ports other than DHCP's is refused (409, CloudBusy); its
  subnets go with it.
* Deleting a subnet a port or a router interface uses is refused (409, CloudBusy).
* Deleting a router that still has interfaces is refused (409, CloudBusy).
* A subnet overlapping another of the same network is refused (400, terminal).
* ``calls`` counts every call by name (the watch's cost is asserted from it).
* A network's or router's create is Neutron's two calls as the adapter makes them: the
  POST (the marker only in the description) and the tags. ``lose_creates``: that many
  creates (of either) lose their answer — the resource exists, untagged, and the caller
  gets a 502.
"""

from __future__ import annotations

import ipaddress
import itertools
from dataclasses import replace
from typing import Any

from kumo.cloud import model
from kumo.engine.errors import TerminalError, TransientError
from kumo.ports import NetworksPort

_ids = itertools.count(1)
EXTERNAL = {"ext-net-id": "public"}
LOST = "502 Bad Gateway (the answer was lost; the resource was made)"


def new_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids):04d}"


class FakeNetworks(NetworksPort):
    region: str | None = "tokyo1"

    async def project_id(self) -> str | None:
        return "project-tokyo1"

    def __init__(self) -> None:
        self.networks: dict[str, model.Network] = {}
        self.routers: dict[str, model.Router] = {}
        self.ports: dict[str, model.Port] = {}
        self.calls: list[str] = []
        self.lose_creates = 0

    # -- helpers for tests (playing a user or the cloud) ------------------------------------

    def only_network(self) -> model.Network:
        (network,) = self.networks.values()
        return network

    def add_port(self, network_id: str, subnet_id: str, owner: str = "compute:nova") -> str:
        port = model.Port(new_id("port"), network_id, new_id("dev"), owner, subnet_ids=(subnet_id,))
        self.ports[port.id] = port
        return port.id

    def add_network(
        self, name: str, tags: list[str] | None = None, description: str | None = None
    ) -> model.Network:
        network = model.Network(new_id("net"), name, tags=list(tags or []), description=description)
        self.networks[network.id] = network
        return network

    def add_router(self, name: str, description: str | None = None) -> model.Router:
        """A router as a create whose tag call never came leaves it (Kumo killed between)."""
        router = model.Router(
            new_id("router"), name, external_network_id="ext-net-id", description=description
        )
        self.routers[router.id] = router
        return router

    def _answer_lost(self, action: str) -> None:
        if self.lose_creates:
            self.lose_creates -= 1
            raise TransientError("CloudUnavailable", f"{action}: {LOST}")

    def delete_subnet_out_of_band(self, subnet_id: str) -> None:
        for router in self.routers.values():
            self.routers[router.id] = replace(
                router, interfaces=tuple(s for s in router.interfaces if s != subnet_id)
            )
        for network in self.networks.values():
            self.networks[network.id] = replace(
                network, subnets=tuple(s for s in network.subnets if s.id != subnet_id)
            )

    # -- the adapter's surface ----------------------------------------------------------------

    async def floating_ip_network_id(self, ref: str | None, field: str = "spec.network") -> str:
        self.calls.append("floating_ip_network_id")
        for network_id, name in EXTERNAL.items():
            if ref in (None, network_id, name):
                return network_id
        raise TerminalError("NetworkNotFound", f"no external network {ref!r}", field=field)

    async def get_network(self, network_id: str) -> model.Network | None:
        self.calls.append("get_network")
        return self.networks.get(network_id)

    async def fetch_network(self, network_id: str) -> model.Network | None:
        self.calls.append("fetch_network")
        return self.networks.get(network_id)

    async def list_owned_networks(self, uid: str) -> list[model.Network]:
        self.calls.append("list_owned_networks")
        return [n for n in self.networks.values() if model.described_owner(n) == uid]

    async def find_networks_by_name(self, name: str) -> list[model.Network]:
        self.calls.append("find_networks_by_name")
        return [n for n in self.networks.values() if n.name == name]

    async def fetch_networks(self) -> list[model.Network]:
        self.calls.append("fetch_networks")
        return [n for n in self.networks.values() if _marked(n)]

    async def network_ports(self, network_id: str) -> list[model.Port]:
        self.calls.append("network_ports")
        return [p for p in self.ports.values() if p.network_id == network_id]

    async def get_router(self, router_id: str) -> model.Router | None:
        self.calls.append("get_router")
        return self.routers.get(router_id)

    async def fetch_router(self, router_id: str) -> model.Router | None:
        self.calls.append("fetch_router")
        return self.routers.get(router_id)

    async def list_owned_routers(self, uid: str) -> list[model.Router]:
        self.calls.append("list_owned_routers")
        return [r for r in self.routers.values() if model.described_owner(r) == uid]

    async def fetch_routers(self) -> list[model.Router]:
        self.calls.append("fetch_routers")
        return [r for r in self.routers.values() if _marked(r)]

    async def create_network(
        self,
        *,
        name: str,
        description: str,
        mtu: int | None,
        port_security: bool,
        tags: list[str],
    ) -> model.Network:
        self.calls.append("create_network")
        network = model.Network(
            new_id("net"), name, "ACTIVE", mtu or 1450, port_security, description
        )
        self.networks[network.id] = network
        self._answer_lost("create network")
        await self.set_network_tags(network.id, tags)
        return self.networks[network.id]

    async def update_network(self, network_id: str, changes: dict[str, Any]) -> None:
        self.calls.append("update_network")
        network = self.networks[network_id]
        self.networks[network_id] = replace(
            network,
            mtu=changes.get("mtu", network.mtu),
            port_security=changes.get("port_security_enabled", network.port_security),
            description=changes.get("description", network.description),
        )

    async def set_network_tags(self, network_id: str, tags: list[str]) -> None:
        self.calls.append("set_network_tags")
        self.networks[network_id] = replace(self.networks[network_id], tags=list(tags))

    async def delete_network(self, network_id: str) -> None:
        self.calls.append("delete_network")
        used = [
            p
            for p in self.ports.values()
            if p.network_id == network_id and p.device_owner != "network:dhcp"
        ]
        if used:
            raise TransientError(
                "CloudBusy", f"Unable to complete operation on network {network_id}"
            )
        self.networks.pop(network_id, None)

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
        self.calls.append("create_subnet")
        network = self.networks[network_id]
        new = ipaddress.ip_network(cidr)
        for subnet in network.subnets:
            old = ipaddress.ip_network(subnet.cidr)
            if old.version == new.version and old.overlaps(new):  # type: ignore[arg-type]
                raise TerminalError(
                    "InvalidSpec", f"{cidr} overlaps {subnet.cidr}", field="spec.subnets"
                )
        gateway_ip = None if gateway == "none" else gateway or str(next(new.hosts()))
        subnet = model.Subnet(
            new_id("subnet"),
            network_id,
            cidr,
            ip_version,
            gateway_ip,
            tuple(dns_nameservers),
            tuple(allocation_pools),
            enable_dhcp,
            name,
        )
        self.networks[network_id] = replace(network, subnets=(*network.subnets, subnet))
        return subnet

    async def update_subnet(self, network_id: str, subnet_id: str, changes: dict[str, Any]) -> None:
        self.calls.append("update_subnet")
        network = self.networks[network_id]
        fields = {
            "gateway_ip": "gateway",
            "dns_nameservers": "dns_nameservers",
            "enable_dhcp": "enable_dhcp",
            "allocation_pools": "allocation_pools",
        }
        values = {fields[k]: v for k, v in changes.items()}
        if "dns_nameservers" in values:
            values["dns_nameservers"] = tuple(values["dns_nameservers"])
        if "allocation_pools" in values:
            values["allocation_pools"] = tuple(
                (p["start"], p["end"]) for p in values["allocation_pools"]
            )
        subnets = tuple(replace(s, **values) if s.id == subnet_id else s for s in network.subnets)
        self.networks[network_id] = replace(network, subnets=subnets)

    async def delete_subnet(self, network_id: str, subnet_id: str) -> None:
        self.calls.append("delete_subnet")
        if any(subnet_id in p.subnet_ids for p in self.ports.values()) or any(
            subnet_id in r.interfaces for r in self.routers.values()
        ):
            raise TransientError("CloudBusy", f"Unable to complete operation on subnet {subnet_id}")
        self.delete_subnet_out_of_band(subnet_id)

    async def create_router(
        self,
        *,
        name: str,
        description: str,
        external_network_id: str,
        enable_snat: bool,
        tags: list[str],
    ) -> model.Router:
        self.calls.append("create_router")
        router = model.Router(
            new_id("router"),
            name,
            "ACTIVE",
            [],
            external_network_id,
            enable_snat,
            ("203.0.113.10",),
            description=description,
        )
        self.routers[router.id] = router
        self._answer_lost("create router")
        await self.set_router_tags(router.id, tags)
        return self.routers[router.id]

    async def update_router(self, router_id: str, *, description: str) -> None:
        self.calls.append("update_router")
        self.routers[router_id] = replace(self.routers[router_id], description=description)

    async def set_router_gateway(
        self, router_id: str, external_network_id: str, enable_snat: bool
    ) -> None:
        self.calls.append("set_router_gateway")
        self.routers[router_id] = replace(
            self.routers[router_id],
            external_network_id=external_network_id,
            enable_snat=enable_snat,
        )

    async def set_router_tags(self, router_id: str, tags: list[str]) -> None:
        self.calls.append("set_router_tags")
        self.routers[router_id] = replace(self.routers[router_id], tags=list(tags))

    async def add_router_interface(self, router_id: str, subnet_id: str) -> None:
        self.calls.append("add_router_interface")
        router = self.routers[router_id]
        self.routers[router_id] = replace(
            router, interfaces=tuple(sorted({*router.interfaces, subnet_id}))
        )

    async def remove_router_interface(self, router_id: str, subnet_id: str) -> None:
        self.calls.append("remove_router_interface")
        router = self.routers.get(router_id)
        if router is not None:
            self.routers[router_id] = replace(
                router, interfaces=tuple(s for s in router.interfaces if s != subnet_id)
            )

    async def delete_router(self, router_id: str) -> None:
        self.calls.append("delete_router")
        router = self.routers.get(router_id)
        if router is not None and router.interfaces:
            raise TransientError("CloudBusy", f"Router {router_id} still has ports")
        self.routers.pop(router_id, None)


def _marked(resource: model.Network | model.Router) -> bool:
    """What the adapter's project-wide listing keeps: tagged, or marked in the description."""
    return model.MANAGED_TAG in resource.tags or model.described_owner(resource) is not None
