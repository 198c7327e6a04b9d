"""The dns service's port. Designate: zones (looked up) and recordsets."""

from __future__ import annotations

from typing import Protocol

from kumo.ports import model
from kumo.ports.declare import CloudPort, read, write


class DnsPort(CloudPort, Protocol):
    """Designate: zones (looked up) and recordsets."""

    @read
    async def zone(self, ref: str, field: str = "spec.zone") -> tuple[str, str]: ...

    @read
    async def zone_id(self, ref: str, field: str = "spec.zone") -> str: ...

    @read
    async def get_recordset(self, zone_id: str, rs_id: str) -> model.Recordset | None: ...

    @read
    async def list_zone_recordsets(self, zone_id: str) -> list[model.Recordset]: ...

    @read
    async def fetch_zone_recordsets(self, zone_id: str) -> list[model.Recordset]: ...

    @read
    async def zone_versions(self) -> dict[str, str]: ...

    @read
    async def list_owned_recordsets(self, zone_id: str, uid: str) -> list[model.Recordset]: ...

    @write
    async def create_recordset(
        self, zone_id: str, *, name: str, type: str, records: list[str], ttl: int, description: str
    ) -> model.Recordset: ...

    @write
    async def update_recordset(
        self, zone_id: str, rs_id: str, *, records: list[str], ttl: int, description: str
    ) -> model.Recordset: ...

    @write
    async def delete_recordset(self, zone_id: str, rs_id: str) -> None: ...
