"""mypy checks that the unit tests' fakes implement the ports they stand in for
(``make lint`` runs mypy on this file, and so on every fake it imports): each fake
inherits its port (``class FakeDns(DnsPort)``), so a fake that drifts from a port — a
method missing, renamed, or with another signature — fails lint, not a test at run time.
tests/unit/test_services.py checks that every port part has a fake.

Nothing here runs; pytest does not collect it (no ``test_`` prefix).
"""

from __future__ import annotations

from tests.unit.fakes import (  # noqa: F401 - imported for mypy to check
    blockstorage,
    dns,
    floating_ips,
    keypairs,
    loadbalancing,
    networks,
    security_groups,
    servers,
    sharedfs,
)
