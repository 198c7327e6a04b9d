"""Nova calls: servers (tagged with Kumo's marker) and server groups (marker in the name)."""

from __future__ import annotations

import base64
import dataclasses
import re
from typing import Any

from openstack import exceptions

from kumo.cloud import model
from kumo.cloud.base import CloudBase
from kumo.cloud.cache import GONE
from kumo.cloud.model import MANAGED_TAG
from kumo.cloud.services.compute.watch import ServerGroupWatcher, ServerWatcher
from kumo.engine.errors import TerminalError


class ServersCalls(CloudBase):
    # -- name lookups a server needs (cached in the name cache: base.py) ---------------

    async def image_id(self, ref: str, field: str = "spec.image") -> str:
        return await self._resolve("image", self.conn.image.find_image, ref, field)

    async def flavor_id(self, ref: str, field: str = "spec.flavor") -> str:
        return await self._resolve("flavor", self.conn.compute.find_flavor, ref, field)

    async def network_id(self, ref: str, field: str = "spec.networks") -> str:
        return await self._resolve("network", self.conn.network.find_network, ref, field)

    async def default_network_id(self, external: bool, field: str) -> str:
        """The project's own network, or the external network when ``external``."""
        key = ("default-network", str(external))

        def pick() -> str | None:
            project = self.conn.current_project_id
            for net in sorted(self.conn.network.networks(), key=lambda n: n.name or ""):
                if external and net.is_router_external:
                    return str(net.id)
                if (
                    not external
                    and not net.is_router_external
                    and net.project_id == project
                    and MANAGED_TAG not in (net.tags or [])  # a Network object's
                ):
                    return str(net.id)
            return None

        async def load() -> str:
            found = await self._call("list networks", pick)
            if found is None:
                kind = "external" if external else "project"
                raise TerminalError("NetworkNotFound", f"no {kind} network found", field=field)
            return found

        return await self._names.resolve(key, load, field)

    # -- Nova servers (reads from the watch's cache once synced; see watch.py) -----------

    async def get_server(self, server_id: str) -> model.Server | None:
        """The server, or None when it is gone (deleted servers count as gone).

        A server the cache cannot answer for is read once and then kept in the cache:
        one without Kumo's marker (what ``spec.import`` or ``managementPolicy: Observe``
        names) is kept fresh by the watch from then on like Kumo's own (changes-since
        lists every server, and the full relist lists the project's servers while the
        cache holds foreign ones), so observing it costs no read per pass."""
        cache = self.watch.of(ServerWatcher).servers
        hit = cache.lookup(server_id)
        if isinstance(hit, model.Server):
            return hit if hit.status != "DELETED" else None
        if hit is GONE:
            return None
        token = cache.begin()
        found = await self.fetch_server(server_id)
        if cache.synced:  # else the watch's first listing is still to come: no one keeps it
            cache.apply(token, [found] if found else [], [] if found else [server_id])
        return found

    async def fetch_server(self, server_id: str) -> model.Server | None:
        """One server from the API (with its fault, which Nova's listings leave out)."""
        found = await self._get("get server", self.conn.compute.get_server, server_id)
        return _server(found) if found is not None and found.status != "DELETED" else None

    async def list_owned_servers(self, uid: str, *, going: bool = False) -> list[model.Server]:
        """Servers carrying the ownership marker of ``uid`` and not on their way out;
        ``going``: those being deleted too (a finalizer stays until Nova has none left)."""
        cache = self.watch.of(ServerWatcher).servers
        if cache.answers_for(uid):
            found = cache.owned_by(uid)
        else:

            async def fetch() -> list[model.Server]:
                listed = await self._call(
                    "list servers",
                    lambda: list(self.conn.compute.servers(tags=model.owner_tag(uid))),
                )
                return [_server(s) for s in listed]

            found = await self._relist(cache, uid, fetch)
        out = ("DELETED",) if going else ("DELETED", "DELETING")
        return [s for s in found if s.status not in out]

    def list_live_server_addresses(self) -> frozenset[str] | None:
        """Every address of Kumo's servers the watch holds alive, from the cache (no
        call; not the foreign servers it holds for imports); None before its first listing. A pool member at none of them has lost
        its server."""
        cache = self.watch.of(ServerWatcher).servers
        if not cache.synced:
            return None
        return cache.derived(  # every LoadBalancer's pass asks; a fleet's servers are many
            "live addresses",
            lambda: frozenset(
                a[1] for s in cache.live() if model.MANAGED_TAG in s.tags for a in s.addresses
            ),
        )

    async def find_servers_by_name(self, name: str) -> list[model.Server]:
        """Servers named exactly ``name`` (for ``spec.import.name``); not cached."""
        pattern = f"^{re.escape(name)}$"  # Nova's name filter is a regular expression
        listed = await self._call(
            "list servers", lambda: list(self.conn.compute.servers(name=pattern))
        )
        found = [_server(s) for s in listed]
        return [s for s in found if s.name == name and s.status not in ("DELETED", "DELETING")]

    async def flavor_ids(self, ref: str, field: str = "spec.flavor") -> tuple[str, str]:
        """The flavor's ID and name (a server shows one or the other, by microversion);
        cached like every name (an observed VM checks its flavor on every pass)."""
        found: tuple[str, str] = await self._resolve_as(
            "flavor",
            self.conn.compute.find_flavor,
            ref,
            field,
            lambda x: (str(x.id), str(x.name)),
        )
        return found

    async def list_servers_since(self, since: str | None) -> tuple[list[model.Server], str | None]:
        """Servers changed since ``since`` (deleted ones included, status DELETED), or with
        ``since`` None every server carrying Kumo's tag; and the API's ``Date``."""
        params: dict[str, Any] = {"changes-since": since} if since else {"tags": model.MANAGED_TAG}
        return await self._list_servers(params)

    async def list_project_servers(self) -> tuple[list[model.Server], str | None]:
        """Every server of the project, Kumo's or not (the full relist while the cache
        holds servers without Kumo's marker); and the API's ``Date``."""
        return await self._list_servers({})

    async def list_building_servers(self) -> list[model.Server]:
        """Every server carrying Kumo's tag that Nova holds in ``BUILD``, build requests
        included, whatever its ``updated_at`` (a changes-since listing leaves out an
        instance no compute has written to yet)."""
        listed, _date = await self._list_servers({"tags": model.MANAGED_TAG, "status": "BUILD"})
        return listed

    async def _list_servers(self, params: dict[str, Any]) -> tuple[list[model.Server], str | None]:
        """``GET /servers/detail`` with ``params``, every page; and the API's ``Date``."""

        def page_through() -> tuple[list[Any], str | None]:
            found: list[Any] = []
            date = None
            url: str | None = "/servers/detail"
            query: dict[str, Any] | None = params
            while url:
                response = self.conn.compute.get(url, params=query, microversion="2.26")
                exceptions.raise_from_response(response)
                date = date or response.headers.get("Date")
                body = response.json()
                found += body.get("servers") or []
                links = [x for x in body.get("servers_links") or [] if x.get("rel") == "next"]
                url = links[0]["href"] if links else None
                query = None  # the next link carries the query
            return found, date

        listed, date = await self._call("list servers", page_through)
        return [_listed_server(raw) for raw in listed], date

    async def admit_build(self, uid: str) -> bool:
        """May the object ``uid`` create a server now? False while ``--max-queued-builds`` of
        this cloud's servers are building: it is queued and woken when its turn comes."""
        return self.watch.of(ServerWatcher).builds.admit(
            uid, self.watch.of(ServerWatcher).queued_builds()
        )

    async def withdraw_build(self, uid: str) -> None:
        """The object ``uid`` is being deleted: it gives up its place in the queue."""
        self.watch.of(ServerWatcher).builds.withdraw(uid)

    @property
    def max_queued_builds(self) -> int:
        return self.watch.of(ServerWatcher).builds.limit

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
        attrs: dict[str, Any] = {
            "name": name,
            "image_id": image_id,
            "flavor_id": flavor_id,
            "networks": [{"uuid": n} for n in network_ids] + [{"port": p} for p in port_ids],
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
        if root_volume is not None:  # boot from a new volume made from the image
            size, volume_type = root_volume
            boot: dict[str, Any] = {
                "boot_index": 0,
                "uuid": image_id,
                "source_type": "image",
                "destination_type": "volume",
                "volume_size": size,
                "delete_on_termination": True,
            }
            if volume_type:
                boot["volume_type"] = volume_type  # Nova >= 2.67
            attrs["block_device_mapping"] = [boot]
            attrs["image_id"] = ""  # imageRef "" with a boot BDM
        owner = model.owner_of(tags) or ""
        try:
            created = await self._create(
                "create server",
                self.conn.compute.create_server,
                resolved=[image_id, flavor_id, *network_ids],
                in_doubt=(self.watch.of(ServerWatcher).servers, owner),
                **attrs,
            )
        finally:
            self.watch.of(ServerWatcher).builds.created(
                owner
            )  # counted as building by the cache from now
        # Nova answers a create with little more than the ID: cache what was asked for.
        server = dataclasses.replace(
            _server(created),
            name=name,
            status="BUILD",
            tags=list(tags),
            metadata=dict(metadata),
            description=description,
            volumes=(),
        )
        self.watch.of(ServerWatcher).servers.put(server)
        self.watch.nudge(ServerWatcher.service)
        return server

    async def update_server(self, server_id: str, *, description: str | None) -> None:
        await self._call(
            "update server", self.conn.compute.update_server, server_id, description=description
        )
        self.watch.of(ServerWatcher).servers.update(
            server_id, lambda s: dataclasses.replace(s, description=description)
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

        def merged(server: model.Server) -> model.Server:
            kept = {k: v for k, v in server.metadata.items() if k not in remove}
            return dataclasses.replace(server, metadata={**kept, **metadata})

        self.watch.of(ServerWatcher).servers.update(server_id, merged)

    async def set_server_tags(self, server_id: str, tags: list[str]) -> None:
        def put() -> None:
            server = self.conn.compute.get_server(server_id)
            server.set_tags(self.conn.compute, tags)

        await self._call("set server tags", put)
        self.watch.of(ServerWatcher).servers.update(
            server_id, lambda s: dataclasses.replace(s, tags=list(tags))
        )

    async def add_server_security_group(self, server_id: str, group: str) -> None:
        await self._server_action(server_id, {"addSecurityGroup": {"name": group}})

    async def remove_server_security_group(self, server_id: str, group: str) -> None:
        await self._server_action(server_id, {"removeSecurityGroup": {"name": group}})

    async def _server_action(self, server_id: str, action: dict[str, Any]) -> None:
        """A server action, then the server read again: Nova does not move ``updated``
        for a security group change, so no changes-since listing would show it."""

        def post() -> None:
            self._rest(self.conn.compute, "post", f"/servers/{server_id}/action", json=action)

        verb = next(iter(action))
        await self._call(verb, post, field="spec.securityGroups")
        fresh = await self.fetch_server(server_id)
        if fresh is not None:
            self.watch.of(ServerWatcher).servers.put(fresh)

    async def delete_server(self, server_id: str) -> None:
        await self._call(
            "delete server", self.conn.compute.delete_server, server_id, ignore_missing=True
        )
        self.watch.of(ServerWatcher).servers.update(
            server_id, lambda s: dataclasses.replace(s, status="DELETING")
        )
        self.watch.nudge(ServerWatcher.service)

    # -- Nova server groups (no tags: the owner marker is in the name) ------------------

    async def fetch_server_groups(self) -> list[model.ServerGroup]:
        groups = await self._call(
            "list server groups", lambda: list(self.conn.compute.server_groups())
        )
        return [_server_group(g) for g in groups]

    async def list_server_groups(self) -> list[model.ServerGroup]:
        if self.watch.of(ServerGroupWatcher).server_groups.synced:
            return self.watch.of(ServerGroupWatcher).server_groups.items()
        return await self.fetch_server_groups()

    async def list_owned_server_groups(self, uid: str) -> list[model.ServerGroup]:
        """Server groups whose name carries the ownership marker of ``uid``."""
        cache = self.watch.of(ServerGroupWatcher).server_groups
        if cache.in_doubt(uid):
            groups = await self._relist(cache, uid, self.fetch_server_groups)
        else:
            groups = await self.list_server_groups()
        return [g for g in groups if model.owner_of(g.name.split()) == uid]

    async def get_server_group(self, group_id: str) -> model.ServerGroup | None:
        hit = self.watch.of(ServerGroupWatcher).server_groups.lookup(group_id)
        if isinstance(hit, model.ServerGroup):
            return hit
        if hit is GONE:
            return None
        found = await self._get("get server group", self.conn.compute.get_server_group, group_id)
        return _server_group(found) if found is not None else None

    async def create_server_group(self, name: str, policy: str) -> model.ServerGroup:
        created = await self._create(
            "create server group",
            self.conn.compute.create_server_group,
            resolved=[],
            in_doubt=(
                self.watch.of(ServerGroupWatcher).server_groups,
                model.owner_of(name.split()) or "",
            ),
            name=name,
            policy=policy,
            field="spec.haPolicy",
        )
        group = _server_group(created)
        self.watch.of(ServerGroupWatcher).server_groups.put(group)
        return group

    async def delete_server_group(self, group_id: str) -> None:
        await self._call(
            "delete server group",
            self.conn.compute.delete_server_group,
            group_id,
            ignore_missing=True,
        )
        self.watch.of(ServerGroupWatcher).server_groups.forget(group_id)


def _server(s: Any) -> model.Server:
    addresses: list[tuple[str, str, int]] = []
    for network, entries in sorted((s.addresses or {}).items()):
        for entry in entries:
            addresses.append((network, entry.get("addr"), int(entry.get("version", 4))))
    fault = s.fault.get("message") if isinstance(s.fault, dict) else None
    status = s.status or "UNKNOWN"
    if getattr(s, "task_state", None) == "deleting" and status != "DELETED":
        status = "DELETING"  # still listed while Nova deletes it: on its way out
    return model.Server(
        id=s.id,
        name=s.name or "",
        status=status,
        tags=list(s.tags or []),
        metadata=dict(s.metadata or {}),
        description=s.description,
        addresses=addresses,
        host_id=s.host_id,
        fault=fault,
        updated=getattr(s, "updated_at", None),
        image_id=_ref(getattr(s, "image", None), "id"),
        flavor=_ref(getattr(s, "flavor", None), "id")
        or _ref(getattr(s, "flavor", None), "original_name"),
        security_groups=_group_names(getattr(s, "security_groups", None)),
        volumes=_volume_ids(getattr(s, "attached_volumes", None)),
    )


def _listed_server(raw: dict[str, Any]) -> model.Server:
    """A server of a listing, straight from Nova's JSON (the keys the SDK's ``Server``
    maps). Building the SDK's resource for every listed server was the largest part of
    Kumo's CPU in a fleet's converge and delete (py-spy on the lab at N = 300): the watch
    lists every changed server each interval."""
    addresses: list[tuple[str, str, int]] = []
    for network, entries in sorted((raw.get("addresses") or {}).items()):
        for entry in entries:
            addresses.append((network, entry.get("addr"), int(entry.get("version", 4))))
    fault = raw.get("fault")
    status = raw.get("status") or "UNKNOWN"
    if raw.get("OS-EXT-STS:task_state") == "deleting" and status != "DELETED":
        status = "DELETING"
    flavor = raw.get("flavor")
    return model.Server(
        id=raw["id"],
        name=raw.get("name") or "",
        status=status,
        tags=list(raw.get("tags") or []),
        metadata=dict(raw.get("metadata") or {}),
        description=raw.get("description"),
        addresses=addresses,
        host_id=raw.get("hostId"),
        fault=fault.get("message") if isinstance(fault, dict) else None,
        updated=raw.get("updated"),
        image_id=_ref(raw.get("image"), "id"),
        flavor=_ref(flavor, "id") or _ref(flavor, "original_name"),
        security_groups=_group_names(raw.get("security_groups")),
        volumes=_volume_ids(raw.get("os-extended-volumes:volumes_attached")),
    )


def _volume_ids(attached: Any) -> tuple[str, ...]:
    """The IDs of a server's attached volumes (dicts or the SDK's VolumeAttachment)."""
    return tuple(sorted({v for a in attached or [] if (v := _ref(a, "id"))}))


def _group_names(groups: Any) -> tuple[str, ...] | None:
    """The names of a server's security groups (Nova lists one per port: deduplicated)."""
    if groups is None:
        return None
    names = {str(g.get("name")) for g in groups if isinstance(g, dict) and g.get("name")}
    return tuple(sorted(names))


def _ref(value: Any, key: str) -> str | None:
    """``value[key]`` of an embedded image or flavor (a dict or an SDK resource)."""
    if value is None:
        return None
    found = value.get(key) if isinstance(value, dict) else getattr(value, key, None)
    return str(found) if found else None


def _server_group(g: Any) -> model.ServerGroup:
    policy = g.policy or (g.policies[0] if g.policies else "")
    return model.ServerGroup(
        id=g.id, name=g.name or "", policy=policy, members=list(g.member_ids or [])
    )
