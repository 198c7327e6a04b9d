"""The sharedfs service. Manila (shared file systems): shares, access rules, export locations.

Its port is :class:`kumo.ports.SharedFSPort`; its watchers are in watch.py, its dry-run half in
dryrun.py, its unit fake in tests/unit/fakes/sharedfs.py."""

from __future__ import annotations

from kumo.cloud.service import Service
from kumo.cloud.services.sharedfs.calls import SharedFSCalls
from kumo.cloud.services.sharedfs.dryrun import SharedFSDryRun
from kumo.cloud.services.sharedfs.watch import ShareWatcher
from kumo.ports import SharedFSPort

SERVICE = Service(
    name="sharedfs",
    port=SharedFSPort,
    calls=SharedFSCalls,
    watchers=(ShareWatcher,),
    dryrun=SharedFSDryRun,
)
