"""The loadbalancing service's port. Octavia: load balancers, listeners, pools, members, health monitors."""

from __future__ import annotations

from typing import Protocol

from kumo.ports import model
from kumo.ports.declare import CloudPort, read, write


class LoadBalancingPort(CloudPort, Protocol):
    """Octavia: load balancers, listeners, pools, members, health monitors."""

    @read
    async def lb_flavor_id(self, ref: str, field: str = "spec.serviceType") -> str: ...

    @read
    async def get_load_balancer(self, lb_id: str) -> model.LoadBalancer | None: ...

    @read
    async def fetch_load_balancer(self, lb_id: str) -> model.LoadBalancer | None: ...

    @read
    async def list_owned_load_balancers(self, uid: str) -> list[model.LoadBalancer]: ...

    @read
    async def find_load_balancers_by_name(self, name: str) -> list[model.LoadBalancer]: ...

    @write
    async def set_load_balancer_tags(self, lb_id: str, tags: list[str]) -> None: ...

    @read
    async def load_balancer_versions(
        self, also: frozenset[str] = frozenset()
    ) -> dict[str, str]: ...

    @read
    async def fetch_load_balancer_tree(
        self, also: frozenset[str] = frozenset()
    ) -> tuple[
        list[model.LoadBalancer], list[model.Listener], list[model.Pool], list[model.HealthMonitor]
    ]: ...

    @write
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
    ) -> model.LoadBalancer: ...

    @write
    async def update_load_balancer(self, lb_id: str, *, description: str | None) -> None: ...

    @write
    async def delete_load_balancer(self, lb_id: str) -> None: ...

    @read
    async def list_listeners(self, lb_id: str) -> list[model.Listener]: ...

    @write
    async def create_listener(
        self, lb_id: str, *, name: str, protocol: str, port: int, tags: list[str]
    ) -> str: ...

    @read
    async def list_pools(self, lb_id: str) -> list[model.Pool]: ...

    @write
    async def create_pool(
        self, listener_id: str, *, name: str, protocol: str, tags: list[str]
    ) -> str: ...

    @read
    async def list_members(self, pool_id: str) -> list[model.Member]: ...

    @read
    async def list_known_members(self, pool_id: str) -> list[model.Member]: ...

    @read
    async def fetch_members(self, pool_id: str) -> list[model.Member]: ...

    @write
    async def replace_owned_members(
        self, pool_id: str, uid: str, members: list[model.MemberSpec]
    ) -> None: ...

    @write
    async def add_members(self, pool_id: str, members: list[model.MemberSpec]) -> None: ...

    @write
    async def create_member(self, pool_id: str, member: model.MemberSpec) -> None: ...

    @write
    async def update_owned_member(
        self, pool_id: str, member_id: str, uid: str, member: model.MemberSpec
    ) -> None: ...

    @write
    async def delete_owned_member(self, pool_id: str, member_id: str, uid: str) -> None: ...

    @read
    async def get_health_monitor(self, hm_id: str) -> model.HealthMonitor | None: ...

    @write
    async def create_health_monitor(
        self, pool_id: str, *, protocol: str, url_path: str | None, tags: list[str]
    ) -> str: ...

    @write
    async def delete_health_monitor(self, hm_id: str) -> None: ...

    @write
    async def delete_listener(self, listener_id: str) -> None: ...

    @write
    async def delete_pool(self, pool_id: str) -> None: ...
