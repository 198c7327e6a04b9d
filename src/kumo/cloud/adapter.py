"""OpenStackCloud: every cloud call Kumo makes, on openstacksdk's proxy layer.

Blocking SDK calls run in threads, bounded per cloud by a semaphore and a token
bucket, so the event loop never blocks and one cloud is never flooded. Methods
return plain values from :mod:`kumo.cloud.model`; ``get_*`` returns ``None`` when
the resource is gone; failures are raised as transient/terminal ReconcileErrors.
Never uses the SDK's blocking ``wait_for_*``: callers requeue instead.
"""

from __future__ import annotations

from kumo.cloud.compute import ComputeCalls
from kumo.cloud.designate import DesignateCalls
from kumo.cloud.floatingips import FloatingIPCalls
from kumo.cloud.keypairs import KeyPairCalls
from kumo.cloud.networks import NetworkCalls
from kumo.cloud.neutron import NeutronCalls
from kumo.cloud.octavia import LISTENER_PROTOCOL, MONITOR_TYPE, OctaviaCalls
from kumo.cloud.shares import ManilaCalls
from kumo.cloud.volumes import CinderCalls
from kumo.ports import Cloud

__all__ = ["LISTENER_PROTOCOL", "MONITOR_TYPE", "OpenStackCloud"]


class OpenStackCloud(
    ComputeCalls,
    OctaviaCalls,
    DesignateCalls,
    ManilaCalls,
    NeutronCalls,
    KeyPairCalls,
    FloatingIPCalls,
    CinderCalls,
    NetworkCalls,
):
    """The adapter the kinds are given: one per cloud (credentials), shared by the
    namespaces that use it. See base.py for how calls are made."""


def _implements(cloud: OpenStackCloud) -> Cloud:
    """Never called: mypy checks here that the adapter has every port's methods with the
    ports' signatures, so the kinds' calls (checked against the ports) reach it."""
    return cloud
