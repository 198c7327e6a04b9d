"""An in-memory Manila with the manners that matter to Kumo.

* A created share is ``creating``, an extended one ``extending``; the next ``get_share``
  settles it to ``available`` (``busy_gets`` keeps it busy longer).
* A new access rule is ``queued_to_apply`` and a denied one ``queued_to_deny``; the next
  ``list_access_rules`` settles them (active, or gone).
* A second rule for an address the share already has (in any state) is refused like
  Manila's 400 "Share access ip:… exists".
* Shares and rules have metadata, no tags.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from kumo.cloud import model
from kumo.engine.errors import TerminalError
from kumo.ports import SharedFSPort

_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids):04d}"


TYPE_ID = "type-default"
EXPORTS = ["10.0.0.10:/share", "10.0.0.20:/share"]


class FakeSharedFS(SharedFSPort):
    region: str | None = "tokyo1"

    async def project_id(self) -> str | None:
        return "project-tokyo1"

    def __init__(self, busy_gets: int = 0) -> None:
        self.shares: dict[str, model.Share] = {}
        self.rules: dict[str, dict[str, model.AccessRule]] = {}  # share → rule id → rule
        self.busy_gets = busy_gets
        self._busy: dict[str, tuple[int, int]] = {}  # share → (gets left, size when done)
        self.calls: list[str] = []

    # -- helpers for tests ----------------------------------------------------------------

    def only(self) -> model.Share:
        (share,) = self.shares.values()
        return share

    def add_rule(
        self,
        share_id: str,
        access_to: str,
        level: str = "ro",
        metadata: dict[str, str] | None = None,
    ) -> model.AccessRule:
        """Out of band: a rule someone added, already active."""
        rule = model.AccessRule(new_id("rule"), "ip", access_to, level, "active", metadata or {})
        self.rules[share_id][rule.id] = rule
        return rule

    def active(self, share_id: str) -> dict[str, str]:
        return {
            r.access_to: r.access_level
            for r in self.rules[share_id].values()
            if r.state == "active"
        }

    # -- the adapter's surface ------------------------------------------------------------

    async def share_type_id(self, ref: str, field: str = "spec.shareType") -> str:
        if ref in ("default", TYPE_ID):
            return TYPE_ID
        raise TerminalError("ShareTypeNotFound", f"share type {ref!r} not found", field=field)

    async def get_share(self, share_id: str) -> model.Share | None:
        self.calls.append("get_share")
        share = self.shares.get(share_id)
        if share is not None and share_id in self._busy:
            left, size = self._busy[share_id]
            if left > 0:
                self._busy[share_id] = (left - 1, size)
            else:
                del self._busy[share_id]
                share = self.shares[share_id] = replace(share, status="available", size=size)
        return share

    async def fetch_share(self, share_id: str) -> model.Share | None:
        """The adapter reads the API (get_share the cache): here both read the same."""
        return await self.get_share(share_id)

    async def list_owned_shares(self, uid: str) -> list[model.Share]:
        return [s for s in self.shares.values() if model.metadata_owner(s.metadata) == uid]

    async def list_managed_shares(self) -> list[model.Share]:
        return [s for s in self.shares.values() if s.metadata.get("kumo") == "managed"]

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
        self.calls.append("create_share")
        share = model.Share(
            id=new_id("share"),
            name=name,
            status="creating",
            size=size,
            protocol=protocol,
            share_type_id=share_type_id or TYPE_ID,
            availability_zone=availability_zone or "nova",
            description=description,
            metadata=dict(metadata),
        )
        self.shares[share.id] = share
        self.rules[share.id] = {}
        self._busy[share.id] = (self.busy_gets, size)
        return share

    async def extend_share(self, share_id: str, new_size: int) -> None:
        self.calls.append("extend_share")
        self.shares[share_id] = replace(self.shares[share_id], status="extending")
        self._busy[share_id] = (self.busy_gets, new_size)

    async def update_share(self, share_id: str, *, description: str | None) -> None:
        self.calls.append("update_share")
        self.shares[share_id] = replace(self.shares[share_id], description=description)

    async def set_share_metadata(self, share_id: str, metadata: dict[str, str]) -> None:
        self.calls.append("set_share_metadata")
        self.shares[share_id] = replace(self.shares[share_id], metadata=dict(metadata))

    async def delete_share(self, share_id: str) -> None:
        self.calls.append("delete_share")
        self.shares.pop(share_id, None)
        self.rules.pop(share_id, None)

    async def fetch_access_rules(self, share_id: str) -> list[model.AccessRule]:
        return await self.list_access_rules(share_id)

    async def list_access_rules(self, share_id: str) -> list[model.AccessRule]:
        self.calls.append("list_access_rules")
        rules = self.rules[share_id]
        for rule in list(rules.values()):
            if rule.state == "queued_to_apply":
                rules[rule.id] = replace(rule, state="active")
            elif rule.state == "queued_to_deny":
                del rules[rule.id]
        return sorted(rules.values(), key=lambda r: r.id)

    async def create_access_rule(
        self, share_id: str, *, access_to: str, access_level: str, metadata: dict[str, str]
    ) -> model.AccessRule:
        self.calls.append("create_access_rule")
        if any(r.access_to == access_to for r in self.rules[share_id].values()):
            raise TerminalError("CloudRejected", f"Share access ip:{access_to} exists.")
        rule = model.AccessRule(
            new_id("rule"), "ip", access_to, access_level, "queued_to_apply", dict(metadata)
        )
        self.rules[share_id][rule.id] = rule
        return rule

    async def delete_access_rule(self, share_id: str, rule_id: str) -> None:
        self.calls.append("delete_access_rule")
        rule = self.rules.get(share_id, {}).get(rule_id)
        if rule is not None:
            self.rules[share_id][rule_id] = replace(rule, state="queued_to_deny")

    async def list_export_locations(self, share_id: str) -> list[model.ExportLocation]:
        return [model.ExportLocation(EXPORTS[0], True), model.ExportLocation(EXPORTS[1], False)]
