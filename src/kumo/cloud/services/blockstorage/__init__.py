"""The blockstorage service. Cinder (block storage): volumes, snapshots, attachments through Nova.

Its port is :class:`kumo.ports.BlockStoragePort`; its watchers are in watch.py, its dry-run half in
dryrun.py, its unit fake in tests/unit/fakes/blockstorage.py."""

from __future__ import annotations

from kumo.cloud.service import Service
from kumo.cloud.services.blockstorage.calls import BlockStorageCalls
from kumo.cloud.services.blockstorage.dryrun import BlockStorageDryRun
from kumo.cloud.services.blockstorage.watch import VolumeWatcher
from kumo.ports import BlockStoragePort

SERVICE = Service(
    name="blockstorage",
    port=BlockStoragePort,
    calls=BlockStorageCalls,
    watchers=(VolumeWatcher,),
    dryrun=BlockStorageDryRun,
)
