"""CloudWatch: one cloud project observed like a Kubernetes informer.

One watch per cloud (credentials), shared by every reconcile of every namespace using
it. It keeps a :class:`~kumo.cloud.cache.ResourceCache` per resource type fresh with
list calls whose cost does not grow with the fleet while nothing changes:

- **Nova servers**: ``GET /servers/detail?changes-since=T`` — only servers changed since
  T, deleted ones included (their tags are gone, so the incremental list is unfiltered
  and matched by ID). T comes from the cloud's own clock (the ``Date`` of the previous
  answer) minus a margin for skew between Nova's nodes, never from the local clock. A
  full listing filtered by Kumo's tag runs at start and every ``relist_seconds``. The
  cache holds Kumo's servers and the foreign ones an import or an Observe names (the
  adapter caches them at their first read; while it holds any, the full listing is of
  the project's every server), so observing a server costs no GET. Nova returns every
  build request in every answer, so a queued server missing from them for
  ``LINGER_QUEUED`` seconds is looked for in one listing of Kumo's servers in BUILD, and
  read by ID only when missing there too (deleted while queued: no DELETED trace).
- **Octavia**: one listing of Kumo's load balancers with three fields (id, updated_at,
  provisioning status) per interval. Every change to a listener, pool, member or monitor
  moves its load balancer through ``PENDING_UPDATE`` and bumps ``updated_at``, so only
  when that probe differs are load balancers, listeners, pools and monitors listed in
  full — all four before any is applied, so a reconcile never sees a new status with
  old children. Members are read per pool only when the pool's member IDs changed.
  A load balancer without Kumo's tag that an import or an Observe names is cached at its
  first read and from then on probed and listed with Kumo's (the probe and the listing
  then leave out the tag filter and keep Kumo's and those).
- **Designate**: one zone listing per interval; a zone whose serial, status or
  ``updated_at`` moved has its recordsets listed again.
- **Manila**: Kumo's shares (one listing filtered by Kumo's metadata), then each of
  those shares' access rules (Manila cannot list rules across shares; Shares are few).
- **Neutron security groups**: one listing of the project's groups without their rules,
  per interval, keeping Kumo's (tag ``kumo``, or the description's marker word: Neutron
  takes tags only after a create, so a group whose tags never came is still seen by its
  marker); Neutron bumps a group's ``revision_number`` whenever a rule of it is created
  or deleted, so only a group whose revision moved has its rules read again.
- **Neutron floating IPs**: one listing of the project's floating IPs per interval (not
  filtered by tag: Neutron takes a floating IP's tags only after its create, so one whose
  tags are missing — a crash between the two calls, a ``kumo`` tag removed by hand — is
  still seen by its marker). Each carries ``port_details``, so whether it still points at
  its target's server is read from this one list; ports are looked up only to repair.
- **Nova server groups**: at start and every ``relist_seconds`` (they change only by
  Kumo's own writes, which update the cache directly).
- **Nova keypairs**: one listing of the credentials' user's keypairs per interval
  (``GET /os-keypairs``: keypairs belong to a user, and Nova has no changes-since or
  filter for them). It answers with every keypair's public key, where Kumo's marker is.

While something is in transition (a server building or deleting, a load balancer or
recordset pending) that service is listed every ``fast_seconds`` — one list covers all
of them, instead of a poll per object. Every interval is jittered.

Changes are reported as the UIDs of the objects owning the changed resources (the
``kumo-owner`` marker; a listener, pool or monitor without it belongs to its load
balancer's owner): that is Kumo's drift detection. Another cluster's resources are
listed too (they carry the ``kumo`` tag or metadata) but indexed under an owner no object
has (``<uid>@<cluster>``, kumo.ports.markers): never one of this cluster's duplicates,
never in :meth:`Watcher.marked`, the orphan sweep's input. Kumo's own writes go to the API and
then into the cache, never waiting for a listing.

Each service is one :class:`Watcher` (its listings, caches, transition test and owners)
registered once in :data:`WATCHERS`; :class:`CloudWatch` only schedules them, so a new
service is a new class there and no other change here.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar, TypeVar

from kumo.cloud import model
from kumo.cloud.budget import MAX_QUEUED_BUILDS, BuildBudget
from kumo.cloud.cache import Change, ResourceCache
from kumo.engine import sweep
from kumo.engine.errors import ReconcileError
from kumo.ports import (
    Cloud,
    ComputePort,
    DnsPort,
    FloatingIPPort,
    KeyPairsPort,
    LoadBalancingPort,
    NetworkingPort,
    NetworksPort,
    SharesPort,
    VolumesPort,
)
from kumo.ports.times import parse_updated

log = logging.getLogger("kumo.cloud.watch")

#: How far behind the API's clock a Nova node's clock may be (changes-since margin;
#: ``kumo run --clock-skew-seconds``). Every listing returns again what changed within
#: the margin: while a fleet builds, a 30 s margin made each 1 s listing return 30 s of
#: changes — most of the nova-api time Kumo used. NTP keeps real skew far below 10 s.
SKEW_SECONDS = 10.0
#: While something is in transition, a listing waits this many times as long as the
#: previous one took (at least ``fast``, at most the idle ``interval``): an API slowed
#: down by a build wave is not kept busy by the watch listing it back to back, and a
#: transition never makes the watch look less often than when nothing happens. (Without
#: the cap, a 40-s answer of Nova in a 300-VM delete left the watch blind for over two
#: minutes, so a server whose delete Nova failed meanwhile was deleted again that late.)
LISTING_PACE = 2.0
#: ... and while something is in transition, never more than this many seconds (nor
#: the idle interval). A slow answer under a mass delete is mostly the time it queued
#: behind the DELETEs in nova-api, not work it made: at N = 100 two listings took 9.5
#: and 7.6 s, the next one 0.5 s once the queue had drained. Each was followed by the
#: whole 10-s interval, so a server gone just after a listing began was seen up to
#: 20 s later, and every finalizer waiting on it with it.
LISTING_PACE_MAX_SECONDS = 5.0

#: True while the watch lists: its calls take their own slots (CloudBase._call), so
#: writes in flight — under load a Nova create takes seconds — never hold up noticing
#: what changed (a server going ACTIVE, one deleted out of band).
WATCH_LANE: contextvars.ContextVar[bool] = contextvars.ContextVar("kumo_watch_lane", default=False)

Notify = Callable[[set[str], set[str], set[str]], None]
"""Called with (owner UIDs whose resources changed, owner UIDs now holding duplicates,
owner UIDs waiting to build whose turn came — see :class:`~kumo.cloud.budget.BuildBudget`)."""

#: What one listing changed: each change with the cache it happened in.
Changes = list[tuple[ResourceCache[Any], Change[Any]]]


# -- Nova's changes-since clock (pure) ---------------------------------------------------------


def server_time(date_header: str | None) -> datetime | None:
    """The API server's clock from an HTTP ``Date`` header."""
    if not date_header:
        return None
    try:
        return parsedate_to_datetime(date_header).astimezone(UTC)
    except (TypeError, ValueError):
        return None


