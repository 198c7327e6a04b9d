"""The compute service in a dry pass: its reads passed through to the real cloud, its
writes recorded as :class:`~kumo.engine.dryrun.Action` s (see :mod:`kumo.cloud.dryrun`)."""

from __future__ import annotations

from typing import Any

from kumo.cloud import model
from kumo.cloud.dry import NEW_ID, DryRunBase, metadata_field, passthrough
from kumo.engine.dryrun import Change
from kumo.ports import KeyPairsPort, ServersPort


class ComputeDryRun(DryRunBase):
    """The compute service's writes recorded, its reads passed through."""

    # Reads: the real cloud's answer.
    image_id = passthrough(ServersPort.image_id)
    flavor_id = passthrough(ServersPort.flavor_id)
    network_id = passthrough(ServersPort.network_id)
    default_network_id = passthrough(ServersPort.default_network_id)
    get_server = passthrough(ServersPort.get_server)
    fetch_server = passthrough(ServersPort.fetch_server)
    list_owned_servers = passthrough(ServersPort.list_owned_servers)
    list_live_server_addresses = passthrough(ServersPort.list_live_server_addresses)
    find_servers_by_name = passthrough(ServersPort.find_servers_by_name)
    flavor_ids = passthrough(ServersPort.flavor_ids)
    list_servers_since = passthrough(ServersPort.list_servers_since)
    list_building_servers = passthrough(ServersPort.list_building_servers)
    list_project_servers = passthrough(ServersPort.list_project_servers)
    fetch_server_groups = passthrough(ServersPort.fetch_server_groups)
    list_server_groups = passthrough(ServersPort.list_server_groups)
    list_owned_server_groups = passthrough(ServersPort.list_owned_server_groups)
    get_server_group = passthrough(ServersPort.get_server_group)
    get_keypair = passthrough(KeyPairsPort.get_keypair)
    list_owned_keypairs = passthrough(KeyPairsPort.list_owned_keypairs)
    fetch_keypairs = passthrough(KeyPairsPort.fetch_keypairs)

    @property
    def max_queued_builds(self) -> int:
        return self._inner.max_queued_builds

    # Writes: recorded, never made.

    async def admit_build(self, uid: str) -> bool:
        """A plan shows the create whatever the cloud is building now (and takes no turn)."""
        return True

    async def withdraw_build(self, uid: str) -> None:
        """Nothing to give up: a plan never took a turn."""

    async def create_server(self, **attrs: Any) -> model.Server:
        shown = (
            "image_id",
            "flavor_id",
            "network_ids",
            "availability_zone",
            "key_name",
            "security_groups",
            "server_group_id",
            "description",
            "port_ids",
        )
        changes = [Change(f"spec.{k}", None, attrs.get(k)) for k in shown if attrs.get(k)]
        if attrs.get("user_data"):
            changes.append(Change("spec.initScript", None, f"{len(attrs['user_data'])} bytes"))
        self._record("create", "server", attrs["name"], *changes)
        return model.Server(
            id=NEW_ID,
            name=attrs["name"],
            status="BUILD",
            tags=list(attrs.get("tags") or []),
            metadata=dict(attrs.get("metadata") or {}),
            description=attrs.get("description"),
        )

    async def update_server(self, server_id: str, *, description: str | None) -> None:
        old = await self._inner.get_server(server_id)
        before = old.description if old is not None else None
        self._record("update", "server", server_id, Change("spec.description", before, description))

    async def set_server_metadata(
        self, server_id: str, metadata: dict[str, str], remove: list[str]
    ) -> None:
        old = await self._inner.get_server(server_id)
        have = old.metadata if old is not None else {}
        changes = [Change(metadata_field(k), have.get(k), v) for k, v in sorted(metadata.items())]
        changes += [Change(metadata_field(k), have.get(k), None) for k in sorted(remove)]
        self._record("update", "server", server_id, *changes)

    async def set_server_tags(self, server_id: str, tags: list[str]) -> None:
        old = await self._inner.get_server(server_id)
        before = old.tags if old is not None else []
        self._record("update", "server", server_id, Change("tags", before, tags))

    async def delete_server(self, server_id: str) -> None:
        self._record("delete", "server", server_id)

    async def add_server_security_group(self, server_id: str, group: str) -> None:
        self._record(
            "update", "server", server_id, Change("spec.securityGroups", None, f"add {group}")
        )

    async def remove_server_security_group(self, server_id: str, group: str) -> None:
        self._record("update", "server", server_id, Change("spec.securityGroups", group, "remove"))

    async def create_server_group(self, name: str, policy: str) -> model.ServerGroup:
        self._record("create", "server group", name, Change("spec.haPolicy", None, policy))
        return model.ServerGroup(id=NEW_ID, name=name, policy=policy)

    async def delete_server_group(self, group_id: str) -> None:
        self._record("delete", "server group", group_id)

    async def create_keypair(self, name: str, public_key: str) -> model.KeyPair:
        words = public_key.split()
        shown = " ".join([*words[:1], f"…{words[1][-12:]}"] if len(words) > 1 else words)
        self._record("create", "keypair", name, Change("spec.publicKey", None, shown))
        return model.KeyPair(name, public_key)

    async def delete_keypair(self, name: str) -> None:
        self._record("delete", "keypair", name)
