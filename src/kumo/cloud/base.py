"""CloudBase: how every cloud call is made, and name resolution.

Blocking SDK calls run in threads — each cloud its own pool, as large as its
concurrency (asyncio's shared default pool has only cpu + 4 threads: 6 on two cores,
which capped every cloud together) — bounded by a semaphore and a token bucket, so
the event loop never blocks and one cloud is never flooded. The cloud watch's listings
have two slots of their own: a burst of slow creates never delays noticing changes. ``_call``
classifies failures into transient/terminal ReconcileErrors; ``_get`` turns 404
into ``None``; ``_rest`` and ``_pages`` are one REST request and every page of a listing,
for the calls the SDK's resources do not make as Kumo needs them. Each service's calls
live in its package, ``kumo.cloud.services.<service>``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, TypeVar, cast

import openstack.connection
import requests.adapters
from openstack import exceptions as os_exc

from kumo.cloud import pages, telemetry
from kumo.cloud.budget import MAX_QUEUED_BUILDS
from kumo.cloud.cache import ResourceCache
from kumo.cloud.errors import classify, missing_ids
from kumo.cloud.names import NameCache
from kumo.cloud.ratelimit import TokenBucket
from kumo.cloud.watch import SKEW_SECONDS, WATCH_LANE, CloudWatch
from kumo.cloud.watcher import WatchEnv, Watcher
from kumo.engine.errors import ReconcileError, TerminalError, TransientError, refused
from kumo.ports import Cloud

T = TypeVar("T")
R = TypeVar("R")


#: Calls the cloud watch may have in flight besides ``concurrency`` (see WATCH_LANE).
WATCH_SLOTS = 2


class CloudBase:
    #: The watchers its watch schedules: every service's (adapter.py sets them).
    WATCHERS: ClassVar[tuple[Callable[[Cloud, WatchEnv], Watcher], ...]] = ()

    def __init__(
        self,
        conn: openstack.connection.Connection,
        *,
        concurrency: int = 8,
        rate: float = 20.0,
        watch_seconds: float = 10.0,
        relist_seconds: float = 600.0,
        skew_seconds: float = SKEW_SECONDS,
        max_queued_builds: int = MAX_QUEUED_BUILDS,
    ) -> None:
        self.conn = conn
        self.region = conn.config.get_region_name()
        self._slots = asyncio.Semaphore(concurrency)
        self._watch_slots = asyncio.Semaphore(WATCH_SLOTS)
        self._threads = ThreadPoolExecutor(
            concurrency + WATCH_SLOTS, thread_name_prefix="kumo-cloud"
        )
        _size_connection_pools(conn, concurrency + WATCH_SLOTS)
        self._recorder = telemetry.instrument(conn)
        self._bucket = TokenBucket(rate, burst=max(concurrency, int(rate)))
        self._names = NameCache()
        #: The cloud-side cache; reads use it once the controller has synced it.
        self.watch = CloudWatch(
            cast(Cloud, self),  # OpenStackCloud: every port (adapter.py checks it)
            interval=watch_seconds,
            relist=relist_seconds,
            skew=skew_seconds,
            max_queued_builds=max_queued_builds,
            watchers=self.WATCHERS,
        )

    async def project_id(self) -> str | None:
        """The project these credentials act in (the token's scope: no API call once
        authenticated) — what the cloud's notifications name."""
        return await self._call("read the token's project", lambda: self.conn.current_project_id)

    async def close(self) -> None:
        """Release the connection's sessions (the credentials were replaced or removed)."""
        self.watch.close()
        await asyncio.to_thread(self.conn.close)
        self._threads.shutdown(wait=False)

    async def _call(
        self, action: str, fn: Callable[..., T], *args: Any, field: str | None = None, **kw: Any
    ) -> T:
        if await self._bucket.acquire():
            telemetry.WAITS.labels("any", "throttled").inc()
        async with self._watch_slots if WATCH_LANE.get() else self._slots:
            try:
                # In the caller's context: its pass (engine/trace.py) tags the requests.
                call = functools.partial(contextvars.copy_context().run, fn, *args, **kw)
                return await asyncio.get_running_loop().run_in_executor(self._threads, call)
            except Exception as error:
                classified = classify(error, action, field)
                self._count_failure(error, classified)
                raise classified from error

    def _count_failure(self, error: Exception, classified: ReconcileError) -> None:
        """``kumo_cloud_errors_total`` by category, and the wait a 409/413/429 asks for."""
        service = self._recorder.service_of(error)
        telemetry.ERRORS.labels(service, classified.reason).inc()
        status = getattr(error, "status_code", None)
        if classified.reason == "CloudBusy":
            telemetry.WAITS.labels(service, "busy").inc()
        elif status in (413, 429) and classified.reason == "CloudUnavailable":
            telemetry.WAITS.labels(service, "rate_limited").inc()

    async def _get(self, action: str, fn: Callable[..., T], *args: Any, **kw: Any) -> T | None:
        try:
            return await self._call(action, fn, *args, **kw)
        except TerminalError as error:
            if isinstance(error.__cause__, os_exc.NotFoundException):
                return None
            raise

    def _rest(
        self, proxy: Any, method: str, path: str, *, error_message: str | None = None, **kw: Any
    ) -> Any:
        """In a call's thread: one REST request through an SDK service proxy (``kw``: its
        ``params``, ``json``, ``microversion``); errors raised as the SDK's HttpExceptions
        (so ``_call`` classifies them like every other call's); the JSON body or None."""
        response = getattr(proxy, method)(path, **kw)
        os_exc.raise_from_response(response, error_message=error_message)
        return response.json() if response.content else None

    def _pages(
        self,
        proxy: Any,
        path: str,
        key: str,
        params: dict[str, Any] | None = None,
        *,
        settled: Callable[[Any], bool] | None = None,
        **kw: Any,
    ) -> list[Any]:
        """In a call's thread: every ``key`` item of a listing, page by page (its
        ``*_links``, and with ``settled`` the service's count: cloud/pages.py); ``kw``
        goes with each request (:meth:`_rest`)."""

        def get(page_path: str, query: dict[str, Any]) -> Any:
            return self._rest(proxy, "get", page_path, params=query, **kw)

        return pages.linked(get, path, key, params, settled=settled)

    async def _create(
        self,
        action: str,
        fn: Callable[..., T],
        *args: Any,
        resolved: list[str | None],
        in_doubt: tuple[ResourceCache[Any], str],
        field: str | None = None,
        **kw: Any,
    ) -> T:
        """``_call`` for a create.

        Unless the cloud clearly refused it (a 4xx), a create that failed may still have
        happened — the answer lost to a reset or a proxy's 5xx, or the call cancelled
        while its thread went on — so its scope in the cache (``in_doubt``: the cache and
        the owner or parent the next adopt-before-create lists) is put in doubt, and that
        reader asks the API instead of the cache.

        Given IDs from the name cache: when the cloud says one of them is gone (an image
        rotated, a zone re-created), forget it and retry soon with a fresh lookup instead
        of failing until the cache entry expires."""
        try:
            return await self._call(action, fn, *args, field=field, **kw)
        except BaseException as error:
            if not refused(error):
                cache, scope = in_doubt
                cache.doubt(scope)
            if not isinstance(error, ReconcileError):
                raise
            ids = [i for i in resolved if i]
            gone = self._names.forget_ids(missing_ids(error.__cause__, ids))
            if not gone:
                raise
            raise TransientError(
                "StaleReference",
                f"{action}: {', '.join(gone)} no longer exist(s); looking the name up again",
                field=field,
            ) from error

    async def _relist(
        self, cache: ResourceCache[R], scope: str, fetch: Callable[[], Awaitable[list[R]]]
    ) -> list[R]:
        """List ``scope`` from the API instead of the cache (not synced yet, or a lost
        create put it in doubt) and hand the answer to the cache, settling the doubt."""
        token = cache.begin()
        found = await fetch()
        cache.relisted(token, scope, found)
        return found

    # -- name resolution (cached for NAME_CACHE_TTL: names rarely move, but do; each
    #    service's lookups are in its package, e.g. ServersCalls.image_id) ------------

    async def _resolve(self, what: str, find: Callable[..., Any], ref: str, field: str) -> str:
        found: str = await self._resolve_as(what, find, ref, field, _id)
        return found

    async def _resolve_as(
        self,
        what: str,
        find: Callable[..., Any],
        ref: str,
        field: str,
        value: Callable[[Any], Any],
    ) -> Any:
        """``value`` of what ``find`` finds by ``ref``, cached under (what, ref, whether
        the value is the bare ID): the same lookup may be cached for two values."""
        key = (what, ref) if value is _id else (what, ref, "value")

        async def load() -> Any:
            found = await self._call(
                f"look up {what} {ref!r}", find, ref, ignore_missing=True, field=field
            )
            if found is None:
                raise TerminalError(
                    f"{what.title()}NotFound", f"{what} {ref!r} not found", field=field
                )
            return value(found)

        return await self._names.resolve(key, load, field)


def _size_connection_pools(conn: openstack.connection.Connection, size: int) -> None:
    """Let each host keep as many connections as calls may be in flight. requests keeps
    10 per host: with 18 threads on one endpoint, every call beyond 10 opened a new
    connection and logged "Connection pool is full, discarding connection" — hundreds
    of lines while a fleet builds. Resized in place, so keystoneauth's adapter keeps its
    socket options (TCP keep-alive, no Nagle)."""
    http = getattr(getattr(conn, "session", None), "session", None)
    for adapter in getattr(http, "adapters", {}).values():
        if isinstance(adapter, requests.adapters.HTTPAdapter) and adapter._pool_maxsize < size:
            adapter._pool_maxsize = size
            adapter.init_poolmanager(adapter._pool_connections, size, block=adapter._pool_block)


def _id(found: Any) -> str:
    """The ID of what a lookup found (the value most lookups cache)."""
    return str(found.id)
