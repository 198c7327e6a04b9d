"""The sharedfs service's port. Manila (shared file systems): shares, access rules, export locations."""

from __future__ import annotations

from typing import Protocol

from kumo.ports import model
from kumo.ports.declare import CloudPort, read, write


class SharedFSPort(CloudPort, Protocol):
    """Manila: shares, access rules, export locations."""

    @read
    async def share_type_id(self, ref: str, field: str = "spec.shareType") -> str: ...

    @read
    async def get_share(self, share_id: str) -> model.Share | None: ...

    @read
    async def fetch_share(self, share_id: str) -> model.Share | None: ...

    @read
    async def list_owned_shares(self, uid: str) -> list[model.Share]: ...

    @read
    async def list_managed_shares(self) -> list[model.Share]: ...

    @write
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
    ) -> model.Share: ...

    @write
    async def extend_share(self, share_id: str, new_size: int) -> None: ...

    @write
    async def update_share(self, share_id: str, *, description: str | None) -> None: ...

    @write
    async def set_share_metadata(self, share_id: str, metadata: dict[str, str]) -> None:
        """Make ``metadata`` the share's whole metadata (Orphan releases the marker)."""
        ...

    @write
    async def delete_share(self, share_id: str) -> None: ...

    @read
    async def list_access_rules(self, share_id: str) -> list[model.AccessRule]: ...

    @read
    async def fetch_access_rules(self, share_id: str) -> list[model.AccessRule]: ...

    @write
    async def create_access_rule(
        self, share_id: str, *, access_to: str, access_level: str, metadata: dict[str, str]
    ) -> model.AccessRule: ...

    @write
    async def delete_access_rule(self, share_id: str, rule_id: str) -> None: ...

    @read
    async def list_export_locations(self, share_id: str) -> list[model.ExportLocation]: ...
