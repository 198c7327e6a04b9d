"""The networking service in a dry pass: its reads passed through to the real cloud, its
writes recorded as :class:`~kumo.engine.dryrun.Action` s (see :mod:`kumo.cloud.dryrun`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from kumo.cloud import model
from kumo.cloud.dry import NEW_ID, DryRunBase, described, passthrough, port_text
from kumo.engine.dryrun import Change
from kumo.ports import FloatingIPsPort, NetworksPort, PortsPort, SecurityGroupsPort


class NetworkingDryRun(DryRunBase):
    """The networking service's writes recorded, its reads passed through."""

    # Reads: the real cloud's answer.
    get_security_group = passthrough(SecurityGroupsPort.get_security_group)
    fetch_security_group = passthrough(SecurityGroupsPort.fetch_security_group)
    list_owned_security_groups = passthrough(SecurityGroupsPort.list_owned_security_groups)
    find_security_groups_by_name = passthrough(SecurityGroupsPort.find_security_groups_by_name)
    security_group_versions = passthrough(SecurityGroupsPort.security_group_versions)
    fetch_security_group_rules = passthrough(SecurityGroupsPort.fetch_security_group_rules)
    security_groups_in_use = passthrough(SecurityGroupsPort.security_groups_in_use)
    floating_ip_network_id = passthrough(FloatingIPsPort.floating_ip_network_id)
    get_floating_ip = passthrough(FloatingIPsPort.get_floating_ip)
    list_owned_floating_ips = passthrough(FloatingIPsPort.list_owned_floating_ips)
    find_floating_ips_by_address = passthrough(FloatingIPsPort.find_floating_ips_by_address)
    fetch_floating_ips = passthrough(FloatingIPsPort.fetch_floating_ips)
    list_ports_of_device = passthrough(FloatingIPsPort.list_ports_of_device)
    get_network = passthrough(NetworksPort.get_network)
    fetch_network = passthrough(NetworksPort.fetch_network)
    list_owned_networks = passthrough(NetworksPort.list_owned_networks)
    find_networks_by_name = passthrough(NetworksPort.find_networks_by_name)
    fetch_networks = passthrough(NetworksPort.fetch_networks)
    network_ports = passthrough(NetworksPort.network_ports)
    get_router = passthrough(NetworksPort.get_router)
    fetch_router = passthrough(NetworksPort.fetch_router)
    list_owned_routers = passthrough(NetworksPort.list_owned_routers)
    fetch_routers = passthrough(NetworksPort.fetch_routers)
    get_port = passthrough(PortsPort.get_port)
    fetch_port = passthrough(PortsPort.fetch_port)
    list_owned_ports = passthrough(PortsPort.list_owned_ports)
    find_ports_by_name = passthrough(PortsPort.find_ports_by_name)
    fetch_ports = passthrough(PortsPort.fetch_ports)

    # Writes: recorded, never made.

    async def create_security_group(
        self, *, name: str, description: str, tags: list[str]
    ) -> model.SecurityGroup:
        self._record("create", "security group", name)
        return model.SecurityGroup(NEW_ID, name, 0, description, list(tags))

    async def update_security_group(self, group_id: str, *, description: str | None) -> None:
        old = await self._inner.get_security_group(group_id)
        before = old.description if old is not None else None
        self._record(
            "update",
            "security group",
            group_id,
            Change(described(before, description or ""), before, description),
        )

    async def set_security_group_tags(self, group_id: str, tags: list[str]) -> None:
        old = await self._inner.get_security_group(group_id)
        self._record(
            "update", "security group", group_id, Change("tags", old.tags if old else [], tags)
        )

    async def delete_security_group(self, group_id: str) -> None:
        self._record("delete", "security group", group_id, note="with its rules")

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
    ) -> model.SecurityGroupRule:
        rule = model.SecurityGroupRule(
            NEW_ID,
            direction,
            ethertype,
            protocol,
            port_range_min,
            port_range_max,
            remote_ip_prefix,
            remote_group_id,
            description,
        )
        label = model.rule_label(rule)
        self._record("create", "security group rule", label, Change("spec.rules", None, label))
        return rule

    async def delete_security_group_rule(self, group_id: str, rule_id: str) -> None:
        old = await self._inner.get_security_group(group_id)
        rule = next((r for r in old.rules if r.id == rule_id), None) if old else None
        label = model.rule_label(rule) if rule is not None else rule_id
        self._record("delete", "security group rule", label, Change("spec.rules", label, None))

    async def create_floating_ip(
        self, *, network_id: str, address: str | None, description: str, tags: list[str]
    ) -> model.FloatingIP:
        changes = [Change("spec.network", None, network_id)]
        if address:
            changes.append(Change("spec.address", None, address))
        self._record("create", "floating IP", address or "(any address)", *changes)
        return model.FloatingIP(
            id=NEW_ID,
            address=address or NEW_ID,
            network_id=network_id,
            status="DOWN",
            tags=list(tags),
            description=description,
        )

    async def associate_floating_ip(
        self, fip_id: str, port_id: str | None, fixed_address: str | None
    ) -> model.FloatingIP:
        old = await self._inner.get_floating_ip(fip_id)
        before = old.port_id if old is not None else None
        self._record(
            "update",
            "floating IP",
            old.address if old else fip_id,
            Change("spec.target", port_text(before), port_text(port_id)),
        )
        if old is None:
            return model.FloatingIP(fip_id, "", "", "DOWN", port_id, fixed_address)
        return dataclasses.replace(
            old, port_id=port_id, fixed_address=fixed_address, device_id=None
        )

    async def update_floating_ip(self, fip_id: str, *, description: str) -> model.FloatingIP:
        old = await self._inner.get_floating_ip(fip_id)
        before = old.description if old is not None else None
        self._record(
            "update",
            "floating IP",
            old.address if old else fip_id,
            Change(described(before, description), before, description),
        )
        if old is None:
            return model.FloatingIP(fip_id, "", "", "DOWN", description=description)
        return dataclasses.replace(old, description=description)

    async def set_floating_ip_tags(self, fip_id: str, tags: list[str]) -> None:
        old = await self._inner.get_floating_ip(fip_id)
        self._record(
            "update",
            "floating IP",
            old.address if old else fip_id,
            Change("tags", old.tags if old else [], tags),
        )

    async def delete_floating_ip(self, fip_id: str) -> None:
        self._record("delete", "floating IP", fip_id)

    async def create_network(
        self,
        *,
        name: str,
        description: str,
        mtu: int | None,
        port_security: bool,
        tags: list[str],
    ) -> model.Network:
        changes = [Change("spec.portSecurity", None, port_security)]
        if mtu is not None:
            changes.append(Change("spec.mtu", None, mtu))
        self._record("create", "network", name, *changes)
        return model.Network(NEW_ID, name, "ACTIVE", mtu, port_security, description, list(tags))

    async def update_network(self, network_id: str, changes: dict[str, Any]) -> None:
        old = await self._inner.get_network(network_id)
        fields = {"mtu": "spec.mtu", "port_security_enabled": "spec.portSecurity"}
        have = {
            "mtu": old.mtu if old else None,
            "port_security_enabled": old.port_security if old else None,
            "description": old.description if old else None,
        }
        self._record(
            "update",
            "network",
            network_id,
            *(
                Change(described(old.description if old else None, v), have[k], v)
                if k == "description"
                else Change(fields.get(k, f"spec.{k}"), have.get(k), v)
                for k, v in changes.items()
            ),
        )

    async def set_network_tags(self, network_id: str, tags: list[str]) -> None:
        old = await self._inner.get_network(network_id)
        self._record("update", "network", network_id, Change("tags", old.tags if old else [], tags))

    async def delete_network(self, network_id: str) -> None:
        self._record("delete", "network", network_id, note="with its subnets")

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
        self._record("create", "subnet", cidr, Change("spec.subnets[].cidr", None, cidr))
        return model.Subnet(
            NEW_ID, network_id, cidr, ip_version, None if gateway == "none" else gateway
        )

    async def update_subnet(self, network_id: str, subnet_id: str, changes: dict[str, Any]) -> None:
        self._record(
            "update",
            "subnet",
            subnet_id,
            *(Change(f"spec.subnets[].{k}", None, v) for k, v in changes.items()),
        )

    async def delete_subnet(self, network_id: str, subnet_id: str) -> None:
        self._record("delete", "subnet", subnet_id)

    async def create_router(
        self,
        *,
        name: str,
        description: str,
        external_network_id: str,
        enable_snat: bool,
        tags: list[str],
    ) -> model.Router:
        self._record(
            "create",
            "router",
            name,
            Change("spec.router.externalNetwork", None, external_network_id),
        )
        return model.Router(
            NEW_ID,
            name,
            "ACTIVE",
            list(tags),
            external_network_id,
            enable_snat,
            description=description,
        )

    async def update_router(self, router_id: str, *, description: str) -> None:
        old = await self._inner.get_router(router_id)
        before = old.description if old else None
        self._record(
            "update",
            "router",
            router_id,
            Change(described(before, description), before, description),
        )

    async def set_router_gateway(
        self, router_id: str, external_network_id: str, enable_snat: bool
    ) -> None:
        old = await self._inner.get_router(router_id)
        self._record(
            "update",
            "router",
            router_id,
            Change(
                "spec.router.externalNetwork",
                old.external_network_id if old else None,
                external_network_id,
            ),
            Change("spec.router.enableSnat", old.enable_snat if old else None, enable_snat),
        )

    async def set_router_tags(self, router_id: str, tags: list[str]) -> None:
        old = await self._inner.get_router(router_id)
        self._record("update", "router", router_id, Change("tags", old.tags if old else [], tags))

    async def add_router_interface(self, router_id: str, subnet_id: str) -> None:
        self._record(
            "update", "router", router_id, Change("interfaces", None, f"subnet {subnet_id}")
        )

    async def remove_router_interface(self, router_id: str, subnet_id: str) -> None:
        self._record(
            "update", "router", router_id, Change("interfaces", f"subnet {subnet_id}", None)
        )

    async def delete_router(self, router_id: str) -> None:
        self._record("delete", "router", router_id)

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
        changes = [Change("spec.network", None, network_id)]
        if address:
            changes.append(Change("spec.address", None, address))
        if security_groups:
            changes.append(Change("spec.securityGroups", None, security_groups))
        if allowed_address_pairs:
            changes.append(
                Change("spec.allowedAddressPairs", None, pairs_text(allowed_address_pairs))
            )
        self._record("create", "port", name, *changes)
        return model.Port(
            NEW_ID,
            network_id,
            "",
            fixed_addresses=[address] if address else [],
            name=name,
            description=description,
            tags=list(tags),
            security_groups=tuple(security_groups or ()),
            allowed_address_pairs=tuple(allowed_address_pairs),
        )

    async def update_port(
        self,
        port_id: str,
        *,
        description: str | None = None,
        security_groups: list[str] | None = None,
        allowed_address_pairs: list[model.AddressPair] | None = None,
    ) -> model.Port:
        old = await self._inner.get_port(port_id)
        if old is None:
            old = model.Port(port_id, "", "")
        changes = []
        if description is not None:
            changes.append(
                Change(described(old.description, description), old.description, description)
            )
        if security_groups is not None:
            changes.append(
                Change("spec.securityGroups", list(old.security_groups), security_groups)
            )
        if allowed_address_pairs is not None:
            changes.append(
                Change(
                    "spec.allowedAddressPairs",
                    pairs_text(old.allowed_address_pairs),
                    pairs_text(allowed_address_pairs),
                )
            )
        self._record("update", "port", old.name or port_id, *changes)
        return dataclasses.replace(
            old,
            description=old.description if description is None else description,
            security_groups=(
                old.security_groups if security_groups is None else tuple(security_groups)
            ),
            allowed_address_pairs=(
                old.allowed_address_pairs
                if allowed_address_pairs is None
                else tuple(allowed_address_pairs)
            ),
        )

    async def set_port_tags(self, port_id: str, tags: list[str]) -> None:
        old = await self._inner.get_port(port_id)
        self._record(
            "update",
            "port",
            old.name if old else port_id,
            Change("tags", old.tags if old else [], tags),
        )

    async def delete_port(self, port_id: str) -> None:
        self._record("delete", "port", port_id)


def pairs_text(pairs: Iterable[model.AddressPair]) -> list[str]:
    """Allowed address pairs as a plan shows them: ``10.0.0.100`` (``@mac`` when given)."""
    return [p.ip_address + (f"@{p.mac_address}" if p.mac_address else "") for p in pairs]
