"""Octavia calls: load balancers, listeners, pools, members, health monitors (tagged).

Pool membership changes in one batch call per pool (:meth:`OctaviaCalls.replace_owned_members`):
Octavia locks the load balancer for seconds after every change, so a scale event of N
members must be one change, not N. A batch, though, locks it for time that grows with
the pool (its worker handles every member), so a few changes to a big pool use the
per-member calls (:meth:`OctaviaCalls.create_member` and the ``*_owned_member`` ones),
and a pool being filled takes its additions alone (:meth:`OctaviaCalls.add_members`).
"""

from __future__ import annotations

import dataclasses
import ipaddress
from typing import Any, cast

from openstack import resource

from kumo.cloud import model
from kumo.cloud.base import CloudBase
from kumo.cloud.cache import GONE
from kumo.cloud.services.loadbalancing.watch import LoadBalancerWatcher
from kumo.engine.errors import TerminalError

LISTENER_PROTOCOL = {"http": "HTTP", "https": "HTTPS", "tcp": "TCP", "udp": "UDP"}
MONITOR_TYPE = {
    "http": "HTTP",
    "https": "HTTPS",
    "tcp": "TCP",
    "ping": "PING",
    "udp-connect": "UDP-CONNECT",
    "tls-hello": "TLS-HELLO",
}


