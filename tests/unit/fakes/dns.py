"""An in-memory Designate with the manners that matter to Kumo.

* Zones are found by ID or name (the name with or without its final dot).
* A created or updated recordset is ``PENDING``; the next ``get_recordset`` settles it
  to ``ACTIVE`` (``pending_gets`` makes it stay pending longer; ``fail_next`` makes it
  settle to ``ERROR``).
* No tags: ownership is whatever the description says. A second recordset with the
  same name and type is refused like Designate's 409.
* A deleted recordset leaves the API at once, as in Designate.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from kumo.cloud import model
from kumo.engine.errors import TerminalError, TransientError
from kumo.ports import DnsPort

_ids = itertools.count(1)

ZONE_ID = "zone-demo"
ZONE = "kumo-demo.test."
OTHER_ZONE_ID = "zone-other"
OTHER_ZONE = "other.test."


def new_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids):04d}"


class FakeDns(DnsPort):
    region: str | None = "tokyo1"

    async def project_id(self) -> str | None:
        return "project-tokyo1"

    def __init__(self, pending_gets: int = 0) -> None:
        self.zones = {ZONE_ID: ZONE, OTHER_ZONE_ID: OTHER_ZONE}
        self.recordsets: dict[str, model.Recordset] = {}
        self.pending_gets = pending_gets
        self._pending: dict[str, int] = {}
        self.fail_next = False
        self.calls: list[str] = []

    # -- helpers for tests ----------------------------------------------------------------

    def only(self) -> model.Recordset:
        (rs,) = self.recordsets.values()
        return rs

    def add(
        self,
        name: str,
        type_: str,
        records: list[str],
        description: str | None = None,
        zone_id: str = ZONE_ID,
        ttl: int = 300,
    ) -> model.Recordset:
        """Out of band: a recordset someone (or a crashed Kumo) created, already ACTIVE."""
        rs = model.Recordset(
            new_id("rs"), zone_id, name, type_, list(records), ttl, description, "ACTIVE"
        )
        self.recordsets[rs.id] = rs
        return rs

    def edit_out_of_band(self, rs_id: str, **changes: Any) -> None:
        self.recordsets[rs_id] = replace(self.recordsets[rs_id], **changes)

    def delete_out_of_band(self, rs_id: str) -> None:
        del self.recordsets[rs_id]

    # -- zones --------------------------------------------------------------------------------

    async def zone(self, ref: str, field: str = "spec.zone") -> tuple[str, str]:
        for zone_id, name in self.zones.items():
            if ref in (zone_id, name, name.rstrip(".")):
                return zone_id, name
        raise TerminalError("ZoneNotFound", f"zone {ref!r} not found", field=field)

    async def zone_id(self, ref: str, field: str = "spec.zone") -> str:
        return (await self.zone(ref, field))[0]

    # -- recordsets ---------------------------------------------------------------------------

    async def get_recordset(self, zone_id: str, rs_id: str) -> model.Recordset | None:
        self.calls.append("get_recordset")
        rs = self.recordsets.get(rs_id)
        if rs is None or rs.zone_id != zone_id:
            return None
        if rs.status == "PENDING":
            left = self._pending.get(rs_id, 0)
            if left > 0:
                self._pending[rs_id] = left - 1
                return rs
            settled = "ERROR" if self.fail_next else "ACTIVE"
            self.fail_next = False
            rs = self.recordsets[rs_id] = replace(rs, status=settled)
        return rs

    async def list_zone_recordsets(self, zone_id: str) -> list[model.Recordset]:
        self.calls.append(f"list_zone_recordsets:{zone_id}")
        if zone_id not in self.zones:
            raise TerminalError("NotFound", f"list recordsets: zone {zone_id} not found")
        return [rs for rs in self.recordsets.values() if rs.zone_id == zone_id]

    async def fetch_zone_recordsets(self, zone_id: str) -> list[model.Recordset]:
        return await self.list_zone_recordsets(zone_id)

    async def zone_versions(self) -> dict[str, str]:
        self.calls.append("zone_versions")
        return {
            zone_id: repr([rs for rs in self.recordsets.values() if rs.zone_id == zone_id])
            for zone_id in self.zones
        }

    async def list_owned_recordsets(self, zone_id: str, uid: str) -> list[model.Recordset]:
        return [
            rs
            for rs in await self.list_zone_recordsets(zone_id)
            if model.text_owner(rs.description) == uid
        ]

    async def create_recordset(
        self,
        zone_id: str,
        *,
        name: str,
        type: str,
        records: list[str],
        ttl: int,
        description: str,
    ) -> model.Recordset:
        self.calls.append("create_recordset")
        assert name.endswith(self.zones[zone_id]), f"{name} outside {self.zones[zone_id]}"
        for rs in self.recordsets.values():
            if rs.zone_id == zone_id and rs.name == name and rs.type == type:
                raise TransientError("CloudBusy", "create recordset: Duplicate RecordSet")
        rs = model.Recordset(
            new_id("rs"), zone_id, name, type, list(records), ttl, description, "PENDING"
        )
        self.recordsets[rs.id] = rs
        self._pending[rs.id] = self.pending_gets
        return rs

    async def update_recordset(
        self, zone_id: str, rs_id: str, *, records: list[str], ttl: int, description: str
    ) -> model.Recordset:
        self.calls.append("update_recordset")
        rs = self.recordsets.get(rs_id)
        if rs is None or rs.zone_id != zone_id:
            raise TerminalError("NotFound", f"update recordset: {rs_id} not found")
        rs = replace(rs, records=list(records), ttl=ttl, description=description, status="PENDING")
        self.recordsets[rs_id] = rs
        self._pending[rs_id] = self.pending_gets
        return rs

    async def delete_recordset(self, zone_id: str, rs_id: str) -> None:
        self.calls.append("delete_recordset")
        rs = self.recordsets.get(rs_id)
        if rs is not None and rs.zone_id == zone_id:
            del self.recordsets[rs_id]
