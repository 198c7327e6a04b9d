"""An in-memory Cinder (with Nova's attach calls) with the manners that matter to Kumo.

* A created volume is ``creating``, an extended one ``extending``, an attaching one
  ``attaching``, a detaching one ``detaching``, a deleted one ``deleting``; the next
  ``get_volume`` or listing settles it (``available``/``in-use``, or gone).
* Volumes have metadata, no tags; attachments name servers.
* Cinder refuses to delete a volume that is attached (400) or has snapshots (400), and
  to extend one that is not available.
* Volumes carry Cinder's ``created_at``/``updated_at`` (the real clock, UTC).
  ``lose_creates``: that many creates lose their answer (the volume is made, the caller
  gets a 502).
* Snapshots: a created one is ``creating`` until the next listing (then ``available``,
  or ``error`` for a volume in ``fail_snapshots``); a deleted one ``deleting``, then
  gone. ``snapshot_quota`` refuses creates beyond it (Cinder's 413, terminal).
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime

from kumo.cloud import model
from kumo.engine.errors import TerminalError, TransientError
from kumo.ports import BlockStoragePort

_ids = itertools.count(1)

TYPES = {"type-lvm": "lvmdriver-1"}


class FakeBlockStorage(BlockStoragePort):
    region: str | None = "tokyo1"

    async def project_id(self) -> str | None:
        return "project-tokyo1"

    def __init__(self) -> None:
        self.volumes: dict[str, model.Volume] = {}
        self._settle: dict[str, model.Volume | None] = {}  # what the next read shows
        self.calls: list[str] = []
        self.snapshots: dict[str, model.Snapshot] = {}
        self._snapshots_settle: dict[str, model.Snapshot | None] = {}
        self.fail_snapshots: set[str] = set()  # volume IDs whose snapshots end in error
        self.snapshot_quota: int | None = None
        self._clock = itertools.count(1)
        self.lose_creates = 0

    # -- helpers for tests ----------------------------------------------------------------

    def only_volume(self) -> model.Volume:
        (volume,) = self.volumes.values()
        return volume

    def add_volume(
        self,
        name: str,
        size: int = 1,
        attachments: tuple[str, ...] = (),
        metadata: dict[str, str] | None = None,
        source_volid: str | None = None,
    ) -> model.Volume:
        """Out of band: a volume someone made (settled): a clone names its source."""
        volume = model.Volume(
            f"vol-{next(_ids):04d}",
            name,
            "in-use" if attachments else "available",
            size,
            "lvmdriver-1",
            "nova",
            metadata=metadata or {},
            attachments=attachments,
            source_volid=source_volid,
            created_at=now(),
            updated_at=now(),
        )
        self.volumes[volume.id] = volume
        return volume

    def hide(self, volume_id: str) -> model.Volume:
        """Keep a volume out of the API's answers for a while (a listing that does not
        show it yet); returns it as it will be once settled, for :meth:`show`."""
        settled = self._read(volume_id)
        assert settled is not None
        del self.volumes[volume_id]
        return settled

    def show(self, volume: model.Volume) -> None:
        self.volumes[volume.id] = volume

    def delete_volume_out_of_band(self, volume_id: str) -> None:
        self.volumes.pop(volume_id, None)
        self._settle.pop(volume_id, None)

    def _read(self, volume_id: str) -> model.Volume | None:
        if volume_id in self._settle:
            after = self._settle.pop(volume_id)
            if after is None:
                self.volumes.pop(volume_id, None)
            else:
                self.volumes[volume_id] = after
        return self.volumes.get(volume_id)

    def _settled(self, volume: model.Volume) -> model.Volume:
        status = "in-use" if volume.attachments else "available"
        return replace(volume, status=status, updated_at=now())

    # -- the adapter's surface ------------------------------------------------------------

    async def volume_type_name(self, ref: str, field: str = "spec.volumeType") -> str:
        for type_id, name in TYPES.items():
            if ref in (type_id, name):
                return name
        raise TerminalError("VolumeTypeNotFound", f"volume type {ref!r} not found", field=field)

    async def get_volume(self, volume_id: str) -> model.Volume | None:
        self.calls.append("get_volume")
        return self._read(volume_id)

    async def fetch_volume(self, volume_id: str) -> model.Volume | None:
        self.calls.append("fetch_volume")
        return self._read(volume_id)

    async def list_owned_volumes(self, uid: str) -> list[model.Volume]:
        self.calls.append("list_owned_volumes")
        for volume_id in list(self.volumes):
            self._read(volume_id)
        return [v for v in self.volumes.values() if model.metadata_owner(v.metadata) == uid]

    async def list_managed_volumes(self) -> list[model.Volume]:
        for volume_id in list(self.volumes):
            self._read(volume_id)
        return [
            v
            for v in self.volumes.values()
            if v.metadata.get(model.SHARE_MANAGED_KEY) == model.SHARE_MANAGED_VALUE
        ]

    async def find_volumes_by_name(self, name: str) -> list[model.Volume]:
        for volume_id in list(self.volumes):
            self._read(volume_id)
        return [v for v in self.volumes.values() if v.name == name]

    async def create_volume(
        self,
        *,
        name: str,
        size: int,
        volume_type: str | None,
        availability_zone: str | None,
        image_id: str | None,
        snapshot_id: str | None,
        description: str | None,
        metadata: dict[str, str],
    ) -> model.Volume:
        self.calls.append("create_volume")
        volume = model.Volume(
            f"vol-{next(_ids):04d}",
            name,
            "creating",
            size,
            volume_type or "lvmdriver-1",
            availability_zone or "nova",
            description,
            dict(metadata),
            source_image=image_id,
            snapshot_id=snapshot_id,
            created_at=now(),
            updated_at=now(),
        )
        self.volumes[volume.id] = volume
        self._settle[volume.id] = self._settled(volume)
        if self.lose_creates:
            self.lose_creates -= 1
            raise TransientError("CloudUnavailable", "create volume: 502 (the answer was lost)")
        return volume

    async def extend_volume(self, volume_id: str, new_size: int) -> None:
        self.calls.append("extend_volume")
        volume = self.volumes[volume_id]
        if volume.status != "available":
            raise TerminalError("InvalidVolume", "volume must be available to extend")
        self.volumes[volume_id] = replace(volume, status="extending")
        self._settle[volume_id] = replace(volume, size=new_size)

    async def update_volume(self, volume_id: str, *, description: str | None) -> None:
        self.volumes[volume_id] = replace(self.volumes[volume_id], description=description)

    async def set_volume_metadata(self, volume_id: str, metadata: dict[str, str]) -> None:
        self.calls.append("set_volume_metadata")
        self.volumes[volume_id] = replace(self.volumes[volume_id], metadata=dict(metadata))

    async def delete_volume(self, volume_id: str) -> None:
        self.calls.append("delete_volume")
        volume = self.volumes.get(volume_id)
        if volume is None:
            return
        if volume.attachments:
            raise TerminalError("InvalidVolume", f"volume {volume_id} is attached")
        if any(s.volume_id == volume_id for s in self.snapshots.values()):
            raise TerminalError("CloudRejected", f"volume {volume_id} has dependent snapshots")
        self.volumes[volume_id] = replace(volume, status="deleting")
        self._settle[volume_id] = None

    async def attach_volume(self, server_id: str, volume_id: str, device: str | None) -> None:
        self.calls.append("attach_volume")
        volume = self.volumes[volume_id]
        attached = replace(volume, attachments=tuple(sorted({*volume.attachments, server_id})))
        self.volumes[volume_id] = replace(volume, status="attaching")
        self._settle[volume_id] = self._settled(attached)

    async def detach_volume(self, server_id: str, volume_id: str) -> None:
        self.calls.append("detach_volume")
        volume = self.volumes.get(volume_id)
        if volume is None:
            return
        kept = tuple(s for s in volume.attachments if s != server_id)
        self.volumes[volume_id] = replace(volume, status="detaching")
        self._settle[volume_id] = self._settled(replace(volume, attachments=kept))

    # -- snapshots --------------------------------------------------------------------------

    async def list_snapshots(self, metadata: dict[str, str]) -> list[model.Snapshot]:
        self.calls.append("list_snapshots")
        for snapshot_id, after in list(self._snapshots_settle.items()):
            del self._snapshots_settle[snapshot_id]
            if after is None:
                self.snapshots.pop(snapshot_id, None)
            else:
                self.snapshots[snapshot_id] = after
        return [s for s in self.snapshots.values() if metadata.items() <= s.metadata.items()]

    async def create_snapshot(
        self, volume_id: str, *, name: str, description: str, metadata: dict[str, str]
    ) -> model.Snapshot:
        self.calls.append("create_snapshot")
        if self.snapshot_quota is not None and len(self.snapshots) >= self.snapshot_quota:
            raise TerminalError(
                "QuotaExceeded",
                "create snapshot: Maximum number of snapshots allowed "
                f"({self.snapshot_quota}) exceeded",
                field="spec.snapshotBeforeReplace",
            )
        volume = self.volumes[volume_id]
        snapshot = model.Snapshot(
            f"snap-{next(_ids):04d}",
            name,
            "creating",
            volume_id,
            volume.size,
            f"2026-11-25T08:{next(self._clock):02d}:00.000000",
            dict(metadata),
        )
        self.snapshots[snapshot.id] = snapshot
        failed = volume_id in self.fail_snapshots
        self._snapshots_settle[snapshot.id] = replace(
            snapshot, status="error" if failed else "available"
        )
        return snapshot

    async def set_snapshot_metadata(self, snapshot_id: str, metadata: dict[str, str]) -> None:
        self.calls.append("set_snapshot_metadata")
        self.snapshots[snapshot_id] = replace(self.snapshots[snapshot_id], metadata=dict(metadata))

    async def delete_snapshot(self, snapshot_id: str) -> None:
        self.calls.append("delete_snapshot")
        snapshot = self.snapshots.get(snapshot_id)
        if snapshot is None:
            return
        self.snapshots[snapshot_id] = replace(snapshot, status="deleting")
        self._snapshots_settle[snapshot_id] = None


def now() -> str:
    """Cinder's timestamps: UTC, ISO 8601 without a zone."""
    return datetime.now(UTC).replace(tzinfo=None).isoformat()
