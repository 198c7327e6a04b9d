"""An in-memory Octavia with the manners that matter to Kumo.

* Every change to a load balancer's tree puts the LB in ``PENDING_UPDATE`` (a new LB
  in ``PENDING_CREATE``, a deleted one in ``PENDING_DELETE``), and like the real one it
  stays there for a while: by default the next two reads (``get_load_balancer`` or
  ``fetch_load_balancer``) still show it pending and the third settles it
  (``pending_gets`` says how many reads stay pending; 0: the next read settles it).
* A change while the LB is ``PENDING_*`` raises TransientError("CloudBusy"), like
  Octavia's 409 — so an actuator that makes two changes in one pass fails its tests,
  and one that takes the 409 for done (a release swallowing it) does too.
* Resources carry tags; ``list_owned_load_balancers`` filters by the owner tag.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any

from kumo.cloud import model
from kumo.engine.errors import TerminalError, TransientError
from kumo.ports import LoadBalancingPort

_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids):04d}"


@dataclass
class FakeLB:
    lb: model.LoadBalancer
    attrs: dict[str, Any]
    pending_gets: int = 0
    listeners: dict[str, model.Listener] = field(default_factory=dict)
    pools: dict[str, model.Pool] = field(default_factory=dict)
    members: dict[str, dict[str, model.Member]] = field(default_factory=dict)
    monitors: dict[str, model.HealthMonitor] = field(default_factory=dict)


class FakeLoadBalancing(LoadBalancingPort):
    region: str | None = "tokyo1"

    async def project_id(self) -> str | None:
        return "project-tokyo1"

    def __init__(self, pending_gets: int = 2) -> None:
        self.lbs: dict[str, FakeLB] = {}
        self.flavors = {"large": "lbf-1"}
        self.pending_gets = pending_gets
        """How many reads after a change still report PENDING_* (0: the next is ACTIVE)."""
        self.calls: list[str] = []
        self.member_reads = 0  # list_members: a read of Octavia in the adapter
        self.busy = 0
        """How many changes were refused because the LB was PENDING_* (409)."""
        self.live_addresses: frozenset[str] | None = None
        """Addresses of live servers, as the cloud watch would report (None: unknown)."""

    # -- helpers for tests ----------------------------------------------------------------

    def only(self) -> FakeLB:
        (fake,) = self.lbs.values()
        return fake

    def add_lb(self, tags: list[str], name: str = "lb", status: str = "ACTIVE") -> FakeLB:
        lb = model.LoadBalancer(new_id("lb"), name, status, "ONLINE", "10.9.0.5", list(tags))
        self.lbs[lb.id] = FakeLB(lb, attrs={"name": name}, pending_gets=self.pending_gets)
        return self.lbs[lb.id]

    def add_member(
        self, pool_id: str, name: str, address: str, port: int, tags=(), weight: int = 1
    ) -> str:
        """Out-of-band: a member someone added by hand (no state change, no lock)."""
        fake = self._by_pool(pool_id)
        member = model.Member(new_id("mem"), name, address, port, None, list(tags), weight)
        fake.members[pool_id][member.id] = member
        self._sync_pool(fake, pool_id)
        return member.id

    def remove_member_out_of_band(self, pool_id: str, member_id: str) -> None:
        fake = self._by_pool(pool_id)
        del fake.members[pool_id][member_id]
        self._sync_pool(fake, pool_id)

    def delete_out_of_band(self, lb_id: str) -> None:
        del self.lbs[lb_id]

    # -- lookups the actuator makes --------------------------------------------------------

    async def default_network_id(self, external: bool, field: str) -> str:
        return "net-public" if external else "net-private"

    async def network_id(self, ref: str, field: str = "spec.networks") -> str:
        return f"net-{ref}"

    async def lb_flavor_id(self, ref: str, field: str = "spec.serviceType") -> str:
        if ref not in self.flavors:
            raise TerminalError(
                "LoadBalancerFlavorNotFound", f"load balancer flavor {ref!r} not found", field=field
            )
        return self.flavors[ref]

    # -- load balancers ----------------------------------------------------------------------

    async def get_load_balancer(self, lb_id: str) -> model.LoadBalancer | None:
        fake = self.lbs.get(lb_id)
        if fake is None:
            return None
        seen = fake.lb
        if seen.provisioning_status.startswith("PENDING_"):
            if fake.pending_gets > 0:
                fake.pending_gets -= 1
            elif seen.provisioning_status == "PENDING_DELETE":
                del self.lbs[lb_id]
                return None
            else:
                fake.lb = replace(seen, provisioning_status="ACTIVE")
        return fake.lb

    async def fetch_load_balancer(self, lb_id: str) -> model.LoadBalancer | None:
        """The adapter reads the API (get_load_balancer the cache): here both read the
        same, each read one of those a pending LB stays pending for."""
        self.calls.append("fetch_load_balancer")
        return await self.get_load_balancer(lb_id)

    async def list_owned_load_balancers(self, uid: str) -> list[model.LoadBalancer]:
        return [f.lb for f in self.lbs.values() if model.owner_tag(uid) in f.lb.tags]

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
        self.calls.append("create_load_balancer")
        attrs = {k: v for k, v in locals().items() if k != "self"}
        lb = model.LoadBalancer(
            id=new_id("lb"),
            name=name,
            provisioning_status="PENDING_CREATE",
            operating_status="OFFLINE",
            vip_address=vip_address or f"10.9.0.{len(self.lbs) + 10}",
            tags=list(tags),
            description=description,
            availability_zone=availability_zone,
            flavor_id=flavor_id,
            vip_network_id=vip_network_id,
        )
        self.lbs[lb.id] = FakeLB(lb, attrs=attrs, pending_gets=self.pending_gets)
        return lb

    async def update_load_balancer(self, lb_id: str, *, description: str | None) -> None:
        fake = self._mutate(self.lbs[lb_id], "update_load_balancer")
        fake.lb = replace(fake.lb, description=description or "")

    async def find_load_balancers_by_name(self, name: str) -> list[model.LoadBalancer]:
        return [f.lb for f in self.lbs.values() if f.lb.name == name]

    async def set_load_balancer_tags(self, lb_id: str, tags: list[str]) -> None:
        fake = self._mutate(self.lbs[lb_id], "set_load_balancer_tags")
        fake.lb = replace(fake.lb, tags=list(tags))

    async def delete_load_balancer(self, lb_id: str) -> None:
        """Always cascade, like the adapter: the whole tree goes with it."""
        if lb_id not in self.lbs:
            return
        fake = self._mutate(self.lbs[lb_id], "delete_load_balancer")
        fake.lb = replace(fake.lb, provisioning_status="PENDING_DELETE")

    # -- listeners and pools -------------------------------------------------------------------

    async def list_listeners(self, lb_id: str) -> list[model.Listener]:
        return list(self.lbs[lb_id].listeners.values())

    async def create_listener(
        self, lb_id: str, *, name: str, protocol: str, port: int, tags: list[str]
    ) -> str:
        fake = self._mutate(self.lbs[lb_id], "create_listener")
        if any(x.port == port for x in fake.listeners.values()):
            raise TransientError("CloudBusy", f"duplicate listener on port {port}")
        listener = model.Listener(new_id("lis"), name, protocol.upper(), port, None, list(tags))
        fake.listeners[listener.id] = listener
        return listener.id

    async def delete_listener(self, listener_id: str) -> None:
        fake = self._by_listener(listener_id)
        if fake is None:
            return
        self._mutate(fake, "delete_listener")
        if any(p.listener_id == listener_id for p in fake.pools.values()):
            raise TerminalError("CloudRejected", "listener still has a default pool")
        del fake.listeners[listener_id]

    async def list_pools(self, lb_id: str) -> list[model.Pool]:
        return list(self.lbs[lb_id].pools.values())

    async def create_pool(
        self, listener_id: str, *, name: str, protocol: str, tags: list[str]
    ) -> str:
        fake = self._by_listener(listener_id)
        assert fake is not None, listener_id
        self._mutate(fake, "create_pool")
        pool = model.Pool(new_id("pool"), name, protocol.upper(), listener_id, None, [], list(tags))
        fake.pools[pool.id] = pool
        fake.members[pool.id] = {}
        fake.listeners[listener_id] = replace(fake.listeners[listener_id], default_pool_id=pool.id)
        return pool.id

    async def delete_pool(self, pool_id: str) -> None:
        fake = self._by_pool(pool_id, missing_ok=True)
        if fake is None:
            return
        self._mutate(fake, "delete_pool")
        pool = fake.pools.pop(pool_id)
        fake.members.pop(pool_id, None)
        fake.monitors.pop(pool.health_monitor_id or "", None)
        if pool.listener_id in fake.listeners:
            listener = fake.listeners[pool.listener_id]
            fake.listeners[listener.id] = replace(listener, default_pool_id=None)

    # -- members and monitors -------------------------------------------------------------------

    async def list_members(self, pool_id: str) -> list[model.Member]:
        self.member_reads += 1
        return list(self._by_pool(pool_id).members[pool_id].values())

    async def list_known_members(self, pool_id: str) -> list[model.Member]:
        """The adapter answers from its cache; here, what the pool holds (not a call)."""
        return list(self._by_pool(pool_id).members[pool_id].values())

    async def replace_owned_members(
        self, pool_id: str, uid: str, members: list[model.MemberSpec]
    ) -> None:
        """Octavia's batch update as the adapter drives it: members without ``uid``'s
        tag stay exactly as they are; ours become ``members``, matched by address +
        port (a matched member keeps its ID), the rest of ours are deleted."""
        fake = self._mutate(self._by_pool(pool_id), "replace_owned_members")
        current = fake.members[pool_id]
        foreign = {k: m for k, m in current.items() if model.owner_of(m.tags) != uid}
        by_key = {(m.address, m.port): k for k, m in current.items() if k not in foreign}
        taken = {(m.address, m.port) for m in foreign.values()}
        result = dict(foreign)
        for spec in members:
            key = (spec.address, spec.port)
            if key in taken:
                continue
            taken.add(key)
            member_id = by_key.get(key) or new_id("mem")
            result[member_id] = _as_member(member_id, spec)
        fake.members[pool_id] = result
        self._sync_pool(fake, pool_id)

    async def add_members(self, pool_id: str, members: list[model.MemberSpec]) -> None:
        """Octavia's batch update with ``additive_only``: the listed members are created
        (or, at an address + port a member holds, that member is updated — the adapter
        leaves those out); every other member stays as it is."""
        fake = self._mutate(self._by_pool(pool_id), "add_members")
        current = fake.members[pool_id]
        by_key = {(m.address, m.port): k for k, m in current.items()}
        for spec in members:
            member_id = by_key.get((spec.address, spec.port)) or new_id("mem")
            current[member_id] = _as_member(member_id, spec)
        self._sync_pool(fake, pool_id)

    def list_live_server_addresses(self) -> frozenset[str] | None:
        """What the cloud watch knows of Nova: unknown unless a test says."""
        return self.live_addresses

    async def create_member(self, pool_id: str, member: model.MemberSpec) -> None:
        """Octavia's single create: 409 for an address + port the pool already has."""
        fake = self._mutate(self._by_pool(pool_id), "create_member")
        if any(
            (m.address, m.port) == (member.address, member.port)
            for m in fake.members[pool_id].values()
        ):
            raise TransientError("CloudBusy", f"duplicate member {member.address}:{member.port}")
        member_id = new_id("mem")
        fake.members[pool_id][member_id] = _as_member(member_id, member)
        self._sync_pool(fake, pool_id)

    async def update_owned_member(
        self, pool_id: str, member_id: str, uid: str, member: model.MemberSpec
    ) -> None:
        fake = self._by_pool(pool_id)
        if self._owned_member(fake, pool_id, member_id, uid):
            self._mutate(fake, "update_owned_member")
            old = fake.members[pool_id][member_id]
            fake.members[pool_id][member_id] = replace(
                old, name=member.name, weight=member.weight, monitor_port=member.monitor_port
            )

    async def delete_owned_member(self, pool_id: str, member_id: str, uid: str) -> None:
        fake = self._by_pool(pool_id)
        if self._owned_member(fake, pool_id, member_id, uid):
            self._mutate(fake, "delete_owned_member")
            del fake.members[pool_id][member_id]
            self._sync_pool(fake, pool_id)

    @staticmethod
    def _owned_member(fake: FakeLB, pool_id: str, member_id: str, uid: str) -> bool:
        """As the adapter: gone is done, a foreign member is NotOwned."""
        found = fake.members[pool_id].get(member_id)
        if found is None:
            return False
        if model.owner_of(found.tags) != uid:
            raise TransientError("NotOwned", f"pool member {member_id} is not ours")
        return True

    async def get_health_monitor(self, hm_id: str) -> model.HealthMonitor | None:
        for fake in self.lbs.values():
            if hm_id in fake.monitors:
                return fake.monitors[hm_id]
        return None

    async def create_health_monitor(
        self, pool_id: str, *, protocol: str, url_path: str | None, tags: list[str]
    ) -> str:
        fake = self._mutate(self._by_pool(pool_id), "create_health_monitor")
        if fake.pools[pool_id].health_monitor_id:
            raise TransientError("CloudBusy", "pool already has a health monitor")
        # Octavia defaults url_path to "/" for HTTP(S) checks and has none for the rest.
        url_path = (url_path or "/") if protocol in ("http", "https") else None
        monitor = model.HealthMonitor(new_id("hm"), protocol.upper(), url_path, list(tags))
        fake.monitors[monitor.id] = monitor
        fake.pools[pool_id] = replace(fake.pools[pool_id], health_monitor_id=monitor.id)
        return monitor.id

    async def delete_health_monitor(self, hm_id: str) -> None:
        for fake in self.lbs.values():
            if hm_id in fake.monitors:
                self._mutate(fake, "delete_health_monitor")
                del fake.monitors[hm_id]
                for pool in fake.pools.values():
                    if pool.health_monitor_id == hm_id:
                        fake.pools[pool.id] = replace(pool, health_monitor_id=None)

    # -- what a cloud watch lists --------------------------------------------------------------

    def _watched(self, also: frozenset[str]) -> list[FakeLB]:
        """Kumo's load balancers and those of ``also``, as the adapter's listings keep."""
        return [f for f in self.lbs.values() if model.MANAGED_TAG in f.lb.tags or f.lb.id in also]

    async def load_balancer_versions(self, also: frozenset[str] = frozenset()) -> dict[str, str]:
        self.calls.append("load_balancer_versions")
        # Like updated_at: moves whenever anything under the load balancer changed; the
        # status last, as the adapter's "updated_at status".
        return {
            f.lb.id: f"{(f.lb, f.listeners, f.pools, f.members, f.monitors)!r} "
            f"{f.lb.provisioning_status}"
            for f in self._watched(also)
        }

    async def fetch_load_balancer_tree(
        self, also: frozenset[str] = frozenset()
    ) -> tuple[
        list[model.LoadBalancer], list[model.Listener], list[model.Pool], list[model.HealthMonitor]
    ]:
        self.calls.append("fetch_load_balancer_tree")
        fakes = self._watched(also)
        return (
            [f.lb for f in fakes],
            [replace(x, lb_id=f.lb.id) for f in fakes for x in f.listeners.values()],
            [replace(p, lb_id=f.lb.id) for f in fakes for p in f.pools.values()],
            [m for f in fakes for m in f.monitors.values()],
        )

    async def fetch_members(self, pool_id: str) -> list[model.Member]:
        self.calls.append("fetch_members")
        return list(self._by_pool(pool_id).members[pool_id].values())

    # -- internals ---------------------------------------------------------------------------------

    def _mutate(self, fake: FakeLB, call: str) -> FakeLB:
        """Octavia's lock: 409 while pending, else the change makes the LB pending."""
        status = fake.lb.provisioning_status
        if status.startswith("PENDING_"):
            self.busy += 1
            raise TransientError("CloudBusy", f"{call}: load balancer {fake.lb.id} is {status}")
        self.calls.append(call)
        fake.lb = replace(fake.lb, provisioning_status="PENDING_UPDATE")
        fake.pending_gets = self.pending_gets
        return fake

    def _by_listener(self, listener_id: str) -> FakeLB | None:
        return next((f for f in self.lbs.values() if listener_id in f.listeners), None)

    def _by_pool(self, pool_id: str, missing_ok: bool = False) -> Any:
        found = next((f for f in self.lbs.values() if pool_id in f.pools), None)
        assert found is not None or missing_ok, f"no pool {pool_id}"
        return found

    def _sync_pool(self, fake: FakeLB, pool_id: str) -> None:
        """Keep Pool.member_ids true, as Octavia's pool listing is."""
        pool = fake.pools[pool_id]
        fake.pools[pool_id] = replace(pool, member_ids=list(fake.members[pool_id]))


def _as_member(member_id: str, spec: model.MemberSpec) -> model.Member:
    """The member Octavia makes of ``spec`` (a create, or a batch update's)."""
    return model.Member(
        member_id,
        spec.name,
        spec.address,
        spec.port,
        spec.monitor_port,
        list(spec.tags),
        spec.weight,
    )
