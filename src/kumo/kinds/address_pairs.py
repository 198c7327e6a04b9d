"""Allowed address pairs, shared by the kinds that set them: a Port on its own port, a
VirtualMachine (a group's member) on its server's own port. Pure: the spec's pairs as the
port model's, whether a port holds them already, and how status shows them."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from kumo.api.common import AddressPair as SpecPair
from kumo.ports.model import AddressPair, Port


def from_spec(pairs: Iterable[SpecPair]) -> list[AddressPair]:
    return [AddressPair(p.ip_address, p.mac_address) for p in pairs]


def _normal(pair: AddressPair, own_mac: str) -> tuple[str, str]:
    """A pair as Neutron compares them: the address (a full-length prefix as a plain
    address) and the MAC (the port's own when none is given), lower case."""
    network = ipaddress.ip_network(pair.ip_address, strict=False)
    full = network.prefixlen == network.max_prefixlen
    address = str(network.network_address) if full else str(network)
    return address, (pair.mac_address or own_mac).lower()


def same(port: Port, wanted: Iterable[AddressPair]) -> bool:
    """Does ``port`` hold exactly the ``wanted`` pairs (order and spelling aside)?"""
    wanted = list(wanted)
    try:
        want = {_normal(p, port.mac_address) for p in wanted}
        have = {_normal(p, port.mac_address) for p in port.allowed_address_pairs}
    except ValueError:  # not an address (the schema refuses it): compared as written
        return list(port.allowed_address_pairs) == wanted
    return want == have


def as_status(pairs: Iterable[AddressPair]) -> list[dict[str, str]]:
    """``allowedAddressPairs`` in a status: ``{ipAddress, macAddress}``."""
    return [
        {"ipAddress": p.ip_address, **({"macAddress": p.mac_address} if p.mac_address else {})}
        for p in pairs
    ]
