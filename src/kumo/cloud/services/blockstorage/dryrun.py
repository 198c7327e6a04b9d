"""The blockstorage service in a dry pass: its reads passed through to the real cloud, its
writes recorded as :class:`~kumo.engine.dryrun.Action` s (see :mod:`kumo.cloud.dryrun`)."""

from __future__ import annotations

from typing import Any

from kumo.cloud import model
from kumo.cloud.dry import NEW_ID, DryRunBase, passthrough
from kumo.engine.dryrun import Change
from kumo.ports import BlockStoragePort


class BlockStorageDryRun(DryRunBase):
    """The blockstorage service's writes recorded, its reads passed through."""

    # Reads: the real cloud's answer.
    volume_type_name = passthrough(BlockStoragePort.volume_type_name)
    get_volume = passthrough(BlockStoragePort.get_volume)
    fetch_volume = passthrough(BlockStoragePort.fetch_volume)
    list_owned_volumes = passthrough(BlockStoragePort.list_owned_volumes)
    list_managed_volumes = passthrough(BlockStoragePort.list_managed_volumes)
    find_volumes_by_name = passthrough(BlockStoragePort.find_volumes_by_name)
    list_snapshots = passthrough(BlockStoragePort.list_snapshots)

    # Writes: recorded, never made.

    async def create_volume(self, **attrs: Any) -> model.Volume:
        self._record(
            "create",
            "volume",
            attrs["name"],
            Change("spec.size", None, attrs.get("size")),
            Change("spec.volumeType", None, attrs.get("volume_type")),
        )
        return model.Volume(
            id=NEW_ID,
            name=attrs["name"],
            status="creating",
            size=attrs.get("size", 0),
            volume_type=attrs.get("volume_type"),
            metadata=dict(attrs.get("metadata") or {}),
        )

    async def extend_volume(self, volume_id: str, new_size: int) -> None:
        old = await self._inner.get_volume(volume_id)
        self._record(
            "update", "volume", volume_id, Change("spec.size", old.size if old else None, new_size)
        )

    async def update_volume(self, volume_id: str, *, description: str | None) -> None:
        old = await self._inner.get_volume(volume_id)
        self._record(
            "update",
            "volume",
            volume_id,
            Change("spec.description", old.description if old else None, description),
        )

    async def set_volume_metadata(self, volume_id: str, metadata: dict[str, str]) -> None:
        old = await self._inner.get_volume(volume_id)
        self._record(
            "update",
            "volume",
            volume_id,
            Change("metadata", old.metadata if old else None, metadata),
        )

    async def delete_volume(self, volume_id: str) -> None:
        self._record("delete", "volume", volume_id)

    async def attach_volume(self, server_id: str, volume_id: str, device: str | None) -> None:
        self._record(
            "update", "server", server_id, Change("spec.volumes", None, f"attach {volume_id}")
        )

    async def detach_volume(self, server_id: str, volume_id: str) -> None:
        self._record(
            "update", "server", server_id, Change("spec.volumes", f"attach {volume_id}", None)
        )

    async def create_snapshot(
        self, volume_id: str, *, name: str, description: str, metadata: dict[str, str]
    ) -> model.Snapshot:
        self._record("create", "snapshot", name, Change("volume", None, volume_id))
        return model.Snapshot(NEW_ID, name, "creating", volume_id, metadata=dict(metadata))

    async def set_snapshot_metadata(self, snapshot_id: str, metadata: dict[str, str]) -> None:
        self._record("update", "snapshot", snapshot_id, Change("metadata", None, metadata))

    async def delete_snapshot(self, snapshot_id: str) -> None:
        self._record("delete", "snapshot", snapshot_id)
