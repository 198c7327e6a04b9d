"""The compute service. Nova: servers and server groups (calls.py), keypairs (keypairs.py).

Its port is :class:`kumo.ports.ComputePort`; its watchers are in watch.py, its dry-run half in
dryrun.py, its unit fake in tests/unit/fakes/compute.py."""

from __future__ import annotations

from kumo.cloud.service import Service
from kumo.cloud.services.compute.calls import ServersCalls
from kumo.cloud.services.compute.dryrun import ComputeDryRun
from kumo.cloud.services.compute.keypairs import KeyPairsCalls
from kumo.cloud.services.compute.watch import KeyPairWatcher, ServerGroupWatcher, ServerWatcher
from kumo.ports import ComputePort


class ComputeCalls(ServersCalls, KeyPairsCalls):
    """Every part of the service's calls."""


SERVICE = Service(
    name="compute",
    port=ComputePort,
    calls=ComputeCalls,
    watchers=(
        ServerWatcher,
        ServerGroupWatcher,
        KeyPairWatcher,
    ),
    dryrun=ComputeDryRun,
)
