"""CloudWatch: one cloud project observed like a Kubernetes informer.

One watch per cloud (credentials), shared by every reconcile of every namespace using
it. It keeps a :class:`~kumo.cloud.cache.ResourceCache` per resource type fresh with
list calls whose cost does not grow with the fleet while nothing changes:

- **Nova servers**: ``GET /servers/detail?changes-since=T`` — only servers changed since
  T, deleted ones included (their tags are gone, so the incremental list is unfiltered
  and matched by ID). T comes from the cloud's own clock (the ``Date`` of the previous
  answer) minus a margin for skew between Nova's nodes, never from the local clock. A
  full listing filtered by Kumo's tag runs at start and every ``relist_seconds``.
- **Octavia**: one listing of Kumo's load balancers with three fields (id, updated_at,
  provisioning status) per interval. Every change to a listener, pool, member or monitor
  moves its load balancer through ``PENDING_UPDATE`` and bumps ``updated_at``, so only
  when that probe differs are load balancers, listeners, pools and monitors listed in
  full — all four before any is applied, so a reconcile never sees a new status with
  old children. Members are read per pool only when the pool's member IDs changed.
- **Designate**: one zone listing per interval; a zone whose serial, status or
  ``updated_at`` moved has its recordsets listed again.
- **Manila**: Kumo's shares (one listing filtered by Kumo's metadata), then each of
  those shares' access rules (Manila cannot list rules across shares; Shares are few).
- **Nova server groups**: at start and every ``relist_seconds`` (they change only by
  Kumo's own writes, which update the cache directly).

While something is in transition (a server building or deleting, a load balancer or
recordset pending) that service is listed every ``fast_seconds`` — one list covers all
of them, instead of a poll per object. Every interval is jittered.

Changes are reported as the UIDs of the objects owning the changed resources (the
``kumo-owner`` marker; a listener, pool or monitor without it belongs to its load
balancer's owner): that is Kumo's drift detection. Kumo's own writes go to the API and
then into the cache (:meth:`CloudWatch.wrote`), never waiting for a listing.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import logging
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

from kumo.cloud import model
from kumo.cloud.budget import MAX_QUEUED_BUILDS, BuildBudget
from kumo.cloud.cache import Change, ResourceCache
from kumo.engine.errors import ReconcileError

log = logging.getLogger("kumo.cloud.watch")

#: How far behind the API's clock a Nova node's clock may be (changes-since margin;
#: ``kumo run --clock-skew-seconds``). Every listing returns again what changed within
#: the margin: while a fleet builds, a 30 s margin made each 1 s listing return 30 s of
#: changes — most of the nova-api time Kumo used. NTP keeps real skew far below 10 s.
SKEW_SECONDS = 10.0
#: While something is in transition, a listing waits this many times as long as the
#: previous one took (at least ``fast``): an API slowed down by a build wave is not
#: kept busy by the watch listing it back to back.
LISTING_PACE = 2.0

#: True while the watch lists: its calls take their own slots (CloudBase._call), so
#: writes in flight — under load a Nova create takes seconds — never hold up noticing
#: what changed (a server going ACTIVE, one deleted out of band).
WATCH_LANE: contextvars.ContextVar[bool] = contextvars.ContextVar("kumo_watch_lane", default=False)

Notify = Callable[[set[str], set[str], set[str]], None]
"""Called with (owner UIDs whose resources changed, owner UIDs now holding duplicates,
owner UIDs waiting to build whose turn came — see :class:`~kumo.cloud.budget.BuildBudget`)."""


class Lister(Protocol):
    """The list calls a watch needs (implemented by the cloud adapter)."""

    async def list_servers_since(
        self, since: str | None
    ) -> tuple[list[model.Server], str | None]: ...
    async def fetch_server(self, server_id: str) -> model.Server | None: ...
    async def fetch_server_groups(self) -> list[model.ServerGroup]: ...
    async def load_balancer_versions(self) -> dict[str, str]: ...
    async def fetch_load_balancer_tree(
        self,
    ) -> tuple[
        list[model.LoadBalancer], list[model.Listener], list[model.Pool], list[model.HealthMonitor]
    ]: ...
    async def fetch_members(self, pool_id: str) -> list[model.Member]: ...
    async def zone_versions(self) -> dict[str, str]: ...
    async def list_managed_shares(self) -> list[model.Share]: ...
    async def fetch_access_rules(self, share_id: str) -> list[model.AccessRule]: ...
    async def fetch_zone_recordsets(self, zone_id: str) -> list[model.Recordset]: ...


# -- Nova's changes-since clock (pure) ---------------------------------------------------------


def server_time(date_header: str | None) -> datetime | None:
    """The API server's clock from an HTTP ``Date`` header."""
    if not date_header:
        return None
    try:
        return parsedate_to_datetime(date_header).astimezone(UTC)
    except (TypeError, ValueError):
        return None


