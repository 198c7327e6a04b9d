"""The name → ID cache of one cloud (images, flavors, networks, zones, LB flavors).

Names rarely move, so lookups are cached; but an image is rotated (a new image takes
the name, the old one is deleted) and a zone is re-created, so entries expire after
``NAME_CACHE_TTL`` and an ID the cloud says is gone is forgotten at once
(:meth:`NameCache.forget_ids`), instead of breaking every create until a restart.

A name missing from the cache is looked up once however many reconciles need it at
that moment (:meth:`NameCache.resolve`): a group of 100 VMs created at once all want
the same image, flavor and network.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")

#: Seconds a resolved name is trusted.
NAME_CACHE_TTL = 300.0


class NameCache:
    def __init__(
        self, ttl: float = NAME_CACHE_TTL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self._clock = clock
        self._entries: dict[Hashable, tuple[float, Any]] = {}
        self._loading: dict[tuple[Hashable, str], asyncio.Future[Any]] = {}

    def get(self, key: Hashable) -> Any:
        """The cached value, or None when absent or expired."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self._clock() - entry[0] >= self.ttl:
            del self._entries[key]
            return None
        return entry[1]

    def put(self, key: Hashable, value: Any) -> None:
        self._entries[key] = (self._clock(), value)

    def forget_ids(self, ids: Iterable[str]) -> list[str]:
        """Drop every entry resolving to one of ``ids`` (a value or a tuple holding it);
        return the IDs that were cached."""
        wanted = set(ids)
        dropped: set[str] = set()
        for key, (_, value) in list(self._entries.items()):
            held = set(value) if isinstance(value, tuple) else {value}
            hit = held & wanted
            if hit:
                dropped |= hit
                del self._entries[key]
        return sorted(dropped)

    async def resolve(self, key: Hashable, load: Callable[[], Awaitable[T]], field: str = "") -> T:
        """The cached value of ``key``, else what ``load`` finds, cached; a load already
        under way for ``key`` is waited for, not repeated. Before, each reconcile that
        missed the cache looked the name up itself: 15 lookups of the network (a GET by
        ID that 404s, then a listing by name) when a 100-VM group started. A failed load
        fails every caller waiting for it and caches nothing. Loads are shared per
        ``field`` too, so an error names the caller's own field."""
        cached = self.get(key)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        flight = (key, field)
        future = self._loading.get(flight)
        if future is None:
            future = asyncio.ensure_future(self._load(flight, load))
            future.add_done_callback(_retrieved)
            self._loading[flight] = future
        # A caller cancelled (its reconcile timed out) does not cancel the others' load.
        return await asyncio.shield(future)  # type: ignore[no-any-return]

    async def _load(self, flight: tuple[Hashable, str], load: Callable[[], Awaitable[T]]) -> T:
        try:
            value = await load()
            self.put(flight[0], value)
            return value
        finally:
            self._loading.pop(flight, None)


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Mark a failed load's error as seen: its callers may all have been cancelled."""
    if not future.cancelled():
        future.exception()
