"""The sharedfs service in a dry pass: its reads passed through to the real cloud, its
writes recorded as :class:`~kumo.engine.dryrun.Action` s (see :mod:`kumo.cloud.dryrun`)."""

from __future__ import annotations

from typing import Any

from kumo.cloud import model
from kumo.cloud.dry import NEW_ID, DryRunBase, passthrough
from kumo.engine.dryrun import Change
from kumo.ports import SharedFSPort


class SharedFSDryRun(DryRunBase):
    """The sharedfs service's writes recorded, its reads passed through."""

    # Reads: the real cloud's answer.
    share_type_id = passthrough(SharedFSPort.share_type_id)
    get_share = passthrough(SharedFSPort.get_share)
    fetch_share = passthrough(SharedFSPort.fetch_share)
    list_owned_shares = passthrough(SharedFSPort.list_owned_shares)
    list_managed_shares = passthrough(SharedFSPort.list_managed_shares)
    list_access_rules = passthrough(SharedFSPort.list_access_rules)
    fetch_access_rules = passthrough(SharedFSPort.fetch_access_rules)
    list_export_locations = passthrough(SharedFSPort.list_export_locations)

    # Writes: recorded, never made.

    async def create_share(self, **attrs: Any) -> model.Share:
        self._record(
            "create",
            "share",
            attrs["name"],
            Change("spec.size", None, attrs.get("size")),
            Change("spec.protocol", None, attrs.get("protocol")),
        )
        return model.Share(
            id=NEW_ID,
            name=attrs["name"],
            status="creating",
            size=attrs.get("size", 0),
            protocol=attrs.get("protocol", ""),
            metadata=dict(attrs.get("metadata") or {}),
        )

    async def extend_share(self, share_id: str, new_size: int) -> None:
        old = await self._inner.get_share(share_id)
        self._record(
            "update", "share", share_id, Change("spec.size", old.size if old else None, new_size)
        )

    async def set_share_metadata(self, share_id: str, metadata: dict[str, str]) -> None:
        old = await self._inner.get_share(share_id)
        self._record(
            "update", "share", share_id, Change("metadata", old.metadata if old else None, metadata)
        )

    async def update_share(self, share_id: str, *, description: str | None) -> None:
        old = await self._inner.get_share(share_id)
        self._record(
            "update",
            "share",
            share_id,
            Change("spec.description", old.description if old else None, description),
        )

    async def delete_share(self, share_id: str) -> None:
        self._record("delete", "share", share_id)

    async def create_access_rule(
        self, share_id: str, *, access_to: str, access_level: str, metadata: dict[str, str]
    ) -> model.AccessRule:
        self._record(
            "create",
            "access rule",
            f"{access_to} {access_level}",
            Change("spec.access", None, f"{access_to} {access_level}"),
        )
        return model.AccessRule(
            NEW_ID, "ip", access_to, access_level, "queued_to_apply", dict(metadata)
        )

    async def delete_access_rule(self, share_id: str, rule_id: str) -> None:
        self._record("delete", "access rule", rule_id)
