"""OpenStackCloud: every cloud call Kumo makes, on openstacksdk's proxy layer.

Blocking SDK calls run in threads, bounded per cloud by a semaphore and a token
bucket, so the event loop never blocks and one cloud is never flooded. Methods
return plain values from :mod:`kumo.cloud.model`; ``get_*`` returns ``None`` when
the resource is gone; failures are raised as transient/terminal ReconcileErrors.
Never uses the SDK's blocking ``wait_for_*``: callers requeue instead.
"""

from __future__ import annotations

import asyncio
import base64
import functools
from collections.abc import Callable
from typing import Any, TypeVar

import openstack.connection
from openstack import exceptions as os_exc
from openstack.dns.v2 import recordset as dns_recordset

from kumo.cloud import model
from kumo.cloud.errors import classify
from kumo.cloud.ratelimit import TokenBucket
from kumo.engine.errors import TerminalError

T = TypeVar("T")

LISTENER_PROTOCOL = {"http": "HTTP", "https": "HTTPS", "tcp": "TCP", "udp": "UDP"}
MONITOR_TYPE = {
    "http": "HTTP",
    "https": "HTTPS",
    "tcp": "TCP",
    "ping": "PING",
    "udp-connect": "UDP-CONNECT",
    "tls-hello": "TLS-HELLO",
}


