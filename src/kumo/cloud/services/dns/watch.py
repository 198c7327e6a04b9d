"""Designate's watcher: one zone listing per interval; a zone whose serial, status or
``updated_at`` moved has its recordsets listed again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kumo.cloud import model
from kumo.cloud.cache import ResourceCache
from kumo.cloud.watcher import Changes, WatchEnv, Watcher
from kumo.ports import DnsPort


def recordset_owner(rs: model.Recordset) -> str | None:
    """The owner UID in a recordset's description (Designate has no tags)."""
    return model.text_owner(rs.description)


class ZoneWatcher(Watcher):
    """Designate: a zone listing, and the recordsets of each zone that moved."""

    service = "dns"
    api, resource = "dns", "recordsets"

    def __init__(self, cloud: DnsPort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.recordsets: ResourceCache[model.Recordset] = ResourceCache(
            "recordsets", lambda r: r.id, recordset_owner
        )
        self.caches = self.singles = (self.recordsets,)
        self.marks = (("recordset", self.recordsets, lambda r: model.text_marker(r.description)),)
        self._versions: dict[str, str] = {}

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_recordset(resource.zone_id or "", resource.id)

    def zone_of(self, resource: Any) -> str | None:
        return str(resource.zone_id)

    async def refresh(self, full: bool) -> Changes:
        stats = self.env.stats
        stats.count("zones-probe")
        versions = await self.cloud.zone_versions()
        changed = [z for z, v in versions.items() if full or self._versions.get(z) != v]
        pending = {rs.zone_id for rs in self.recordsets.items() if rs.status == "PENDING"}
        changed += [z for z in pending if z in versions and z not in changed]
        changes: Changes = []
        for zone_id in changed:
            token = self.recordsets.begin()
            stats.count("zone-recordsets")
            listed = await self.cloud.fetch_zone_recordsets(zone_id)
            in_zone = _in_zone(zone_id)
            changes += [
                (self.recordsets, c) for c in self.recordsets.replace(token, listed, in_zone)
            ]
            self._versions[zone_id] = versions[zone_id]
        for zone_id in set(self._versions) - set(versions):  # a zone went
            token = self.recordsets.begin()
            changes += [
                (self.recordsets, c) for c in self.recordsets.replace(token, [], _in_zone(zone_id))
            ]
            del self._versions[zone_id]
        self.recordsets.synced = True
        return changes

    def transitional(self) -> bool:
        return any(rs.status == "PENDING" for rs in self.recordsets.items())

    def watches_zone(self, zone_id: str) -> bool:
        """Has the zone's every recordset been listed into the cache?"""
        return zone_id in self._versions


def _in_zone(zone_id: str) -> Callable[[model.Recordset], bool]:
    return lambda rs: rs.zone_id == zone_id
