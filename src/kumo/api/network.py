"""Network (short name `net`): a Neutron network, its subnets and, optionally, one router
to the outside with an interface on every subnet.

One kind for what a team means by "a private network with a way out", not four objects
(network, subnet, router, router interface) to wire by hand. Bad input the schema cannot
tell (a CIDR that is not one, a gateway or pool outside its subnet, overlapping subnets)
is refused when the spec is read, naming the field (Ready=False, `InvalidSpec`).
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, ClassVar, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from kumo.api.common import (
    ADDRESS_MAX,
    CloudRef,
    ImportableSpec,
    KumoModel,
    ManagedSpec,
    ManagedStatus,
    MarkedDescription,
    Rule,
)

#: More subnets than this on one network is a mistake.
MAX_SUBNETS = 16
IpVersion = Literal[4, 6]

Net = ipaddress.IPv4Network | ipaddress.IPv6Network


class AllocationPool(KumoModel):
    """A range of addresses Neutron hands out (both ends inclusive)."""

    start: str = Field(min_length=1, max_length=45)
    """First address of the range."""
    end: str = Field(min_length=1, max_length=45)
    """Last address of the range."""


class SubnetSpec(KumoModel):
    """One subnet of the network. Its identity is its `cidr`: a subnet with a new CIDR
    is a different subnet (replaced only when no port uses the old one)."""

    cel_rules: ClassVar[tuple[Rule, ...]] = (
        Rule(
            "self.ipVersion == 4 ? !self.cidr.contains(':') : self.cidr.contains(':')",
            "spec.subnets[].cidr must be of ipVersion (4: a.b.c.d/n, 6: an IPv6 prefix)",
        ),
    )

    cidr: str = Field(min_length=3, max_length=49, pattern=r"^[0-9a-fA-F:.]+/[0-9]{1,3}$")
    """The subnet's prefix, e.g. `10.20.0.0/24`."""
    ip_version: IpVersion = 4
    """`4` or `6`; must match `cidr`."""
    gateway: str | None = Field(default=None, min_length=1, max_length=45)
    """The gateway address (inside `cidr`). Unset: Neutron's default, the first address;
    `none`: no gateway (the router then gets no interface on this subnet)."""
    dns_nameservers: list[Annotated[str, StringConstraints(max_length=ADDRESS_MAX)]] = Field(
        default_factory=list, max_length=5
    )
    """DNS servers handed out by DHCP."""
    allocation_pools: list[AllocationPool] = Field(default_factory=list, max_length=16)
    """Address ranges Neutron hands out. Empty: the whole CIDR except the gateway."""
    enable_dhcp: bool = True
    """Whether Neutron runs DHCP on this subnet."""

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        try:
            ipaddress.ip_network(value, strict=True)
        except ValueError as e:
            raise ValueError(f"spec.subnets[].cidr {value!r} is not a network prefix: {e}") from e
        return value

    @property
    def network(self) -> Net:
        return ipaddress.ip_network(self.cidr)

    @model_validator(mode="after")
    def _inside(self) -> SubnetSpec:
        net = self.network
        if net.version != self.ip_version:
            raise ValueError(f"spec.subnets[].cidr {self.cidr} is not IPv{self.ip_version}")
        gateway = self.gateway
        if gateway not in (None, "none") and _address(gateway, "gateway") not in net:
            raise ValueError(f"spec.subnets[].gateway {gateway} is outside cidr {self.cidr}")
        for server in self.dns_nameservers:
            _address(server, "dnsNameservers")
        for pool in self.allocation_pools:
            start = _address(pool.start, "allocationPools[].start")
            end = _address(pool.end, "allocationPools[].end")
            if start not in net or end not in net:
                raise ValueError(
                    f"spec.subnets[].allocationPools {pool.start}-{pool.end} is outside "
                    f"cidr {self.cidr}"
                )
            if start.version != end.version or int(start) > int(end):
                raise ValueError(
                    f"spec.subnets[].allocationPools {pool.start}-{pool.end}: start after end"
                )
        return self


def _address(value: str, field: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        return ipaddress.ip_address(value)
    except ValueError as e:
        raise ValueError(f"spec.subnets[].{field} {value!r} is not an IP address") from e


class RouterSpec(KumoModel):
    """One router with its gateway on an external network and an interface on every
    subnet that has a gateway."""

    external_network: CloudRef | None = None
    """The external network (name or ID). Default: the cloud's only external network."""
    enable_snat: bool = True
    """Source NAT for the subnets' traffic to the outside (Neutron's default policy lets
    only admins turn it off)."""


class NetworkSpec(ManagedSpec, ImportableSpec):
    """Desired state of a Network."""

    cel_rules: ClassVar[tuple[Rule, ...]] = (
        Rule(
            "self.subnets.all(a, self.subnets.exists_one(b, b.cidr == a.cidr))",
            "spec.subnets[].cidr must be unique",
        ),
    )

    description: MarkedDescription | None = None
    """The network's description, at most 194 characters (Kumo appends its ownership
    marker; Neutron allows 255 in all)."""
    subnets: list[SubnetSpec] = Field(default_factory=list, max_length=MAX_SUBNETS)
    """The network's subnets; added and removed in place. Subnets must not overlap."""
    mtu: int | None = Field(default=None, ge=68, le=65535)
    """The network's MTU. Unset: Neutron's default for the network type."""
    port_security: bool = True
    """Neutron port security (security groups, anti-spoofing) for ports on the network."""
    router: RouterSpec | None = None
    """A router to the outside: a gateway on `externalNetwork` and one interface per
    subnet. Unset: no router (removing it deletes the router Kumo made)."""

    @model_validator(mode="after")
    def _no_overlap(self) -> NetworkSpec:
        nets = [s.network for s in self.subnets]
        for i, a in enumerate(nets):
            for b in nets[i + 1 :]:
                if a.version == b.version and a.overlaps(b):  # type: ignore[arg-type]
                    raise ValueError(f"spec.subnets[].cidr {a} overlaps {b}")
        return self


class SubnetStatus(KumoModel):
    """One subnet as Neutron holds it."""

    cidr: str
    """Its prefix."""
    id: str | None = None
    """Neutron's subnet ID."""
    gateway: str | None = None
    """Its gateway address."""


class NetworkStatus(ManagedStatus):
    """Observed state of a Network."""

    name: str | None = None
    """The Neutron network's name (`<namespace>-<name>`)."""
    subnets: list[SubnetStatus] = Field(default_factory=list)
    """The subnets, as Neutron holds them."""
    router_id: str | None = None
    """The router Kumo made (empty without `spec.router`)."""
    external_address: str | None = None
    """The router's address on the external network."""
