"""Typed ports: what the kinds and the engine may ask of the cloud, one Protocol per
service, without openstacksdk.

``kumo.cloud.adapter.OpenStackCloud`` implements them on the real cloud,
``kumo.cloud.dryrun.DryRunCloud`` records their writes, and the unit tests' fakes
implement the ports of the kinds they drive; mypy checks all of them against these
declarations, so a misspelt call or a drifted fake fails ``make lint``. A new service is a
new Protocol here, every method marked ``@read`` or ``@write``, and its place in
:class:`Cloud` and :data:`PORTS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from kumo.ports import model

F = TypeVar("F", bound=Callable[..., Any])
MARK = "__kumo_port__"


def read(fn: F) -> F:
    """Declares a port method a read: the dry pass passes it through to the real cloud."""
    setattr(fn, MARK, "read")
    return fn


def write(fn: F) -> F:
    """Declares a port method a write: the dry pass records it and never makes it."""
    setattr(fn, MARK, "write")
    return fn


class CloudPort(Protocol):
    """What every cloud port has: the region and project it acts in."""

    region: str | None

    @read
    async def project_id(self) -> str | None: ...


class ComputePort(CloudPort, Protocol):
    """Nova (servers, server groups) and the image/flavor/network lookups servers need."""

    @read
    async def image_id(self, ref: str, field: str = "spec.image") -> str: ...

    @read
    async def flavor_id(self, ref: str, field: str = "spec.flavor") -> str: ...

    @read
    async def network_id(self, ref: str, field: str = "spec.networks") -> str: ...

    @read
    async def default_network_id(self, external: bool, field: str) -> str: ...

    @read
    async def get_server(self, server_id: str) -> model.Server | None: ...

    @read
    async def fetch_server(self, server_id: str) -> model.Server | None: ...

    @read
    async def list_owned_servers(self, uid: str, *, going: bool = False) -> list[model.Server]: ...

    @read
    def list_live_server_addresses(self) -> frozenset[str] | None: ...

    @read
    async def find_servers_by_name(self, name: str) -> list[model.Server]: ...

    @read
    async def flavor_ids(self, ref: str, field: str = "spec.flavor") -> tuple[str, str]: ...

    @read
    async def list_servers_since(
        self, since: str | None
    ) -> tuple[list[model.Server], str | None]: ...

    @read
    async def list_building_servers(self) -> list[model.Server]: ...

    @read
    async def list_project_servers(self) -> tuple[list[model.Server], str | None]: ...

    @write
    async def admit_build(self, uid: str) -> bool: ...

    @write
    async def withdraw_build(self, uid: str) -> None: ...

    @property
    @read
    def max_queued_builds(self) -> int: ...

    @write
    async def create_server(
        self,
        *,
        name: str,
        image_id: str,
        flavor_id: str,
        network_ids: list[str],
        user_data: str | None,
        description: str | None,
        metadata: dict[str, str],
        tags: list[str],
        availability_zone: str | None,
        key_name: str | None,
        security_groups: list[str],
        server_group_id: str | None,
        root_volume: tuple[int, str | None] | None = None,
    ) -> model.Server: ...

    @write
    async def update_server(self, server_id: str, *, description: str | None) -> None: ...

    @write
    async def set_server_metadata(
        self, server_id: str, metadata: dict[str, str], remove: list[str]
    ) -> None: ...

    @write
    async def set_server_tags(self, server_id: str, tags: list[str]) -> None: ...

    @write
    async def delete_server(self, server_id: str) -> None: ...

    @write
    async def add_server_security_group(self, server_id: str, group: str) -> None:
        """Nova's addSecurityGroup: ``group`` by name or ID, on every port of the server."""
        ...

    @write
    async def remove_server_security_group(self, server_id: str, group: str) -> None: ...

    @read
    async def fetch_server_groups(self) -> list[model.ServerGroup]: ...

    @read
    async def list_server_groups(self) -> list[model.ServerGroup]: ...

    @read
    async def list_owned_server_groups(self, uid: str) -> list[model.ServerGroup]: ...

    @read
    async def get_server_group(self, group_id: str) -> model.ServerGroup | None: ...

    @write
    async def create_server_group(self, name: str, policy: str) -> model.ServerGroup: ...

    @write
    async def delete_server_group(self, group_id: str) -> None: ...