class LoadBalancerCalls(CloudBase):
    """Octavia's load balancers, listeners, pools and health monitors (pool members:
    members.py)."""

    # -- Octavia ------------------------------------------------------------------------

    async def lb_flavor_id(self, ref: str, field: str = "spec.serviceType") -> str:
        return await self._resolve(
            "load balancer flavor", self.conn.load_balancer.find_flavor, ref, field
        )

    def _lb_changing(self, lb_id: str | None, status: str = "PENDING_UPDATE") -> None:
        """Kumo asked Octavia for a change under ``lb_id``: Octavia now holds it pending
        (in the cache), and the watch looks again soon."""
        self.watch.of(LoadBalancerWatcher).changing(lb_id, status)
        self.watch.nudge(LoadBalancerWatcher.service)

    async def get_load_balancer(self, lb_id: str) -> model.LoadBalancer | None:
        """The load balancer, or None when it is gone. One the cache cannot answer for
        (without Kumo's marker: what an import or an Observe names) is read once and then
        watched like Kumo's own (see :meth:`load_balancer_versions`); its listeners and
        pools are read from the API until the watch has listed them."""
        cache = self.watch.of(LoadBalancerWatcher).load_balancers
        hit = cache.lookup(lb_id)
        if isinstance(hit, model.LoadBalancer):
            return hit if hit.provisioning_status != "DELETED" else None
        if hit is GONE:
            return None
        token = cache.begin()
        found = await self._get(
            "get load balancer", self.conn.load_balancer.get_load_balancer, lb_id
        )
        lb = None if found is None or found.provisioning_status == "DELETED" else _lb(found)
        if cache.synced:  # else the watch's first listing is still to come
            cache.apply(token, [lb] if lb else [], [] if lb else [lb_id])
            if lb is not None:
                self.watch.of(LoadBalancerWatcher).watch(lb_id)
        return lb

    async def fetch_load_balancer(self, lb_id: str) -> model.LoadBalancer | None:
        """The load balancer from the API, not the cache (None: gone): what an Orphan
        release reads back."""
        found = await self._get(
            "get load balancer", self.conn.load_balancer.get_load_balancer, lb_id
        )
        return None if found is None or found.provisioning_status == "DELETED" else _lb(found)

    async def list_owned_load_balancers(self, uid: str) -> list[model.LoadBalancer]:
        cache = self.watch.of(LoadBalancerWatcher).load_balancers
        if cache.answers_for(uid):
            owned = cache.owned_by(uid)
        else:

            async def fetch() -> list[model.LoadBalancer]:
                found = await self._call(
                    "list load balancers",
                    lambda: list(self.conn.load_balancer.load_balancers(tags=model.owner_tag(uid))),
                )
                return [_lb(x) for x in found]

            owned = await self._relist(cache, uid, fetch)
        return [x for x in owned if x.provisioning_status != "DELETED"]

    async def find_load_balancers_by_name(self, name: str) -> list[model.LoadBalancer]:
        """Load balancers named ``name`` (for ``spec.import.name``); not cached."""
        found = await self._call(
            "list load balancers",
            lambda: list(self.conn.load_balancer.load_balancers(name=name)),
        )
        return [_lb(x) for x in found if x.name == name and x.provisioning_status != "DELETED"]

    async def set_load_balancer_tags(self, lb_id: str, tags: list[str]) -> None:
        """Replace the load balancer's tags (an import puts Kumo's marker on it)."""
        await self._call(
            "tag load balancer", self.conn.load_balancer.update_load_balancer, lb_id, tags=tags
        )
        self.watch.of(LoadBalancerWatcher).load_balancers.update(
            lb_id, lambda lb: dataclasses.replace(lb, tags=list(tags))
        )
        self._lb_changing(lb_id)

    async def load_balancer_versions(self, also: frozenset[str] = frozenset()) -> dict[str, str]:
        """``{id: "updated_at status"}`` of Kumo's load balancers and of those in ``also``
        (foreign ones the cache holds: then the listing is of the project's every load
        balancer): one small listing that moves whenever anything under one of them
        changed (see watch.py)."""

        def probe() -> dict[str, str]:
            versions: dict[str, str] = {}
            fields = ["id", "updated_at", "provisioning_status"]
            params: dict[str, Any] | None = (
                {"fields": [*fields, "tags"]}
                if also
                else {"tags": model.MANAGED_TAG, "fields": fields}
            )
            for lb in self._raw_list("loadbalancers", "loadbalancers", params):
                if also and lb["id"] not in also and model.MANAGED_TAG not in lb.get("tags", []):
                    continue
                versions[lb["id"]] = f"{lb.get('updated_at')} {lb.get('provisioning_status')}"
            return versions

        return await self._call("list load balancers", probe)

    async def fetch_load_balancer_tree(
        self, also: frozenset[str] = frozenset()
    ) -> tuple[
        list[model.LoadBalancer], list[model.Listener], list[model.Pool], list[model.HealthMonitor]
    ]:
        """Kumo's load balancers and those in ``also``, then every listener, pool and
        monitor of the project (load balancers first: the children are at least as new
        as their status). Read as Octavia's JSON, not as the SDK's resources: building
        one costs ≈ 2 ms (a pool), and while a fleet's load balancers change the watch
        lists the tree every second or two — in a 1,000-VM converge, 13 % of Kumo's CPU."""
        query = {} if also else {"tags": model.MANAGED_TAG}
        lbs = await self._call(
            "list load balancers",
            lambda: [
                x
                for x in self._raw_list("loadbalancers", "loadbalancers", query)
                if x["id"] in also or model.MANAGED_TAG in (x.get("tags") or [])
            ],
        )
        listeners = await self._call(
            "list listeners", lambda: self._raw_list("listeners", "listeners")
        )
        pools = await self._call("list pools", lambda: self._raw_list("pools", "pools"))
        monitors = await self._call(
            "list health monitors", lambda: self._raw_list("healthmonitors", "healthmonitors")
        )
        return (
            [_lb(x) for x in lbs if x.get("provisioning_status") != "DELETED"],
            [_listener(x) for x in listeners],
            [_pool(x) for x in pools],
            [_monitor(x) for x in monitors],
        )

    def _raw_list(
        self, path: str, key: str, params: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """In the call's thread: ``GET /lbaas/<path>`` as Octavia's JSON, every page
        (its ``<key>_links``: cloud/pages.py)."""
        url = f"/lbaas/{path}"
        return self._pages(self.conn.load_balancer, url, key, params, error_message=f"GET {url}")

    async def create_load_balancer(
        self,
        *,
        name: str,
        vip_network_id: str,
        description: str | None,
        availability_zone: str | None,
        flavor_id: str | None,
        tags: list[str],
        vip_address: str | None = None,
    ) -> model.LoadBalancer:
        attrs: dict[str, Any] = {"name": name, "vip_network_id": vip_network_id, "tags": tags}
        if vip_address:
            attrs["vip_address"] = vip_address
            attrs["vip_subnet_id"] = await self._vip_subnet(vip_network_id, vip_address)
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
            in_doubt=(
                self.watch.of(LoadBalancerWatcher).load_balancers,
                model.owner_of(tags) or "",
            ),
            **attrs,
        )
        lb = _lb(created)
        self.watch.of(LoadBalancerWatcher).load_balancers.put(lb)
        self.watch.nudge(LoadBalancerWatcher.service)
        return lb

    async def _vip_subnet(self, network_id: str, address: str) -> str:
        """The subnet of ``network_id`` that holds ``address``: Octavia takes an address
        with its subnet (given the network alone, it looks for the subnet itself, which
        its no-op network driver, the lab's, cannot)."""

        def find() -> str | None:
            ip = ipaddress.ip_address(address)
            for subnet in self.conn.network.subnets(network_id=network_id):
                if ip in ipaddress.ip_network(subnet.cidr):
                    return str(subnet.id)
            return None

        found = await self._call("find the VIP's subnet", find, field="spec.vipAddress")
        if found is None:
            raise TerminalError(
                "VipAddressNotInNetwork",
                f"{address} is in no subnet of the VIP's network {network_id}",
                field="spec.vipAddress",
            )
        return found

    async def update_load_balancer(self, lb_id: str, *, description: str | None) -> None:
        await self._call(
            "update load balancer",
            self.conn.load_balancer.update_load_balancer,
            lb_id,
            description=description or "",
        )
        self.watch.of(LoadBalancerWatcher).load_balancers.update(
            lb_id, lambda lb: dataclasses.replace(lb, description=description or "")
        )
        self._lb_changing(lb_id)

    async def delete_load_balancer(self, lb_id: str) -> None:
        await self._call(
            "delete load balancer",
            self.conn.load_balancer.delete_load_balancer,
            lb_id,
            ignore_missing=True,
            cascade=True,
        )
        self._lb_changing(lb_id, "PENDING_DELETE")

    async def list_listeners(self, lb_id: str) -> list[model.Listener]:
        cache = self.watch.of(LoadBalancerWatcher).listeners
        if cache.answers_for(lb_id):
            return [x for x in cache.items() if x.lb_id == lb_id]

        async def fetch() -> list[model.Listener]:
            found = await self._call(
                "list listeners",
                lambda: list(self.conn.load_balancer.listeners(load_balancer_id=lb_id)),
            )
            return [dataclasses.replace(_listener(x), lb_id=lb_id) for x in found]

        return await self._relist(cache, lb_id, fetch)

    async def create_listener(
        self, lb_id: str, *, name: str, protocol: str, port: int, tags: list[str]
    ) -> str:
        created = await self._create(
            "create listener",
            self.conn.load_balancer.create_listener,
            resolved=[],
            in_doubt=(self.watch.of(LoadBalancerWatcher).listeners, lb_id),
            name=name,
            loadbalancer_id=lb_id,
            protocol=LISTENER_PROTOCOL[protocol],
            protocol_port=port,
            tags=tags,
        )
        self.watch.of(LoadBalancerWatcher).listeners.put(
            dataclasses.replace(_listener(created), lb_id=lb_id)
        )
        self._lb_changing(lb_id)
        return str(created.id)

    async def list_pools(self, lb_id: str) -> list[model.Pool]:
        cache = self.watch.of(LoadBalancerWatcher).pools
        if cache.answers_for(lb_id):
            return [p for p in cache.items() if p.lb_id == lb_id]

        async def fetch() -> list[model.Pool]:
            found = await self._call(
                "list pools", lambda: list(self.conn.load_balancer.pools(loadbalancer_id=lb_id))
            )
            return [_pool(x) for x in found]

        return await self._relist(cache, lb_id, fetch)

    async def create_pool(
        self, listener_id: str, *, name: str, protocol: str, tags: list[str]
    ) -> str:
        lb_id = self._lb_of_listener(listener_id)
        created = await self._create(
            "create pool",
            self.conn.load_balancer.create_pool,
            resolved=[],
            in_doubt=(self.watch.of(LoadBalancerWatcher).pools, lb_id or ""),
            name=name,
            listener_id=listener_id,
            protocol=LISTENER_PROTOCOL[protocol],
            lb_algorithm="ROUND_ROBIN",
            tags=tags,
        )
        pool = _pool(created)
        self.watch.of(LoadBalancerWatcher).pools.put(
            dataclasses.replace(pool, lb_id=pool.lb_id or lb_id)
        )
        self.watch.of(LoadBalancerWatcher).listeners.update(
            listener_id, lambda x: dataclasses.replace(x, default_pool_id=pool.id)
        )
        self._lb_changing(lb_id)
        return pool.id

    def _lb_of_listener(self, listener_id: str) -> str | None:
        listener = self.watch.of(LoadBalancerWatcher).listeners.lookup(listener_id)
        return listener.lb_id if isinstance(listener, model.Listener) else None

    async def get_health_monitor(self, hm_id: str) -> model.HealthMonitor | None:
        hit = self.watch.of(LoadBalancerWatcher).monitors.lookup(hm_id)
        if isinstance(hit, model.HealthMonitor):
            return hit
        if hit is GONE:
            return None
        found = await self._get(
            "get health monitor", self.conn.load_balancer.get_health_monitor, hm_id
        )
        return _monitor(found) if found is not None else None

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
        # The pool listing shows a pool's monitor: a lost answer puts the LB's pools in doubt.
        created = await self._create(
            "create health monitor",
            self.conn.load_balancer.create_health_monitor,
            resolved=[],
            in_doubt=(
                self.watch.of(LoadBalancerWatcher).pools,
                self.watch.of(LoadBalancerWatcher).pool_lb(pool_id) or "",
            ),
            **attrs,
        )
        monitor = dataclasses.replace(_monitor(created), pool_id=pool_id)
        self.watch.of(LoadBalancerWatcher).monitors.put(monitor)
        self.watch.of(LoadBalancerWatcher).pools.update(
            pool_id, lambda p: dataclasses.replace(p, health_monitor_id=monitor.id)
        )
        self._lb_changing(self.watch.of(LoadBalancerWatcher).pool_lb(pool_id))
        return monitor.id

    async def delete_health_monitor(self, hm_id: str) -> None:
        monitor = self.watch.of(LoadBalancerWatcher).monitors.lookup(hm_id)
        pool_id = monitor.pool_id if isinstance(monitor, model.HealthMonitor) else None
        await self._call(
            "delete health monitor",
            self.conn.load_balancer.delete_health_monitor,
            hm_id,
            ignore_missing=True,
        )
        self._lb_changing(self.watch.of(LoadBalancerWatcher).pool_lb(pool_id) if pool_id else None)

    async def delete_listener(self, listener_id: str) -> None:
        lb_id = self._lb_of_listener(listener_id)
        await self._call(
            "delete listener",
            self.conn.load_balancer.delete_listener,
            listener_id,
            ignore_missing=True,
        )
        self._lb_changing(lb_id)

    async def delete_pool(self, pool_id: str) -> None:
        lb_id = self.watch.of(LoadBalancerWatcher).pool_lb(pool_id)
        await self._call(
            "delete pool", self.conn.load_balancer.delete_pool, pool_id, ignore_missing=True
        )
        self._lb_changing(lb_id)


