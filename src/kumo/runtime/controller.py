"""The controller loop: caches + work queue + workers.

Two kinds of informer feed one queue. Kubernetes watch events (from kopf) update the
object cache and enqueue the object and whatever depends on it. Each cloud's watch
(:mod:`kumo.cloud.watch`: incremental lists per project and resource type) reports the
owners of cloud resources that changed — out-of-band edits, a server turning ACTIVE, a
load balancer leaving PENDING_UPDATE — and those objects are enqueued: that is drift
detection, with no separate pass. Workers run the engine one key at a time; a key is
reconciled only once its cloud's caches hold their first listing (the startup barrier's
cloud half). Knows kinds only through the Actuator protocol and the declared
references (which ConfigMaps/Secrets a kind reads), and kopf not at all.

Besides the workers, the leader runs the orphan sweep, the ConfigMap follower (the
ConfigMaps objects read, re-read by name: runtime/config_maps.py) and, when given one,
the import gate's recheck (namespaces allowed to import since: runtime/imports.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from kumo.api.kinds import KINDS, KindInfo
from kumo.cloud.dryrun import DryRunCloud
from kumo.cloud.notifications import NoticeBoard
from kumo.engine import conditions, trace
from kumo.engine.errors import ReconcileError, TransientError
from kumo.engine.objects import Actuator, Body, Context, Key, Obj, copy_body
from kumo.engine.queue import WorkQueue
from kumo.engine.reconciler import Engine
from kumo.engine.text import EVENT_LIMIT, public_text
from kumo.ports import Cloud
from kumo.runtime import metrics
from kumo.runtime.config_maps import ConfigMapFollower, FollowingKube
from kumo.runtime.imports import ImportGate
from kumo.runtime.store import MemoryStore
from kumo.runtime.sweep import Sweeper, SweepOptions

log = logging.getLogger("kumo.controller")

INFO_BY_KIND: dict[str, KindInfo] = {k.kind: k for k in KINDS}
EVENT_DEDUP_SECONDS = 60.0
#: A deletion pass that changed nothing in Kubernetes and asks for the same delay as the
#: pass before it is a poll (a server or a load balancer Nova or Octavia is deleting).
#: Only deletions back off: a live object's wait may be for something no watch reports
#: (a new server's port, for a FloatingIP), and its repair time is promised.
#: After this many such passes in a row the delay doubles, up to POLL_CAP_SECONDS: the
#: cloud's watch wakes the object when its resource changes, so a long wait costs a
#: few passes, not one every 2 s (at 1,000 VMs deleting, 500 passes a second).
POLL_PATIENCE = 3
#: A change to an object another depends on (a member of a LoadBalancer's group) does not
#: move the dependent's pass earlier when one is due within this many seconds anyway (a
#: LoadBalancer waiting 1 s for Octavia): that pass sees the change. Many members
#: changing one after another then cost one pass of the dependent, not one each.
DEPENDENT_WINDOW_SECONDS = 1.0
POLL_CAP_SECONDS = 16.0
#: A wait that its kind declares watched (``watched_waits``: the cloud watch reports
#: every change of what it waits for, e.g. a server leaving BUILD or going, and its
#: pass reads the watch's cache) backs off the same way, live or deleting, up to this:
#: its polls can see nothing the watch has not already woken it for, they are only a
#: safety net. A VM building (or deleting) while Nova works through a fleet one server
#: at a time otherwise polled every 2 s (16 s) for as long as its turn took, O(N)
#: passes per VM.
WATCHED_POLL_CAP_SECONDS = 60.0


class EventRecorder:
    """Posts Kubernetes events without blocking reconciles; drops repeats for a minute.

    An event of a pass ends with that pass's global request ID (``(request req-…)``,
    :func:`kumo.engine.trace.event_tail`): what the cloud services' logs name the
    pass's calls by. Repeats are judged without it."""

    def __init__(self, kube: Any) -> None:
        self._kube = kube
        self._recent: dict[tuple[str, str, str], float] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def emit(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        key = (obj.uid, reason, message)
        now = time.monotonic()
        if now - self._recent.get(key, -EVENT_DEDUP_SECONDS) < EVENT_DEDUP_SECONDS:
            return
        self._recent[key] = now
        if len(self._recent) > 10_000:  # forget what is past the dedup window
            self._recent = {k: t for k, t in self._recent.items() if now - t < EVENT_DEDUP_SECONDS}
        log.info("event %s %s: %s %s", obj.key, type_, reason, message)
        tail = trace.event_tail()
        if tail:
            message = public_text(message, EVENT_LIMIT - len(tail)) + tail
        task = asyncio.ensure_future(self._post(obj, type_, reason, message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _post(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        try:
            await self._kube.post_event(obj, type_, reason, message)
        except Exception as error:  # events are best effort
            log.debug("could not post event for %s: %s", obj.key, error)


class Controller:
    def __init__(
        self,
        actuators: list[Actuator],
        kube: Any,
        clouds: Any,
        *,
        workers: int = 8,
        resync_seconds: float = 300.0,
        notices: NoticeBoard | None = None,
        sweep: SweepOptions | None = None,
        namespace: str | None = None,
        imports: ImportGate | None = None,
    ) -> None:
        self.actuators = {a.info.kind: a for a in actuators}
        self.kube = kube
        self.clouds = clouds
        self.store = MemoryStore()
        self.queue = WorkQueue()
        self.engine = Engine(dry_run=DryRunCloud)
        self.events = EventRecorder(kube)
        self.workers = workers
        self.resync_seconds = resync_seconds
        #: Where the cloud's notifications find the watches of their project (optional).
        self.notices = notices
        self._watches: dict[int, asyncio.Task[None]] = {}  # id(cloud watch) → its loop
        self._tasks: list[asyncio.Task[None]] = []
        self._busy: set[asyncio.Task[Any]] = set()
        self._stopping = False
        self._unconfirmed: set[Key] = set()  # listed at startup, not yet seen by the watch
        self._audit: set[Key] = set()  # enqueued by drift: also look for duplicates
        #: key → (the delay its last pass asked for, unchanged passes in a row asking it)
        self._polls: dict[Key, tuple[float, int]] = {}
        #: The orphan sweep (leader only): resources whose object is gone.
        self.sweeper = Sweeper(
            kube, INFO_BY_KIND.values(), self.live_uids, sweep or SweepOptions(), namespace
        )
        self._sweeping: asyncio.Task[None] | None = None
        #: The ConfigMaps objects read, followed by name (leader only).
        self.config_maps = ConfigMapFollower()
        #: Who may import or observe unmarked resources on the default cloud (None: all).
        self.imports = imports
        self._following: list[asyncio.Task[None]] = []
        metrics.QUEUE_DUE.set_function(lambda: self.queue.backlog()[0])
        metrics.QUEUE_OLDEST_DUE.set_function(lambda: self.queue.backlog()[1])
        metrics.OBJECTS.source = self._objects

    # -- input ---------------------------------------------------------------------------

    def observe(self, kind: str, event_type: str | None, raw: Mapping[str, Any]) -> None:
        """Take one watch event: update the cache, enqueue what it concerns."""
        body: Body = copy_body(dict(raw))
        key = key_of(kind, body)
        self._unconfirmed.discard(key)
        if event_type == "DELETED":
            old = self.store.remove(kind, key.namespace, key.name)
        else:
            old = self.store.put(kind, body)
        if kind in self.actuators and (event_type == "DELETED" or _worth_reconciling(old, body)):
            self._polls.pop(key, None)
            self._enqueue(key)
        for actuator in self.actuators.values():
            after = getattr(actuator, "coalesce_seconds", 0.0)
            coalesce = getattr(actuator, "coalesce_for", None)
            for dependent in actuator.dependents(kind, body, self.store):
                self._polls.pop(dependent, None)
                wait = coalesce(dependent, self.store) if coalesce is not None else after
                self._enqueue(dependent, wait, within=DEPENDENT_WINDOW_SECONDS)
        metrics.QUEUE_DEPTH.set(len(self.queue))

    def _enqueue(
        self, key: Key, after: float = 0.0, body: Body | None = None, within: float = 0.0
    ) -> None:
        """An object being deleted is urgent: with a thousand VMs queued to be created, a
        group's deletion (which stops them) must not wait behind them. ``body``: the
        object as the caller has it (else the cache's)."""
        if body is None:
            body = self.store.get(key.kind, key.namespace, key.name)
        deleting = bool(body and (body.get("metadata") or {}).get("deletionTimestamp"))
        self.queue.add(key, after, urgent=deleting, within=within)

    def enqueue_namespaces(self, selected: Callable[[str], bool]) -> None:
        """Look at once at every object of the namespaces ``selected`` picks: their cloud
        changed (the default cloud's Secret rotated), and an object held on its old
        credentials' error must not wait out the hold."""
        for kind in self.actuators:
            for body in self.store.list(kind):
                key = key_of(kind, body)
                if selected(key.namespace):
                    self._enqueue(key, body=body)
        metrics.QUEUE_DEPTH.set(len(self.queue))

    async def prime(self, namespace: str | None = None) -> None:
        """List every kind into the cache before any reconcile runs (the startup barrier).

        Without it a group reconciled right after a restart could see none of its
        members and create them again, or a LoadBalancer compute an empty pool.
        """
        for info in INFO_BY_KIND.values():
            for body in await self.kube.list(info, namespace):
                self.store.put(info.kind, body)
                self._unconfirmed.add(key_of(info.kind, body))

    # -- workers -------------------------------------------------------------------------

    def start(self) -> None:
        """Begin reconciling (this process leads): every cached object is looked at once."""
        loop = asyncio.get_running_loop()
        self._stopping = False
        for kind in self.actuators:
            for body in self.store.list(kind):
                self.queue.add(key_of(kind, body))
        self._tasks = [loop.create_task(self._worker()) for _ in range(self.workers)]
        self.sweeper.lead()  # judges only what the watches list from now on
        self._sweeping = loop.create_task(self.sweeper.run())
        self._following = [
            loop.create_task(self.config_maps.run(self.kube, self.store, self._changed))
        ]
        if self.imports is not None:
            self._following.append(loop.create_task(self.imports.run(self._changed)))

    def _changed(self, key: Key) -> None:
        """Something ``key`` reads outside the cloud changed (a ConfigMap, its
        namespace's permission to import): look at it now."""
        self._polls.pop(key, None)
        self.queue.add(key)

    async def stop(self, grace: float = 0.0) -> None:
        """Stop taking work; let reconciles in flight finish for up to ``grace`` seconds."""
        self._stopping = True
        idle = [t for t in self._tasks if t not in self._busy]
        for task in idle:
            task.cancel()
        busy = [t for t in self._tasks if t in self._busy]
        if busy and grace > 0:
            log.info("waiting up to %.0fs for %d reconciles in flight", grace, len(busy))
            await asyncio.wait(busy, timeout=grace)
        for task in self._tasks:
            task.cancel()
        watches = [*self._watches.values(), *self._following]
        self._following = []
        if self._sweeping is not None:
            watches.append(self._sweeping)
            self._sweeping = None
        for task in watches:  # a standby asks nothing of the cloud
            task.cancel()
        await asyncio.gather(*self._tasks, *watches, return_exceptions=True)
        self.sweeper.step_down()
        self._tasks = []
        self._watches.clear()
        self._busy.clear()
        self.queue.release_all()

    async def _worker(self) -> None:
        task = asyncio.current_task()
        assert task is not None
        while not self._stopping:
            key = await self.queue.get()
            self._busy.add(task)
            try:
                await self.process(key)  # type: ignore[arg-type]
            except Exception:
                log.exception("worker failed on %s", key)
                metrics.RECONCILES.labels(key.kind, "error").inc()  # type: ignore[attr-defined]
                self.queue.done(key)
                self.queue.add(key, 5.0)
                continue
            finally:
                self._busy.discard(task)
            self.queue.done(key)
            metrics.QUEUE_DEPTH.set(len(self.queue))

    async def process(self, key: Key) -> None:
        if key in self._unconfirmed:  # listed at startup: it may have gone since
            await self._confirm(key)
        body = self.store.get(key.kind, key.namespace, key.name)
        if body is None:
            self._polls.pop(key, None)
            return
        actuator = self.actuators[key.kind]
        obj = Obj(INFO_BY_KIND[key.kind], copy_body(body))
        started = time.monotonic()
        cloud = await self._cloud_or_unavailable(key.namespace)
        await self._watching(cloud)
        self.sweeper.watching(cloud, key.namespace)
        ctx = Context(
            cloud=cloud,
            kube=FollowingKube(self.kube, self.config_maps),
            store=self.store,
            events=self.events,
            audit=key in self._audit,
            import_gate=self._import_gate(key),
        )
        self._audit.discard(key)
        version = obj.meta.get("resourceVersion")
        delay = await self.engine.run(actuator, ctx, obj)
        wrote = obj.meta.get("resourceVersion") != version
        watched = _waiting_on_watch(actuator, obj)
        if obj.meta.get("deletionTimestamp") or watched:
            cap = WATCHED_POLL_CAP_SECONDS if watched else POLL_CAP_SECONDS
            delay = self._poll_delay(key, delay, wrote, cap=cap)
        else:
            self._polls.pop(key, None)
        meta = obj.body.get("metadata", {})
        gone = meta.get("deletionTimestamp") and not meta.get("finalizers")
        still_cached = self.store.get(key.kind, key.namespace, key.name) is not None
        if still_cached and not gone:  # a DELETED event may have arrived meanwhile
            self.store.put(key.kind, obj.body)  # our own writes, before the watch echoes them
        metrics.RECONCILE_SECONDS.labels(key.kind).observe(time.monotonic() - started)
        if obj.status.get("phase") == "Error":  # the engine reported a failed pass
            outcome = "error"
        else:
            outcome = "requeue" if delay is not None else "done"
        metrics.RECONCILES.labels(key.kind, outcome).inc()
        self._enqueue(key, delay if delay is not None else self.resync_seconds, obj.body)

    def _objects(self) -> list[tuple[str, list[Body]]]:
        """The cached objects of each kind this controller reconciles (kumo_objects)."""
        return [(kind, self.store.list(kind)) for kind in self.actuators]

    def _poll_delay(
        self, key: Key, asked: float | None, wrote: bool, cap: float = POLL_CAP_SECONDS
    ) -> float | None:
        """The delay to requeue ``key`` with: ``asked``, stretched while it polls (see
        POLL_PATIENCE). Any event about the key (its own, a dependency's, the cloud
        watch's) forgets the count, so nothing it waits for is noticed later."""
        last = self._polls.get(key)
        if asked is None:
            self._polls.pop(key, None)
            return None
        if wrote or last is None or last[0] != asked:
            self._polls[key] = (asked, 0)
            return asked
        unchanged = last[1] + 1
        self._polls[key] = (asked, unchanged)
        if unchanged < POLL_PATIENCE:
            return asked
        return max(asked, min(cap, asked * 2 ** (unchanged - POLL_PATIENCE + 1)))

    def _import_gate(self, key: Key) -> Callable[[], Awaitable[str | None]] | None:
        """Who decides whether ``key`` may import or observe an unmarked resource:
        the gate on the shared default cloud, no one where the namespace has its own
        (its own project)."""
        if self.imports is None or not self.clouds.uses_default(key.namespace):
            return None
        return self.imports.gate(key)

    async def _confirm(self, key: Key) -> None:
        fresh = await self.kube.get(INFO_BY_KIND[key.kind], key.namespace, key.name)
        self._unconfirmed.discard(key)
        if fresh is None:
            self.store.remove(key.kind, key.namespace, key.name)
        else:
            self.store.put(key.kind, fresh)

    async def _cloud_or_unavailable(self, namespace: str) -> Cloud:
        """The namespace's cloud, or a stand-in that fails every call with the reason:
        a credentials fault becomes that namespace's objects' condition, nothing more."""
        try:
            return await self.clouds.for_namespace(namespace)
        except ReconcileError as error:
            return _Unavailable(error)
        except Exception as error:
            log.exception("credentials of namespace %s failed unexpectedly", namespace)
            return _Unavailable(
                TransientError("CredentialsInvalid", f"credentials: {type(error).__name__}")
            )

    # -- the clouds' watches ------------------------------------------------------------

    async def _watching(self, cloud: Any) -> None:
        """Start ``cloud``'s watch on first use and wait for its first listing, so no
        reconcile acts on a cloud it has not seen yet."""
        watch = getattr(cloud, "watch", None) if not isinstance(cloud, _Unavailable) else None
        if watch is None or self._stopping:
            return
        if id(watch) not in self._watches:
            task = asyncio.get_running_loop().create_task(watch.run(self.cloud_changed))
            self._watches[id(watch)] = task
            task.add_done_callback(lambda _: self._forget_watch(watch))
            await self._announce(cloud, watch)
        await watch.synced()

    async def _announce(self, cloud: Any, watch: Any) -> None:
        """Let the cloud's notifications about this project poke its watch."""
        if self.notices is None:
            return
        try:
            project = await cloud.project_id()
        except Exception as error:  # no notifications for it: the listings still run
            log.warning("no notifications for a cloud: its project is unknown (%s)", error)
            return
        if project:
            self.notices.add(project, watch)

    def _forget_watch(self, watch: Any) -> None:
        self._watches.pop(id(watch), None)
        self.sweeper.forget(watch)
        if self.notices is not None:
            self.notices.discard(watch)

    def cloud_changed(
        self, owners: set[str], duplicated: set[str], woken: Iterable[str] = ()
    ) -> list[Key]:
        """A cloud watch saw resources of ``owners`` change: look at those objects
        (``duplicated``: also look for a second resource carrying the marker;
        ``woken``: objects whose turn to build a server came — not drift)."""
        for uid in sorted(set(woken) - owners):
            if (key := self._key_of_uid(uid)) is not None:
                self._polls.pop(key, None)
                self.queue.add(key)
        found: list[Key] = []
        for uid in sorted(owners):
            key = self._key_of_uid(uid)
            if key is None or self._held(key):
                continue
            metrics.DRIFTED.labels(key.kind).inc()
            log.debug("cloud change concerns %s", key)
            if uid in duplicated:
                log.info("%s: its marker is on more than one resource", key)
                self._audit.add(key)
            self._polls.pop(key, None)
            self.queue.add(key)
            found.append(key)
        metrics.QUEUE_DEPTH.set(len(self.queue))
        return found

    def _key_of_uid(self, uid: str) -> Key | None:
        """The key of the cached object of one of our kinds with ``uid`` (indexed: a
        watch's report costs what it names, not a scan of every object)."""
        found = self.store.by_uid(uid)
        if found is None or found[0] not in self.actuators:
            return None
        return key_of(*found)

    def live_uids(self) -> set[str]:
        """The UID of every object the cache holds (the owners marked resources name)."""
        return {body["metadata"]["uid"] for kind in INFO_BY_KIND for body in self.store.list(kind)}

    def _held(self, key: Key) -> bool:
        """A permanent error of this generation is not retried because the cloud moved:
        its own requeue (after the terminal delay) or a spec change will bring it back."""
        body = self.store.get(key.kind, key.namespace, key.name)
        if body is None:
            return False
        left = self.engine.held(Obj(INFO_BY_KIND[key.kind], body))
        if left is not None:
            log.debug("drift on %s ignored: permanent error held for %.0fs", key, left)
        return left is not None


def key_of(kind: str, body: Body) -> Key:
    """The work-queue key of an object body (namespace ``default`` when absent)."""
    meta = body["metadata"]
    return Key(kind, meta.get("namespace", "default"), meta["name"])


def _waiting_on_watch(actuator: Actuator, obj: Obj) -> bool:
    """Does ``obj``'s pass wait on something its kind says the cloud watch reports
    (``watched_waits``: reasons of its Ready condition, e.g. a VM's ``Building``)?"""
    watched = getattr(actuator, "watched_waits", ())
    if not watched:
        return False
    ready = conditions.get_condition(obj.status.get("conditions") or [], conditions.READY)
    return ready is not None and ready.get("status") != "True" and ready.get("reason") in watched


def _worth_reconciling(old: Body | None, new: Body) -> bool:
    """Skip events that only echo a status write of our own."""
    if old is None:
        return True
    watched = ("spec", "labels", "annotations", "finalizers", "deletionTimestamp", "generation")

    def view(body: Body) -> tuple[Any, ...]:
        meta = body.get("metadata", {})
        return (body.get("spec"), *(meta.get(k) for k in watched[1:]))

    return view(old) != view(new)


class _Unavailable:
    """Stands in for a cloud the namespace has no credentials for: every call fails."""

    def __init__(self, error: ReconcileError) -> None:
        self._error = error

    def __getattr__(self, name: str) -> Any:
        async def fail(*args: Any, **kwargs: Any) -> Any:
            raise self._error

        return fail
