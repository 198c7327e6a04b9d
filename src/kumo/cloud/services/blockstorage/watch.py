"""Cinder's watcher: Kumo's volumes, one listing filtered by Kumo's metadata per interval."""

from __future__ import annotations

from typing import Any

from kumo.cloud import model
from kumo.cloud.cache import ResourceCache
from kumo.cloud.watcher import Changes, WatchEnv, Watcher, metadata_marker
from kumo.ports import BlockStoragePort

#: Cinder volume states in which Cinder is still working on it.
TRANSITIONAL_VOLUME = {
    "creating", "extending", "deleting", "attaching", "detaching", "downloading",
    "reserved", "maintenance", "uploading", "retyping",
}  # fmt: skip


class VolumeWatcher(Watcher):
    """Cinder: Kumo's volumes, one listing filtered by Kumo's metadata per interval —
    the idle cost is one call per page of ``osapi_max_limit`` volumes (1,000 by
    default: cloud/pages.py), and no per-volume GET (attachments come with the listing)."""

    service = "blockstorage"
    api, resource = "block-storage", "volumes"

    def __init__(self, cloud: BlockStoragePort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.volumes: ResourceCache[model.Volume] = ResourceCache(
            "volumes",
            lambda v: v.id,
            lambda v: model.metadata_owner(v.metadata),
            live=lambda v: v.status != "deleting",
        )
        self.caches = self.singles = (self.volumes,)
        self.marks = (("volume", self.volumes, metadata_marker),)

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_volume(resource.id)

    async def refresh(self, full: bool) -> Changes:
        token = self.volumes.begin()
        self.env.stats.count("volumes-list")
        listed = await self.cloud.list_managed_volumes()
        return [(self.volumes, c) for c in self.volumes.replace(token, listed)]

    def is_busy(self, resource: Any) -> bool:
        """Cinder refuses a delete while a volume is creating, attaching, deleting, …"""
        return str(resource.status or "").endswith("ing")

    def transitional(self) -> bool:
        return any(v.status in TRANSITIONAL_VOLUME for v in self.volumes.items())
