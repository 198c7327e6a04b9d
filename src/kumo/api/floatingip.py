"""FloatingIP (short name `fip`): a Neutron floating IP that follows its target."""

from __future__ import annotations

from pydantic import Field

from kumo.api.common import (
    ADDRESS_MAX,
    MARKED_DESCRIPTION_MAX,
    CloudRef,
    ImportableSpec,
    ManagedSpec,
    ManagedStatus,
    MarkedDescription,
    ObjectName,
    Rule,
    fixed_once_created,
)

#: Neutron allows 255 characters; Kumo appends " kumo-owner=<uid>@<cluster>" (61).
FIP_DESCRIPTION_MAX = MARKED_DESCRIPTION_MAX


class FloatingIPSpec(ManagedSpec, ImportableSpec):
    """Desired state of a FloatingIP: an address on an external network, held, or
    associated with the port of its target (at most one of `virtualMachineRef` and
    `loadBalancerRef`). The association follows the target: a VM whose server is
    replaced gets the same address on its new server."""

    cel_rules = (
        Rule(
            "!(has(self.virtualMachineRef) && has(self.loadBalancerRef))",
            "spec: give at most one target, virtualMachineRef or loadBalancerRef",
        ),
    )
    object_rules = (
        fixed_once_created(
            "network",
            "spec.network is immutable: a floating IP cannot move to another network; delete "
            "and recreate the FloatingIP to change it",
        ),
        fixed_once_created(
            "address",
            "spec.address is immutable once the address is allocated: an address cannot "
            "change in place; delete (deletionPolicy: Orphan keeps the old one) and recreate",
        ),
    )

    network: CloudRef | None = None
    """External network (name or ID) the address comes from. Default: the cloud's only
    external network (required when it has several)."""
    address: str | None = Field(default=None, min_length=1, max_length=ADDRESS_MAX)
    """A specific address to claim (it must be free on `network`). Neutron's default
    policy lets only admins choose an address; otherwise Neutron picks one."""
    description: MarkedDescription | None = None
    """Floating IP description, at most 194 characters (Kumo appends its ownership
    marker; Neutron allows 255 in all)."""
    virtual_machine_ref: ObjectName | None = None
    """Target: associate the address with this VirtualMachine's port (same namespace),
    and again with its new server's port whenever the server is replaced."""
    load_balancer_ref: ObjectName | None = None
    """Target: associate the address with this LoadBalancer's VIP port (same namespace)."""


class FloatingIPStatus(ManagedStatus):
    """Observed state of a FloatingIP."""

    address: str | None = None
    """The floating IP address."""
    network_id: str | None = None
    """The external network it is on."""
    port_id: str | None = None
    """The port it is associated with; empty while the address is held."""
    fixed_address: str | None = None
    """The target's address the floating IP translates to."""
    device_id: str | None = None
    """What the port belongs to: the VirtualMachine's server (its ID), or the load
    balancer's VIP (Octavia's device ID)."""
