"""The dns service. Designate: zones (looked up) and recordsets.

Its port is :class:`kumo.ports.DnsPort`; its watchers are in watch.py, its dry-run half in
dryrun.py, its unit fake in tests/unit/fakes/dns.py."""

from __future__ import annotations

from kumo.cloud.service import Service
from kumo.cloud.services.dns.calls import DnsCalls
from kumo.cloud.services.dns.dryrun import DnsDryRun
from kumo.cloud.services.dns.watch import ZoneWatcher
from kumo.ports import DnsPort

SERVICE = Service(
    name="dns",
    port=DnsPort,
    calls=DnsCalls,
    watchers=(ZoneWatcher,),
    dryrun=DnsDryRun,
)
