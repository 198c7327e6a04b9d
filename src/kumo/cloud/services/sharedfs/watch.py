"""Manila's watcher: Kumo's shares (one listing filtered by Kumo's metadata), then each of
those shares' access rules (Manila cannot list rules across shares; Shares are few).
"""

from __future__ import annotations

from typing import Any

from kumo.cloud import model
from kumo.cloud.cache import Change, ResourceCache
from kumo.cloud.watcher import Changes, WatchEnv, Watcher, metadata_marker
from kumo.ports import SharedFSPort

TRANSITIONAL_SHARE = {"creating", "extending", "deleting", "shrinking"}


TRANSITIONAL_RULE = {"queued_to_apply", "applying", "queued_to_deny", "denying"}


class ShareWatcher(Watcher):
    """Manila: Kumo's shares, then each one's access rules."""

    service = "sharedfs"
    api, resource = "shared-file-system", "shares"

    def __init__(self, cloud: SharedFSPort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.shares: ResourceCache[model.Share] = ResourceCache(
            "shares",
            lambda s: s.id,
            lambda s: model.metadata_owner(s.metadata),
            live=lambda s: s.status != "deleting",
        )
        #: Share ID → its access rules, as last listed (dropped when Kumo changes them).
        self.share_rules: dict[str, list[model.AccessRule]] = {}
        #: Share ID → its export locations (read once; dropped when the share changes).
        self.export_locations: dict[str, list[model.ExportLocation]] = {}
        self.caches = self.singles = (self.shares,)
        self.marks = (("share", self.shares, metadata_marker),)

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_share(resource.id)

    async def refresh(self, full: bool) -> Changes:
        stats = self.env.stats
        token = self.shares.begin()
        stats.count("shares")
        listed = await self.cloud.list_managed_shares()
        rules = {}
        for share in listed:
            stats.count("share-access-rules")
            rules[share.id] = await self.cloud.fetch_access_rules(share.id)
        changes: Changes = [(self.shares, c) for c in self.shares.replace(token, listed)]
        for change in changes:
            gone = change[1].old or change[1].new
            if gone is not None:
                self.export_locations.pop(gone.id, None)
        for share in listed:
            if self.share_rules.get(share.id) != rules[share.id]:
                changes.append((self.shares, Change(share, share)))  # its rules moved
        self.share_rules = rules
        return changes

    def is_busy(self, resource: Any) -> bool:
        """Manila refuses a delete while a share is creating, extending, deleting, …"""
        return str(resource.status or "").endswith("ing")

    def transitional(self) -> bool:
        return any(s.status in TRANSITIONAL_SHARE for s in self.shares.items()) or any(
            r.state in TRANSITIONAL_RULE for rules in self.share_rules.values() for r in rules
        )
