"""The loadbalancing service in a dry pass: its reads passed through to the real cloud, its
writes recorded as :class:`~kumo.engine.dryrun.Action` s (see :mod:`kumo.cloud.dryrun`)."""

from __future__ import annotations

from typing import Any

from kumo.cloud import model
from kumo.cloud.dry import NEW_ID, DryRunBase, passthrough
from kumo.engine.dryrun import Change
from kumo.ports import LoadBalancingPort


class LoadBalancingDryRun(DryRunBase):
    """The loadbalancing service's writes recorded, its reads passed through."""

    # Reads: the real cloud's answer.
    lb_flavor_id = passthrough(LoadBalancingPort.lb_flavor_id)
    get_load_balancer = passthrough(LoadBalancingPort.get_load_balancer)
    fetch_load_balancer = passthrough(LoadBalancingPort.fetch_load_balancer)
    list_owned_load_balancers = passthrough(LoadBalancingPort.list_owned_load_balancers)
    find_load_balancers_by_name = passthrough(LoadBalancingPort.find_load_balancers_by_name)
    load_balancer_versions = passthrough(LoadBalancingPort.load_balancer_versions)
    fetch_load_balancer_tree = passthrough(LoadBalancingPort.fetch_load_balancer_tree)
    list_listeners = passthrough(LoadBalancingPort.list_listeners)
    list_pools = passthrough(LoadBalancingPort.list_pools)
    list_members = passthrough(LoadBalancingPort.list_members)
    list_known_members = passthrough(LoadBalancingPort.list_known_members)
    fetch_members = passthrough(LoadBalancingPort.fetch_members)
    get_health_monitor = passthrough(LoadBalancingPort.get_health_monitor)

    # Writes: recorded, never made.

    async def create_load_balancer(self, **attrs: Any) -> model.LoadBalancer:
        shown = {
            "vip_network_id": "spec.vipType",
            "vip_address": "spec.vipAddress",
            "availability_zone": "spec.zone",
            "flavor_id": "spec.serviceType",
            "description": "spec.description",
        }
        changes = [Change(f, None, attrs.get(k)) for k, f in shown.items() if attrs.get(k)]
        self._record("create", "load balancer", attrs["name"], *changes)
        return model.LoadBalancer(
            id=NEW_ID,
            name=attrs["name"],
            provisioning_status="PENDING_CREATE",
            operating_status="OFFLINE",
            vip_address=None,
            tags=list(attrs.get("tags") or []),
            description=attrs.get("description"),
        )

    async def update_load_balancer(self, lb_id: str, *, description: str | None) -> None:
        old = await self._inner.get_load_balancer(lb_id)
        before = old.description if old is not None else None
        self._record(
            "update", "load balancer", lb_id, Change("spec.description", before, description)
        )

    async def set_load_balancer_tags(self, lb_id: str, tags: list[str]) -> None:
        old = await self._inner.get_load_balancer(lb_id)
        self._record(
            "update", "load balancer", lb_id, Change("tags", old.tags if old else [], tags)
        )

    async def delete_load_balancer(self, lb_id: str) -> None:
        self._record("delete", "load balancer", lb_id, note="with its listeners, pools and members")

    async def create_listener(
        self, lb_id: str, *, name: str, protocol: str, port: int, tags: list[str]
    ) -> str:
        self._record(
            "create", "listener", name, Change(f"spec.ports[{port}].protocol", None, protocol)
        )
        return NEW_ID

    async def create_pool(
        self, listener_id: str, *, name: str, protocol: str, tags: list[str]
    ) -> str:
        self._record(
            "create", "pool", name, Change("spec.ports[].realServers.protocol", None, protocol)
        )
        return NEW_ID

    async def create_health_monitor(
        self, pool_id: str, *, protocol: str, url_path: str | None, tags: list[str]
    ) -> str:
        label = f"{protocol} {url_path}" if url_path else protocol
        self._record(
            "create",
            "health monitor",
            f"on pool {pool_id}",
            Change("spec.ports[].monitors[0]", None, label),
        )
        return NEW_ID

    async def delete_health_monitor(self, hm_id: str) -> None:
        self._record("delete", "health monitor", hm_id)

    async def delete_listener(self, listener_id: str) -> None:
        self._record("delete", "listener", listener_id)

    async def delete_pool(self, pool_id: str) -> None:
        self._record("delete", "pool", pool_id)

    async def replace_owned_members(
        self, pool_id: str, uid: str, members: list[model.MemberSpec]
    ) -> None:
        """The batch update, as members to add, drain (weight 0), restore and remove."""
        current = [
            m for m in await self._inner.list_members(pool_id) if model.owner_of(m.tags) == uid
        ]
        have = {(m.address, m.port): m for m in current}
        want = {(m.address, m.port): m for m in members}
        changes = []
        for key, m in sorted(want.items()):
            old = have.get(key)
            label = f"{m.name} {m.address}:{m.port}"
            if old is None:
                changes.append(Change("members", None, f"add {label}"))
            elif old.weight != m.weight:
                what = "drain" if m.weight == 0 else "restore"
                changes.append(
                    Change("members", f"weight {old.weight}", f"{what} {label} (weight {m.weight})")
                )
        for key, old in sorted(have.items()):
            if key not in want:
                changes.append(Change("members", f"{old.name} {old.address}:{old.port}", "remove"))
        self._record("update", "members of pool", pool_id, *changes)

    async def add_members(self, pool_id: str, members: list[model.MemberSpec]) -> None:
        changes = [Change("members", None, f"add {m.name} {m.address}:{m.port}") for m in members]
        self._record("update", "members of pool", pool_id, *changes)

    async def create_member(self, pool_id: str, member: model.MemberSpec) -> None:
        label = f"add {member.name} {member.address}:{member.port}"
        self._record("update", "members of pool", pool_id, Change("members", None, label))

    async def update_owned_member(
        self, pool_id: str, member_id: str, uid: str, member: model.MemberSpec
    ) -> None:
        old = await self._member(pool_id, member_id)
        label = f"{member.name} {member.address}:{member.port}"
        what = "drain" if member.weight == 0 else "update"
        before = f"weight {old.weight}" if old is not None else None
        new = f"{what} {label} (weight {member.weight})"
        self._record("update", "members of pool", pool_id, Change("members", before, new))

    async def delete_owned_member(self, pool_id: str, member_id: str, uid: str) -> None:
        old = await self._member(pool_id, member_id)
        label = f"{old.name} {old.address}:{old.port}" if old is not None else member_id
        self._record("update", "members of pool", pool_id, Change("members", label, "remove"))

    async def _member(self, pool_id: str, member_id: str) -> model.Member | None:
        found = await self._inner.list_members(pool_id)
        return next((m for m in found if m.id == member_id), None)
