"""Which field of which kind names an object of another kind, declared once.

The deletion waits read this table (:data:`kumo.kinds.ordering.DNS_REF_FIELD` is derived
from it), and a unit test checks every path against the referrer's spec model, so a
renamed field fails a test instead of silently breaking an ordering.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reference:
    referrer: str
    #: Path in the referrer's spec in camelCase; ``[]`` marks a list, e.g.
    #: ``ports[].realServers.virtualMachineGroupRef``.
    field: str
    target: str
    #: True when the referrer's deletion goes first (its target waits for it).
    referrer_first: bool = False


REFERENCES: tuple[Reference, ...] = (
    Reference("DNSRecord", "loadBalancerRef", "LoadBalancer", referrer_first=True),
    Reference("DNSRecord", "virtualMachineRef", "VirtualMachine", referrer_first=True),
    Reference("DNSRecord", "virtualMachineGroupRef", "VirtualMachineGroup", referrer_first=True),
    Reference("LoadBalancer", "ports[].realServers.virtualMachineGroupRef", "VirtualMachineGroup"),
    Reference("Share", "access[].virtualMachineRef", "VirtualMachine"),
    Reference("Share", "access[].virtualMachineGroupRef", "VirtualMachineGroup"),
)


def referencing(referrer: str) -> dict[str, str]:
    """Target kind → field, for the references ``referrer`` declares at its spec's top."""
    return {ref.target: ref.field for ref in REFERENCES if ref.referrer == referrer}
