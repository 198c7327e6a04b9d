"""A token bucket per cloud, so a fleet of reconciles never floods one API.

``rate`` calls per second on average; after a quiet spell at most ``burst`` calls go at
once. Waiters are served one at a time, in order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

#: Float slack: a token short by rounding (0.9999999999) counts as a token, instead of a
#: sleep too short to move the clock.
SLACK = 1e-9


class TokenBucket:
    def __init__(
        self,
        rate: float,
        burst: int | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.rate = rate
        self.capacity = float(burst or max(1, int(rate)))
        self.tokens = self.capacity
        self._clock = clock
        self._sleep = sleep
        self.stamp = clock()
        self._lock = asyncio.Lock()

    async def acquire(self) -> bool:
        """Take one token, waiting until one has accrued; whether it had to wait."""
        waited = self._lock.locked()
        async with self._lock:
            while True:
                now = self._clock()
                self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
                self.stamp = now
                if self.tokens >= 1 - SLACK:
                    self.tokens -= 1
                    return waited
                waited = True
                await self._sleep((1 - self.tokens) / self.rate)
