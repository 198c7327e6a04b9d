"""One record per kind: its API table entry and how to build its actuator.

The operator and `kumo plan` both build their actuators from :data:`RECORDS`, so a
new kind is wired into both by adding one record here (a unit test fails when a kind
of :data:`kumo.api.kinds.KINDS` has none).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kumo.api import kinds
from kumo.api.kinds import KindInfo
from kumo.kinds.dnsrecord.actuator import DNSRecordActuator
from kumo.kinds.loadbalancer.actuator import LoadBalancerActuator
from kumo.kinds.share.actuator import ShareActuator
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.kinds.virtualmachinegroup.actuator import VirtualMachineGroupActuator


@dataclass(frozen=True)
class KindRecord:
    info: KindInfo
    #: Builds a fresh actuator (each caller gets its own: actuators may hold state).
    actuator: Callable[[], Any]


RECORDS: tuple[KindRecord, ...] = (
    KindRecord(kinds.VIRTUAL_MACHINE, VirtualMachineActuator),
    KindRecord(kinds.VIRTUAL_MACHINE_GROUP, VirtualMachineGroupActuator),
    KindRecord(kinds.LOAD_BALANCER, LoadBalancerActuator),
    KindRecord(kinds.DNS_RECORD, DNSRecordActuator),
    KindRecord(kinds.SHARE, ShareActuator),
)


def actuators() -> list[Any]:
    """A new actuator for every kind, in the order of :data:`RECORDS`."""
    return [record.actuator() for record in RECORDS]
