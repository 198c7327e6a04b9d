"""Port decisions, free of I/O: the port's name, which security groups it should have,
what an import must match, and its status (its address pairs: kinds/address_pairs.py).

Ownership: Neutron tags ``kumo``, ``kumo-owner=<uid>`` and ``kumo-cluster=<cluster>`` on
the port (in its bulk create), and the marker word ``kumo-owner=<uid>@<cluster>`` at the
end of its description (:mod:`kumo.kinds.described`, shared with the other Neutron kinds).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from kumo.api.port import PortSpec
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Store
from kumo.kinds import address_pairs
from kumo.ports.model import Port

#: A Neutron ID (a security group given by ID needs no lookup).
UUID_LENGTH = 36


def port_name(namespace: str, name: str) -> str:
    """The Neutron port's name: ``<namespace>-<name>``."""
    return f"{namespace}-{name}"


def check_address(address: str | None) -> None:
    if address is None:
        return
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise TerminalError(
            "InvalidAddress", f"{address!r} is not an IP address", field="spec.address"
        ) from None


# -- security groups ------------------------------------------------------------------------


@dataclass(frozen=True)
class Groups:
    """The spec's security groups as far as the namespace tells: IDs (SecurityGroup
    objects', or given by ID), names to look up in the cloud, and SecurityGroup objects
    not Ready yet. ``managed`` False: the spec leaves the port's groups alone."""

    managed: bool
    ids: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()


def groups(spec: PortSpec, namespace: str, store: Store) -> Groups:
    if spec.security_groups is None:
        return Groups(managed=False)
    ids: list[str] = []
    names: list[str] = []
    waiting: list[str] = []
    for name in spec.security_groups:
        body = store.get("SecurityGroup", namespace, name)
        if body is None:
            (ids if _looks_like_id(name) else names).append(name)
            continue
        status = body.get("status") or {}
        deleting = (body.get("metadata") or {}).get("deletionTimestamp")
        if status.get("id") and _ready(body) and not deleting:
            ids.append(str(status["id"]))
        else:
            waiting.append(name)
    return Groups(True, tuple(ids), tuple(names), tuple(waiting))


def group_changes(wanted: Iterable[str], port: Port) -> list[str] | None:
    """The port's security groups to set (IDs, in the spec's order), or None when it
    has them already (order aside)."""
    want = list(dict.fromkeys(wanted))
    return None if set(want) == set(port.security_groups) else want


def _looks_like_id(name: str) -> bool:
    return len(name) == UUID_LENGTH and name.count("-") == 4


def _ready(body: Body) -> bool:
    conditions = (body.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    return ready is not None and ready.get("status") == "True"


# -- import --------------------------------------------------------------------------------------


def import_mismatches(port: Port, network_id: str, address: str | None) -> list[Change]:
    """What cannot change on a port to import (old = the port's)."""
    found = []
    if port.network_id != network_id:
        found.append(Change("spec.network", port.network_id, network_id))
    if address and not any(same_address(a, address) for a in port.fixed_addresses):
        found.append(Change("spec.address", ", ".join(port.fixed_addresses), address))
    return found


def same_address(a: str, b: str) -> bool:
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return a == b


# -- status ----------------------------------------------------------------------------------------


def phase(port: Port) -> str:
    """``InUse`` while a server holds it, else ``Available``."""
    return "InUse" if port.device_id else "Available"


def status(port: Port) -> dict[str, object]:
    return {
        "id": port.id,
        "name": port.name or None,
        "networkId": port.network_id or None,
        "address": port.fixed_addresses[0] if port.fixed_addresses else None,
        "addresses": list(port.fixed_addresses),
        "macAddress": port.mac_address or None,
        "deviceId": port.device_id or None,
        "securityGroups": list(port.security_groups),
        "allowedAddressPairs": address_pairs.as_status(port.allowed_address_pairs),
    }
