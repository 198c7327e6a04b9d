"""FloatingIP decisions, free of I/O: the target and what it stands for, which of a
server's ports gets the address, whether the floating IP points where it should, the
marker, and what an import must match.

Ownership: Neutron tags ``kumo``, ``kumo-owner=<uid>`` and ``kumo-cluster=<cluster>`` on
the floating IP, and the marker word ``kumo-owner=<uid>@<cluster>`` at the end of its
description (Neutron takes tags only after the create, so the description carries the
marker from the first call on; kumo.ports.markers): the marker in the description is
:mod:`kumo.kinds.described`'s, shared with Network and SecurityGroup.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from kumo.api.floatingip import FloatingIPSpec
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Store
from kumo.ports.model import FloatingIP, Port

TARGETS = (
    ("virtualMachineRef", "virtual_machine_ref", "VirtualMachine"),
    ("loadBalancerRef", "load_balancer_ref", "LoadBalancer"),
)


class WaitingForTarget(Exception):
    """The target exists but has nothing to associate with yet: look again later."""


@dataclass(frozen=True)
class Target:
    """The object the address follows: ``field`` is the spec field naming it."""

    field: str
    kind: str
    name: str


@dataclass(frozen=True)
class Wanted:
    """Where the address should point, as far as the Kubernetes objects tell: a VM's
    server (its port is looked up in Neutron) or a load balancer (its VIP port)."""

    target: Target
    server_id: str | None = None
    primary_ip: str | None = None
    lb_id: str | None = None


# -- the target --------------------------------------------------------------------------------


def target(spec: FloatingIPSpec) -> Target | None:
    """The one target the spec names, or None (the address is held). The schema allows
    at most one at admission; this is the controller's own check."""
    given = [
        Target(f"spec.{camel}", kind, getattr(spec, attr))
        for camel, attr, kind in TARGETS
        if getattr(spec, attr)
    ]
    if len(given) > 1:
        raise TerminalError(
            "InvalidSpec",
            "give at most one target, virtualMachineRef or loadBalancerRef (given: "
            f"{', '.join(t.field for t in given)})",
            field="spec",
        )
    return given[0] if given else None


def wanted(spec: FloatingIPSpec, namespace: str, store: Store) -> Wanted | None:
    """What the address should follow now; None to hold it.

    Raises TerminalError ``TargetNotFound`` (naming the field) for a target that does not
    exist and :class:`WaitingForTarget` for one without a server or load balancer yet."""
    chosen = target(spec)
    if chosen is None:
        return None
    body = store.get(chosen.kind, namespace, chosen.name)
    if body is None:
        raise TerminalError(
            "TargetNotFound",
            f"{chosen.kind} {chosen.name!r} not found in namespace {namespace!r}",
            field=chosen.field,
        )
    status = body.get("status") or {}
    if chosen.kind == "VirtualMachine":
        server = status.get("id")
        if not server:
            raise WaitingForTarget(f"VirtualMachine {chosen.name!r} has no server yet")
        return Wanted(chosen, server_id=server, primary_ip=status.get("ip"))
    lb = status.get("id")
    if not lb:
        raise WaitingForTarget(f"LoadBalancer {chosen.name!r} has no load balancer yet")
    return Wanted(chosen, lb_id=lb)


def points_at_server(fip: FloatingIP, server_id: str) -> bool:
    """Associated with a port of that server: read from the listing's ``port_details``,
    so a floating IP that follows its VM costs no port lookup while nothing changes."""
    return fip.port_id is not None and fip.device_id == server_id


def pick_port(ports: list[Port], primary_ip: str | None) -> tuple[Port, str] | None:
    """Of a server's ports, the one to associate and its IPv4 address: the port holding
    the VM's primary address (``status.ip``), else the first with an IPv4 address (by
    ID, so every pass picks the same). None while it has no such port."""
    candidates = []
    for port in sorted(ports, key=lambda p: p.id):
        v4 = [ip for ip in port.fixed_addresses if _version(ip) == 4]
        if not v4:
            continue
        if primary_ip in v4:
            return port, primary_ip
        candidates.append((port, v4[0]))
    return candidates[0] if candidates else None


def associated(fip: FloatingIP, port_id: str, fixed_address: str | None) -> bool:
    return fip.port_id == port_id and (fixed_address is None or fip.fixed_address == fixed_address)


# -- import and what cannot change ---------------------------------------------------------------


def import_mismatches(fip: FloatingIP, network_id: str, address: str | None) -> list[Change]:
    """What cannot change on a floating IP to import (old = the floating IP's)."""
    found = []
    if fip.network_id != network_id:
        found.append(Change("spec.network", fip.network_id, network_id))
    if address and not same_address(fip.address, address):
        found.append(Change("spec.address", fip.address, address))
    return found


def unfit(fip: FloatingIP, network_id: str, address: str | None) -> bool:
    return bool(import_mismatches(fip, network_id, address))


def check_address(address: str | None) -> None:
    if address is not None and _version(address) is None:
        raise TerminalError(
            "InvalidAddress", f"{address!r} is not an IP address", field="spec.address"
        )


def same_address(a: str, b: str) -> bool:
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return a == b


def _version(value: str | None) -> int | None:
    try:
        return ipaddress.ip_address(value or "").version
    except ValueError:
        return None


# -- status and references ------------------------------------------------------------------------


def status(fip: FloatingIP) -> dict[str, object]:
    return {
        "id": fip.id,
        "address": fip.address,
        "networkId": fip.network_id,
        "portId": fip.port_id,
        "fixedAddress": fip.fixed_address if fip.port_id else None,
        "deviceId": fip.device_id if fip.port_id else None,
    }


def referenced(spec: Body) -> dict[str, str]:
    """Kind → name a raw FloatingIP spec points at (for dependents; no validation)."""
    return {kind: spec[camel] for camel, _, kind in TARGETS if spec.get(camel)}
