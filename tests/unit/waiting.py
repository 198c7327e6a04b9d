"""Waiting on a condition, never for a fixed time: a test that sleeps guesses how long
the code under test takes, and then passes or fails by the machine's load."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(condition: Callable[[], object], what: str, timeout: float = 5.0) -> None:
    """Poll ``condition`` (cheap, in memory) until true; fail naming ``what`` after ``timeout``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        await asyncio.sleep(0.005)


class ManualClock:
    """A monotonic clock that only the test moves (``WorkQueue(clock=...)``): due times
    are then exact, whatever the machine's load."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
