"""Typed ports: what the kinds and the engine may ask of the cloud, one Protocol per
OpenStack service, without openstacksdk.

Each service's port lives in the module of its name (``kumo.ports.compute``,
``kumo.ports.networking``, …); a service in several parts (Nova: servers and keypairs;
Neutron: security groups, floating IPs, networks, ports) has one Protocol per part and its
service port inherits them. :class:`Cloud` inherits every service port, and everything
else is derived from it: :data:`SERVICES` (by the module's name, the name kinds give in
``KindRecord.services`` and the name of the service's package in
``kumo.cloud.services``), :data:`PORTS`, :data:`READS` and :data:`WRITES`.

``kumo.cloud.adapter.OpenStackCloud`` implements them on the real cloud,
``kumo.cloud.dryrun.DryRunCloud`` records their writes, and the unit tests' fakes
(``tests/unit/fakes``) inherit them; mypy checks all of them against these declarations,
so a misspelt call or a drifted fake fails ``make lint``. docs/architecture.md has the
recipe for a new service.
"""

from __future__ import annotations

from typing import Protocol

from kumo.ports.blockstorage import BlockStoragePort
from kumo.ports.compute import ComputePort, KeyPairsPort, ServersPort
from kumo.ports.declare import MARK, CloudPort, read, write
from kumo.ports.dns import DnsPort
from kumo.ports.loadbalancing import LoadBalancingPort
from kumo.ports.networking import (
    FloatingIPsPort,
    NetworkingPort,
    NetworksPort,
    PortsPort,
    SecurityGroupsPort,
)
from kumo.ports.sharedfs import SharedFSPort

__all__ = [
    "MARK",
    "PORTS",
    "READS",
    "SERVICES",
    "WRITES",
    "BlockStoragePort",
    "Cloud",
    "CloudPort",
    "ComputePort",
    "DnsPort",
    "FloatingIPsPort",
    "KeyPairsPort",
    "LoadBalancingPort",
    "NetworkingPort",
    "NetworksPort",
    "PortsPort",
    "SecurityGroupsPort",
    "ServersPort",
    "SharedFSPort",
    "declared",
    "parts",
    "read",
    "write",
]


class Cloud(
    ComputePort,
    LoadBalancingPort,
    DnsPort,
    SharedFSPort,
    BlockStoragePort,
    NetworkingPort,
    Protocol,
):
    """Every service: what ``Context.cloud`` is. The one hand-kept list of services: a new
    service is one more base here (and a unit test fails until its package, fake, dry-run
    writes and leftovers coverage exist: tests/unit/test_services.py)."""


def _name(port: type) -> str:
    return port.__module__.rsplit(".", 1)[-1]


#: Each service's port by its name (its module's): what ``KindRecord.services`` names.
SERVICES: dict[str, type] = {_name(port): port for port in Cloud.__bases__ if port is not Protocol}


def parts(port: type) -> tuple[type, ...]:
    """A service port's parts (the Protocols declaring its methods): its port bases, or
    the port itself when it declares its methods itself."""
    bases = tuple(b for b in port.__bases__ if b is not Protocol and b is not CloudPort)
    return bases or (port,)


#: Every port that declares methods, the dry pass and its tests walk these.
PORTS: tuple[type, ...] = (CloudPort, *(p for s in SERVICES.values() for p in parts(s)))


def declared(port: type) -> dict[str, str]:
    """A port's own members (methods and attributes) and what each is declared:
    ``read``, ``write``, or ``""`` when unmarked (a test refuses that). A service port
    in parts: every part's."""
    kinds: dict[str, str] = {}
    for part in parts(port):
        for name in getattr(part, "__annotations__", {}):
            kinds[name] = "read"  # an attribute: data, never a call that changes the cloud
        for name, member in vars(part).items():
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
