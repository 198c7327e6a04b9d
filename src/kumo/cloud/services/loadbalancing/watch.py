"""Octavia's watcher: one listing of Kumo's load balancers with three fields (id,
updated_at, provisioning status) per interval. Every change to a listener, pool, member
or monitor moves its load balancer through ``PENDING_UPDATE`` and bumps ``updated_at``,
so only when that probe differs are load balancers, listeners, pools and monitors listed
in full — all four before any is applied, so a reconcile never sees a new status with old
children. Members are read per pool only when the pool's member IDs changed. A load
balancer without Kumo's tag that an import or an Observe names is cached at its first
read and from then on probed and listed with Kumo's (the probe and the listing then leave
out the tag filter and keep Kumo's and those).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kumo.cloud import model
from kumo.cloud.cache import ResourceCache
from kumo.cloud.watcher import Changes, WatchEnv, Watcher, tags_marker
from kumo.ports import LoadBalancingPort


class LoadBalancerWatcher(Watcher):
    """Octavia: a probe of Kumo's load balancers, and their whole tree when it moved."""

    service = "loadbalancing"
    api, resource = "load-balancer", "loadbalancers"

    def __init__(self, cloud: LoadBalancingPort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.load_balancers: ResourceCache[model.LoadBalancer] = ResourceCache(
            "load balancers",
            lambda lb: lb.id,
            lambda lb: model.owner_of(lb.tags),
            live=lambda lb: lb.provisioning_status not in ("DELETED", "PENDING_DELETE"),
        )
        self.listeners: ResourceCache[model.Listener] = ResourceCache(
            "listeners", lambda x: x.id, lambda x: model.owner_of(x.tags)
        )
        self.pools: ResourceCache[model.Pool] = ResourceCache(
            "pools", lambda p: p.id, lambda p: model.owner_of(p.tags)
        )
        self.monitors: ResourceCache[model.HealthMonitor] = ResourceCache(
            "health monitors", lambda m: m.id, lambda m: model.owner_of(m.tags)
        )
        #: Pool ID → (the member IDs the pool listed, those members); the IDs are None
        #: once Kumo changed the pool's members: read again, but shown while it is pending.
        self.members: dict[str, tuple[frozenset[str] | None, list[model.Member]]] = {}
        #: Pool ID → the newest member (in creation order) its last read returned.
        self.newest_members: dict[str, str] = {}
        self.caches = (self.load_balancers, self.listeners, self.pools, self.monitors)
        self.singles = (self.load_balancers,)
        # Listeners, pools and monitors go with their load balancer: it is the one marked.
        self.marks = (("loadbalancer", self.load_balancers, tags_marker),)
        self._versions: dict[str, str] | None = None

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_load_balancer(resource.id)

    async def refresh(self, full: bool) -> Changes:
        stats = self.env.stats
        stats.count("load-balancers-probe")
        foreign = self.foreign()
        versions = await self.cloud.load_balancer_versions(foreign)
        if not full and self._nothing_to_list(versions):
            self._versions = versions
            return []
        caches = self.caches
        tokens = [c.begin() for c in caches]
        stats.count("load-balancer-tree")
        lbs, listeners, pools, monitors = await self.cloud.fetch_load_balancer_tree(foreign)
        ours = {lb.id for lb in lbs}
        # Applied together, after all four lists: a reconcile never sees half of it.
        changes: Changes = []
        listed: list[list[Any]] = [
            lbs,
            [x for x in listeners if x.lb_id in ours],
            [p for p in pools if p.lb_id in ours],
            monitors,
        ]
        for cache, token, items in zip(caches, tokens, listed, strict=True):
            changes += [(cache, c) for c in cache.replace(token, items)]
        self._versions = versions
        if full:
            self.members.clear()  # out-of-band weight changes do not show in the pool
            self.newest_members.clear()
        return changes

    def foreign(self) -> frozenset[str]:
        """The cached load balancers without Kumo's tag (an import or an Observe names
        them): listed with Kumo's own."""
        return frozenset(
            lb.id for lb in self.load_balancers.items() if model.MANAGED_TAG not in lb.tags
        )

    def watch(self, lb_id: str) -> None:
        """The adapter cached ``lb_id`` (not Kumo's) at its first read: its listeners and
        pools are not cached yet, so readers ask the API for them until the watch lists
        them, and the next probe lists its whole tree."""
        self.listeners.doubt(lb_id)
        self.pools.doubt(lb_id)
        self._versions = None

    def _probe_agrees(self, versions: dict[str, str]) -> bool:
        """The probe shows every cached load balancer in the status the cache has. While
        one stays PENDING_* the tree is not listed again (a probe a second instead of
        five lists); Kumo's own change (the cache set PENDING_UPDATE) that Octavia
        finished between two probes shows as a disagreement and is listed."""
        return all(
            versions.get(lb.id, "").rpartition(" ")[2] == lb.provisioning_status
            for lb in self.load_balancers.items()
        )

    def _nothing_to_list(self, versions: dict[str, str]) -> bool:
        """The probe agrees with the cache, and every load balancer whose version moved
        since the last listing (if any) now shows the ``PENDING_*`` state the cache
        already holds it in (Kumo's own change: the adapter set it). Then the tree is not
        listed: Octavia holds the load balancer until the change is applied, and the
        probe that sees it leave ``PENDING_*`` lists the whole tree, with whatever else
        changed meanwhile. A batch of members cost two tree listings (on entering and on
        leaving), now one."""
        old = self._versions
        if old is None or versions.keys() != old.keys() or not self._probe_agrees(versions):
            return False
        moved = [v for lb_id, v in versions.items() if v != old[lb_id]]
        return all(v.rpartition(" ")[2].startswith("PENDING_") for v in moved)

    def is_busy(self, resource: Any) -> bool:
        """Octavia refuses a delete while PENDING_*."""
        return str(resource.provisioning_status or "").startswith("PENDING_")

    def transitional(self) -> bool:
        return any(
            lb.provisioning_status.startswith("PENDING_") for lb in self.load_balancers.items()
        )

    def owner_of(self, cache: ResourceCache[Any], resource: Any) -> str | None:
        """The marker's UID, or for an unmarked child the UID of its load balancer's owner."""
        uid = cache.owner(resource)
        if uid or cache not in (self.listeners, self.pools, self.monitors):
            return uid
        lb_id = getattr(resource, "lb_id", None)
        if lb_id is None and isinstance(resource, model.HealthMonitor) and resource.pool_id:
            lb_id = self.pool_lb(resource.pool_id)
        lb = self.load_balancers.lookup(lb_id) if lb_id else None
        return model.owner_of(lb.tags) if isinstance(lb, model.LoadBalancer) else None

    def changing(self, lb_id: str | None, status: str = "PENDING_UPDATE") -> None:
        """Octavia now holds ``lb_id`` in ``status`` for Kumo's change."""
        if lb_id:
            self.load_balancers.update(
                lb_id, lambda lb: dataclasses.replace(lb, provisioning_status=status)
            )

    def pool_lb(self, pool_id: str) -> str | None:
        pool = self.pools.lookup(pool_id)
        return pool.lb_id if isinstance(pool, model.Pool) else None
