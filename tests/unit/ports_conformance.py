"""mypy checks that the unit tests' fakes implement the ports they stand in for
(``make lint`` runs mypy on this file): a fake that drifts from a port — a method
missing, renamed, or with another signature — fails lint, not a test at run time.

Nothing here runs; pytest does not collect it (no ``test_`` prefix).
"""

from __future__ import annotations

from kumo.ports import (
    ComputePort,
    DnsPort,
    FloatingIPPort,
    KeyPairsPort,
    LoadBalancingPort,
    NetworkingPort,
    NetworksPort,
    SharesPort,
    VolumesPort,
)
from tests.unit.fakes import FakeNova
from tests.unit.kinds.dnsrecord.fake_designate import FakeDesignate
from tests.unit.kinds.floatingip.fake_floatingips import FakeFloatingIPs
from tests.unit.kinds.keypair.fake_keypairs import FakeKeyPairs
from tests.unit.kinds.loadbalancer.fake_octavia import FakeOctavia
from tests.unit.kinds.network.fake_networks import FakeNetworks
from tests.unit.kinds.securitygroup.fake_neutron import FakeNeutron
from tests.unit.kinds.share.fake_manila import FakeManila
from tests.unit.kinds.volume.fake_cinder import FakeCinder


def conforms(
    nova: FakeNova,
    octavia: FakeOctavia,
    designate: FakeDesignate,
    manila: FakeManila,
    neutron: FakeNeutron,
    keypairs: FakeKeyPairs,
    floating: FakeFloatingIPs,
    cinder: FakeCinder,
    network: FakeNetworks,
) -> None:
    compute: ComputePort = nova
    load_balancing: LoadBalancingPort = octavia
    dns: DnsPort = designate
    shares: SharesPort = manila
    networking: NetworkingPort = neutron
    keypair: KeyPairsPort = keypairs
    floating_ips: FloatingIPPort = floating
    volumes: VolumesPort = cinder
    networks: NetworksPort = network
    del compute, load_balancing, dns, shares, networking, keypair, floating_ips, volumes, networks
