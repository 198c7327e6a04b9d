"""OpenStackCloud: every cloud call Kumo makes, on openstacksdk's proxy layer — the
composition of every service's calls (``kumo.cloud.services.<service>``).

Blocking SDK calls run in threads, bounded per cloud by a semaphore and a token
bucket, so the event loop never blocks and one cloud is never flooded. Methods
return plain values from :mod:`kumo.ports.model`; ``get_*`` returns ``None`` when
the resource is gone; failures are raised as transient/terminal ReconcileErrors.
Never uses the SDK's blocking ``wait_for_*``: callers requeue instead.
"""

from __future__ import annotations

from kumo.cloud.services import WATCHERS
from kumo.cloud.services.blockstorage import BlockStorageCalls
from kumo.cloud.services.compute import ComputeCalls
from kumo.cloud.services.dns import DnsCalls
from kumo.cloud.services.loadbalancing import LoadBalancingCalls
from kumo.cloud.services.loadbalancing.calls import LISTENER_PROTOCOL, MONITOR_TYPE
from kumo.cloud.services.networking import NetworkingCalls
from kumo.cloud.services.sharedfs import SharedFSCalls
from kumo.ports import Cloud

__all__ = ["LISTENER_PROTOCOL", "MONITOR_TYPE", "OpenStackCloud"]


class OpenStackCloud(
    ComputeCalls,
    LoadBalancingCalls,
    DnsCalls,
    SharedFSCalls,
    BlockStorageCalls,
    NetworkingCalls,
):
    """The adapter the kinds are given: one per cloud (credentials), shared by the
    namespaces that use it. Every service's calls, in the order of
    :class:`kumo.ports.Cloud` (tests/unit/test_services.py checks it against the service
    registry). See base.py for how calls are made."""

    WATCHERS = WATCHERS


def _implements(cloud: OpenStackCloud) -> Cloud:
    """Never called: mypy checks here that the adapter has every port's methods with the
    ports' signatures, so the kinds' calls (checked against the ports) reach it."""
    return cloud
