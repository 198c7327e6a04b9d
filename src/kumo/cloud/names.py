"""The name → ID cache of one cloud (images, flavors, networks, zones, LB flavors).

Names rarely move, so lookups are cached; but an image is rotated (a new image takes
the name, the old one is deleted) and a zone is re-created, so entries expire after
``NAME_CACHE_TTL`` and an ID the cloud says is gone is forgotten at once
(:meth:`NameCache.forget_ids`), instead of breaking every create until a restart.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable
from typing import Any

#: Seconds a resolved name is trusted.
NAME_CACHE_TTL = 300.0


class NameCache:
    def __init__(
        self, ttl: float = NAME_CACHE_TTL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self._clock = clock
        self._entries: dict[Hashable, tuple[float, Any]] = {}

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
