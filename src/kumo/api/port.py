"""Port: a Neutron port of its own — a fixed address that outlives the servers using it.

A VirtualMachine names it in `spec.ports`; its server boots on it, and a server that
replaces it (healed, rolled, deleted by hand) boots on the same port, so the address
stays. `allowedAddressPairs` lets the port also send from a shared address (a VIP moved
by keepalived between servers).
"""

from __future__ import annotations

from pydantic import Field

from kumo.api.common import (
    ADDRESS_MAX,
    MAX_ADDRESS_PAIRS,
    AddressPair,
    CloudName,
    CloudRef,
    ImportableSpec,
    ManagedSpec,
    ManagedStatus,
    MarkedDescription,
    fixed_once_created,
)
from kumo.api.virtualmachine import MAX_SECURITY_GROUPS


class PortSpec(ManagedSpec, ImportableSpec):
    """Desired state of a Port: a Neutron port on `network`, with its own fixed address.
    Its security groups, allowed address pairs and description change in place."""

    object_rules = (
        fixed_once_created(
            "network",
            "spec.network is immutable: a port cannot move to another network; delete and "
            "recreate the Port to change it",
        ),
        fixed_once_created(
            "address",
            "spec.address is immutable once the port exists: delete (deletionPolicy: "
            "Orphan keeps the port) and recreate the Port to change it",
        ),
    )

    network: CloudRef | None = None
    """A Network object of the namespace (waited for until Ready), else a Neutron network
    by name or ID. Unset: the project's network. Immutable once the port exists."""
    address: str | None = Field(default=None, min_length=1, max_length=ADDRESS_MAX)
    """The fixed address to claim (free, on one of the network's subnets); unset:
    Neutron picks one. Immutable once the port exists."""
    description: MarkedDescription | None = None
    """Port description, at most 194 characters (Kumo appends its ownership marker;
    Neutron allows 255 in all). Updated in place."""
    security_groups: list[CloudName] | None = Field(default=None, max_length=MAX_SECURITY_GROUPS)
    """SecurityGroup objects of the namespace (waited for until Ready), else Neutron
    security groups by name or ID; set in place. Unset: Neutron's default group at the
    create, and Kumo leaves the port's groups alone; `[]`: no group."""
    allowed_address_pairs: list[AddressPair] = Field(
        default_factory=list, max_length=MAX_ADDRESS_PAIRS
    )
    """Addresses the port may also send from (a VIP shared through keepalived), set in
    place."""


class PortStatus(ManagedStatus):
    """Observed state of a Port."""

    name: str | None = None
    """The Neutron port's name (`<namespace>-<name>`)."""
    network_id: str | None = None
    """The network it is on."""
    address: str | None = None
    """Its first fixed address: what a server booted on it gets."""
    addresses: list[str] = Field(default_factory=list)
    """Every fixed address of the port."""
    mac_address: str | None = None
    """The port's MAC address."""
    device_id: str | None = None
    """The server holding it; empty while it is free."""
    security_groups: list[str] = Field(default_factory=list)
    """IDs of its security groups."""
    allowed_address_pairs: list[AddressPair] = Field(default_factory=list)
    """Its allowed address pairs, as Neutron shows them."""