def next_since(
    previous: datetime | None,
    answered_at: datetime | None,
    servers: Iterable[model.Server],
    skew: float = SKEW_SECONDS,
    took: float = 0.0,
) -> datetime | None:
    """Where the next changes-since listing starts: the cloud's time of this answer, less
    the ``took`` seconds the call lasted, minus the skew margin (a node whose clock lags
    may stamp a later change earlier); without a ``Date``, the newest ``updated`` seen
    minus the margin. Never moves backwards, and never uses the local clock's time (only
    a duration measured on it).

    ``Date`` is when the answer left, not when Nova read its database: that may be
    anywhere in the call. Under a 300-VM delete nova-api held listings for 30 s and
    more after its query (the view asks Neutron, which was queued too), and a server
    deleted in between was in no answer: its finalizer waited for the 10-minute relist.
    The call's start is before the query, so the answer's time less its duration is."""
    candidates = [previous] if previous else []
    if answered_at is not None:
        candidates.append(answered_at - timedelta(seconds=skew + max(0.0, took)))
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
    return model.text_owner(rs.description)


def server_group_owner(group: model.ServerGroup) -> str | None:
    """The owner UID in a server group's name (Nova server groups have no tags)."""
    return model.text_owner(group.name)


#: The marker a resource carries (:class:`kumo.ports.markers.Marker`), per where it holds it.
MarkerOf = Callable[[Any], model.Marker | None]


def tags_marker(resource: Any) -> model.Marker | None:
    return model.marker_of(resource.tags)


def metadata_marker(resource: Any) -> model.Marker | None:
    return model.metadata_marker(resource.metadata)


#: Seconds a server may stay DELETING unchanged in the cache before it is read by ID.
LINGER_DELETING = 5.0
#: Seconds a queued server (BUILD, no host) may be missing from the changes-since answers
#: before the watch asks Nova what it holds in BUILD (see :meth:`ServerWatcher._vouch`).
LINGER_QUEUED = 20.0
#: At most this many reads by ID per refresh.
LINGER_CHECKS = 20
TRANSITIONAL_SHARE = {"creating", "extending", "deleting", "shrinking"}
TRANSITIONAL_RULE = {"queued_to_apply", "applying", "queued_to_deny", "denying"}
TRANSITIONAL_SERVER = {"BUILD", "REBUILD", "DELETING", "RESIZE", "MIGRATING", "REBOOT"}


@dataclass
class WatchStats:
    """Counters for /metrics and the benchmark: what the watch asked of the cloud."""

    lists: dict[str, int] = field(default_factory=dict)

    def count(self, what: str) -> None:
        self.lists[what] = self.lists.get(what, 0) + 1


@dataclass(frozen=True)
class WatchEnv:
    """What the watchers of one CloudWatch share: its clock, its counters, its settings."""

    now: Callable[[], float]
    stats: WatchStats
    skew: float = SKEW_SECONDS
    max_queued_builds: int = MAX_QUEUED_BUILDS


# -- one watcher per service -------------------------------------------------------------------


class Watcher:
    """One service's listings and caches. The CloudWatch schedules it (interval, fast
    while :meth:`transitional`, relist, backoff, pokes) and reports what it changed; the
    watcher alone knows its API, so no service is special-cased outside its class."""

    #: Its name for ``nudge``/``poke`` (notifications and Kumo's writes name it).
    service: ClassVar[str]
    #: Every cache it fills (whose changes it reports).
    caches: tuple[ResourceCache[Any], ...] = ()
    #: Caches where one object owns one live resource: two mean a lost create was retried.
    singles: tuple[ResourceCache[Any], ...] = ()
    #: (resource type, cache, its resources' marker) whose resources carrying this
    #: cluster's current marker :meth:`marked` lists.
    marks: tuple[tuple[str, ResourceCache[Any], MarkerOf], ...] = ()

    def __init__(self, env: WatchEnv) -> None:
        self.env = env

    async def refresh(self, full: bool) -> Changes:
        """List the service (``full``: everything, the relist safety net); what changed."""
        raise NotImplementedError

    def transitional(self) -> bool:
        """Is anything in flight? Then the service is listed every ``fast`` seconds."""
        return False

    def owner_of(self, cache: ResourceCache[Any], resource: Any) -> str | None:
        """The UID in the resource's marker."""
        return cache.owner(resource)

    def owners(self, changes: Changes) -> set[str]:
        """The objects whose resources changed: what the listing reports as drift."""
        owners: set[str] = set()
        for cache, change in changes:
            for resource in (change.old, change.new):
                if resource is not None:
                    uid = self.owner_of(cache, resource)
                    if uid:
                        owners.add(uid)
        return owners

    def duplicated(self, uids: Iterable[str]) -> set[str]:
        """Those of ``uids`` holding two live resources where they should hold one."""
        return {uid for uid in uids if any(c.live_count(uid) > 1 for c in self.singles)}

    def woken(self) -> set[str]:
        """Owner UIDs whose wait on this service ended with this listing."""
        return set()

    async def delete_marked(self, resource: model.Marked) -> None:
        """Delete one of the resources :meth:`marked` listed (the orphan sweep's delete)."""
        raise NotImplementedError

    def marked(self) -> list[model.Marked]:
        """Its live cached resources carrying this cluster's current owner marker: never
        another cluster's, nor a legacy one (written before markers named the cluster:
        only its object, found by UID, takes it over and re-marks it)."""
        return [
            model.Marked(
                kind,
                resource.id,
                resource.name,
                marker.uid,
                zone_id=getattr(resource, "zone_id", None),
                busy=_busy(resource),
                in_use=bool(getattr(resource, "members", None)),
            )
            for kind, cache, marker_of in self.marks
            for resource in cache.live()
            if (marker := marker_of(resource)) is not None and marker.current
        ]


