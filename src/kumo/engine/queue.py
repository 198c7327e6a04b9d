"""A de-duplicating, delaying work queue of object keys (like client-go's workqueue).

Guarantees a key is processed by one worker at a time; a key added while it is
being processed is processed again afterwards (with the newest state), and adding
a key that is already waiting only ever moves it earlier. An urgent key (an object
being deleted) goes before every key that is not: a deletion never waits behind a
thousand creates.

Time is the queue's ``clock`` (``time.monotonic``, the event loop's, unless one is given):
a test or the in-memory bench passes a clock it moves itself, so due times are exact. A
getter already waiting notices a moved clock at its next wake-up (an ``add`` or its
timeout); one called after the move sees it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import Callable, Hashable


class WorkQueue:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        #: Seconds on a monotonic scale: every due time is on it.
        self.clock = clock
        #: Two heaps of (due time, seq, key): [0] urgent keys, [1] the rest. A due urgent
        #: key is handed out before any other due key.
        self._heaps: tuple[list[tuple[float, int, Hashable]], ...] = ([], [])
        self._due: dict[Hashable, tuple[float, bool]] = {}
        self._processing: set[Hashable] = set()
        self._again: dict[Hashable, tuple[float, bool]] = {}
        self._seq = itertools.count()
        self._wakeup = asyncio.Event()

    def __len__(self) -> int:
        return len(self._due) + len(self._again)

    def add(
        self, key: Hashable, after: float = 0.0, urgent: bool = False, within: float = 0.0
    ) -> None:
        """Schedule ``key`` in ``after`` seconds (or earlier if already scheduled earlier);
        ``urgent``: once due, ahead of every due key that is not urgent; ``within``: a
        key already scheduled no later than that many seconds after ``after`` stays as
        it is (the pass it has coming will see this change too)."""
        when = self.clock() + max(after, 0.0)
        if within > 0:
            old = self._again.get(key) if key in self._processing else self._due.get(key)
            if old is not None and old[0] <= when + within and (old[1] or not urgent):
                return
        if key in self._processing:
            old = self._again.get(key)
            self._again[key] = _better((when, urgent), old)
            return
        old = self._due.get(key)
        best = _better((when, urgent), old)
        if best == old:
            return
        self._due[key] = best
        heapq.heappush(self._heaps[0 if best[1] else 1], (best[0], next(self._seq), key))
        self._wakeup.set()

    def next_due(self) -> float | None:
        """When the earliest waiting key is due (on :attr:`clock`), or None: nothing
        waits. (The in-memory bench moves its clock there.)"""
        tops = []
        for urgent, heap in zip((True, False), self._heaps, strict=True):
            while heap and self._due.get(heap[0][2]) != (heap[0][0], urgent):
                heapq.heappop(heap)  # superseded entry
            if heap:
                tops.append(heap[0][0])
        return min(tops, default=None)

    def backlog(self, now: float | None = None) -> tuple[int, float]:
        """How many keys are due (waiting for a worker, or to go again once their pass
        ends) and how long the earliest of them has been due, in seconds (0: none)."""
        now = self.clock() if now is None else now
        due = [when for when, _ in (*self._due.values(), *self._again.values()) if when <= now]
        return len(due), (now - min(due)) if due else 0.0

    async def get(self) -> Hashable:
        """Wait for the next due key and mark it as processing."""
        while True:
            now = self.clock()
            for urgent, heap in zip((True, False), self._heaps, strict=True):
                while heap and self._due.get(heap[0][2]) != (heap[0][0], urgent):
                    heapq.heappop(heap)  # superseded entry
                if heap and heap[0][0] <= now:
                    _, _, key = heapq.heappop(heap)
                    del self._due[key]
                    self._processing.add(key)
                    return key
            self._wakeup.clear()
            tops = [heap[0][0] for heap in self._heaps if heap]
            timeout = (min(tops) - now) if tops else None
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
            when, urgent = self._again.pop(key)
            self.add(key, after=when - self.clock(), urgent=urgent)


def _better(new: tuple[float, bool], old: tuple[float, bool] | None) -> tuple[float, bool]:
    """Merge two schedules of one key: the earlier time, urgent if either was."""
    if old is None:
        return new
    return (min(new[0], old[0]), new[1] or old[1])
