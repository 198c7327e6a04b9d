"""Octavia calls: load balancers, listeners, pools, members, health monitors (tagged).

Pool membership changes in one batch call per pool (:meth:`OctaviaCalls.replace_owned_members`):
Octavia locks the load balancer for seconds after every change, so a scale event of N
members must be one change, not N.
"""

from __future__ import annotations

from typing import Any

from openstack import exceptions as os_exc

from kumo.cloud import model
from kumo.cloud.base import CloudBase

LISTENER_PROTOCOL = {"http": "HTTP", "https": "HTTPS", "tcp": "TCP", "udp": "UDP"}
MONITOR_TYPE = {
    "http": "HTTP",
    "https": "HTTPS",
    "tcp": "TCP",
    "ping": "PING",
    "udp-connect": "UDP-CONNECT",
    "tls-hello": "TLS-HELLO",
}


class OctaviaCalls(CloudBase):
    # -- Octavia ------------------------------------------------------------------------

    async def get_load_balancer(self, lb_id: str) -> model.LoadBalancer | None:
        found = await self._get(
            "get load balancer", self.conn.load_balancer.get_load_balancer, lb_id
        )
        if found is None or found.provisioning_status == "DELETED":
            return None
        return _lb(found)

    async def list_owned_load_balancers(self, uid: str) -> list[model.LoadBalancer]:
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
        created = await self._create(
            "create load balancer",
            self.conn.load_balancer.create_load_balancer,
            resolved=[vip_network_id, flavor_id],
            **attrs,
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
                weight=1 if x.weight is None else x.weight,
            )
            for x in found
        ]

    async def replace_owned_members(
        self, pool_id: str, uid: str, members: list[model.MemberSpec]
    ) -> None:
        """Make ``members`` the pool's members tagged ``kumo-owner=<uid>``, in ONE change.

        Octavia's batch update (``PUT /v2/lbaas/pools/{pool_id}/members``) replaces the
        pool's whole member set, matching members by address + port: listed ones are
        updated or created, unlisted ones deleted. So the pool's members are read right
        before the PUT, and every member without this owner's tag (someone else's) is
        sent back exactly as it is — address, port, name, weight, admin state, backup,
        subnet, monitor address/port, tags — and ours are never listed over it (a
        wanted address + port a foreign member holds is left to that member).

        Residual race: a foreign member added or edited in the milliseconds between the
        read and the PUT is deleted or reverted by the PUT. Octavia has no conditional
        batch update that could close that window.
        """
        path = f"/lbaas/pools/{pool_id}/members"

        def replace() -> None:
            current = list(self.conn.load_balancer.members(pool_id))
            foreign = [m for m in current if model.owner_of(m.tags) != uid]
            taken = {(m.address, m.protocol_port) for m in foreign}
            body = [_as_is(m) for m in foreign]
            body += [_member_body(m) for m in members if (m.address, m.port) not in taken]
            response = self.conn.load_balancer.put(path, json={"members": body})
            os_exc.raise_from_response(response, error_message=f"PUT {path}")

        await self._call("replace pool members", replace)

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


def _member_body(m: model.MemberSpec) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": m.name,
        "address": m.address,
        "protocol_port": m.port,
        "weight": m.weight,
        "tags": list(m.tags),
    }
    if m.monitor_port:
        body["monitor_port"] = m.monitor_port
    return body


def _as_is(x: Any) -> dict[str, Any]:
    """A member's every writable field as Octavia reports it. Fields left out of a batch
    entry do not stay as they were: Octavia applies its defaults (weight 1, admin state
    up, not a backup, no monitor address or port)."""
    fields = {
        "name": x.name,
        "address": x.address,
        "protocol_port": x.protocol_port,
        "weight": x.weight,
        "admin_state_up": x.is_admin_state_up,
        "backup": x.backup,
        "subnet_id": x.subnet_id,
        "monitor_address": x.monitor_address,
        "monitor_port": x.monitor_port,
        "tags": list(x.tags or []),
    }
    return {k: v for k, v in fields.items() if v is not None}


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