class LoadBalancingPort(CloudPort, Protocol):
    """Octavia: load balancers, listeners, pools, members, health monitors."""

    @read
    async def lb_flavor_id(self, ref: str, field: str = "spec.serviceType") -> str: ...

    @read
    async def get_load_balancer(self, lb_id: str) -> model.LoadBalancer | None: ...

    @read
    async def fetch_load_balancer(self, lb_id: str) -> model.LoadBalancer | None: ...

    @read
    async def list_owned_load_balancers(self, uid: str) -> list[model.LoadBalancer]: ...

    @read
    async def find_load_balancers_by_name(self, name: str) -> list[model.LoadBalancer]: ...

    @write
    async def set_load_balancer_tags(self, lb_id: str, tags: list[str]) -> None: ...

    @read
    async def load_balancer_versions(
        self, also: frozenset[str] = frozenset()
    ) -> dict[str, str]: ...

    @read
    async def fetch_load_balancer_tree(
        self, also: frozenset[str] = frozenset()
    ) -> tuple[
        list[model.LoadBalancer], list[model.Listener], list[model.Pool], list[model.HealthMonitor]
    ]: ...

    @write
    async def create_load_balancer(
        self,
        *,
        name: str,
        vip_network_id: str,
        description: str | None,
        availability_zone: str | None,
        flavor_id: str | None,
        tags: list[str],
    ) -> model.LoadBalancer: ...

    @write
    async def update_load_balancer(self, lb_id: str, *, description: str | None) -> None: ...

    @write
    async def delete_load_balancer(self, lb_id: str) -> None: ...

    @read
    async def list_listeners(self, lb_id: str) -> list[model.Listener]: ...

    @write
    async def create_listener(
        self, lb_id: str, *, name: str, protocol: str, port: int, tags: list[str]
    ) -> str: ...

    @read
    async def list_pools(self, lb_id: str) -> list[model.Pool]: ...

    @write
    async def create_pool(
        self, listener_id: str, *, name: str, protocol: str, tags: list[str]
    ) -> str: ...

    @read
    async def list_members(self, pool_id: str) -> list[model.Member]: ...

    @read
    async def list_known_members(self, pool_id: str) -> list[model.Member]: ...

    @read
    async def fetch_members(self, pool_id: str) -> list[model.Member]: ...

    @write
    async def replace_owned_members(
        self, pool_id: str, uid: str, members: list[model.MemberSpec]
    ) -> None: ...

    @write
    async def add_members(self, pool_id: str, members: list[model.MemberSpec]) -> None: ...

    @write
    async def create_member(self, pool_id: str, member: model.MemberSpec) -> None: ...

    @write
    async def update_owned_member(
        self, pool_id: str, member_id: str, uid: str, member: model.MemberSpec
    ) -> None: ...

    @write
    async def delete_owned_member(self, pool_id: str, member_id: str, uid: str) -> None: ...

    @read
    async def get_health_monitor(self, hm_id: str) -> model.HealthMonitor | None: ...

    @write
    async def create_health_monitor(
        self, pool_id: str, *, protocol: str, url_path: str | None, tags: list[str]
    ) -> str: ...

    @write
    async def delete_health_monitor(self, hm_id: str) -> None: ...

    @write
    async def delete_listener(self, listener_id: str) -> None: ...

    @write
    async def delete_pool(self, pool_id: str) -> None: ...


