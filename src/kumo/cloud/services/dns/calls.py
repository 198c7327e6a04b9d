"""Designate calls: zones and recordsets (no tags: the marker is in the description)."""

from __future__ import annotations

from typing import Any

from openstack.dns.v2 import recordset as dns_recordset

from kumo.cloud import model
from kumo.cloud.base import CloudBase
from kumo.cloud.cache import GONE
from kumo.cloud.errors import missing_ids
from kumo.cloud.services.dns.watch import ZoneWatcher
from kumo.engine.errors import ReconcileError, TerminalError


class DnsCalls(CloudBase):
    # -- Designate (no tags: the owner marker is in the recordset description) ----------
    #
    # Recordsets are asynchronous: created or updated ones are PENDING until Designate has
    # pushed the zone, then ACTIVE (or ERROR). A deleted recordset leaves the API at once.

    async def zone(self, ref: str, field: str = "spec.zone") -> tuple[str, str]:
        """``(id, name)`` of a zone given by name or ID; a name may omit the final dot."""

        async def load() -> tuple[str, str]:
            found = await self._call(
                f"look up zone {ref!r}",
                self.conn.dns.find_zone,
                ref,
                ignore_missing=True,
                field=field,
            )
            if found is None and not ref.endswith("."):
                found = await self._call(
                    f"look up zone {ref + '.'!r}",
                    self.conn.dns.find_zone,
                    ref + ".",
                    ignore_missing=True,
                    field=field,
                )
            if found is None:
                raise TerminalError("ZoneNotFound", f"zone {ref!r} not found", field=field)
            return (str(found.id), str(found.name))

        return await self._names.resolve(("zone", ref), load, field)

    async def zone_id(self, ref: str, field: str = "spec.zone") -> str:
        return (await self.zone(ref, field))[0]

    async def get_recordset(self, zone_id: str, rs_id: str) -> model.Recordset | None:
        """The recordset, or None when it (or its zone) is gone."""
        hit = self.watch.of(ZoneWatcher).recordsets.lookup(rs_id)
        if isinstance(hit, model.Recordset):
            return hit
        if hit is GONE:
            return None
        found = await self._get("get recordset", self.conn.dns.get_recordset, rs_id, zone_id)
        return _recordset(found, zone_id) if found is not None else None

    async def list_zone_recordsets(self, zone_id: str) -> list[model.Recordset]:
        """Every recordset of the zone (from the watch once it has listed the zone)."""
        cache = self.watch.of(ZoneWatcher).recordsets
        if self.watch.of(ZoneWatcher).watches_zone(zone_id) and not cache.in_doubt(zone_id):
            return [rs for rs in cache.items() if rs.zone_id == zone_id]
        return await self._relist(cache, zone_id, lambda: self.fetch_zone_recordsets(zone_id))

    async def fetch_zone_recordsets(self, zone_id: str) -> list[model.Recordset]:
        try:
            found = await self._call(
                "list recordsets", lambda: list(self.conn.dns.recordsets(zone_id))
            )
        except ReconcileError as error:  # the zone is gone: look its name up afresh
            self._names.forget_ids(missing_ids(error.__cause__, [zone_id]))
            raise
        return [_recordset(x, zone_id) for x in found]

    async def zone_versions(self) -> dict[str, str]:
        """``{zone id: "serial status updated_at"}``: a recordset created, changed,
        deleted or pushed moves its zone's version (see watch.py)."""
        zones = await self._call("list zones", lambda: list(self.conn.dns.zones()))
        return {str(z.id): f"{z.serial} {z.status} {z.updated_at}" for z in zones}

    async def list_owned_recordsets(self, zone_id: str, uid: str) -> list[model.Recordset]:
        """Recordsets of the zone whose description carries the ownership marker of ``uid``."""
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
        created = await self._create(
            "create recordset",
            self.conn.dns.create_recordset,
            zone_id,
            resolved=[zone_id],
            in_doubt=(self.watch.of(ZoneWatcher).recordsets, zone_id),
            name=name,
            type=type,
            records=records,
            ttl=ttl,
            description=description,
            field="spec",
        )
        rs = _recordset(created, zone_id)
        self.watch.of(ZoneWatcher).recordsets.put(rs)
        self.watch.nudge(ZoneWatcher.service)
        return rs

    async def update_recordset(
        self, zone_id: str, rs_id: str, *, records: list[str], ttl: int, description: str
    ) -> model.Recordset:
        # A synchronized stub: only the changed attributes go in the PUT body, and the
        # URL needs the zone (the proxy cannot build it from a bare ID).
        stub = dns_recordset.Recordset.existing(id=rs_id, zone_id=zone_id)
        updated = await self._call(
            "update recordset",
            self.conn.dns.update_recordset,
            stub,
            records=records,
            ttl=ttl,
            description=description,
            field="spec",
        )
        rs = _recordset(updated, zone_id)
        self.watch.of(ZoneWatcher).recordsets.put(rs)
        self.watch.nudge(ZoneWatcher.service)
        return rs

    async def delete_recordset(self, zone_id: str, rs_id: str) -> None:
        # With a stub (not an ID plus zone) the proxy deletes without a GET first, so a
        # missing recordset is ignored instead of failing the GET.
        stub = dns_recordset.Recordset.existing(id=rs_id, zone_id=zone_id)
        await self._call(
            "delete recordset", self.conn.dns.delete_recordset, stub, ignore_missing=True
        )
        self.watch.of(ZoneWatcher).recordsets.forget(rs_id)
        self.watch.nudge(ZoneWatcher.service)

    # -- end of Designate ---------------------------------------------------------------


def _recordset(x: Any, zone_id: str) -> model.Recordset:
    return model.Recordset(
        id=x.id,
        zone_id=x.zone_id or zone_id,
        name=x.name or "",
        type=x.type or "",
        records=list(x.records or []),
        ttl=x.ttl,
        description=x.description,
        status=x.status or "PENDING",
    )
