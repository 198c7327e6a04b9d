"""Manila calls: shares, their access rules and export locations.

Everything goes through the shared-file-system proxy's REST methods at one fixed
microversion, :data:`MICROVERSION` (2.45, Stein): the SDK's share resources send no
microversion (Manila then answers as 2.0: no access-rule metadata, no
``/share-access-rules``), and Kumo needs both. Zed serves up to 2.73.

A share listing is read whole whatever the release's page size (by ``with_count`` and
offsets: :mod:`kumo.cloud.pages`).

Ownership: shares and access rules have no tags, but both have metadata (rules since
2.45): Kumo writes ``kumo: managed`` and ``kumo-owner: <uid>`` on what it creates. A
share is listed by its owner with Manila's metadata filter; rules are read per share
(Manila has no cross-share rule listing).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from openstack import exceptions as os_exc

from kumo.cloud import model, pages
from kumo.cloud.base import CloudBase
from kumo.cloud.services.sharedfs.watch import ShareWatcher
from kumo.engine.errors import TerminalError

MICROVERSION = "2.45"


class SharedFSCalls(CloudBase):
    # -- plumbing --------------------------------------------------------------------------

    def _manila(self, method: str, path: str, **kw: Any) -> Any:
        """One request at MICROVERSION (:meth:`CloudBase._rest`)."""
        return self._rest(
            self.conn.shared_file_system, method, path, microversion=MICROVERSION, **kw
        )

    def _manila_shares(self, params: dict[str, Any]) -> list[Any]:
        """Every share the listing matches, whatever Manila's page size (cloud/pages.py)."""

        def get(path: str, query: dict[str, Any]) -> Any:
            return self._manila("get", path, params=query)

        return pages.counted(get, "/shares/detail", "shares", params)

    # -- shares ----------------------------------------------------------------------------

    async def share_type_id(self, ref: str, field: str = "spec.shareType") -> str:
        """ID of a share type given by name or ID (cached like other names)."""

        def find() -> str | None:
            types = self._manila("get", "/types")["share_types"]
            found = [t for t in types if ref in (t["id"], t["name"])]
            return str(found[0]["id"]) if found else None

        async def load() -> str:
            found = await self._call(f"look up share type {ref!r}", find, field=field)
            if found is None:
                raise TerminalError(
                    "ShareTypeNotFound", f"share type {ref!r} not found", field=field
                )
            return found

        return await self._names.resolve(("share type", ref), load, field)

    async def get_share(self, share_id: str) -> model.Share | None:
        hit = self.watch.of(ShareWatcher).shares.lookup(share_id)
        if isinstance(hit, model.Share):
            return hit
        # GONE too: the watch lists Kumo's marked ones only, so one dropped from its
        # listing may live on unmarked (released by Orphan, to be imported by ID).
        return await self.fetch_share(share_id)

    async def fetch_share(self, share_id: str) -> model.Share | None:
        """The share from the API, not the cache (None: gone)."""
        found = await self._get("get share", self._manila, "get", f"/shares/{share_id}")
        return _share(found["share"]) if found is not None else None

    async def list_owned_shares(self, uid: str) -> list[model.Share]:
        """Shares whose metadata carries the ownership marker of ``uid``."""
        cache = self.watch.of(ShareWatcher).shares
        if cache.answers_for(uid):
            return cache.owned_by(uid)
        return await self._relist(
            cache, uid, lambda: self._list_shares({model.SHARE_OWNER_KEY: uid})
        )

    async def list_managed_shares(self) -> list[model.Share]:
        """Every share Kumo created in the project (one listing, for drift)."""
        return await self._list_shares({model.SHARE_MANAGED_KEY: model.SHARE_MANAGED_VALUE})

    async def _list_shares(self, metadata: dict[str, str]) -> list[model.Share]:
        found = await self._call(
            "list shares", self._manila_shares, {"metadata": json.dumps(metadata)}
        )
        return [_share(x) for x in found]

    async def create_share(
        self,
        *,
        name: str,
        size: int,
        protocol: str,
        share_type_id: str | None,
        description: str | None,
        availability_zone: str | None,
        metadata: dict[str, str],
    ) -> model.Share:
        body: dict[str, Any] = {
            "name": name,
            "size": size,
            "share_proto": protocol,
            "description": description,
            "metadata": metadata,
        }
        if share_type_id:
            body["share_type"] = share_type_id
        if availability_zone:
            body["availability_zone"] = availability_zone
        created = await self._create(
            "create share",
            self._manila,
            "post",
            "/shares",
            resolved=[share_type_id],
            in_doubt=(self.watch.of(ShareWatcher).shares, model.metadata_owner(metadata) or ""),
            json={"share": body},
            field="spec",
        )
        share = _share(created["share"])
        self.watch.of(ShareWatcher).shares.put(share)
        self.watch.nudge(ShareWatcher.service)
        return share

    async def extend_share(self, share_id: str, new_size: int) -> None:
        await self._call(
            "extend share",
            self._manila,
            "post",
            f"/shares/{share_id}/action",
            json={"extend": {"new_size": new_size}},
            field="spec.size",
        )
        self._share_changing(share_id, status="extending")

    async def update_share(self, share_id: str, *, description: str | None) -> None:
        await self._call(
            "update share",
            self._manila,
            "put",
            f"/shares/{share_id}",
            json={"share": {"display_description": description}},
            field="spec.description",
        )
        self.watch.of(ShareWatcher).shares.update(
            share_id, lambda s: dataclasses.replace(s, description=description)
        )

    async def set_share_metadata(self, share_id: str, metadata: dict[str, str]) -> None:
        await self._call(
            "set share metadata",
            self._manila,
            "put",
            f"/shares/{share_id}/metadata",
            json={"metadata": metadata},
        )
        self.watch.of(ShareWatcher).shares.update(
            share_id, lambda s: dataclasses.replace(s, metadata=metadata)
        )
        self.watch.nudge(ShareWatcher.service)

    async def delete_share(self, share_id: str) -> None:
        """Delete; a share already gone is fine (Manila removes its access rules with it)."""
        try:
            await self._call("delete share", self._manila, "delete", f"/shares/{share_id}")
        except TerminalError as error:
            if not isinstance(error.__cause__, os_exc.NotFoundException):
                raise
        self._share_changing(share_id, status="deleting")

    def _share_changing(self, share_id: str, status: str | None = None) -> None:
        """Kumo changed the share or its rules: what the cache holds is stale."""
        if status:
            self.watch.of(ShareWatcher).shares.update(
                share_id, lambda s: dataclasses.replace(s, status=status)
            )
        self.watch.of(ShareWatcher).share_rules.pop(share_id, None)
        self.watch.nudge(ShareWatcher.service)

    # -- access rules and export locations --------------------------------------------------

    async def list_access_rules(self, share_id: str) -> list[model.AccessRule]:
        cached = self.watch.of(ShareWatcher).share_rules.get(share_id)
        if cached is not None:
            return cached
        return await self.fetch_access_rules(share_id)

    async def fetch_access_rules(self, share_id: str) -> list[model.AccessRule]:
        found = await self._call(
            "list access rules",
            self._manila,
            "get",
            "/share-access-rules",
            params={"share_id": share_id},
        )
        return [_rule(x) for x in found["access_list"]]

    async def create_access_rule(
        self, share_id: str, *, access_to: str, access_level: str, metadata: dict[str, str]
    ) -> model.AccessRule:
        body = {
            "access_type": "ip",
            "access_to": access_to,
            "access_level": access_level,
            "metadata": metadata,
        }
        try:
            created = await self._call(
                "allow access",
                self._manila,
                "post",
                f"/shares/{share_id}/action",
                json={"allow_access": body},
                field="spec.access",
            )
        finally:  # even an error: the rule may exist now, so the next read lists the rules
            self._share_changing(share_id)
        return _rule(created["access"])

    async def delete_access_rule(self, share_id: str, rule_id: str) -> None:
        """Deny; a rule (or share) already gone is fine."""
        try:
            await self._call(
                "deny access",
                self._manila,
                "post",
                f"/shares/{share_id}/action",
                json={"deny_access": {"access_id": rule_id}},
            )
        except TerminalError as error:
            if not isinstance(error.__cause__, os_exc.NotFoundException):
                raise
        self._share_changing(share_id)

    async def list_export_locations(self, share_id: str) -> list[model.ExportLocation]:
        """Read once per share (they do not move while it is available)."""
        cached = self.watch.of(ShareWatcher).export_locations.get(share_id)
        if cached is not None:
            return cached
        found = await self._call(
            "list export locations", self._manila, "get", f"/shares/{share_id}/export_locations"
        )
        locations = [
            model.ExportLocation(path=x["path"], preferred=bool(x.get("preferred")))
            for x in found["export_locations"]
        ]
        share = self.watch.of(ShareWatcher).shares.lookup(share_id)
        if locations and isinstance(share, model.Share) and share.status == "available":
            self.watch.of(ShareWatcher).export_locations[share_id] = locations
        return locations


def _share(x: dict[str, Any]) -> model.Share:
    return model.Share(
        id=x["id"],
        name=x.get("name") or "",
        status=x.get("status") or "",
        size=int(x.get("size") or 0),
        protocol=x.get("share_proto") or "",
        share_type_id=x.get("share_type"),
        availability_zone=x.get("availability_zone"),
        description=x.get("description"),
        metadata=dict(x.get("metadata") or {}),
        created_at=x.get("created_at") or "",
        snapshot_id=x.get("snapshot_id"),
    )


def _rule(x: dict[str, Any]) -> model.AccessRule:
    return model.AccessRule(
        id=x["id"],
        access_type=x.get("access_type") or "",
        access_to=x.get("access_to") or "",
        access_level=x.get("access_level") or "",
        state=x.get("state") or "",
        metadata=dict(x.get("metadata") or {}),
    )
