"""The loadbalancing service. Octavia: load balancers, listeners, pools and health
monitors (calls.py), pool members (members.py).

Its port is :class:`kumo.ports.LoadBalancingPort`; its watchers are in watch.py, its dry-run half in
dryrun.py, its unit fake in tests/unit/fakes/loadbalancing.py."""

from __future__ import annotations

from kumo.cloud.service import Service
from kumo.cloud.services.loadbalancing.dryrun import LoadBalancingDryRun
from kumo.cloud.services.loadbalancing.members import MemberCalls
from kumo.cloud.services.loadbalancing.watch import LoadBalancerWatcher
from kumo.ports import LoadBalancingPort


class LoadBalancingCalls(MemberCalls):
    """Every call of the service."""


SERVICE = Service(
    name="loadbalancing",
    port=LoadBalancingPort,
    calls=LoadBalancingCalls,
    watchers=(LoadBalancerWatcher,),
    dryrun=LoadBalancingDryRun,
)
