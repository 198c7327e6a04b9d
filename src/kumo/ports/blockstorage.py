"""The blockstorage service's port. Cinder (block storage): volumes, snapshots, and attachments through Nova."""

from __future__ import annotations

from typing import Protocol

from kumo.ports import model
from kumo.ports.declare import CloudPort, read, write


class BlockStoragePort(CloudPort, Protocol):
    """Cinder: volumes (block storage v3) and their attachments to Nova servers."""

    @read
    async def volume_type_name(self, ref: str, field: str = "spec.volumeType") -> str: ...

    @read
    async def get_volume(self, volume_id: str) -> model.Volume | None: ...

    @read
    async def fetch_volume(self, volume_id: str) -> model.Volume | None: ...

    @read
    async def list_owned_volumes(self, uid: str) -> list[model.Volume]: ...

    @read
    async def list_managed_volumes(self) -> list[model.Volume]: ...

    @read
    async def find_volumes_by_name(self, name: str) -> list[model.Volume]: ...

    @write
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
    ) -> model.Volume: ...

    @write
    async def extend_volume(self, volume_id: str, new_size: int) -> None: ...

    @write
    async def update_volume(self, volume_id: str, *, description: str | None) -> None: ...

    @write
    async def set_volume_metadata(self, volume_id: str, metadata: dict[str, str]) -> None:
        """Make ``metadata`` the volume's whole metadata (Orphan releases the marker)."""

    @write
    async def delete_volume(self, volume_id: str) -> None: ...

    @write
    async def attach_volume(self, server_id: str, volume_id: str, device: str | None) -> None:
        """Attach through Nova (``os-volume_attachments``): the server stays."""

    @write
    async def detach_volume(self, server_id: str, volume_id: str) -> None: ...

    @read
    async def list_snapshots(self, metadata: dict[str, str]) -> list[model.Snapshot]:
        """The project's snapshots whose metadata holds every item of ``metadata``: one
        filtered listing from the API, never cached (only a rollout step asks)."""
        ...

    @write
    async def create_snapshot(
        self, volume_id: str, *, name: str, description: str, metadata: dict[str, str]
    ) -> model.Snapshot:
        """Snapshot the volume, attached or not (``force``: crash-consistent)."""
        ...

    @write
    async def set_snapshot_metadata(self, snapshot_id: str, metadata: dict[str, str]) -> None:
        """Make ``metadata`` the snapshot's whole metadata (Orphan releases the marker)."""

    @write
    async def delete_snapshot(self, snapshot_id: str) -> None:
        """Delete; a snapshot already gone is fine."""