def _as_is(x: dict[str, Any]) -> dict[str, Any]:
    """A member's every writable field as Octavia reports it (its JSON). Fields left out
    of a batch entry do not stay as they were: Octavia applies its defaults (weight 1,
    admin state up, not a backup, no monitor address or port)."""
    fields = {
        key: x.get(key)
        for key in (
            "name",
            "address",
            "protocol_port",
            "weight",
            "admin_state_up",
            "backup",
            "subnet_id",
            "monitor_address",
            "monitor_port",
        )
    }
    fields["tags"] = list(x.get("tags") or [])
    return {k: v for k, v in fields.items() if v is not None}


def _json(x: Any) -> dict[str, Any]:
    """An SDK resource (a single read or a create's answer) as Octavia's JSON names, so
    one mapping per type serves those and the listings read as JSON."""
    if isinstance(x, resource.Resource):  # a dict too, but keyed by the SDK's names
        return x.to_dict(computed=False, headers=False, original_names=True)
    return cast(dict[str, Any], x)


def _first_id(x: dict[str, Any], key: str) -> str | None:
    found = x.get(key) or []
    return found[0]["id"] if found else None


def _lb(resource: Any) -> model.LoadBalancer:
    x = _json(resource)
    return model.LoadBalancer(
        id=x["id"],
        name=x.get("name") or "",
        provisioning_status=x["provisioning_status"],
        operating_status=x.get("operating_status") or "",
        vip_address=x.get("vip_address"),
        tags=list(x.get("tags") or []),
        description=x.get("description"),
        availability_zone=x.get("availability_zone") or None,
        flavor_id=x.get("flavor_id") or None,
        vip_network_id=x.get("vip_network_id"),
        vip_port_id=x.get("vip_port_id"),
    )


def _listener(resource: Any) -> model.Listener:
    x = _json(resource)
    return model.Listener(
        id=x["id"],
        name=x.get("name") or "",
        protocol=x.get("protocol") or "",
        port=int(x.get("protocol_port") or 0),
        default_pool_id=x.get("default_pool_id"),
        tags=list(x.get("tags") or []),
        lb_id=_first_id(x, "loadbalancers"),
    )


def _pool(resource: Any) -> model.Pool:
    x = _json(resource)
    return model.Pool(
        id=x["id"],
        name=x.get("name") or "",
        protocol=x.get("protocol") or "",
        listener_id=_first_id(x, "listeners"),
        health_monitor_id=x.get("healthmonitor_id"),
        member_ids=[m["id"] for m in (x.get("members") or [])],
        tags=list(x.get("tags") or []),
        lb_id=_first_id(x, "loadbalancers"),
    )


def _monitor(resource: Any) -> model.HealthMonitor:
    x = _json(resource)
    return model.HealthMonitor(
        id=x["id"],
        type=x.get("type") or "",
        url_path=x.get("url_path"),
        tags=list(x.get("tags") or []),
        pool_id=_first_id(x, "pools"),
    )
