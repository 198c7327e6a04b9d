"""Plain values for what the cloud holds; Kumo's ownership marker is in
:mod:`kumo.ports.markers` (re-exported here, where its names have always been).

Neutron resources (floating IPs, networks, routers, security groups, ports) carry the
marker twice: the tags, and from their create call on the marker word at the end of
their description — Neutron takes tags only in a second call, but for ports created in
bulk (:func:`described_marker`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from kumo.ports import markers
from kumo.ports.markers import *  # noqa: F403

__all__ = [
    "RULE_VM_KEY",
    "SNAPSHOT_GROUP_KEY",
    "SNAPSHOT_MEMBER_KEY",
    "SNAPSHOT_TEMPLATE_KEY",
    "AccessRule",
    "AddressPair",
    "Described",
    "ExportLocation",
    "FloatingIP",
    "HealthMonitor",
    "KeyPair",
    "Listener",
    "LoadBalancer",
    "Marked",
    "Member",
    "MemberSpec",
    "Network",
    "Pool",
    "Port",
    "Recordset",
    "Router",
    "SecurityGroup",
    "SecurityGroupRule",
    "Server",
    "ServerGroup",
    "Share",
    "Snapshot",
    "Subnet",
    "Volume",
    "described_marker",
    "described_owner",
    "floating_ip_marker",
    "floating_ip_owner",
    "keypair_marker",
    "keypair_owner",
    "rule_label",
]
__all__ += markers.__all__


@dataclass(frozen=True)
class Marked:
    """A live cloud resource carrying this cluster's current owner marker (never a legacy
    or another cluster's), as the cloud watch lists it for the orphan sweep. ``kind`` is
    the resource type its watcher marks (``Watcher.marks``: "server", "port", …);
    ``zone_id`` locates a recordset; ``busy``: the cloud is deleting it already, or
    working on it (not to be touched now); ``in_use``: something still uses it — a
    server group that holds servers, a port a server is bound to (deleting it would
    take it from them)."""

    kind: str
    id: str
    name: str
    owner: str
    zone_id: str | None = None
    busy: bool = False
    in_use: bool = False


@dataclass(frozen=True)
class Server:
    id: str
    name: str
    status: str
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    description: str | None = None
    addresses: list[tuple[str, str, int]] = field(default_factory=list)
    host_id: str | None = None
    fault: str | None = None
    updated: str | None = None  # Nova's own clock: where the next changes-since starts
    image_id: str | None = None
    flavor: str | None = None  # the flavor's ID, or (Nova ≥ 2.47) its original name
    #: The names of its security groups, as Nova shows them; None when not shown.
    security_groups: tuple[str, ...] | None = None
    #: IDs of the volumes attached to it (``os-extended-volumes:volumes_attached``, in
    #: every listing; a boot volume too).
    volumes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServerGroup:
    id: str
    name: str
    policy: str
    members: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LoadBalancer:
    id: str
    name: str
    provisioning_status: str
    operating_status: str
    vip_address: str | None
    tags: list[str] = field(default_factory=list)
    description: str | None = None
    availability_zone: str | None = None
    flavor_id: str | None = None
    vip_network_id: str | None = None
    vip_port_id: str | None = None  # the Neutron port holding the VIP (a floating IP's target)


@dataclass(frozen=True)
class Listener:
    id: str
    name: str
    protocol: str
    port: int
    default_pool_id: str | None
    tags: list[str] = field(default_factory=list)
    lb_id: str | None = None


@dataclass(frozen=True)
class Pool:
    id: str
    name: str
    protocol: str
    listener_id: str | None
    health_monitor_id: str | None
    member_ids: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    lb_id: str | None = None


@dataclass(frozen=True)
class Member:
    id: str
    name: str
    address: str
    port: int
    monitor_port: int | None = None
    tags: list[str] = field(default_factory=list)
    weight: int = 1


@dataclass(frozen=True)
class MemberSpec:
    """One of Kumo's pool members as it should be (a batch update's entry). Octavia
    matches it to an existing member by ``address`` + ``port``."""

    name: str
    address: str
    port: int
    monitor_port: int | None = None
    weight: int = 1
    tags: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class HealthMonitor:
    id: str
    type: str
    url_path: str | None
    tags: list[str] = field(default_factory=list)
    pool_id: str | None = None


@dataclass(frozen=True)
class Recordset:
    id: str
    zone_id: str
    name: str
    type: str
    records: list[str]
    ttl: int | None
    description: str | None
    status: str


# -- Manila: shares carry metadata (no tags); so do access rules (API ≥ 2.45) ----------------

#: On an access rule: the VirtualMachine it is for (informative; status is derived from it).
RULE_VM_KEY = "kumo-vm"
#: On a Cinder snapshot a stateful group took (``snapshotBeforeReplace``): the group
#: (``<namespace>/<name>``, the one filtered listing), the member VirtualMachine it was
#: taken before replacing (its UID: one snapshot per volume per replaced member), and
#: the template the member was replaced for. Its owner (``kumo-owner``) is the Volume
#: object of the snapshotted volume.
SNAPSHOT_GROUP_KEY = "kumo-group"
SNAPSHOT_MEMBER_KEY = "kumo-member"
SNAPSHOT_TEMPLATE_KEY = "kumo-template"


@dataclass(frozen=True)
class Share:
    id: str
    name: str
    status: str
    size: int
    protocol: str
    share_type_id: str | None = None
    availability_zone: str | None = None
    description: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    #: Manila's clock (ISO 8601, UTC): when it was made (kinds/duplicates.py).
    created_at: str = ""
    #: The snapshot it was made from (Kumo makes shares from nothing).
    snapshot_id: str | None = None


@dataclass(frozen=True)
class AccessRule:
    id: str
    access_type: str
    access_to: str
    access_level: str
    state: str
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ExportLocation:
    path: str
    preferred: bool = False


# -- Neutron: security groups carry tags; their rules do not (a rule in Kumo's group is Kumo's) --


@dataclass(frozen=True)
class SecurityGroupRule:
    """One rule as Neutron holds it. ``protocol`` None: any; ``remote_ip_prefix`` as
    Neutron normalises it (``10.0.0.5/32``), None for any address."""

    id: str
    direction: str
    ethertype: str
    protocol: str | None = None
    port_range_min: int | None = None
    port_range_max: int | None = None
    remote_ip_prefix: str | None = None
    remote_group_id: str | None = None
    description: str | None = None


@dataclass(frozen=True)
class SecurityGroup:
    """A Neutron security group with its rules. ``revision`` is Neutron's
    ``revision_number``: it moves whenever the group or one of its rules changes, so a
    listing of the groups alone says whose rules to read again (-1: Kumo changed the
    rules itself; read them at the next listing)."""

    id: str
    name: str
    revision: int
    description: str | None = None
    tags: list[str] = field(default_factory=list)
    rules: tuple[SecurityGroupRule, ...] = ()


def rule_label(rule: SecurityGroupRule) -> str:
    """A rule in one line, as events and plans show it: ``ingress IPv4 tcp 22 from
    10.0.0.5/32``."""
    if rule.port_range_min is None:
        ports = ""
    elif rule.port_range_min == rule.port_range_max:
        ports = f" {rule.port_range_min}"
    else:
        ports = f" {rule.port_range_min}-{rule.port_range_max}"
    remote = rule.remote_ip_prefix or (
        f"group {rule.remote_group_id}" if rule.remote_group_id else "any"
    )
    way = "from" if rule.direction == "ingress" else "to"
    return f"{rule.direction} {rule.ethertype} {rule.protocol or 'any'}{ports} {way} {remote}"


# -- Nova keypairs: no tags, no metadata, immutable; the marker is in the key's comment -------


@dataclass(frozen=True)
class KeyPair:
    """A Nova keypair of the credentials' user. Nova addresses keypairs by name (its
    numeric ID is not in the API's paths), so ``id`` is the name."""

    name: str
    public_key: str
    fingerprint: str | None = None
    type: str = "ssh"

    @property
    def id(self) -> str:
        return self.name