class ServerWatcher(Watcher):
    """Nova servers by changes-since, and the turns to build them (what the cache sees
    queued decides)."""

    service = "nova"

    def __init__(self, cloud: ComputePort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.servers: ResourceCache[model.Server] = ResourceCache(
            "servers",
            lambda s: s.id,
            lambda s: model.owner_of(s.tags),
            live=lambda s: s.status not in ("DELETED", "DELETING"),
        )
        self.caches = self.singles = (self.servers,)
        self.marks = (("server", self.servers, tags_marker),)
        #: Turns for creating servers: at most ``max_queued_builds`` of them in BUILD at once.
        self.builds = BuildBudget(env.max_queued_builds, env.now)
        self._since: datetime | None = None
        #: DELETING servers: as last seen, and since when unchanged.
        self._lingering: dict[str, tuple[model.Server, float]] = {}
        #: DELETING servers a listing showed so (Nova's task_state ``deleting``).
        self._listed_deleting: set[str] = set()
        #: Queued servers: when a listing last showed them (or the watch first saw them).
        self._vouched: dict[str, float] = {}

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_server(resource.id)

    async def refresh(self, full: bool) -> Changes:
        cache = self.servers
        stats = self.env.stats
        token = cache.begin()
        asked = self.env.now()
        if full or self._since is None or not cache.synced:
            stats.count("servers-full")
            if any(not _marked_server(s) for s in cache.items()):
                # Servers an import or an Observe names: the project's every server, of
                # which Kumo's and those; a cached one missing is gone.
                listed, date = await self.cloud.list_project_servers()
                listed = [
                    s
                    for s in listed
                    if _marked_server(s) or isinstance(cache.lookup(s.id), model.Server)
                ]
                scope = None
            else:
                listed, date = await self.cloud.list_servers_since(None)
                scope = _marked_server
            took = self.env.now() - asked
            answered = server_time(date)
            listed = await self._with_faults(listed)
            changes = cache.replace(token, listed, scope=scope)
            self._shown({s.id for s in listed}, self.env.now())
            self._listed_deleting.update(s.id for s in listed if s.status == "DELETING")
        else:
            stats.count("servers-changes-since")
            listed, date = await self.cloud.list_servers_since(format_since(self._since))
            took = self.env.now() - asked
            answered = server_time(date)
            gone = [s.id for s in listed if s.status == "DELETED"]
            # Servers Kumo never watched (no marker, not cached) are none of its business;
            # a foreign one cached (an object imports or observes it) is kept fresh.
            kept = [
                s
                for s in listed
                if s.status != "DELETED"
                and (_marked_server(s) or isinstance(cache.lookup(s.id), model.Server))
            ]
            changes = cache.apply(token, await self._with_faults(kept), gone)
            self._listed_deleting.update(s.id for s in kept if s.status == "DELETING")
            try:
                changes += await self._confirm_lingering({s.id for s in listed})
            except ReconcileError as error:  # asked again next time; the listing stands
                log.debug("reading lingering servers failed: %s", error)
        self._since = next_since(self._since, answered, listed, self.env.skew, took)
        return [(cache, c) for c in changes]

    async def _confirm_lingering(self, listed: set[str]) -> list[Change[model.Server]]:
        """Servers that leave no trace in changes-since: one deleted while Nova still held
        it as a build request is simply gone, never listed as DELETED. A server Kumo saw
        deleting that has not changed for a while, and a queued one that the listings
        stopped showing (:meth:`_vouch`), is read by ID: a GET only where no listing can
        tell, a few per refresh."""
        now = self.env.now()
        due = self._deleting_due(now)
        changes: list[Change[model.Server]] = []
        missing = self._queued_missing(listed, now)
        if missing:
            found, changes = await self._vouch(now)
            due += [sid for sid in missing if sid not in found]
        for sid in due[:LINGER_CHECKS]:
            token = self.servers.begin()
            self.env.stats.count("server-lingering")
            fresh = await self.cloud.fetch_server(sid)
            if sid in self._lingering:  # not again before the next wait
                self._lingering[sid] = (self._lingering[sid][0], now)
            if sid in self._vouched:
                self._vouched[sid] = now
            if fresh is None:
                changes += self.servers.apply(token, [], [sid])
            else:
                changes += self.servers.apply(token, [fresh])
        return changes

    def _deleting_due(self, now: float) -> list[str]:
        """The DELETING servers unchanged in the cache for ``LINGER_DELETING`` seconds
        that no listing has shown deleting: only Kumo's own mark says so. A build
        request's delete leaves no trace, and a delete Nova dropped leaves the server as
        it was (the finalizer waits for the read that shows it). A server Nova listed as
        deleting is not read: its end (DELETED, or ERROR or ACTIVE again if Nova fails
        it) bumps its ``updated_at``, so changes-since shows it. Under a mass delete
        Nova takes 30 s and more per server, and reading each after 5 s cost 20 GETs
        per listing and made each listing slower, so the watch's pace slower too."""
        seen = self._lingering
        current = {s.id: s for s in self.servers.items() if s.status == "DELETING"}
        self._listed_deleting.intersection_update(current)
        for sid in list(seen):
            if sid not in current or seen[sid][0] != current[sid]:
                del seen[sid]
        return [
            sid
            for sid, server in current.items()
            if sid not in self._listed_deleting
            and now - seen.setdefault(sid, (server, now))[1] >= LINGER_DELETING
        ]

    def _shown(self, listed: set[str], now: float) -> set[str]:
        """Note which queued servers (BUILD, no host) a listing showed; the queued ones."""
        queued = {s.id for s in self.servers.items() if s.status == "BUILD" and not s.host_id}
        for sid in [sid for sid in self._vouched if sid not in queued]:
            del self._vouched[sid]
        for sid in queued & listed:
            self._vouched[sid] = now
        return queued

    def _queued_missing(self, listed: set[str], now: float) -> list[str]:
        """The queued servers this answer did not show, and no listing has shown for
        ``LINGER_QUEUED`` seconds (or since the watch first saw them queued). Nova
        returns every build request in every changes-since answer (their ``updated_at``
        is not set yet, so the filter cannot leave them out), and a server a compute
        builds changes with every step: while a fleet builds, none is due."""
        queued = self._shown(listed, now)
        return [
            sid
            for sid in queued - listed
            if now - self._vouched.setdefault(sid, now) >= LINGER_QUEUED
        ]

    async def _vouch(self, now: float) -> tuple[set[str], list[Change[model.Server]]]:
        """One listing of Kumo's servers Nova holds in BUILD, whatever their ``updated_at``.
        A queued server can be missing from changes-since for a good reason: the conductor
        has made it an instance in its cell (no build request any more) whose compute has
        not started it yet — its ``updated_at`` stays unset until the compute's first
        write, which waits for one of the compute's build slots, minutes on a busy cloud.
        Those are in this listing; only a server missing here too is read by ID."""
        token = self.servers.begin()
        self.env.stats.count("servers-building")
        building = await self.cloud.list_building_servers()
        found = {s.id for s in building}
        for sid in found & set(self._vouched):
            self._vouched[sid] = now
        return found, self.servers.apply(token, building)

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
                    self.env.stats.count("server-fault")
                    fresh = await self.cloud.fetch_server(server.id)
                    if fresh is not None and fresh.fault:
                        server = dataclasses.replace(server, fault=fresh.fault)
            filled.append(server)
        return filled

    def transitional(self) -> bool:
        return any(s.status in TRANSITIONAL_SERVER for s in self.servers.items())

    def woken(self) -> set[str]:
        """A queued server that reached a host frees a turn: the VMs waiting for it."""
        return set(self.builds.release(self.queued_builds()))

    def queued_builds(self) -> int:
        """How many of Kumo's servers in this project Nova has accepted but not started on
        a host yet (``BUILD`` without a ``hostId``; from the cache). Those are the ones
        waiting for the scheduler, the conductor or a compute's build slot — and, until
        scheduled, the build requests every server listing returns. A server a compute
        is building costs no listing anything and is not counted."""
        return self.servers.derived(  # every VM waiting for a turn asks
            "queued builds",
            lambda: sum(
                1
                for s in self.servers.items()
                if s.status == "BUILD" and not s.host_id and _marked_server(s)
            ),
        )


class ServerGroupWatcher(Watcher):
    """Nova server groups: only on the full relist (they change by Kumo's own writes,
    which update the cache directly), on a schedule apart from the servers'."""

    service = "server-groups"

    def __init__(self, cloud: ComputePort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.server_groups: ResourceCache[model.ServerGroup] = ResourceCache(
            "server groups", lambda g: g.id, server_group_owner
        )
        self.caches = (self.server_groups,)
        self.marks = (("server_group", self.server_groups, lambda g: model.text_marker(g.name)),)

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_server_group(resource.id)

    async def refresh(self, full: bool) -> Changes:
        if not full and self.server_groups.synced:
            return []
        token = self.server_groups.begin()
        self.env.stats.count("server-groups")
        listed = await self.cloud.fetch_server_groups()
        return [(self.server_groups, c) for c in self.server_groups.replace(token, listed)]


class LoadBalancerWatcher(Watcher):
    """Octavia: a probe of Kumo's load balancers, and their whole tree when it moved."""

    service = "octavia"

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

    def changing(self, lb_id: str | None, status: str) -> None:
        """Octavia now holds ``lb_id`` in ``status`` for Kumo's change."""
        if lb_id:
            self.load_balancers.update(
                lb_id, lambda lb: dataclasses.replace(lb, provisioning_status=status)
            )

    def pool_lb(self, pool_id: str) -> str | None:
        pool = self.pools.lookup(pool_id)
        return pool.lb_id if isinstance(pool, model.Pool) else None


class ZoneWatcher(Watcher):
    """Designate: a zone listing, and the recordsets of each zone that moved."""

    service = "dns"

    def __init__(self, cloud: DnsPort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.recordsets: ResourceCache[model.Recordset] = ResourceCache(
            "recordsets", lambda r: r.id, recordset_owner
        )
        self.caches = self.singles = (self.recordsets,)
        self.marks = (("recordset", self.recordsets, lambda r: model.text_marker(r.description)),)
        self._versions: dict[str, str] = {}

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_recordset(resource.zone_id or "", resource.id)

    async def refresh(self, full: bool) -> Changes:
        stats = self.env.stats
        stats.count("zones-probe")
        versions = await self.cloud.zone_versions()
        changed = [z for z, v in versions.items() if full or self._versions.get(z) != v]
        pending = {rs.zone_id for rs in self.recordsets.items() if rs.status == "PENDING"}
        changed += [z for z in pending if z in versions and z not in changed]
        changes: Changes = []
        for zone_id in changed:
            token = self.recordsets.begin()
            stats.count("zone-recordsets")
            listed = await self.cloud.fetch_zone_recordsets(zone_id)
            in_zone = _in_zone(zone_id)
            changes += [
                (self.recordsets, c) for c in self.recordsets.replace(token, listed, in_zone)
            ]
            self._versions[zone_id] = versions[zone_id]
        for zone_id in set(self._versions) - set(versions):  # a zone went
            token = self.recordsets.begin()
            changes += [
                (self.recordsets, c) for c in self.recordsets.replace(token, [], _in_zone(zone_id))
            ]
            del self._versions[zone_id]
        self.recordsets.synced = True
        return changes

    def transitional(self) -> bool:
        return any(rs.status == "PENDING" for rs in self.recordsets.items())

    def watches_zone(self, zone_id: str) -> bool:
        """Has the zone's every recordset been listed into the cache?"""
        return zone_id in self._versions


class ShareWatcher(Watcher):
    """Manila: Kumo's shares, then each one's access rules."""

    service = "manila"

    def __init__(self, cloud: SharesPort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
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
        self.caches = self.singles = (self.shares,)
        self.marks = (("share", self.shares, metadata_marker),)

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_share(resource.id)

    async def refresh(self, full: bool) -> Changes:
        stats = self.env.stats
        token = self.shares.begin()
        stats.count("shares")
        listed = await self.cloud.list_managed_shares()
        rules = {}
        for share in listed:
            stats.count("share-access-rules")
            rules[share.id] = await self.cloud.fetch_access_rules(share.id)
        changes: Changes = [(self.shares, c) for c in self.shares.replace(token, listed)]
        for change in changes:
            gone = change[1].old or change[1].new
            if gone is not None:
                self.export_locations.pop(gone.id, None)
        for share in listed:
            if self.share_rules.get(share.id) != rules[share.id]:
                changes.append((self.shares, Change(share, share)))  # its rules moved
        self.share_rules = rules
        return changes

    def transitional(self) -> bool:
        return any(s.status in TRANSITIONAL_SHARE for s in self.shares.items()) or any(
            r.state in TRANSITIONAL_RULE for rules in self.share_rules.values() for r in rules
        )


#: Cinder volume states in which Cinder is still working on it.
TRANSITIONAL_VOLUME = {
    "creating", "extending", "deleting", "attaching", "detaching", "downloading",
    "reserved", "maintenance", "uploading", "retyping",
}  # fmt: skip


class VolumeWatcher(Watcher):
    """Cinder: Kumo's volumes, one listing filtered by Kumo's metadata per interval —
    the idle cost is one call per page of ``osapi_max_limit`` volumes (1,000 by
    default: cloud/pages.py), and no per-volume GET (attachments come with the listing)."""

    service = "cinder"

    def __init__(self, cloud: VolumesPort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.volumes: ResourceCache[model.Volume] = ResourceCache(
            "volumes",
            lambda v: v.id,
            lambda v: model.metadata_owner(v.metadata),
            live=lambda v: v.status != "deleting",
        )
        self.caches = self.singles = (self.volumes,)
        self.marks = (("volume", self.volumes, metadata_marker),)

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_volume(resource.id)

    async def refresh(self, full: bool) -> Changes:
        token = self.volumes.begin()
        self.env.stats.count("cinder-volumes")
        listed = await self.cloud.list_managed_volumes()
        return [(self.volumes, c) for c in self.volumes.replace(token, listed)]

    def transitional(self) -> bool:
        return any(v.status in TRANSITIONAL_VOLUME for v in self.volumes.items())


class SecurityGroupWatcher(Watcher):
    """Neutron: Kumo's security groups without their rules (one call), then the rules
    of each group whose ``revision_number`` moved — so while nothing changes, the cost
    is one call per interval whatever the number of groups and rules."""

    service = "neutron"

    def __init__(self, cloud: NetworkingPort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.security_groups: ResourceCache[model.SecurityGroup] = ResourceCache(
            "security groups", lambda g: g.id, model.described_owner
        )
        self.caches = self.singles = (self.security_groups,)
        self.marks = (("security_group", self.security_groups, model.described_marker),)

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_security_group(resource.id)

    async def refresh(self, full: bool) -> Changes:
        cache = self.security_groups
        stats = self.env.stats
        token = cache.begin()
        stats.count("security-groups")
        listed = await self.cloud.security_group_versions()
        groups = []
        for group in listed:
            cached = cache.lookup(group.id)
            fresh = isinstance(cached, model.SecurityGroup) and cached.revision == group.revision
            if not full and isinstance(cached, model.SecurityGroup) and fresh:
                groups.append(dataclasses.replace(group, rules=cached.rules))
                continue
            stats.count("security-group-rules")
            rules = await self.cloud.fetch_security_group_rules(group.id)
            groups.append(dataclasses.replace(group, rules=tuple(rules)))
        return [(cache, c) for c in cache.replace(token, groups)]


class KeyPairWatcher(Watcher):
    """Nova keypairs: the user's whole list each interval (one call; a project holds few).

    Every keypair is cached, Kumo's or not: the adapter answers ``get_keypair`` for an
    import or a name in the way from here. Kumo's carry the marker as the last word of
    their public key's comment, which Nova never changes (a keypair cannot be edited),
    so :meth:`marked` lists exactly the keypairs Kumo created for an object and has not
    released; a released one carries ``kumo-orphan=<uid>`` there instead."""

    service = "keypairs"

    def __init__(self, cloud: KeyPairsPort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.keypairs: ResourceCache[model.KeyPair] = ResourceCache(
            "keypairs", lambda k: k.name, lambda k: model.keypair_owner(k.public_key)
        )
        self.caches = self.singles = (self.keypairs,)
        self.marks = (("keypair", self.keypairs, lambda k: model.keypair_marker(k.public_key)),)

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_keypair(resource.id)

    async def refresh(self, full: bool) -> Changes:
        token = self.keypairs.begin()
        self.env.stats.count("keypairs-list")
        listed = await self.cloud.fetch_keypairs()
        return [(self.keypairs, c) for c in self.keypairs.replace(token, listed)]


class FloatingIPWatcher(Watcher):
    """Neutron floating IPs: the project's, in one listing per interval (see the module
    docstring for why it is not filtered by tag). A disassociation or a deletion made
    out of band, and a target's port going with its server, show in the next listing."""

    service = "floatingips"

    def __init__(self, cloud: FloatingIPPort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.floating_ips: ResourceCache[model.FloatingIP] = ResourceCache(
            "floating ips", lambda f: f.id, model.floating_ip_owner
        )
        self.caches = self.singles = (self.floating_ips,)
        self.marks = (("floatingip", self.floating_ips, model.floating_ip_marker),)

    async def delete_marked(self, resource: model.Marked) -> None:
        await self.cloud.delete_floating_ip(resource.id)

    async def refresh(self, full: bool) -> Changes:
        token = self.floating_ips.begin()
        self.env.stats.count("floating-ips")
        listed = await self.cloud.fetch_floating_ips()
        return [(self.floating_ips, c) for c in self.floating_ips.replace(token, listed)]


class NetworkWatcher(Watcher):
    """Neutron networks and routers: Kumo's networks and their subnets, Kumo's routers
    and their interface ports — at most four calls per interval whatever the number of
    networks, subnets and routers (one while the project has no Kumo network: routers
    are listed then only by the full relist), and no per-object GET. Kumo's are the
    project's marked by tag or, before their tags came (a lost create answer, a crash
    between the create and the tag call), by the description's marker word. A subnet or
    an interface removed by hand, or a router's gateway changed, shows in the next
    listing."""

    service = "networks"

    def __init__(self, cloud: NetworksPort, env: WatchEnv) -> None:
        super().__init__(env)
        self.cloud = cloud
        self.networks: ResourceCache[model.Network] = ResourceCache(
            "networks", lambda n: n.id, model.described_owner
        )
        self.routers: ResourceCache[model.Router] = ResourceCache(
            "routers", lambda r: r.id, model.described_owner
        )
        self.caches = self.singles = (self.networks, self.routers)
        # Routers first: the orphan sweep deletes a leaked router before its network.
        self.marks = (
            ("router", self.routers, model.described_marker),
            ("network", self.networks, model.described_marker),
        )

    async def delete_marked(self, resource: model.Marked) -> None:
        if resource.kind != "router":
            await self.cloud.delete_network(resource.id)
            return
        router = await self.cloud.get_router(resource.id)
        if router is None:
            return
        # Only the subnets of its own network (the same owner's, this cluster's current
        # marker) are Kumo's to detach: a subnet of another object's network, another
        # cluster's, a legacy-marked one or a user's stays, and so does the router.
        subnet_owners = {
            subnet.id: marker.uid if marker is not None and marker.current else None
            for network in self.networks.live()
            for marker in (model.marker_of(network.tags),)
            for subnet in network.subnets
        }
        own, foreign = sweep.router_interfaces(resource.owner, router.interfaces, subnet_owners)
        for subnet_id in own:
            await self.cloud.remove_router_interface(resource.id, subnet_id)
        if foreign:
            raise sweep.OrphanKept(
                f"router {resource.id} keeps an interface on subnet(s) {', '.join(foreign)} "
                "that are not on its own network: those were not detached and the router "
                "is kept (detach them, then the next sweep deletes it)"
            )
        await self.cloud.delete_router(resource.id)

    async def refresh(self, full: bool) -> Changes:
        stats = self.env.stats
        networks_token = self.networks.begin()
        stats.count("networks-list")
        networks = await self.cloud.fetch_networks()
        changes: Changes = [
            (self.networks, c) for c in self.networks.replace(networks_token, networks)
        ]
        # A Kumo router serves a Kumo network: with none (and none cached) only the full
        # relist looks, so a project without Networks pays one call per interval.
        if full or networks or self.routers.items() or not self.routers.synced:
            routers_token = self.routers.begin()
            stats.count("routers-list")
            routers = await self.cloud.fetch_routers()
            changes += [(self.routers, c) for c in self.routers.replace(routers_token, routers)]
        return changes

    def transitional(self) -> bool:
        return any(n.status not in ("ACTIVE", "DOWN") for n in self.networks.items())


def _marked_server(server: model.Server) -> bool:
    return model.MANAGED_TAG in server.tags


def _in_zone(zone_id: str) -> Callable[[model.Recordset], bool]:
    return lambda rs: rs.zone_id == zone_id


#: Every service a CloudWatch lists, in this order: a new service is one more entry.
WATCHERS: tuple[Callable[[Cloud, WatchEnv], Watcher], ...] = (
    ServerWatcher,
    ServerGroupWatcher,
    LoadBalancerWatcher,
    ZoneWatcher,
    ShareWatcher,
    SecurityGroupWatcher,
    KeyPairWatcher,
    FloatingIPWatcher,
    VolumeWatcher,
    NetworkWatcher,
)

W = TypeVar("W", bound=Watcher)


# -- the schedule ------------------------------------------------------------------------------


@dataclass
class _Service:
    """When a watcher lists next: the CloudWatch's bookkeeping, not the watcher's."""

    watcher: Watcher
    next_due: float = 0.0
    next_relist: float = 0.0
    failures: int = 0
    #: When its latest listing started, and whether a poke came since.
    started: float = float("-inf")
    poked: bool = False
    #: When its latest full listing that ended started, and the latest one that succeeded.
    tried_full: float = float("-inf")
    listed_full: float = float("-inf")

    @property
    def name(self) -> str:
        return self.watcher.service


class CloudWatch:
    def __init__(
        self,
        cloud: Cloud,
        *,
        interval: float = 10.0,
        fast: float = 1.0,
        relist: float = 600.0,
        skew: float = SKEW_SECONDS,
        max_queued_builds: int = MAX_QUEUED_BUILDS,
        clock: Callable[[], float] | None = None,
        watchers: Sequence[Callable[[Cloud, WatchEnv], Watcher]] = WATCHERS,
    ) -> None:
        self.interval = interval
        self.fast = fast
        self.relist = relist
        self.skew = skew
        self._clock = clock
        self.stats = WatchStats()
        env = WatchEnv(self._now, self.stats, skew, max_queued_builds)
        self.watchers: tuple[Watcher, ...] = tuple(make(cloud, env) for make in watchers)
        self._services: dict[str, _Service] = {}
        for watcher in self.watchers:
            if watcher.service in self._services:
                raise ValueError(f"two watchers for service {watcher.service!r}")
            self._services[watcher.service] = _Service(watcher)
        # The services Kumo's kinds read through the adapter's cache.
        self._compute = self._one(ServerWatcher)
        self._groups = self._one(ServerGroupWatcher)
        self._octavia = self._one(LoadBalancerWatcher)
        self._dns = self._one(ZoneWatcher)
        self._manila = self._one(ShareWatcher)
        self._neutron = self._one(SecurityGroupWatcher)
        self._keypairs = self._one(KeyPairWatcher)
        self._floating_ips = self._one(FloatingIPWatcher)
        self._cinder = self._one(VolumeWatcher)
        self._networks = self._one(NetworkWatcher)
        self._wake = asyncio.Event()
        self._ready = asyncio.Event()
        self._closed = False
        self._notify: Notify | None = None

    def _one(self, kind: type[W]) -> W:
        """The registered watcher of that class (the adapter reads its caches)."""
        for watcher in self.watchers:
            if isinstance(watcher, kind):
                return watcher
        raise LookupError(f"no {kind.__name__} registered")

    # -- the caches the adapter reads and writes --------------------------------------------

    @property
    def servers(self) -> ResourceCache[model.Server]:
        return self._compute.servers

    @property
    def builds(self) -> BuildBudget:
        """Turns for creating servers: at most ``max_queued_builds`` of them in BUILD at once."""
        return self._compute.builds

    @property
    def server_groups(self) -> ResourceCache[model.ServerGroup]:
        return self._groups.server_groups

    @property
    def load_balancers(self) -> ResourceCache[model.LoadBalancer]:
        return self._octavia.load_balancers

    @property
    def listeners(self) -> ResourceCache[model.Listener]:
        return self._octavia.listeners

    @property
    def pools(self) -> ResourceCache[model.Pool]:
        return self._octavia.pools

    @property
    def monitors(self) -> ResourceCache[model.HealthMonitor]:
        return self._octavia.monitors

    @property
    def members(self) -> dict[str, tuple[frozenset[str] | None, list[model.Member]]]:
        return self._octavia.members

    @property
    def newest_members(self) -> dict[str, str]:
        return self._octavia.newest_members

    @property
    def recordsets(self) -> ResourceCache[model.Recordset]:
        return self._dns.recordsets

    @property
    def shares(self) -> ResourceCache[model.Share]:
        return self._manila.shares

    @property
    def share_rules(self) -> dict[str, list[model.AccessRule]]:
        return self._manila.share_rules

    @property
    def export_locations(self) -> dict[str, list[model.ExportLocation]]:
        return self._manila.export_locations

    @property
    def volumes(self) -> ResourceCache[model.Volume]:
        return self._cinder.volumes

    @property
    def security_groups(self) -> ResourceCache[model.SecurityGroup]:
        return self._neutron.security_groups

    @property
    def keypairs(self) -> ResourceCache[model.KeyPair]:
        return self._keypairs.keypairs

    @property
    def floating_ips(self) -> ResourceCache[model.FloatingIP]:
        return self._floating_ips.floating_ips

    @property
    def networks(self) -> ResourceCache[model.Network]:
        return self._networks.networks

    @property
    def routers(self) -> ResourceCache[model.Router]:
        return self._networks.routers

    # -- lifecycle ---------------------------------------------------------------------

    def _now(self) -> float:
        return self._clock() if self._clock else asyncio.get_running_loop().time()

    async def synced(self) -> None:
        """Wait until every service has been listed once (or tried: a service the cloud
        lacks or that failed is read through the API instead)."""
        await self._ready.wait()

    def synced_since(self, moment: float) -> bool:
        """Has every service been listed in full by a listing that started at or after
        ``moment`` (this watch's clock: the event loop's, ``time.monotonic``)? A service
        whose listing since then failed counts only while its caches hold nothing (a
        service the cloud lacks): anything they hold may be older than ``moment``.
        The orphan sweep asks it with the moment leadership was gained, so it never
        judges what a cache kept from an earlier term."""
        return all(
            s.listed_full >= moment
            or (s.tried_full >= moment and not any(len(c) for c in s.watcher.caches))
            for s in self._services.values()
        )

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
        running: dict[str, asyncio.Task[None]] = {}
        try:
            await self.sync()
            self._notify = notify
            while not self._closed:
                self._start_due(running)
                idle = [s.next_due for n, s in self._services.items() if n not in running]
                wait = min(idle) - self._now() if idle else None
                if wait is None or wait > 0:
                    woken = asyncio.ensure_future(self._wake.wait())
                    try:
                        await asyncio.wait(
                            [woken, *running.values()],
                            timeout=wait,
                            return_when=asyncio.FIRST_COMPLETED,
                        )
                    finally:
                        woken.cancel()
                self._wake.clear()
                for name in [n for n, task in running.items() if task.done()]:
                    running.pop(name).result()  # _refresh logs its own failures
        except asyncio.CancelledError:
            self._ready.clear()
            raise
        finally:
            for task in running.values():
                task.cancel()

    def _start_due(self, running: dict[str, asyncio.Task[None]]) -> None:
        """Start a listing of every service that is due and not listing already. Each
        service lists on its own (within the watch's call slots): in a 300-VM delete, a
        Neutron slowed to 5 s a listing held Nova's changes-since listing back by over a
        minute when the services were listed one after another."""
        now = self._now()
        for name, service in self._services.items():
            if name not in running and service.next_due <= now:
                full = service.next_relist <= now
                running[name] = asyncio.create_task(self._refresh(service, full=full))

    def nudge(self, service: str) -> None:
        """Kumo just changed something in ``service`` (a registered watcher's name; any
        other raises KeyError): look again soon (fast interval)."""
        self._nudge(self._services[service])

    def _nudge(self, svc: _Service) -> None:
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
        it: that listing may have answered before the change. A service no watcher
        lists is ignored (notices name what the cloud has, not what Kumo watches)."""
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
        watcher = service.watcher
        busy = False
        service.started = started = self._now()
        service.poked = False
        lane = WATCH_LANE.set(True)
        try:
            changes = await watcher.refresh(full)
            busy = watcher.transitional()
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
        if full:
            service.tried_full = started
        if full and service.failures == 0:
            service.listed_full = started
            service.next_relist = now + self.relist * random.uniform(0.9, 1.1)
        if busy:
            paced = min(LISTING_PACE_MAX_SECONDS, LISTING_PACE * (now - started))
            pause = min(self.interval, max(self.fast, paced))
        else:
            pause = self.interval * min(2**service.failures, 30)
        service.next_due = now + pause * random.uniform(0.9, 1.1)
        if service.poked:  # announced while listing: the answer may predate it
            service.next_due = min(service.next_due, max(now, started + self.fast))
        if self._notify is None:
            return
        owners, duplicated = self._owners(watcher, changes) if changes else (set(), set())
        woken = watcher.woken()
        if owners or woken:
            self._notify(owners, duplicated, woken)

    def queued_builds(self) -> int:
        """Kumo's servers Nova has accepted but not put on a host yet (see
        :meth:`ServerWatcher.queued_builds`)."""
        return self._compute.queued_builds()

    # -- who is concerned ------------------------------------------------------------------

    def _owners(self, watcher: Watcher, changes: Changes) -> tuple[set[str], set[str]]:
        owners = watcher.owners(changes)
        # An object owns one server, load balancer, recordset or share: two mean a create
        # whose answer was lost was retried. Every watcher is asked, as before the split.
        duplicated = {uid for w in self.watchers for uid in w.duplicated(owners)}
        return owners, duplicated

    def owner_of(self, cache: ResourceCache[Any], resource: Any) -> str | None:
        """The marker's UID, or for an unmarked child the UID of its load balancer's owner."""
        for watcher in self.watchers:
            if any(c is cache for c in watcher.caches):
                return watcher.owner_of(cache, resource)
        return cache.owner(resource)

    async def delete_marked(self, resource: model.Marked) -> None:
        """Delete a resource :meth:`marked` listed, through the watcher that listed it."""
        for watcher in self.watchers:
            if any(kind == resource.kind for kind, *_ in watcher.marks):
                await watcher.delete_marked(resource)
                return
        raise KeyError(f"no watcher lists {resource.kind!r} resources")

    def marked(self) -> list[model.Marked]:
        """Every live cached resource carrying Kumo's owner marker, of every service
        (for the orphan sweep: what no object owns any more). Only what the caches hold:
        a service not listed yet, or failing, contributes nothing."""
        return [m for watcher in self.watchers for m in watcher.marked()]

    # -- Kumo's own writes -------------------------------------------------------------------

    def lb_changing(self, lb_id: str | None, status: str = "PENDING_UPDATE") -> None:
        """Kumo asked Octavia for a change under ``lb_id``: Octavia now holds it pending."""
        self._octavia.changing(lb_id, status)
        self._nudge(self._services[self._octavia.service])

    def watches_zone(self, zone_id: str) -> bool:
        """Has the zone's every recordset been listed into the cache?"""
        return self._dns.watches_zone(zone_id)

    def watch_load_balancer(self, lb_id: str) -> None:
        """A load balancer without Kumo's marker was cached: watch it like Kumo's own."""
        self._octavia.watch(lb_id)

    def pool_lb(self, pool_id: str) -> str | None:
        return self._octavia.pool_lb(pool_id)


def _busy(resource: Any) -> bool:
    """The cloud is working on it: Octavia refuses a delete while PENDING_*, Manila while
    a share is creating, extending, deleting, and so on."""
    provisioning = getattr(resource, "provisioning_status", None) or ""
    status = str(getattr(resource, "status", "") or "")
    return provisioning.startswith("PENDING_") or (
        isinstance(resource, model.Share | model.Volume) and status.endswith("ing")
    )