class DnsPort(CloudPort, Protocol):
    """Designate: zones (looked up) and recordsets."""

    @read
    async def zone(self, ref: str, field: str = "spec.zone") -> tuple[str, str]: ...

    @read
    async def zone_id(self, ref: str, field: str = "spec.zone") -> str: ...

    @read
    async def get_recordset(self, zone_id: str, rs_id: str) -> model.Recordset | None: ...

    @read
    async def list_zone_recordsets(self, zone_id: str) -> list[model.Recordset]: ...

    @read
    async def fetch_zone_recordsets(self, zone_id: str) -> list[model.Recordset]: ...

    @read
    async def zone_versions(self) -> dict[str, str]: ...

    @read
    async def list_owned_recordsets(self, zone_id: str, uid: str) -> list[model.Recordset]: ...

    @write
    async def create_recordset(
        self, zone_id: str, *, name: str, type: str, records: list[str], ttl: int, description: str
    ) -> model.Recordset: ...

    @write
    async def update_recordset(
        self, zone_id: str, rs_id: str, *, records: list[str], ttl: int, description: str
    ) -> model.Recordset: ...

    @write
    async def delete_recordset(self, zone_id: str, rs_id: str) -> None: ...


class SharesPort(CloudPort, Protocol):
    """Manila: shares, access rules, export locations."""

    @read
    async def share_type_id(self, ref: str, field: str = "spec.shareType") -> str: ...

    @read
    async def get_share(self, share_id: str) -> model.Share | None: ...

    @read
    async def fetch_share(self, share_id: str) -> model.Share | None: ...

    @read
    async def list_owned_shares(self, uid: str) -> list[model.Share]: ...

    @read
    async def list_managed_shares(self) -> list[model.Share]: ...

    @write
    async def create_share(
        self,
        *,
        name: str,
        size: int,
        protocol: str,
        share_type_id: str | None,
        description: str | None,
        availability_zone: str | None,
        metadata: dict[str, str],
    ) -> model.Share: ...

    @write
    async def extend_share(self, share_id: str, new_size: int) -> None: ...

    @write
    async def update_share(self, share_id: str, *, description: str | None) -> None: ...

    @write
    async def set_share_metadata(self, share_id: str, metadata: dict[str, str]) -> None:
        """Make ``metadata`` the share's whole metadata (Orphan releases the marker)."""
        ...

    @write
    async def delete_share(self, share_id: str) -> None: ...

    @read
    async def list_access_rules(self, share_id: str) -> list[model.AccessRule]: ...

    @read
    async def fetch_access_rules(self, share_id: str) -> list[model.AccessRule]: ...

    @write
    async def create_access_rule(
        self, share_id: str, *, access_to: str, access_level: str, metadata: dict[str, str]
    ) -> model.AccessRule: ...

    @write
    async def delete_access_rule(self, share_id: str, rule_id: str) -> None: ...

    @read
    async def list_export_locations(self, share_id: str) -> list[model.ExportLocation]: ...


class NetworkingPort(CloudPort, Protocol):
    """Neutron: security groups and their rules."""

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


class KeyPairsPort(CloudPort, Protocol):
    """Nova keypairs of the credentials' user, addressed by name (no tags, no metadata,
    immutable: Kumo's marker is the last word of the public key's comment)."""

    @read
    async def get_keypair(self, name: str) -> model.KeyPair | None: ...

    @read
    async def list_owned_keypairs(self, uid: str) -> list[model.KeyPair]: ...

    @read
    async def fetch_keypairs(self) -> list[model.KeyPair]: ...

    @write
    async def create_keypair(self, name: str, public_key: str) -> model.KeyPair: ...

    @write
    async def delete_keypair(self, name: str) -> None: ...


class FloatingIPPort(CloudPort, Protocol):
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


