"""Watcher: what one service's listings have in common (each service's watchers live in
its package, ``kumo.cloud.services.<service>.watch``; :mod:`kumo.cloud.watch` schedules
them).

A watcher keeps its service's :class:`~kumo.cloud.cache.ResourceCache` s fresh, says
whether anything is in transition, whose resources changed (the ``kumo-owner`` marker,
kumo.ports.markers) and which of its resources carry this cluster's marker (the orphan
sweep's input).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from kumo.cloud import model, telemetry
from kumo.cloud.budget import MAX_QUEUED_BUILDS
from kumo.cloud.cache import Change, ResourceCache

#: How far behind the API's clock a Nova node's clock may be (changes-since margin;
#: ``kumo run --clock-skew-seconds``). Every listing returns again what changed within
#: the margin: while a fleet builds, a 30 s margin made each 1 s listing return 30 s of
#: changes — most of the nova-api time Kumo used. NTP keeps real skew far below 10 s.
SKEW_SECONDS = 10.0


#: What one listing changed: each change with the cache it happened in.
Changes = list[tuple[ResourceCache[Any], Change[Any]]]

R = TypeVar("R")


#: The marker a resource carries (:class:`kumo.ports.markers.Marker`), per where it holds it.
MarkerOf = Callable[[Any], model.Marker | None]


def tags_marker(resource: Any) -> model.Marker | None:
    return model.marker_of(resource.tags)


def metadata_marker(resource: Any) -> model.Marker | None:
    return model.metadata_marker(resource.metadata)


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


class Watcher:
    """One service's listings and caches. The CloudWatch schedules it (interval, fast
    while :meth:`transitional`, relist, backoff, pokes) and reports what it changed; the
    watcher alone knows its API, so no service is special-cased outside its class."""

    #: Its name for ``nudge``/``poke`` (notifications and Kumo's writes name it): its
    #: service's name (kumo.ports.SERVICES), then the part it lists when the service has
    #: several watchers (``compute.keypairs``).
    service: ClassVar[str]
    #: Its listings' labels in ``kumo_watch_listings_total``: the API (service type) and
    #: the resource it lists.
    api: ClassVar[str] = telemetry.OTHER
    resource: ClassVar[str] = ""  # "": the watcher's service name
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

    async def listed(
        self, cache: ResourceCache[R], counted: str, fetch: Callable[[], Awaitable[list[R]]]
    ) -> tuple[list[R], Changes]:
        """One listing (``fetch``, counted as ``counted``) into ``cache``: what it
        answered, and what that changed. The listing starts after ``cache.begin()``, so
        it never overrides what Kumo wrote while it ran."""
        token = cache.begin()
        self.env.stats.count(counted)
        listed = await fetch()
        return listed, [(cache, c) for c in cache.replace(token, listed)]

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
                zone_id=self.zone_of(resource),
                busy=self.is_busy(resource),
                in_use=self.is_in_use(resource),
            )
            for kind, cache, marker_of in self.marks
            for resource in cache.live()
            if (marker := marker_of(resource)) is not None and marker.current
        ]

    def is_busy(self, resource: Any) -> bool:
        """The cloud is working on it (the orphan sweep leaves it for now): Octavia
        refuses a delete while PENDING_*, Manila while a share is creating, …"""
        return False

    def is_in_use(self, resource: Any) -> bool:
        """Something of the user's still uses it (the sweep keeps it): a server group's
        members."""
        return False

    def zone_of(self, resource: Any) -> str | None:
        """Where it is addressed besides its ID (a recordset's zone)."""
        return None


class ListingWatcher(Watcher, Generic[R]):
    """A watcher of one resource type that one listing fills (Cinder's volumes, Neutron's
    floating IPs and ports, Nova's keypairs and server groups): :meth:`Watcher.listed` of
    ``fetch`` into ``cache``, each interval or (``relist_only``) only on the full relist."""

    #: Its listing's name in :class:`WatchStats`.
    counted: ClassVar[str]
    #: Listed at start and by the full relist only: what changes by Kumo's own writes
    #: alone, which update the cache directly.
    relist_only: ClassVar[bool] = False

    def __init__(
        self,
        env: WatchEnv,
        cache: ResourceCache[R],
        mark: tuple[str, MarkerOf],
        fetch: Callable[[], Awaitable[list[R]]],
        *,
        single: bool = True,
    ) -> None:
        """``mark``: the resource type :meth:`marked` names and its marker; ``single``:
        one object owns one live resource (two mean a lost create was retried)."""
        super().__init__(env)
        self.cache = cache
        self.fetch = fetch
        self.caches = (cache,)
        self.singles = (cache,) if single else ()
        self.marks = ((mark[0], cache, mark[1]),)

    async def refresh(self, full: bool) -> Changes:
        if self.relist_only and not full and self.cache.synced:
            return []
        _, changes = await self.listed(self.cache, self.counted, self.fetch)
        return changes
