"""Cinder's watcher: Kumo's volumes, one listing filtered by Kumo's metadata per interval."""

from __future__ import annotations

from typing import Any

from kumo.cloud import model
from kumo.cloud.cache import ResourceCache
from kumo.cloud.watcher import ListingWatcher, WatchEnv, metadata_marker
from kumo.ports import BlockStoragePort

#: Cinder volume states in which Cinder is still working on it.
TRANSITIONAL_VOLUME = {
    "creating", "extending", "deleting", "attaching", "detaching", "downloading",
    "reserved", "maintenance", "uploading", "retyping",
}  # fmt: skip


class VolumeWatcher(ListingWatcher[model.Volume]):
    """Cinder: Kumo's volumes, one listing filtered by Kumo's metadata per interval —
    the idle cost is one call per page of ``osapi_max_limit`` volumes (1,000 by
    default: cloud/pages.py), and no per-volume GET (attachments come with the listing)."""

    service = "blockstorage"
    api, resource = "block-storage", "volumes"
    counted = "volumes-list"

    def __init__(self, cloud: BlockStoragePort, env: WatchEnv) -> None:
        self.cloud = cloud
        self.volumes: ResourceCache[model.Volume] = ResourceCache(
            "volumes",
            lambda v: v.id,
            lambda v: model.metadata_owner(v.metadata),
            live=lambda v: v.status != "deleting",
        )
        super().__init__(
            env,
            self.volumes,
            ("volume", metadata_marker),
            lambda: self.cloud.list_managed_volumes(),
        )

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_volume(resource.id)

    def is_busy(self, resource: Any) -> bool:
        """Cinder refuses a delete while a volume is creating, attaching, deleting, …"""
        return str(resource.status or "").endswith("ing")

    def transitional(self) -> bool:
        return any(v.status in TRANSITIONAL_VOLUME for v in self.volumes.items())