class OpenStackCloud:
    def __init__(
        self,
        conn: openstack.connection.Connection,
        *,
        concurrency: int = 8,
        rate: float = 20.0,
    ) -> None:
        self.conn = conn
        self.region = conn.config.get_region_name()
        self._slots = asyncio.Semaphore(concurrency)
        self._bucket = TokenBucket(rate, burst=max(concurrency, int(rate)))
        self._names: dict[tuple[str, str], str] = {}

    async def _call(
        self, action: str, fn: Callable[..., T], *args: Any, field: str | None = None, **kw: Any
    ) -> T:
        await self._bucket.acquire()
        async with self._slots:
            try:
                return await asyncio.to_thread(functools.partial(fn, *args, **kw))
            except Exception as error:
                raise classify(error, action, field) from error

    async def _get(self, action: str, fn: Callable[..., T], *args: Any, **kw: Any) -> T | None:
        try:
            return await self._call(action, fn, *args, **kw)
        except TerminalError as error:
            if isinstance(error.__cause__, os_exc.NotFoundException):
                return None
            raise

    # -- name resolution (cached: names of images/flavors/networks rarely move) --------

    async def _resolve(self, what: str, find: Callable[..., Any], ref: str, field: str) -> str:
        key = (what, ref)
        if key not in self._names:
            found = await self._call(
                f"look up {what} {ref!r}", find, ref, ignore_missing=True, field=field
            )
            if found is None:
                raise TerminalError(
                    f"{what.title()}NotFound", f"{what} {ref!r} not found", field=field
                )
            self._names[key] = found.id
        return self._names[key]

    async def image_id(self, ref: str, field: str = "spec.image") -> str:
        return await self._resolve("image", self.conn.image.find_image, ref, field)

    async def flavor_id(self, ref: str, field: str = "spec.flavor") -> str:
        return await self._resolve("flavor", self.conn.compute.find_flavor, ref, field)

    async def network_id(self, ref: str, field: str = "spec.networks") -> str:
        return await self._resolve("network", self.conn.network.find_network, ref, field)

    async def default_network_id(self, external: bool, field: str) -> str:
        """The project's own network, or the external network when ``external``."""
        key = ("default-network", str(external))
        if key not in self._names:

            def pick() -> str | None:
                project = self.conn.current_project_id
                for net in sorted(self.conn.network.networks(), key=lambda n: n.name or ""):
                    if external and net.is_router_external:
                        return str(net.id)
                    if not external and not net.is_router_external and net.project_id == project:
                        return str(net.id)
                return None

            found = await self._call("list networks", pick)
            if found is None:
                kind = "external" if external else "project"
                raise TerminalError("NetworkNotFound", f"no {kind} network found", field=field)
            self._names[key] = found
        return self._names[key]

    async def lb_flavor_id(self, ref: str, field: str = "spec.serviceType") -> str:
        return await self._resolve(
            "load balancer flavor", self.conn.load_balancer.find_flavor, ref, field
        )

    # -- Nova servers -------------------------------------------------------------------

    async def get_server(self, server_id: str) -> model.Server | None:
        found = await self._get("get server", self.conn.compute.get_server, server_id)
        return _server(found) if found is not None and found.status != "DELETED" else None

    async def find_servers(self, uid: str) -> list[model.Server]:
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
        created = await self._call("create server", self.conn.compute.create_server, **attrs)
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

    async def find_server_groups(self, uid: str) -> list[model.ServerGroup]:
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

    # -- Octavia ------------------------------------------------------------------------

    async def get_load_balancer(self, lb_id: str) -> model.LoadBalancer | None:
        found = await self._get(
            "get load balancer", self.conn.load_balancer.get_load_balancer, lb_id
        )
        if found is None or found.provisioning_status == "DELETED":
            return None
        return _lb(found)

    async def find_load_balancers(self, uid: str) -> list[model.LoadBalancer]:
        found = await self._call(
            "list load balancers",
            lambda: list(self.conn.load_balancer.load_balancers(tags=model.owner_tag(uid))),
        )
        return [_lb(x) for x in found if x.provisioning_status != "DELETED"]

    async def list_managed_load_balancers(self) -> list[model.LoadBalancer]:
        found = await self._call(
            "list load balancers",
            lambda: list(self.conn.load_balancer.load_balancers(tags=model.MANAGED_TAG)),
        )
        return [_lb(x) for x in found]

    async def create_load_balancer(
        self,
        *,
        name: str,
        vip_network_id: str,
        description: str | None,
        availability_zone: str | None,
        flavor_id: str | None,
        tags: list[str],
    ) -> model.LoadBalancer:
        attrs: dict[str, Any] = {"name": name, "vip_network_id": vip_network_id, "tags": tags}
        if description is not None:
            attrs["description"] = description
        if availability_zone:
            attrs["availability_zone"] = availability_zone
        if flavor_id:
            attrs["flavor_id"] = flavor_id
        created = await self._call(
            "create load balancer", self.conn.load_balancer.create_load_balancer, **attrs
        )
        return _lb(created)

    async def update_load_balancer(self, lb_id: str, *, description: str | None) -> None:
        await self._call(
            "update load balancer",
            self.conn.load_balancer.update_load_balancer,
            lb_id,
            description=description or "",
        )

    async def delete_load_balancer(self, lb_id: str) -> None:
        await self._call(
            "delete load balancer",
            self.conn.load_balancer.delete_load_balancer,
            lb_id,
            ignore_missing=True,
            cascade=True,
        )

    async def list_listeners(self, lb_id: str) -> list[model.Listener]:
        found = await self._call(
            "list listeners",
            lambda: list(self.conn.load_balancer.listeners(load_balancer_id=lb_id)),
        )
        return [
            model.Listener(
                id=x.id,
                name=x.name or "",
                protocol=x.protocol,
                port=x.protocol_port,
                default_pool_id=x.default_pool_id,
                tags=list(x.tags or []),
            )
            for x in found
        ]

    async def create_listener(
        self, lb_id: str, *, name: str, protocol: str, port: int, tags: list[str]
    ) -> str:
        created = await self._call(
            "create listener",
            self.conn.load_balancer.create_listener,
            name=name,
            loadbalancer_id=lb_id,
            protocol=LISTENER_PROTOCOL[protocol],
            protocol_port=port,
            tags=tags,
        )
        return str(created.id)

    async def list_pools(self, lb_id: str | None = None) -> list[model.Pool]:
        filters = {"loadbalancer_id": lb_id} if lb_id else {}
        found = await self._call(
            "list pools", lambda: list(self.conn.load_balancer.pools(**filters))
        )
        return [
            model.Pool(
                id=x.id,
                name=x.name or "",
                protocol=x.protocol,
                listener_id=(x.listeners[0]["id"] if x.listeners else None),
                health_monitor_id=x.health_monitor_id,
                member_ids=[m["id"] for m in (x.members or [])],
                tags=list(x.tags or []),
            )
            for x in found
        ]

    async def create_pool(
        self, listener_id: str, *, name: str, protocol: str, tags: list[str]
    ) -> str:
        created = await self._call(
            "create pool",
            self.conn.load_balancer.create_pool,
            name=name,
            listener_id=listener_id,
            protocol=LISTENER_PROTOCOL[protocol],
            lb_algorithm="ROUND_ROBIN",
            tags=tags,
        )
        return str(created.id)

    async def list_members(self, pool_id: str) -> list[model.Member]:
        found = await self._call(
            "list members", lambda: list(self.conn.load_balancer.members(pool_id))
        )
        return [
            model.Member(
                id=x.id,
                name=x.name or "",
                address=x.address,
                port=x.protocol_port,
                monitor_port=x.monitor_port,
                tags=list(x.tags or []),
            )
            for x in found
        ]

    async def create_member(
        self,
        pool_id: str,
        *,
        name: str,
        address: str,
        port: int,
        monitor_port: int | None,
        tags: list[str],
    ) -> str:
        attrs: dict[str, Any] = {
            "name": name,
            "address": address,
            "protocol_port": port,
            "tags": tags,
        }
        if monitor_port:
            attrs["monitor_port"] = monitor_port
        created = await self._call(
            "create member", self.conn.load_balancer.create_member, pool_id, **attrs
        )
        return str(created.id)

    async def delete_member(self, pool_id: str, member_id: str) -> None:
        await self._call(
            "delete member",
            self.conn.load_balancer.delete_member,
            member_id,
            pool_id,
            ignore_missing=True,
        )

    async def get_health_monitor(self, hm_id: str) -> model.HealthMonitor | None:
        found = await self._get(
            "get health monitor", self.conn.load_balancer.get_health_monitor, hm_id
        )
        if found is None:
            return None
        return model.HealthMonitor(
            id=found.id, type=found.type, url_path=found.url_path, tags=list(found.tags or [])
        )

    async def create_health_monitor(
        self, pool_id: str, *, protocol: str, url_path: str | None, tags: list[str]
    ) -> str:
        attrs: dict[str, Any] = {
            "pool_id": pool_id,
            "type": MONITOR_TYPE[protocol],
            "delay": 5,
            "timeout": 3,
            "max_retries": 3,
            "tags": tags,
        }
        if url_path and protocol in ("http", "https"):
            attrs["url_path"] = url_path
        created = await self._call(
            "create health monitor", self.conn.load_balancer.create_health_monitor, **attrs
        )
        return str(created.id)

    async def delete_health_monitor(self, hm_id: str) -> None:
        await self._call(
            "delete health monitor",
            self.conn.load_balancer.delete_health_monitor,
            hm_id,
            ignore_missing=True,
        )

    async def delete_listener(self, listener_id: str) -> None:
        await self._call(
            "delete listener",
            self.conn.load_balancer.delete_listener,
            listener_id,
            ignore_missing=True,
        )

    async def delete_pool(self, pool_id: str) -> None:
        await self._call(
            "delete pool", self.conn.load_balancer.delete_pool, pool_id, ignore_missing=True
        )

    # -- Designate (no tags: the owner marker is in the recordset description) ----------
    #
    # Recordsets are asynchronous: created or updated ones are PENDING until Designate has
    # pushed the zone, then ACTIVE (or ERROR). A deleted recordset leaves the API at once.

    async def zone(self, ref: str, field: str = "spec.zone") -> tuple[str, str]:
        """``(id, name)`` of a zone given by name or ID; a name may omit the final dot."""
        key = ("zone", ref)
        if key not in self._names:
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
            self._names[key] = found.id
            self._names[("zone name", ref)] = found.name
        return self._names[key], self._names[("zone name", ref)]

    async def zone_id(self, ref: str, field: str = "spec.zone") -> str:
        return (await self.zone(ref, field))[0]

    async def get_recordset(self, zone_id: str, rs_id: str) -> model.Recordset | None:
        """The recordset, or None when it (or its zone) is gone."""
        found = await self._get("get recordset", self.conn.dns.get_recordset, rs_id, zone_id)
        return _recordset(found, zone_id) if found is not None else None

    async def list_zone_recordsets(self, zone_id: str) -> list[model.Recordset]:
        """Every recordset of the zone, one listing (for adoption and drift)."""
        found = await self._call("list recordsets", lambda: list(self.conn.dns.recordsets(zone_id)))
        return [_recordset(x, zone_id) for x in found]

    async def find_recordsets(self, zone_id: str, uid: str) -> list[model.Recordset]:
        """Recordsets of the zone whose description carries the ownership marker of ``uid``."""
        marker = model.owner_tag(uid)
        return [
            rs
            for rs in await self.list_zone_recordsets(zone_id)
            if marker in (rs.description or "").split()
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
        created = await self._call(
            "create recordset",
            self.conn.dns.create_recordset,
            zone_id,
            name=name,
            type=type,
            records=records,
            ttl=ttl,
            description=description,
            field="spec",
        )
        return _recordset(created, zone_id)

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
        return _recordset(updated, zone_id)

    async def delete_recordset(self, zone_id: str, rs_id: str) -> None:
        # With a stub (not an ID plus zone) the proxy deletes without a GET first, so a
        # missing recordset is ignored instead of failing the GET.
        stub = dns_recordset.Recordset.existing(id=rs_id, zone_id=zone_id)
        await self._call(
            "delete recordset", self.conn.dns.delete_recordset, stub, ignore_missing=True
        )

    # -- end of Designate ---------------------------------------------------------------


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


def _lb(x: Any) -> model.LoadBalancer:
    return model.LoadBalancer(
        id=x.id,
        name=x.name or "",
        provisioning_status=x.provisioning_status,
        operating_status=x.operating_status,
        vip_address=x.vip_address,
        tags=list(x.tags or []),
        description=x.description,
        availability_zone=x.availability_zone or None,
        flavor_id=x.flavor_id or None,
        vip_network_id=x.vip_network_id,
    )


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