def keypair_marker(public_key: str | None) -> markers.Marker | None:
    """The marker word in a public key's comment (the words after the key type and the
    base64 key), if there."""
    return markers.marker_of((public_key or "").split()[2:])


def keypair_owner(public_key: str | None) -> str | None:
    """The owner (:func:`kumo.ports.markers.owner_of`) in a public key's comment."""
    marker = keypair_marker(public_key)
    return marker.owner if marker is not None else None


# -- Neutron floating IPs: tags (set after the create) and a marker word in the description --


@dataclass(frozen=True)
class FloatingIP:
    """A Neutron floating IP. ``device_id`` is the server (or load balancer VIP owner) of
    the port it is associated with, from Neutron's ``port_details`` (fip-port-details):
    whether it still points at its target is read from the listing, without a port GET."""

    id: str
    address: str
    network_id: str
    status: str
    port_id: str | None = None
    fixed_address: str | None = None
    device_id: str | None = None
    tags: list[str] = field(default_factory=list)
    description: str | None = None

    @property
    def name(self) -> str:
        """What the orphan sweep and messages call it: a floating IP has no name."""
        return self.address


class Described(Protocol):
    """A Neutron resource marked in its create call by its description (floating IPs,
    networks, routers, security groups, ports), then by its tags."""

    @property
    def id(self) -> str: ...

    @property
    def tags(self) -> list[str]: ...

    @property
    def description(self) -> str | None: ...


