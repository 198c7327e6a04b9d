"""DryRunCloud: the cloud with its writes recorded instead of made.

Every service's dry-run half (``kumo.cloud.services.<service>.dryrun``) passes its reads
(what :mod:`kumo.ports` declares ``@read``) through to the real adapter and defines each
write (declared ``@write``) to append an :class:`~kumo.engine.dryrun.Action` only — with
the fields it would change, old (read from the adapter) → new — returning what the
actuator needs to carry on (a new server as ``BUILD`` with the ID ``(new)``). Nothing
else exists on it: mypy checks it against :class:`kumo.ports.Cloud` (no ``Any``), and
tests/unit/test_services.py that it is composed of every service's half.

Who uses it: the engine's dry passes (``managementPolicy: Observe``, ``driftPolicy:
Report``) and ``kumo plan``, through ``Engine(dry_run=DryRunCloud)``.
"""

from __future__ import annotations

from kumo.cloud.dry import NEW_ID
from kumo.cloud.services.blockstorage.dryrun import BlockStorageDryRun
from kumo.cloud.services.compute.dryrun import ComputeDryRun
from kumo.cloud.services.dns.dryrun import DnsDryRun
from kumo.cloud.services.loadbalancing.dryrun import LoadBalancingDryRun
from kumo.cloud.services.networking.dryrun import NetworkingDryRun
from kumo.cloud.services.sharedfs.dryrun import SharedFSDryRun
from kumo.ports import Cloud

__all__ = ["NEW_ID", "DryRunCloud"]


class DryRunCloud(
    ComputeDryRun,
    LoadBalancingDryRun,
    DnsDryRun,
    SharedFSDryRun,
    BlockStorageDryRun,
    NetworkingDryRun,
):
    """Every service's dry-run half, in the order of :class:`kumo.ports.Cloud`."""


def _implements(cloud: DryRunCloud) -> Cloud:
    """Never called: mypy checks here that the dry cloud has every port's reads and
    writes with the ports' signatures, so a kind's call works in a dry pass too."""
    return cloud
