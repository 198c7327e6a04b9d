"""The networking service's port. Neutron (networking), in four parts: security groups, floating IPs, networks and routers, ports."""

from __future__ import annotations

from typing import Any, Protocol

from kumo.ports import model
from kumo.ports.declare import CloudPort, read, write


class SecurityGroupsPort(CloudPort, Protocol):
    """Neutron security groups and their rules."""

    @read
    async def get_security_group(self, group_id: str) -> model.SecurityGroup | None: ...

    @read
    async def fetch_security_group(self, group_id: str) -> model.SecurityGroup | None: ...

    @read
    async def list_owned_security_groups(self, uid: str) -> list[model.SecurityGroup]: ...

    @read
    async def find_security_groups_by_name(self, name: str) -> list[model.SecurityGroup]: ...

    @read
    async def security_group_versions(self) -> list[model.SecurityGroup]:
        """Kumo's groups (tag ``kumo``, or the description's marker word before the tags
        came) without their rules: ID, name, description, tags and revision — one cheap
        call, the watch's probe."""
        ...

    @read
    async def fetch_security_group_rules(self, group_id: str) -> list[model.SecurityGroupRule]: ...

    @read
    async def security_groups_in_use(self, group_id: str) -> list[str]:
        """IDs of the ports using the group (what stops Neutron deleting it)."""
        ...

    @write
    async def create_security_group(
        self, *, name: str, description: str, tags: list[str]
    ) -> model.SecurityGroup:
        """The POST carries the marker in ``description``; the tags follow in a second
        call (Neutron takes none in a create)."""
        ...

    @write
    async def update_security_group(self, group_id: str, *, description: str | None) -> None: ...

    @write
    async def set_security_group_tags(self, group_id: str, tags: list[str]) -> None: ...

    @write
    async def delete_security_group(self, group_id: str) -> None: ...

    @write
    async def create_security_group_rule(
        self,
        group_id: str,
        *,
        direction: str,
        ethertype: str,
        protocol: str | None,
        port_range_min: int | None,
        port_range_max: int | None,
        remote_ip_prefix: str | None,
        remote_group_id: str | None,
        description: str,
    ) -> model.SecurityGroupRule: ...

    @write
    async def delete_security_group_rule(self, group_id: str, rule_id: str) -> None: ...


class FloatingIPsPort(CloudPort, Protocol):
    """Neutron floating IPs, and the ports they are associated with."""

    @read
    async def floating_ip_network_id(self, ref: str | None, field: str = "spec.network") -> str:
        """The external network ``ref`` names (name or ID); None: the only one."""
        ...

    @read
    async def get_floating_ip(self, fip_id: str) -> model.FloatingIP | None: ...

    @read
    async def list_owned_floating_ips(self, uid: str) -> list[model.FloatingIP]: ...

    @read
    async def find_floating_ips_by_address(self, address: str) -> list[model.FloatingIP]: ...

    @read
    async def fetch_floating_ips(self) -> list[model.FloatingIP]:
        """The project's floating IPs, from the API (the watcher's one listing)."""
        ...

    @read
    async def list_ports_of_device(self, device_id: str) -> list[model.Port]:
        """The Neutron ports of a server (``device_id``), from the API."""
        ...

    @write
    async def create_floating_ip(
        self,
        *,
        network_id: str,
        address: str | None,
        description: str,
        tags: list[str],
    ) -> model.FloatingIP: ...

    @write
    async def associate_floating_ip(
        self, fip_id: str, port_id: str | None, fixed_address: str | None
    ) -> model.FloatingIP:
        """Point the floating IP at ``port_id`` (None: disassociate, the address held)."""
        ...

    @write
    async def update_floating_ip(self, fip_id: str, *, description: str) -> model.FloatingIP: ...

    @write
    async def set_floating_ip_tags(self, fip_id: str, tags: list[str]) -> None: ...

    @write
    async def delete_floating_ip(self, fip_id: str) -> None: ...