def parse_updated(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def next_since(
    previous: datetime | None,
    answered_at: datetime | None,
    servers: Iterable[model.Server],
    skew: float = SKEW_SECONDS,
) -> datetime | None:
    """Where the next changes-since listing starts: the cloud's time of this answer minus
    the skew margin (a node whose clock lags may stamp a later change earlier); without
    a ``Date``, the newest ``updated`` seen minus the margin. Never moves backwards, and
    never uses the local clock."""
    candidates = [previous] if previous else []
    if answered_at is not None:
        candidates.append(answered_at - timedelta(seconds=skew))
    else:
        stamps = [t for s in servers if (t := parse_updated(s.updated))]
        if stamps:
            candidates.append(max(stamps) - timedelta(seconds=skew))
    return max(candidates) if candidates else None


def format_since(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- owners ------------------------------------------------------------------------------------


def recordset_owner(rs: model.Recordset) -> str | None:
    """The owner UID in a recordset's description (Designate has no tags)."""
    return model.owner_of((rs.description or "").split())


def server_group_owner(group: model.ServerGroup) -> str | None:
    """The owner UID in a server group's name (Nova server groups have no tags)."""
    return model.owner_of(group.name.split())


#: Seconds a server may stay DELETING / BUILD unchanged in the cache before it is read by ID.
LINGER_DELETING = 5.0
LINGER_BUILDING = 120.0
#: At most this many such reads per refresh.
LINGER_CHECKS = 20
TRANSITIONAL_SHARE = {"creating", "extending", "deleting", "shrinking"}
TRANSITIONAL_RULE = {"queued_to_apply", "applying", "queued_to_deny", "denying"}
TRANSITIONAL_SERVER = {"BUILD", "REBUILD", "DELETING", "RESIZE", "MIGRATING", "REBOOT"}


@dataclass
class _Service:
    name: str
    next_due: float = 0.0
    next_relist: float = 0.0
    failures: int = 0
    #: When its latest listing started, and whether a poke came since.
    started: float = float("-inf")
    poked: bool = False


@dataclass
class WatchStats:
    """Counters for /metrics and the benchmark: what the watch asked of the cloud."""

    lists: dict[str, int] = field(default_factory=dict)

    def count(self, what: str) -> None:
        self.lists[what] = self.lists.get(what, 0) + 1


class CloudWatch:
    def __init__(
        self,
        lister: Lister,
        *,
        interval: float = 10.0,
        fast: float = 1.0,
        relist: float = 600.0,
        skew: float = SKEW_SECONDS,
        max_queued_builds: int = MAX_QUEUED_BUILDS,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._lister = lister
        self.interval = interval
        self.fast = fast
        self.relist = relist
        self.skew = skew
        self._clock = clock
        self.servers: ResourceCache[model.Server] = ResourceCache(
            "servers",
            lambda s: s.id,
            lambda s: model.owner_of(s.tags),
            live=lambda s: s.status not in ("DELETED", "DELETING"),
        )
        self.server_groups: ResourceCache[model.ServerGroup] = ResourceCache(
            "server groups", lambda g: g.id, server_group_owner
        )
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
        self.recordsets: ResourceCache[model.Recordset] = ResourceCache(
            "recordsets", lambda r: r.id, recordset_owner
        )
        self.shares: ResourceCache[model.Share] = ResourceCache(
            "shares",
            lambda s: s.id,
            lambda s: model.metadata_owner(s.metadata),
            live=lambda s: s.status != "deleting",
        )
        #: Share ID → its access rules, as last listed (dropped when Kumo changes them).
        self.share_rules: dict[str, list[model.AccessRule]] = {}
        #: Share ID → its export locations (read once; dropped when the share changes).
        self.export_locations: dict[str, list[model.ExportLocation]] = {}
        #: Pool ID → (the member IDs the pool listed, those members); the IDs are None
        #: once Kumo changed the pool's members: read again, but shown while it is pending.
        self.members: dict[str, tuple[frozenset[str] | None, list[model.Member]]] = {}
        self.stats = WatchStats()
        #: Turns for creating servers: at most ``max_queued_builds`` of them in BUILD at once.
        self.builds = BuildBudget(max_queued_builds, self._now)
        self._since: datetime | None = None
        self._lingering: dict[str, tuple[model.Server, float]] = {}
        self._lb_versions: dict[str, str] | None = None
        self._zone_versions: dict[str, str] = {}
        self._services = {
            n: _Service(n) for n in ("nova", "server-groups", "octavia", "dns", "manila")
        }
        self._wake = asyncio.Event()
        self._ready = asyncio.Event()
        self._closed = False
        self._notify: Notify | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def _now(self) -> float:
        return self._clock() if self._clock else asyncio.get_running_loop().time()

    async def synced(self) -> None:
        """Wait until every service has been listed once (or tried: a service the cloud
        lacks or that failed is read through the API instead)."""
        await self._ready.wait()

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    async def sync(self) -> None:
        """The first listing of every service (the startup barrier's cloud half)."""
        for service in self._services.values():
            await self._refresh(service, full=True)
        self._ready.set()

    async def run(self, notify: Notify) -> None:
        """Keep the caches fresh until closed; report changes through ``notify``.

        The caches are fresh only while this runs: once it is cancelled (leadership
        lost), :meth:`synced` waits again, for the full listing of the next run. That
        holds from the moment the cancelled task ends, so a reader that starts the next
        run and at once awaits ``synced()`` (the controller does) never reads what was
        cached while this process led before."""
        self._notify = None  # the first listing reports nothing: every object is queued anyway
        self._ready.clear()  # led before? what was cached then may be stale now
        try:
            await self.sync()
            self._notify = notify
            while not self._closed:
                now = self._now()
                for service in self._services.values():
                    if service.next_due <= now:
                        await self._refresh(service, full=service.next_relist <= now)
                wait = min(s.next_due for s in self._services.values()) - self._now()
                if wait > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), timeout=wait)
                self._wake.clear()
        except asyncio.CancelledError:
            self._ready.clear()
            raise

    def nudge(self, service: str) -> None:
        """Kumo just changed something in ``service``: look again soon (fast interval)."""
        svc = self._services[service]
        try:
            svc.next_due = min(svc.next_due, self._now() + self.fast)
        except RuntimeError:  # no running loop (a unit test outside asyncio)
            return
        self._wake.set()

    def poke(self, service: str) -> None:
        """The cloud announced a change in ``service`` (a notification): list it now, but
        no sooner than ``fast`` after the previous listing started — a burst of notices
        (a fleet being built sends several per server) costs one listing per ``fast``,
        as while anything is building anyway. A poke during a listing is kept for after
        it: that listing may have answered before the change."""
        svc = self._services.get(service)
        if svc is None:
            return
        try:
            now = self._now()
        except RuntimeError:  # no running loop (a unit test outside asyncio)
            return
        svc.poked = True
        svc.next_due = min(svc.next_due, max(now, svc.started + self.fast))
        self.stats.count(f"{service}-poked")
        self._wake.set()

    # -- refresh -----------------------------------------------------------------------

    async def _refresh(self, service: _Service, full: bool) -> None:
        refresh = {
            "nova": self._refresh_servers,
            "server-groups": self._refresh_server_groups,
            "octavia": self._refresh_octavia,
            "dns": self._refresh_dns,
            "manila": self._refresh_manila,
        }[service.name]
        busy = False
        service.started = started = self._now()
        service.poked = False
        lane = WATCH_LANE.set(True)
        try:
            changes = await refresh(full)
            busy = self._transitional(service.name)
            service.failures = 0
        except ReconcileError as error:
            service.failures += 1
            changes = []
            level = logging.DEBUG if error.reason == "ServiceUnavailable" else logging.WARNING
            log.log(level, "listing %s failed: %s", service.name, error)
        except Exception:
            service.failures += 1
            changes = []
            log.exception("listing %s failed unexpectedly", service.name)
        finally:
            WATCH_LANE.reset(lane)
        now = self._now()
        if full and service.failures == 0:
            service.next_relist = now + self.relist * random.uniform(0.9, 1.1)
        if busy:
            pause = max(self.fast, LISTING_PACE * (now - started))
        else:
            pause = self.interval * min(2**service.failures, 30)
        service.next_due = now + pause * random.uniform(0.9, 1.1)
        if service.poked:  # announced while listing: the answer may predate it
            service.next_due = min(service.next_due, max(now, started + self.fast))
        if self._notify is None:
            return
        owners, duplicated = self._owners(changes) if changes else (set(), set())
        woken = set(self.builds.release(self.queued_builds())) if service.name == "nova" else set()
        if owners or woken:
            self._notify(owners, duplicated, woken)

    async def _refresh_servers(self, full: bool) -> list[tuple[ResourceCache[Any], Change[Any]]]:
        cache = self.servers
        token = cache.begin()
        if full or self._since is None or not cache.synced:
            self.stats.count("servers-full")
            listed, date = await self._lister.list_servers_since(None)
            answered = server_time(date)
            listed = await self._with_faults(listed)
            changes = cache.replace(token, listed, scope=_marked_server)
        else:
            self.stats.count("servers-changes-since")
            listed, date = await self._lister.list_servers_since(format_since(self._since))
            answered = server_time(date)
            gone = [s.id for s in listed if s.status == "DELETED"]
            # Servers Kumo never watched (no marker, not cached) are none of its business.
            kept = [
                s
                for s in listed
                if s.status != "DELETED"
                and (_marked_server(s) or isinstance(cache.lookup(s.id), model.Server))
            ]
            changes = cache.apply(token, await self._with_faults(kept), gone)
            changes += await self._confirm_lingering()
        self._since = next_since(self._since, answered, listed, self.skew)
        return [(cache, c) for c in changes]

    async def _confirm_lingering(self) -> list[Change[model.Server]]:
        """Servers that leave no trace in changes-since: one deleted while Nova still held
        it as a build request is simply gone, never listed as DELETED. A server Kumo saw
        deleting (or building) that has not changed for a while is read by ID — a GET
        only where no listing can tell, a few per refresh."""
        now = self._now()
        seen = self._lingering
        current = {
            s.id: s for s in self.servers.items() if s.status == "DELETING" or s.status == "BUILD"
        }
        for sid in list(seen):
            if sid not in current or seen[sid][0] != current[sid]:
                del seen[sid]
        due = []
        for sid, server in current.items():
            since = seen.setdefault(sid, (server, now))[1]
            wait = LINGER_DELETING if server.status == "DELETING" else LINGER_BUILDING
            if now - since >= wait:
                due.append(sid)
        changes: list[Change[model.Server]] = []
        for sid in due[:LINGER_CHECKS]:
            token = self.servers.begin()
            self.stats.count("server-lingering")
            fresh = await self._lister.fetch_server(sid)
            seen[sid] = (current[sid], now)  # not again before the next wait
            if fresh is None:
                changes += self.servers.apply(token, [], [sid])
            else:
                changes += self.servers.apply(token, [fresh])
        return changes

    async def _with_faults(self, listed: list[model.Server]) -> list[model.Server]:
        """Nova's listings leave out why a server is in ERROR; the reason decides what
        Kumo reports and does (NoValidHost names the server group). One GET per server
        that went into ERROR, once."""
        filled = []
        for server in listed:
            if server.status == "ERROR" and not server.fault:
                cached = self.servers.lookup(server.id)
                if isinstance(cached, model.Server) and cached.status == "ERROR" and cached.fault:
                    server = dataclasses.replace(server, fault=cached.fault)
                else:
                    self.stats.count("server-fault")
                    fresh = await self._lister.fetch_server(server.id)
                    if fresh is not None and fresh.fault:
                        server = dataclasses.replace(server, fault=fresh.fault)
            filled.append(server)
        return filled

    async def _refresh_server_groups(
        self, full: bool
    ) -> list[tuple[ResourceCache[Any], Change[Any]]]:
        if not full and self.server_groups.synced:
            return []
        token = self.server_groups.begin()
        self.stats.count("server-groups")
        listed = await self._lister.fetch_server_groups()
        return [(self.server_groups, c) for c in self.server_groups.replace(token, listed)]

    async def _refresh_octavia(self, full: bool) -> list[tuple[ResourceCache[Any], Change[Any]]]:
        self.stats.count("load-balancers-probe")
        versions = await self._lister.load_balancer_versions()
        if not full and versions == self._lb_versions and self._probe_agrees(versions):
            return []
        caches: list[ResourceCache[Any]] = [
            self.load_balancers,
            self.listeners,
            self.pools,
            self.monitors,
        ]
        tokens = [c.begin() for c in caches]
        self.stats.count("load-balancer-tree")
        lbs, listeners, pools, monitors = await self._lister.fetch_load_balancer_tree()
        ours = {lb.id for lb in lbs}
        # Applied together, after all four lists: a reconcile never sees half of it.
        changes: list[tuple[ResourceCache[Any], Change[Any]]] = []
        listed: list[list[Any]] = [
            lbs,
            [x for x in listeners if x.lb_id in ours],
            [p for p in pools if p.lb_id in ours],
            monitors,
        ]
        for cache, token, items in zip(caches, tokens, listed, strict=True):
            changes += [(cache, c) for c in cache.replace(token, items)]
        self._lb_versions = versions
        if full:
            self.members.clear()  # out-of-band weight changes do not show in the pool
        return changes

    def _probe_agrees(self, versions: dict[str, str]) -> bool:
        """The probe shows every cached load balancer in the status the cache has. While
        one stays PENDING_* the tree is not listed again (a probe a second instead of
        five lists); Kumo's own change (the cache set PENDING_UPDATE) that Octavia
        finished between two probes shows as a disagreement and is listed."""
        return all(
            versions.get(lb.id, "").rpartition(" ")[2] == lb.provisioning_status
            for lb in self.load_balancers.items()
        )

    async def _refresh_dns(self, full: bool) -> list[tuple[ResourceCache[Any], Change[Any]]]:
        self.stats.count("zones-probe")
        versions = await self._lister.zone_versions()
        changed = [z for z, v in versions.items() if full or self._zone_versions.get(z) != v]
        pending = {rs.zone_id for rs in self.recordsets.items() if rs.status == "PENDING"}
        changed += [z for z in pending if z in versions and z not in changed]
        changes: list[tuple[ResourceCache[Any], Change[Any]]] = []
        for zone_id in changed:
            token = self.recordsets.begin()
            self.stats.count("zone-recordsets")
            listed = await self._lister.fetch_zone_recordsets(zone_id)
            in_zone = _in_zone(zone_id)
            changes += [
                (self.recordsets, c) for c in self.recordsets.replace(token, listed, in_zone)
            ]
            self._zone_versions[zone_id] = versions[zone_id]
        for zone_id in set(self._zone_versions) - set(versions):  # a zone went
            token = self.recordsets.begin()
            changes += [
                (self.recordsets, c) for c in self.recordsets.replace(token, [], _in_zone(zone_id))
            ]
            del self._zone_versions[zone_id]
        self.recordsets.synced = True
        return changes

    async def _refresh_manila(self, full: bool) -> list[tuple[ResourceCache[Any], Change[Any]]]:
        token = self.shares.begin()
        self.stats.count("shares")
        listed = await self._lister.list_managed_shares()
        rules = {}
        for share in listed:
            self.stats.count("share-access-rules")
            rules[share.id] = await self._lister.fetch_access_rules(share.id)
        changes: list[tuple[ResourceCache[Any], Change[Any]]] = [
            (self.shares, c) for c in self.shares.replace(token, listed)
        ]
        for change in changes:
            gone = change[1].old or change[1].new
            if gone is not None:
                self.export_locations.pop(gone.id, None)
        for share in listed:
            if self.share_rules.get(share.id) != rules[share.id]:
                changes.append((self.shares, Change(share, share)))  # its rules moved
        self.share_rules = rules
        return changes

    def queued_builds(self) -> int:
        """How many of Kumo's servers in this project Nova has accepted but not started on
        a host yet (``BUILD`` without a ``hostId``; from the cache). Those are the ones
        waiting for the scheduler, the conductor or a compute's build slot — and, until
        scheduled, the build requests every server listing returns. A server a compute
        is building costs no listing anything and is not counted."""
        return sum(1 for s in self.servers.items() if s.status == "BUILD" and not s.host_id)

    def _transitional(self, service: str) -> bool:
        if service == "nova":
            return any(s.status in TRANSITIONAL_SERVER for s in self.servers.items())
        if service == "octavia":
            return any(
                lb.provisioning_status.startswith("PENDING_") for lb in self.load_balancers.items()
            )
        if service == "dns":
            return any(rs.status == "PENDING" for rs in self.recordsets.items())
        if service == "manila":
            return any(s.status in TRANSITIONAL_SHARE for s in self.shares.items()) or any(
                r.state in TRANSITIONAL_RULE for rules in self.share_rules.values() for r in rules
            )
        return False

    # -- who is concerned ------------------------------------------------------------------

    def _owners(
        self, changes: list[tuple[ResourceCache[Any], Change[Any]]]
    ) -> tuple[set[str], set[str]]:
        owners: set[str] = set()
        for cache, change in changes:
            for resource in (change.old, change.new):
                if resource is not None:
                    uid = self.owner_of(cache, resource)
                    if uid:
                        owners.add(uid)
        # An object owns one server, load balancer or recordset: two mean a create
        # whose answer was lost was retried.
        singles = (self.servers, self.load_balancers, self.recordsets, self.shares)
        duplicated = {uid for uid in owners if any(cache.live_count(uid) > 1 for cache in singles)}
        return owners, duplicated

    def owner_of(self, cache: ResourceCache[Any], resource: Any) -> str | None:
        """The marker's UID, or for an unmarked child the UID of its load balancer's owner."""
        uid = cache.owner(resource)
        if uid or cache not in (self.listeners, self.pools, self.monitors):
            return uid
        lb_id = getattr(resource, "lb_id", None)
        if lb_id is None and isinstance(resource, model.HealthMonitor) and resource.pool_id:
            pool = self.pools.lookup(resource.pool_id)
            lb_id = pool.lb_id if isinstance(pool, model.Pool) else None
        lb = self.load_balancers.lookup(lb_id) if lb_id else None
        return model.owner_of(lb.tags) if isinstance(lb, model.LoadBalancer) else None

    # -- Kumo's own writes -------------------------------------------------------------------

    def lb_changing(self, lb_id: str | None, status: str = "PENDING_UPDATE") -> None:
        """Kumo asked Octavia for a change under ``lb_id``: Octavia now holds it pending."""
        if lb_id:
            self.load_balancers.update(
                lb_id, lambda lb: dataclasses.replace(lb, provisioning_status=status)
            )
        self.nudge("octavia")

    def watches_zone(self, zone_id: str) -> bool:
        """Has the zone's every recordset been listed into the cache?"""
        return zone_id in self._zone_versions

    def pool_lb(self, pool_id: str) -> str | None:
        pool = self.pools.lookup(pool_id)
        return pool.lb_id if isinstance(pool, model.Pool) else None


def _marked_server(server: model.Server) -> bool:
    return model.MANAGED_TAG in server.tags


def _in_zone(zone_id: str) -> Callable[[model.Recordset], bool]:
    return lambda rs: rs.zone_id == zone_id