def described_marker(resource: Described) -> markers.Marker | None:
    """The marker in the tags, else the marker word of the description. Neutron (Zed)
    takes no tags in a create (no ``tag-creation`` extension), so the create writes the
    marker into the description and the tags follow in a second call: a resource whose
    tags never came (a lost answer, a crash between the two) is still Kumo's."""
    return markers.marker_of(resource.tags) or markers.text_marker(resource.description)


def described_owner(resource: Described) -> str | None:
    """The owner (:func:`kumo.ports.markers.owner_of`) of a Neutron resource marked by
    its tags or its description (:func:`described_marker`)."""
    marker = described_marker(resource)
    return marker.owner if marker is not None else None


#: A floating IP's marker and owner (the first kind marked in its description).
floating_ip_marker = described_marker
floating_ip_owner = described_owner


@dataclass(frozen=True)
class AddressPair:
    """One of a port's allowed address pairs: an address or prefix it may also send from
    (``mac_address`` None: the port's own MAC)."""

    ip_address: str
    mac_address: str | None = None


@dataclass(frozen=True)
class Port:
    """A Neutron port: a server's (a floating IP's association, a network's users) or a
    Port object's (marked like the other Neutron resources: tags, and the marker word in
    its description)."""

    id: str
    network_id: str
    device_id: str
    device_owner: str = ""
    fixed_addresses: list[str] = field(default_factory=list)
    status: str = ""
    #: The subnets its fixed addresses are on (what keeps a subnet in use).
    subnet_ids: tuple[str, ...] = ()
    name: str = ""
    mac_address: str = ""
    description: str | None = None
    tags: list[str] = field(default_factory=list)
    #: IDs of its security groups.
    security_groups: tuple[str, ...] = ()
    allowed_address_pairs: tuple[AddressPair, ...] = ()


# -- Neutron networks: a Network object's network, its subnets and its router ---------------


@dataclass(frozen=True)
class Subnet:
    """A subnet of a network. Subnets carry no marker: a subnet on Kumo's network is
    Kumo's (as a rule in Kumo's security group is)."""

    id: str
    network_id: str
    cidr: str
    ip_version: int = 4
    gateway: str | None = None
    dns_nameservers: tuple[str, ...] = ()
    allocation_pools: tuple[tuple[str, str], ...] = ()
    enable_dhcp: bool = True
    name: str = ""


@dataclass(frozen=True)
class Network:
    """A Neutron network with its subnets (the watch lists both)."""

    id: str
    name: str
    status: str = "ACTIVE"
    mtu: int | None = None
    port_security: bool = True
    description: str | None = None
    tags: list[str] = field(default_factory=list)
    subnets: tuple[Subnet, ...] = ()


@dataclass(frozen=True)
class Router:
    """A Neutron router: its gateway on an external network and the subnets it has an
    interface on."""

    id: str
    name: str
    status: str = "ACTIVE"
    tags: list[str] = field(default_factory=list)
    external_network_id: str | None = None
    enable_snat: bool | None = None
    external_addresses: tuple[str, ...] = ()
    #: IDs of the subnets it has an interface on.
    interfaces: tuple[str, ...] = ()
    #: Kumo's marker word (a router has no user description): see :func:`described_owner`.
    description: str | None = None


# -- Cinder: volumes carry metadata (no tags): the same marker keys as Manila's shares ------


@dataclass(frozen=True)
class Volume:
    id: str
    name: str
    status: str
    size: int
    volume_type: str | None = None
    availability_zone: str | None = None
    description: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    #: IDs of the servers it is attached to (Cinder's ``attachments[].server_id``).
    attachments: tuple[str, ...] = ()
    source_image: str | None = None
    snapshot_id: str | None = None
    #: The volume it was cloned from (Kumo never clones: a clone is someone's copy).
    source_volid: str | None = None
    #: Cinder's clock (ISO 8601, UTC): when it was made and last changed (an attach or a
    #: detach changes it) — what tells a duplicate Kumo made itself (kinds/duplicates.py).
    #: Not compared: a listing that only moved ``updated_at`` is no change to act on.
    created_at: str = field(default="", compare=False)
    updated_at: str = field(default="", compare=False)


@dataclass(frozen=True)
class Snapshot:
    """A Cinder volume snapshot. Marked like volumes, in its metadata."""

    id: str
    name: str
    status: str
    volume_id: str
    size: int = 0
    #: Cinder's ``created_at`` (ISO 8601, UTC): newest first is the keep order.
    created_at: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
