"""The networking service. Neutron (networking), in four parts: security groups (security_groups.py), floating IPs (floating_ips.py), networks with subnets and routers (networks.py), Port objects' ports (ports.py).

Its port is :class:`kumo.ports.NetworkingPort`; its watchers are in watch.py, its dry-run half in
dryrun.py, its unit fake in tests/unit/fakes/networking.py."""

from __future__ import annotations

from kumo.cloud.service import Service
from kumo.cloud.services.networking.dryrun import NetworkingDryRun
from kumo.cloud.services.networking.floating_ips import FloatingIPsCalls
from kumo.cloud.services.networking.networks import NetworksCalls
from kumo.cloud.services.networking.ports import PortsCalls
from kumo.cloud.services.networking.security_groups import SecurityGroupsCalls
from kumo.cloud.services.networking.watch import (
    FloatingIPWatcher,
    NetworkWatcher,
    PortWatcher,
    SecurityGroupWatcher,
)
from kumo.ports import NetworkingPort


class NetworkingCalls(SecurityGroupsCalls, FloatingIPsCalls, NetworksCalls, PortsCalls):
    """Every part of the service's calls."""


SERVICE = Service(
    name="networking",
    port=NetworkingPort,
    calls=NetworkingCalls,
    watchers=(
        SecurityGroupWatcher,
        FloatingIPWatcher,
        NetworkWatcher,
        PortWatcher,
    ),
    dryrun=NetworkingDryRun,
)
