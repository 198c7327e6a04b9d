"""mypy checks that the unit tests' fakes implement the ports they stand in for
(``make lint`` runs mypy on this file): each fake inherits its port
(``class FakeDns(DnsPort)``), so mypy checks every method it defines against the port's
signature, and :func:`conforms` builds each one, which mypy refuses while a port method
is missing from it (the Protocol's method would be abstract). A fake that drifts from a
port fails lint, not a test at run time. tests/unit/test_services.py checks that every
port part has a fake, and that :func:`conforms` builds them all.

Nothing here runs; pytest does not collect it (no ``test_`` prefix).
"""

from __future__ import annotations

from tests.unit.fakes.blockstorage import FakeBlockStorage
from tests.unit.fakes.dns import FakeDns
from tests.unit.fakes.floating_ips import FakeFloatingIPs
from tests.unit.fakes.keypairs import FakeKeyPairs
from tests.unit.fakes.loadbalancing import FakeLoadBalancing
from tests.unit.fakes.networks import FakeNetworks
from tests.unit.fakes.ports import FakePorts
from tests.unit.fakes.security_groups import FakeSecurityGroups
from tests.unit.fakes.servers import FakeServers
from tests.unit.fakes.sharedfs import FakeSharedFS


def conforms() -> list[object]:
    """Every fake, built: mypy fails here on one that lacks a method of its port."""
    return [
        FakeServers(),
        FakeKeyPairs(),
        FakeLoadBalancing(),
        FakeDns(),
        FakeSharedFS(),
        FakeBlockStorage(),
        FakeSecurityGroups(),
        FakeFloatingIPs(),
        FakeNetworks(),
        FakePorts(),
    ]
