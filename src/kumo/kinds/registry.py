"""One record per kind: its API table entry, how to build its actuator, the cloud
services it uses and the kinds whose objects it makes.

The operator and `kumo plan` build their actuators from :data:`RECORDS`, `kumo rbac`
writes the ClusterRole's kind rules from it, and the integration fixtures and the bench
delete in :func:`deletion_order`; so a new kind is wired into all of them by adding one
record here (a unit test fails when a kind of :data:`kumo.api.kinds.KINDS` has none, and
another when a list of kinds is written by hand elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kumo.api import kinds
from kumo.api.common import GROUP
from kumo.api.kinds import KindInfo
from kumo.engine.objects import Actuator
from kumo.kinds.dnsrecord.actuator import DNSRecordActuator
from kumo.kinds.floatingip.actuator import FloatingIPActuator
from kumo.kinds.keypair.actuator import KeyPairActuator
from kumo.kinds.kumocluster.actuator import KumoClusterActuator
from kumo.kinds.kumomachine.actuator import KumoMachineActuator
from kumo.kinds.loadbalancer.actuator import LoadBalancerActuator
from kumo.kinds.network.actuator import NetworkActuator
from kumo.kinds.port.actuator import PortActuator
from kumo.kinds.references import REFERENCES
from kumo.kinds.securitygroup.actuator import SecurityGroupActuator
from kumo.kinds.share.actuator import ShareActuator
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.kinds.virtualmachinegroup.actuator import VirtualMachineGroupActuator
from kumo.kinds.volume.actuator import VolumeActuator


@dataclass(frozen=True)
class KindRecord:
    info: KindInfo
    #: Builds a fresh actuator (each caller gets its own: actuators may hold state).
    actuator: Callable[[], Actuator]
    #: The cloud services its actuator calls, by their names in
    #: :data:`kumo.ports.SERVICES` (a unit test checks them against the calls it makes);
    #: none for a kind that only makes objects of other kinds (a KumoMachine).
    services: tuple[str, ...]
    #: Kinds whose objects its actuator creates and deletes in Kubernetes (a group's
    #: members): RBAC grants create/delete on them, and it is deleted before them (else
    #: it would make them again). It owns them (``blockOwnerDeletion: true``): RBAC also
    #: grants update on its own ``<plural>/finalizers``, which OpenShift's owner-reference
    #: admission requires for that.
    creates: tuple[KindInfo, ...] = ()


RECORDS: tuple[KindRecord, ...] = (
    # The router's external network is found like a floating IP's (networking too).
    KindRecord(kinds.NETWORK, NetworkActuator, ("networking",)),
    KindRecord(kinds.SECURITY_GROUP, SecurityGroupActuator, ("networking",)),
    KindRecord(kinds.KEY_PAIR, KeyPairActuator, ("compute",)),
    # Block storage too: spec.volumes attach through Nova, after a look at the Cinder volume.
    # Networking: spec.ports (is the port free?) and allowedAddressPairs on its own port.
    KindRecord(
        kinds.VIRTUAL_MACHINE,
        VirtualMachineActuator,
        ("compute", "blockstorage", "networking"),
    ),
    KindRecord(
        kinds.VIRTUAL_MACHINE_GROUP,
        VirtualMachineGroupActuator,
        # Block storage: snapshotBeforeReplace snapshots members' volumes.
        ("compute", "blockstorage"),
        # Volumes: a stateful group's volume templates, made as Volume objects.
        creates=(kinds.VIRTUAL_MACHINE, kinds.VOLUME),
    ),
    # Compute too: network lookups, and which member addresses still have a server.
    KindRecord(kinds.LOAD_BALANCER, LoadBalancerActuator, ("loadbalancing", "compute")),
    # Load balancing too: a LoadBalancer target's VIP port (from the watch's cache).
    KindRecord(kinds.FLOATING_IP, FloatingIPActuator, ("networking", "loadbalancing")),
    KindRecord(kinds.DNS_RECORD, DNSRecordActuator, ("dns",)),
    KindRecord(kinds.SHARE, ShareActuator, ("sharedfs",)),
    # Compute too: an image source, and whether an attached server is Kumo's.
    KindRecord(kinds.VOLUME, VolumeActuator, ("blockstorage", "compute")),
    # Compute too: the network lookup (by name or ID) servers use.
    KindRecord(kinds.PORT, PortActuator, ("networking", "compute")),
    # Cluster API's kinds (infrastructure.kumo.dev): their parts are Kumo objects. A
    # KumoMachine calls no cloud service itself (its VirtualMachine does); a KumoCluster
    # makes its machine sets' server groups.
    KindRecord(kinds.KUMO_MACHINE, KumoMachineActuator, (), creates=(kinds.VIRTUAL_MACHINE,)),
    KindRecord(
        kinds.KUMO_CLUSTER,
        KumoClusterActuator,
        ("compute",),
        creates=(
            kinds.NETWORK,
            kinds.SECURITY_GROUP,
            kinds.LOAD_BALANCER,
            kinds.FLOATING_IP,
            kinds.DNS_RECORD,
        ),
    ),
)


def actuators() -> list[Actuator]:
    """A new actuator for every kind, in the order of :data:`RECORDS`."""
    return [record.actuator() for record in RECORDS]


def goes_before() -> dict[str, set[str]]:
    """Kind → the kinds that must be deleted after it: the targets of its declared
    references (a referrer lets go of its target first: DNS, pool members, access
    rules) and the kinds it creates (a group deleted after its members remakes them)."""
    known = {record.info.kind for record in RECORDS}
    after: dict[str, set[str]] = {kind: set() for kind in known}
    for ref in REFERENCES:
        if ref.referrer in known and ref.target in known and ref.orders:  # not ConfigMap
            after[ref.referrer].add(ref.target)
    for record in RECORDS:
        after[record.info.kind].update(info.kind for info in record.creates)
    return after


def deletion_order() -> tuple[KindInfo, ...]:
    """Every kind, each before the kinds :func:`goes_before` puts after it, for deleting
    everything at once (test fixtures, the bench). Of kinds with no order between them,
    the later record comes first (the order ``reversed(KINDS)`` gave by hand)."""
    after = goes_before()
    waiting = {kind: 0 for kind in after}  # kind → how many kinds must go before it
    for targets in after.values():
        for target in targets:
            waiting[target] += 1
    pending = [record.info for record in reversed(RECORDS)]
    order: list[KindInfo] = []
    while pending:
        info = next((i for i in pending if waiting[i.kind] == 0), None)
        if info is None:
            raise ValueError(f"references form a cycle among {[i.kind for i in pending]}")
        pending.remove(info)
        order.append(info)
        for target in after[info.kind]:
            waiting[target] -= 1
    return tuple(order)


def members() -> tuple[KindInfo, ...]:
    """Kinds some other kind of Kumo's own group creates as its members (a group's VMs
    and Volumes): deleting their creator deletes them. Not the kinds a Cluster API kind
    makes as its parts: those are ordinary Kumo objects a user makes too."""
    made = {
        info.kind for record in RECORDS if record.info.group == GROUP for info in record.creates
    }
    return tuple(record.info for record in RECORDS if record.info.kind in made)
