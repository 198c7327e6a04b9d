"""Every OpenStack service Kumo calls, one package each (a port in kumo.ports, calls,
watchers, a dry-run half and a unit fake under one name), and what derives from them.

:data:`SERVICES` follows :data:`kumo.ports.SERVICES` (the order of :class:`kumo.ports.Cloud`);
tests/unit/test_services.py fails when a service is registered incompletely.
"""

from __future__ import annotations

from collections.abc import Callable

from kumo.cloud.service import Service
from kumo.cloud.services import blockstorage, compute, dns, loadbalancing, networking, sharedfs
from kumo.cloud.watcher import WatchEnv, Watcher
from kumo.ports import Cloud

__all__ = ["SERVICES", "WATCHERS", "Service"]

#: Every service by name, in the order of kumo.ports.SERVICES.
SERVICES: dict[str, Service] = {
    s.name: s
    for s in (
        compute.SERVICE,
        loadbalancing.SERVICE,
        dns.SERVICE,
        sharedfs.SERVICE,
        blockstorage.SERVICE,
        networking.SERVICE,
    )
}

#: Every watcher a CloudWatch schedules, service by service.
WATCHERS: tuple[Callable[[Cloud, WatchEnv], Watcher], ...] = tuple(
    w for s in SERVICES.values() for w in s.watchers
)
