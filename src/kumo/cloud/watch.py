"""CloudWatch: one cloud project observed like a Kubernetes informer — the scheduler.

One watch per cloud (credentials), shared by every reconcile of every namespace using
it. Each service's :class:`~kumo.cloud.watcher.Watcher` s (its package's ``watch.py``
under ``kumo.cloud.services``, registered in :data:`kumo.cloud.services.WATCHERS`) keep
a :class:`~kumo.cloud.cache.ResourceCache` per resource type fresh with list calls whose
cost does not grow with the fleet while nothing changes; this module only schedules them
and knows no service.

While something is in transition (a server building or deleting, a load balancer or
recordset pending) that service is listed every ``fast_seconds`` — one list covers all
of them, instead of a poll per object. Every interval is jittered.

Changes are reported as the UIDs of the objects owning the changed resources (the
``kumo-owner`` marker; a listener, pool or monitor without it belongs to its load
balancer's owner): that is Kumo's drift detection. Another cluster's resources are
listed too (they carry the ``kumo`` tag or metadata) but indexed under an owner no object
has (``<uid>@<cluster>``, kumo.ports.markers): never one of this cluster's duplicates,
never in :meth:`~kumo.cloud.watcher.Watcher.marked`, the orphan sweep's input. Kumo's own writes go to the API and
then into the cache, never waiting for a listing: the adapter's calls reach a watcher's
caches through :meth:`CloudWatch.of`. A new service adds no line here.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from kumo.cloud import model, telemetry
from kumo.cloud.budget import MAX_QUEUED_BUILDS
from kumo.cloud.cache import ResourceCache
from kumo.cloud.watcher import SKEW_SECONDS, Changes, WatchEnv, Watcher, WatchStats
from kumo.engine.errors import ReconcileError
from kumo.ports import Cloud

__all__ = ["SKEW_SECONDS", "WATCH_LANE", "Changes", "CloudWatch", "Notify"]

log = logging.getLogger("kumo.cloud.watch")

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


W = TypeVar("W", bound=Watcher)


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
        watchers: Sequence[Callable[[Cloud, WatchEnv], Watcher]],
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
        self._by_type: dict[type[Watcher], Watcher] = {type(w): w for w in self.watchers}
        self._wake = asyncio.Event()
        self._ready = asyncio.Event()
        self._closed = False
        self._notify: Notify | None = None

    def of(self, kind: type[W]) -> W:
        """The registered watcher of that class: the adapter's calls read and write its
        caches (``self.watch.of(ServerWatcher).servers``)."""
        watcher = self._by_type.get(kind)
        if not isinstance(watcher, kind):
            raise LookupError(f"no {kind.__name__} registered")
        return watcher

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
        api, resource = watcher.api, watcher.resource or watcher.service
        clock = time.monotonic()
        outcome = "error"
        try:
            changes = await watcher.refresh(full)
            busy = watcher.transitional()
            service.failures = 0
            outcome = "ok"
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
            telemetry.WATCH_LISTINGS.labels(api, resource, outcome).inc()
            telemetry.WATCH_LISTING_SECONDS.labels(api, resource).observe(time.monotonic() - clock)
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
