"""The dns service in a dry pass: its reads passed through to the real cloud, its
writes recorded as :class:`~kumo.engine.dryrun.Action` s (see :mod:`kumo.cloud.dryrun`)."""

from __future__ import annotations

from kumo.cloud import model
from kumo.cloud.dry import NEW_ID, DryRunBase, described, passthrough
from kumo.engine.dryrun import Change
from kumo.ports import DnsPort


class DnsDryRun(DryRunBase):
    """The dns service's writes recorded, its reads passed through."""

    # Reads: the real cloud's answer.
    zone = passthrough(DnsPort.zone)
    zone_id = passthrough(DnsPort.zone_id)
    get_recordset = passthrough(DnsPort.get_recordset)
    list_zone_recordsets = passthrough(DnsPort.list_zone_recordsets)
    fetch_zone_recordsets = passthrough(DnsPort.fetch_zone_recordsets)
    zone_versions = passthrough(DnsPort.zone_versions)
    list_owned_recordsets = passthrough(DnsPort.list_owned_recordsets)

    # Writes: recorded, never made.

    async def create_recordset(
        self, zone_id: str, *, name: str, type: str, records: list[str], ttl: int, description: str
    ) -> model.Recordset:
        self._record(
            "create",
            "recordset",
            f"{name} {type}",
            Change("spec.values", None, records),
            Change("spec.ttl", None, ttl),
        )
        return model.Recordset(
            NEW_ID, zone_id, name, type, list(records), ttl, description, "PENDING"
        )

    async def update_recordset(
        self, zone_id: str, rs_id: str, *, records: list[str], ttl: int, description: str
    ) -> model.Recordset:
        old = await self._inner.get_recordset(zone_id, rs_id)
        changes = []
        if old is None or sorted(old.records) != sorted(records):
            changes.append(Change("spec.values", old.records if old else None, records))
        if old is None or old.ttl != ttl:
            changes.append(Change("spec.ttl", old.ttl if old else None, ttl))
        if old is None or (old.description or "") != description:
            before = old.description if old else None
            changes.append(Change(described(before, description), before, description))
        self._record("update", "recordset", old.name if old else rs_id, *changes)
        if old is None:
            return model.Recordset(
                rs_id, zone_id, "", "", list(records), ttl, description, "PENDING"
            )
        return model.Recordset(
            rs_id, zone_id, old.name, old.type, list(records), ttl, description, "PENDING"
        )

    async def delete_recordset(self, zone_id: str, rs_id: str) -> None:
        self._record("delete", "recordset", rs_id)
