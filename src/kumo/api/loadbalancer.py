"""LoadBalancer (short name `lb`): an Octavia load balancer with its listeners, pools,
members and health monitors."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kumo.api.common import (
    ADDRESS_MAX,
    CLOUD_NAME_MAX,
    Description,
    ImportableSpec,
    KumoModel,
    ManagedSpec,
    ManagedStatus,
    ObjectName,
    fixed_once_created,
)

Protocol = Literal["http", "https", "tcp", "udp"]
MonitorProtocol = Literal["http", "https", "tcp", "ping", "udp-connect", "tls-hello"]
VipType = Literal["private", "public"]

#: The most frontend ports (listeners) of one load balancer.
MAX_PORTS = 64
#: The most monitors listed for one port (Octavia applies the first).
MAX_MONITORS = 8
#: The longest health check URL path.
MAX_URL_PATH = 2048


class RealServers(KumoModel):
    """The backends of a port: the members of a VirtualMachineGroup, followed as it scales."""

    protocol: Protocol
    """Protocol spoken to the backends."""
    port: int = Field(ge=1, le=65535)
    """Port the backends listen on."""
    virtual_machine_group_ref: ObjectName
    """Name of a VirtualMachineGroup in the same namespace: its members are the VMs
    labelled `kumo.dev/group=<name>`."""
    group_object: bool = True
    """`false`: the pool follows the VMs labelled `kumo.dev/group=<virtualMachineGroupRef>`
    with no group behind the label (a KumoCluster's control-plane machines); `true`: the
    group must exist."""
    drain_seconds: int = Field(default=10, ge=0, le=3600)
    """Seconds a leaving member (its VM is being deleted or is no longer Ready) stays in
    the pool at weight 0, so open connections can finish, before it is removed; its
    server is deleted only after that. 0 removes it at once."""


class Monitor(KumoModel):
    """A health check. Octavia runs one per pool: the first monitor of a port is applied,
    later ones are reported in status.ports[].unappliedMonitors and a warning event."""

    protocol: MonitorProtocol
    """Check type."""
    port: int = Field(ge=1, le=65535)
    """Port probed on each backend."""
    endpoint: str | None = Field(default=None, max_length=MAX_URL_PATH)
    """URL path for http/https checks, e.g. `/health/alive`."""


class Port(KumoModel):
    """One frontend port: an Octavia listener and its pool."""

    port: int = Field(ge=1, le=65535)
    """Port the load balancer listens on."""
    protocol: Protocol
    """Listener protocol."""
    real_servers: RealServers
    """Where traffic goes."""
    monitors: list[Monitor] = Field(default_factory=list, max_length=MAX_MONITORS)
    """Health checks (at most 8); the first is applied (see Monitor)."""


class LoadBalancerSpec(ManagedSpec, ImportableSpec):
    """Desired state of a LoadBalancer."""

    #: What Octavia cannot change on an existing load balancer.
    object_rules = (
        fixed_once_created(
            "zone", "spec.zone is immutable: delete and recreate the LoadBalancer to move it"
        ),
        fixed_once_created(
            "vipType",
            "spec.vipType is immutable: the VIP's network is fixed when the load balancer is "
            "created; delete and recreate the LoadBalancer to change it",
        ),
        fixed_once_created(
            "vipNetwork",
            "spec.vipNetwork is immutable: the VIP's network is fixed when the load balancer "
            "is created; delete and recreate the LoadBalancer to change it",
        ),
        fixed_once_created(
            "vipAddress",
            "spec.vipAddress is immutable: Octavia cannot move a load balancer's VIP; delete "
            "and recreate the LoadBalancer to change it",
        ),
        fixed_once_created(
            "serviceType",
            "spec.serviceType is immutable: Octavia cannot change a load balancer's flavor; "
            "delete and recreate the LoadBalancer to change it",
        ),
    )

    description: Description | None = None
    """Load balancer description."""
    region: str | None = Field(default=None, max_length=CLOUD_NAME_MAX)
    """Cloud region; must be the region of the namespace's cloud credentials."""
    zone: str | None = Field(default=None, max_length=CLOUD_NAME_MAX)
    """Octavia availability zone of the load balancer."""
    vip_type: VipType = "private"
    """`private`: VIP on the project's network; `public`: on the external network."""
    vip_network: str | None = Field(default=None, max_length=CLOUD_NAME_MAX)
    """Network name or ID for the VIP, overriding what vipType picks."""
    vip_address: str | None = Field(default=None, min_length=1, max_length=ADDRESS_MAX)
    """The VIP's address on its network (it must be free there). Unset: Octavia picks one."""
    service_type: str = Field(default="generic", max_length=CLOUD_NAME_MAX)
    """Octavia flavor name; `generic` means the cloud's default."""
    ports: list[Port] = Field(
        min_length=1,
        max_length=MAX_PORTS,
        # A list keyed by port: the API server refuses a port listed twice (Octavia
        # refuses a second listener on a port), and server-side apply merges by port.
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"]},
    )
    """Frontend ports (at most 64); each must be unique."""


class Member(KumoModel):
    """A backend registered in a pool."""

    id: str | None = None
    """Octavia member ID."""
    name: str
    """VirtualMachine name."""
    address: str
    """Backend IP."""
    port: int
    """Backend port."""
    weight: int | None = None
    """Octavia weight: 1 while the member takes traffic, 0 while it drains."""
    draining_since: str | None = None
    """When the member went to weight 0 (RFC 3339); it is removed drainSeconds later."""


class PortStatus(KumoModel):
    """Observed state of one port."""

    port: int
    """Frontend port."""
    listener_id: str | None = None
    """Octavia listener ID."""
    pool_id: str | None = None
    """Octavia pool ID."""
    health_monitor_id: str | None = None
    """Octavia health monitor ID."""
    members: list[Member] = Field(default_factory=list)
    """Members registered in the pool."""
    unapplied_monitors: list[str] = Field(default_factory=list)
    """Monitors from spec that Octavia cannot run (one monitor per pool)."""


class LoadBalancerStatus(ManagedStatus):
    """Observed state of a LoadBalancer."""

    vip: str | None = None
    """The VIP address."""
    provisioning_status: str | None = None
    """Octavia provisioning status."""
    operating_status: str | None = None
    """Octavia operating status."""
    ports: list[PortStatus] = Field(default_factory=list)
    """Per-port state."""
    unapplied_changes: list[str] = Field(default_factory=list)
    """Spec fields that differ from the load balancer but Octavia cannot change in place
    (zone, vipType/vipNetwork, serviceType): recreate the LoadBalancer to apply them."""
    foreign_resources: list[str] = Field(default_factory=list)
    """Listeners or pools under this load balancer that Kumo did not create (no marker)
    and that the spec does not account for: Kumo leaves them alone."""
