"""Plain values for what the cloud holds, and Kumo's ownership marker.

Every resource Kumo creates carries the marker: Nova/Octavia tags ``kumo`` and
``kumo-owner=<uid>``; resources without tags (server groups, Designate recordsets)
carry ``kumo-owner=<uid>`` in their name or description.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "MANAGED_TAG",
    "OWNER_PREFIX",
    "RULE_VM_KEY",
    "SHARE_MANAGED_KEY",
    "SHARE_MANAGED_VALUE",
    "SHARE_OWNER_KEY",
    "AccessRule",
    "ExportLocation",
    "HealthMonitor",
    "Listener",
    "LoadBalancer",
    "Member",
    "MemberSpec",
    "Pool",
    "Recordset",
    "Server",
    "ServerGroup",
    "Share",
    "marker_metadata",
    "marker_tags",
    "metadata_owner",
    "owner_of",
    "owner_tag",
]

MANAGED_TAG = "kumo"
OWNER_PREFIX = "kumo-owner="


def owner_tag(uid: str) -> str:
    return f"{OWNER_PREFIX}{uid}"


def marker_tags(uid: str) -> list[str]:
    return [MANAGED_TAG, owner_tag(uid)]


def owner_of(tags: list[str] | None) -> str | None:
    """The owning object's UID from a resource's tags, if Kumo's marker is there."""
    for tag in tags or []:
        if tag.startswith(OWNER_PREFIX):
            return tag[len(OWNER_PREFIX) :]
    return None


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

#: Share and access-rule metadata keys of Kumo's marker: ``kumo: managed`` (for the
#: fleet listing) and ``kumo-owner: <uid>`` (the owning object).
SHARE_MANAGED_KEY = "kumo"
SHARE_MANAGED_VALUE = "managed"
SHARE_OWNER_KEY = "kumo-owner"
#: On an access rule: the VirtualMachine it is for (informative; status is derived from it).
RULE_VM_KEY = "kumo-vm"


def marker_metadata(uid: str) -> dict[str, str]:
    return {SHARE_MANAGED_KEY: SHARE_MANAGED_VALUE, SHARE_OWNER_KEY: uid}


def metadata_owner(metadata: dict[str, str] | None) -> str | None:
    """The owning object's UID from a share's or access rule's metadata, if marked."""
    return (metadata or {}).get(SHARE_OWNER_KEY) or None


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
