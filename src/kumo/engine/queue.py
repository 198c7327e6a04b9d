"""A de-duplicating, delaying work queue of object keys (like client-go's workqueue).

Guarantees a key is processed by one worker at a time; a key added while it is
being processed is processed again afterwards (with the newest state), and adding
a key that is already waiting only ever moves it earlier.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import Hashable


class WorkQueue:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Hashable]] = []
        self._due: dict[Hashable, float] = {}
        self._processing: set[Hashable] = set()
        self._again: dict[Hashable, float] = {}
        self._seq = itertools.count()
        self._wakeup = asyncio.Event()

    def __len__(self) -> int:
        return len(self._due) + len(self._again)

    def add(self, key: Hashable, after: float = 0.0) -> None:
        """Schedule ``key`` in ``after`` seconds (or earlier if already scheduled earlier)."""
        when = time.monotonic() + max(after, 0.0)
        if key in self._processing:
            self._again[key] = min(when, self._again.get(key, when))
            return
        if key in self._due and self._due[key] <= when:
            return
        self._due[key] = when
        heapq.heappush(self._heap, (when, next(self._seq), key))
        self._wakeup.set()

    async def get(self) -> Hashable:
        """Wait for the next due key and mark it as processing."""
        while True:
            while self._heap:
                when, _, key = self._heap[0]
                if self._due.get(key) != when:  # superseded entry
                    heapq.heappop(self._heap)
                    continue
                delay = when - time.monotonic()
                if delay > 0:
                    break
                heapq.heappop(self._heap)
                del self._due[key]
                self._processing.add(key)
                return key
            self._wakeup.clear()
            timeout = (self._heap[0][0] - time.monotonic()) if self._heap else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)

    def release_all(self) -> None:
        """Workers were cancelled mid-key (leadership lost): every key they held is
        due again, so whoever works next picks it up."""
        for key in list(self._processing):
            self.done(key)
            self.add(key)

    def done(self, key: Hashable) -> None:
        """Release ``key``; if it was added meanwhile, schedule it again."""
        self._processing.discard(key)
        if key in self._again:
            when = self._again.pop(key)
            self.add(key, after=when - time.monotonic())