class VolumesPort(CloudPort, Protocol):
    """Cinder: volumes (block storage v3) and their attachments to Nova servers."""

    @read
    async def volume_type_name(self, ref: str, field: str = "spec.volumeType") -> str: ...

    @read
    async def get_volume(self, volume_id: str) -> model.Volume | None: ...

    @read
    async def fetch_volume(self, volume_id: str) -> model.Volume | None: ...

    @read
    async def list_owned_volumes(self, uid: str) -> list[model.Volume]: ...

    @read
    async def list_managed_volumes(self) -> list[model.Volume]: ...

    @read
    async def find_volumes_by_name(self, name: str) -> list[model.Volume]: ...

    @write
    async def create_volume(
        self,
        *,
        name: str,
        size: int,
        volume_type: str | None,
        availability_zone: str | None,
        image_id: str | None,
        snapshot_id: str | None,
        description: str | None,
        metadata: dict[str, str],
    ) -> model.Volume: ...

    @write
    async def extend_volume(self, volume_id: str, new_size: int) -> None: ...

    @write
    async def update_volume(self, volume_id: str, *, description: str | None) -> None: ...

    @write
    async def set_volume_metadata(self, volume_id: str, metadata: dict[str, str]) -> None:
        """Make ``metadata`` the volume's whole metadata (Orphan releases the marker)."""

    @write
    async def delete_volume(self, volume_id: str) -> None: ...

    @write
    async def attach_volume(self, server_id: str, volume_id: str, device: str | None) -> None:
        """Attach through Nova (``os-volume_attachments``): the server stays."""

    @write
    async def detach_volume(self, server_id: str, volume_id: str) -> None: ...

    @read
    async def list_snapshots(self, metadata: dict[str, str]) -> list[model.Snapshot]:
        """The project's snapshots whose metadata holds every item of ``metadata``: one
        filtered listing from the API, never cached (only a rollout step asks)."""
        ...

    @write
    async def create_snapshot(
        self, volume_id: str, *, name: str, description: str, metadata: dict[str, str]
    ) -> model.Snapshot:
        """Snapshot the volume, attached or not (``force``: crash-consistent)."""
        ...

    @write
    async def set_snapshot_metadata(self, snapshot_id: str, metadata: dict[str, str]) -> None:
        """Make ``metadata`` the snapshot's whole metadata (Orphan releases the marker)."""

    @write
    async def delete_snapshot(self, snapshot_id: str) -> None:
        """Delete; a snapshot already gone is fine."""


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


class Cloud(
    ComputePort,
    LoadBalancingPort,
    DnsPort,
    SharesPort,
    NetworkingPort,
    KeyPairsPort,
    FloatingIPPort,
    VolumesPort,
    NetworksPort,
    Protocol,
):
    """Every service: what ``Context.cloud`` is. A kind names the narrowest port it uses."""


#: Every service's port; the dry pass and its tests walk these.
PORTS: tuple[type, ...] = (
    CloudPort,
    ComputePort,
    LoadBalancingPort,
    DnsPort,
    SharesPort,
    NetworkingPort,
    KeyPairsPort,
    FloatingIPPort,
    VolumesPort,
    NetworksPort,
)

#: Each service's port by the name a kind gives it in ``KindRecord.services``.
SERVICES: dict[str, type] = {
    "compute": ComputePort,
    "loadbalancing": LoadBalancingPort,
    "dns": DnsPort,
    "shares": SharesPort,
    "networking": NetworkingPort,
    "keypairs": KeyPairsPort,
    "floatingips": FloatingIPPort,
    "volumes": VolumesPort,
    "networks": NetworksPort,
}


def declared(port: type) -> dict[str, str]:
    """A port's own members (methods and attributes) and what each is declared:
    ``read``, ``write``, or ``""`` when unmarked (a test refuses that)."""
    kinds: dict[str, str] = {}
    for name in getattr(port, "__annotations__", {}):
        kinds[name] = "read"  # an attribute: data, never a call that changes the cloud
    for name, member in vars(port).items():
        if name.startswith("_"):
            continue
        fn = member.fget if isinstance(member, property) else member
        kinds[name] = getattr(fn, MARK, "")
    return kinds


def _all(kind: str) -> frozenset[str]:
    return frozenset(n for p in PORTS for n, k in declared(p).items() if k == kind)


#: Every port's writes and reads by name, from the ``@write``/``@read`` marks.
WRITES = _all("write")
READS = _all("read")
