"""Nova calls: servers (tagged with Kumo's marker) and server groups (marker in the name)."""

from __future__ import annotations

import base64
from typing import Any

from kumo.cloud import model
from kumo.cloud.base import CloudBase


class ComputeCalls(CloudBase):
    # -- Nova servers -------------------------------------------------------------------

    async def get_server(self, server_id: str) -> model.Server | None:
        found = await self._get("get server", self.conn.compute.get_server, server_id)
        return _server(found) if found is not None and found.status != "DELETED" else None

    async def list_owned_servers(self, uid: str) -> list[model.Server]:
        """Servers carrying the ownership marker of ``uid`` (for adoption)."""
        found = await self._call(
            "list servers", lambda: list(self.conn.compute.servers(tags=model.owner_tag(uid)))
        )
        return [_server(s) for s in found if s.status != "DELETED"]

    async def list_managed_servers(self) -> list[model.Server]:
        found = await self._call(
            "list servers", lambda: list(self.conn.compute.servers(tags=model.MANAGED_TAG))
        )
        return [_server(s) for s in found]

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
    ) -> model.Server:
        attrs: dict[str, Any] = {
            "name": name,
            "image_id": image_id,
            "flavor_id": flavor_id,
            "networks": [{"uuid": n} for n in network_ids],
            "metadata": metadata,
            "tags": tags,
        }
        if user_data:
            attrs["user_data"] = base64.b64encode(user_data.encode()).decode()
        if description is not None:
            attrs["description"] = description
        if availability_zone:
            attrs["availability_zone"] = availability_zone
        if key_name:
            attrs["key_name"] = key_name
        if security_groups:
            attrs["security_groups"] = [{"name": g} for g in security_groups]
        if server_group_id:
            attrs["scheduler_hints"] = {"group": server_group_id}
        created = await self._create(
            "create server",
            self.conn.compute.create_server,
            resolved=[image_id, flavor_id, *network_ids],
            **attrs,
        )
        return _server(created)

    async def update_server(self, server_id: str, *, description: str | None) -> None:
        await self._call(
            "update server", self.conn.compute.update_server, server_id, description=description
        )

    async def set_server_metadata(
        self, server_id: str, metadata: dict[str, str], remove: list[str]
    ) -> None:
        if metadata:
            await self._call(
                "set server metadata",
                self.conn.compute.set_server_metadata,
                server_id,
                **metadata,
            )
        if remove:
            await self._call(
                "delete server metadata",
                self.conn.compute.delete_server_metadata,
                server_id,
                remove,
            )

    async def set_server_tags(self, server_id: str, tags: list[str]) -> None:
        def put() -> None:
            server = self.conn.compute.get_server(server_id)
            server.set_tags(self.conn.compute, tags)

        await self._call("set server tags", put)

    async def delete_server(self, server_id: str) -> None:
        await self._call(
            "delete server", self.conn.compute.delete_server, server_id, ignore_missing=True
        )

    # -- Nova server groups (no tags: the owner marker is in the name) ------------------

    async def list_server_groups(self) -> list[model.ServerGroup]:
        groups = await self._call(
            "list server groups", lambda: list(self.conn.compute.server_groups())
        )
        return [_server_group(g) for g in groups]

    async def list_owned_server_groups(self, uid: str) -> list[model.ServerGroup]:
        """Server groups whose name carries the ownership marker of ``uid``."""
        marker = model.owner_tag(uid)
        return [g for g in await self.list_server_groups() if marker in g.name]

    async def get_server_group(self, group_id: str) -> model.ServerGroup | None:
        found = await self._get("get server group", self.conn.compute.get_server_group, group_id)
        return _server_group(found) if found is not None else None

    async def create_server_group(self, name: str, policy: str) -> model.ServerGroup:
        created = await self._call(
            "create server group",
            self.conn.compute.create_server_group,
            name=name,
            policy=policy,
            field="spec.haPolicy",
        )
        return _server_group(created)

    async def delete_server_group(self, group_id: str) -> None:
        await self._call(
            "delete server group",
            self.conn.compute.delete_server_group,
            group_id,
            ignore_missing=True,
        )


def _server(s: Any) -> model.Server:
    addresses: list[tuple[str, str, int]] = []
    for network, entries in sorted((s.addresses or {}).items()):
        for entry in entries:
            addresses.append((network, entry.get("addr"), int(entry.get("version", 4))))
    fault = s.fault.get("message") if isinstance(s.fault, dict) else None
    return model.Server(
        id=s.id,
        name=s.name or "",
        status=s.status or "UNKNOWN",
        tags=list(s.tags or []),
        metadata=dict(s.metadata or {}),
        description=s.description,
        addresses=addresses,
        host_id=s.host_id,
        fault=fault,
    )


def _server_group(g: Any) -> model.ServerGroup:
    policy = g.policy or (g.policies[0] if g.policies else "")
    return model.ServerGroup(
        id=g.id, name=g.name or "", policy=policy, members=list(g.member_ids or [])
    )