class NetworksPort(CloudPort, Protocol):
    """Neutron networks, their subnets, and routers to the outside with their interfaces."""

    @read
    async def get_network(self, network_id: str) -> model.Network | None: ...

    @read
    async def fetch_network(self, network_id: str) -> model.Network | None: ...

    @read
    async def list_owned_networks(self, uid: str) -> list[model.Network]: ...

    @read
    async def find_networks_by_name(self, name: str) -> list[model.Network]: ...

    @read
    async def fetch_networks(self) -> list[model.Network]:
        """Kumo's networks (tag ``kumo``, or the description's marker word before the
        tags came) with their subnets: the watch's listing."""
        ...

    @read
    async def network_ports(self, network_id: str) -> list[model.Port]:
        """Every port on the network, from the API (what keeps it or a subnet in use)."""
        ...

    @read
    async def get_router(self, router_id: str) -> model.Router | None: ...

    @read
    async def fetch_router(self, router_id: str) -> model.Router | None: ...

    @read
    async def list_owned_routers(self, uid: str) -> list[model.Router]: ...

    @read
    async def fetch_routers(self) -> list[model.Router]:
        """Kumo's routers (tag ``kumo``, or the description's marker word before the
        tags came) with their interfaces: the watch's listing."""
        ...

    @write
    async def create_network(
        self,
        *,
        name: str,
        description: str,
        mtu: int | None,
        port_security: bool,
        tags: list[str],
    ) -> model.Network:
        """The POST carries the marker in ``description``; the tags follow in a second
        call (Neutron takes none in a create)."""
        ...

    @write
    async def update_network(self, network_id: str, changes: dict[str, Any]) -> None:
        """Change the network's own attributes (Neutron's names: ``mtu``, …)."""

    @write
    async def set_network_tags(self, network_id: str, tags: list[str]) -> None: ...

    @write
    async def delete_network(self, network_id: str) -> None: ...

    @write
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
        """``gateway``: None for Neutron's default, ``"none"`` for no gateway."""
        ...

    @write
    async def update_subnet(
        self, network_id: str, subnet_id: str, changes: dict[str, Any]
    ) -> None: ...

    @write
    async def delete_subnet(self, network_id: str, subnet_id: str) -> None: ...

    @write
    async def create_router(
        self,
        *,
        name: str,
        description: str,
        external_network_id: str,
        enable_snat: bool,
        tags: list[str],
    ) -> model.Router:
        """The POST carries the marker in ``description``; the tags follow in a second
        call (Neutron takes none in a create)."""
        ...

    @write
    async def update_router(self, router_id: str, *, description: str) -> None: ...

    @write
    async def set_router_gateway(
        self, router_id: str, external_network_id: str, enable_snat: bool
    ) -> None: ...

    @write
    async def set_router_tags(self, router_id: str, tags: list[str]) -> None: ...

    @write
    async def add_router_interface(self, router_id: str, subnet_id: str) -> None: ...

    @write
    async def remove_router_interface(self, router_id: str, subnet_id: str) -> None: ...

    @write
    async def delete_router(self, router_id: str) -> None: ...


class PortsPort(CloudPort, Protocol):
    """Neutron ports of Port objects (marked), and the allowed address pairs of a
    server's own port."""

    @read
    async def get_port(self, port_id: str) -> model.Port | None: ...

    @read
    async def fetch_port(self, port_id: str) -> model.Port | None:
        """The port as the API has it now (not the watch's cache)."""
        ...

    @read
    async def list_owned_ports(self, uid: str) -> list[model.Port]: ...

    @read
    async def find_ports_by_name(self, name: str) -> list[model.Port]: ...

    @read
    async def fetch_ports(self) -> list[model.Port]:
        """Kumo's ports (tag ``kumo``): the watch's listing."""
        ...

    @write
    async def create_port(
        self,
        *,
        name: str,
        network_id: str,
        address: str | None,
        description: str,
        security_groups: list[str] | None,
        allowed_address_pairs: list[model.AddressPair],
        tags: list[str],
    ) -> model.Port:
        """One bulk POST carrying the tags and the marker in ``description``; a tag call
        follows only when Neutron's answer lacks the tags. ``security_groups`` None:
        Neutron's default group."""
        ...

    @write
    async def update_port(
        self,
        port_id: str,
        *,
        description: str | None = None,
        security_groups: list[str] | None = None,
        allowed_address_pairs: list[model.AddressPair] | None = None,
    ) -> model.Port:
        """Change what is given (None: left as it is), in place."""
        ...

    @write
    async def set_port_tags(self, port_id: str, tags: list[str]) -> None: ...

    @write
    async def delete_port(self, port_id: str) -> None: ...


class NetworkingPort(SecurityGroupsPort, FloatingIPsPort, NetworksPort, PortsPort, Protocol):
    """Neutron, in four parts: security groups, floating IPs (and the ports they point
    at), networks with their subnets and routers, and Port objects' ports."""
