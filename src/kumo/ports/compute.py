"""The compute service's port. Nova: servers, server groups and keypairs (and the image, flavor and network lookups a server needs)."""

from __future__ import annotations

from typing import Protocol

from kumo.ports import model
from kumo.ports.declare import CloudPort, read, write


class ServersPort(CloudPort, Protocol):
    """Nova servers and server groups, and the image/flavor/network lookups servers need."""

    @read
    async def image_id(self, ref: str, field: str = "spec.image") -> str: ...

    @read
    async def flavor_id(self, ref: str, field: str = "spec.flavor") -> str: ...

    @read
    async def network_id(self, ref: str, field: str = "spec.networks") -> str: ...

    @read
    async def default_network_id(self, external: bool, field: str) -> str: ...

    @read
    async def get_server(self, server_id: str) -> model.Server | None: ...

    @read
    async def fetch_server(self, server_id: str) -> model.Server | None: ...

    @read
    async def list_owned_servers(self, uid: str, *, going: bool = False) -> list[model.Server]: ...

    @read
    def list_live_server_addresses(self) -> frozenset[str] | None: ...

    @read
    async def find_servers_by_name(self, name: str) -> list[model.Server]: ...

    @read
    async def flavor_ids(self, ref: str, field: str = "spec.flavor") -> tuple[str, str]: ...

    @read
    async def list_servers_since(
        self, since: str | None
    ) -> tuple[list[model.Server], str | None]: ...

    @read
    async def list_building_servers(self) -> list[model.Server]: ...

    @read
    async def list_project_servers(self) -> tuple[list[model.Server], str | None]: ...

    @write
    async def admit_build(self, uid: str) -> bool: ...

    @write
    async def withdraw_build(self, uid: str) -> None: ...

    @property
    @read
    def max_queued_builds(self) -> int: ...

    @write
    async def create_server(
        self,
        *,
        name: str,
        image_id: str,
        flavor_id: str,
        network_ids: list[str],
        user_data: str | None,
        description: str | None,
        metadata: dict[str, str],
        tags: list[str],
        availability_zone: str | None,
        key_name: str | None,
        security_groups: list[str],
        server_group_id: str | None,
        root_volume: tuple[int, str | None] | None = None,
        port_ids: tuple[str, ...] = (),
    ) -> model.Server:
        """``port_ids``: existing Neutron ports to boot on, after ``network_ids`` (Nova
        makes a port on each of those)."""
        ...

    @write
    async def update_server(self, server_id: str, *, description: str | None) -> None: ...

    @write
    async def set_server_metadata(
        self, server_id: str, metadata: dict[str, str], remove: list[str]
    ) -> None: ...

    @write
    async def set_server_tags(self, server_id: str, tags: list[str]) -> None: ...

    @write
    async def delete_server(self, server_id: str) -> None: ...

    @write
    async def add_server_security_group(self, server_id: str, group: str) -> None:
        """Nova's addSecurityGroup: ``group`` by name or ID, on every port of the server."""
        ...

    @write
    async def remove_server_security_group(self, server_id: str, group: str) -> None: ...

    @read
    async def fetch_server_groups(self) -> list[model.ServerGroup]: ...

    @read
    async def list_server_groups(self) -> list[model.ServerGroup]: ...

    @read
    async def list_owned_server_groups(self, uid: str) -> list[model.ServerGroup]: ...

    @read
    async def get_server_group(self, group_id: str) -> model.ServerGroup | None: ...

    @write
    async def create_server_group(self, name: str, policy: str) -> model.ServerGroup: ...

    @write
    async def delete_server_group(self, group_id: str) -> None: ...


class KeyPairsPort(CloudPort, Protocol):
    """Nova keypairs of the credentials' user, addressed by name (no tags, no metadata,
    immutable: Kumo's marker is the last word of the public key's comment)."""

    @read
    async def get_keypair(self, name: str) -> model.KeyPair | None: ...

    @read
    async def list_owned_keypairs(self, uid: str) -> list[model.KeyPair]: ...

    @read
    async def fetch_keypairs(self) -> list[model.KeyPair]: ...

    @write
    async def create_keypair(self, name: str, public_key: str) -> model.KeyPair: ...

    @write
    async def delete_keypair(self, name: str) -> None: ...


class ComputePort(ServersPort, KeyPairsPort, Protocol):
    """Nova, in two parts: servers (with server groups) and keypairs."""
