"""The work queue: de-duplication, delays, one worker per key. Its clock is the test's
(:class:`ManualClock`): due times are asserted exactly, and time passes only when the
test moves it."""

from __future__ import annotations

import asyncio

from kumo.engine.queue import WorkQueue
from tests.unit.waiting import ManualClock, until


async def _get(queue: WorkQueue, timeout: float = 1.0) -> object:
    return await asyncio.wait_for(queue.get(), timeout)


async def _waiting(queue: WorkQueue) -> None:
    """Until a getter has looked at the queue, found nothing due and gone to wait (it
    clears the wake-up that every add sets)."""
    await until(lambda: not queue._wakeup.is_set(), "the getter found nothing and waits")


def test_duplicates_collapse_and_order_is_by_due_time() -> None:
    async def scenario() -> None:
        clock = ManualClock()
        queue = WorkQueue(clock=clock)
        queue.add("b", after=0.05)
        queue.add("a")
        queue.add("a")
        queue.add("b", after=10)  # later add never postpones
        assert len(queue) == 2
        assert await _get(queue) == "a"
        assert queue.next_due() == clock.now + 0.05
        clock.advance(0.05)
        assert await _get(queue) == "b"

    asyncio.run(scenario())


def test_key_added_while_processing_runs_again_after_done() -> None:
    async def scenario() -> None:
        queue = WorkQueue(clock=ManualClock())
        queue.add("a")
        assert await _get(queue) == "a"
        queue.add("a")
        assert len(queue) == 1
        getter = asyncio.ensure_future(queue.get())
        await _waiting(queue)
        assert not getter.done(), "a key being processed must not be handed out twice"
        queue.done("a")
        assert await asyncio.wait_for(getter, 1.0) == "a"

    asyncio.run(scenario())


def test_a_key_added_while_processing_keeps_its_delay_after_done() -> None:
    clock = ManualClock()
    queue = WorkQueue(clock=clock)
    queue.add("a")
    assert asyncio.run(_get(queue)) == "a"
    queue.add("a", after=3.0)
    clock.advance(1.0)
    queue.done("a")
    assert queue.next_due() == clock.now + 2.0, "due when it was asked for, not later"


def test_delayed_key_is_not_handed_out_early() -> None:
    async def scenario() -> None:
        clock = ManualClock()
        queue = WorkQueue(clock=clock)
        queue.add("late", after=5)
        clock.advance(4.5)
        assert queue.next_due() == clock.now + 0.5
        getter = asyncio.ensure_future(queue.get())
        await _waiting(queue)
        assert not getter.done(), "delayed key was handed out early"
        clock.advance(0.5)  # the getter looks again when its 0.5 s (real) wait ends
        assert await asyncio.wait_for(getter, 2.0) == "late"

    asyncio.run(scenario())


def test_an_urgent_key_goes_before_every_due_key_that_is_not() -> None:
    """An object being deleted must not wait behind a thousand queued creates; once it
    asks to be looked at again later, that delay still holds."""

    async def scenario() -> None:
        clock = ManualClock()
        queue = WorkQueue(clock=clock)
        for i in range(100):
            queue.add(f"create-{i}")
        queue.add("delete-group", urgent=True)
        queue.add("create-0", urgent=False)  # a plain add never demotes or promotes others
        assert await _get(queue) == "delete-group"
        assert await _get(queue) == "create-0"
        queue.done("delete-group")
        queue.add("delete-group", after=0.05, urgent=True)  # waiting for the cloud
        assert await _get(queue) == "create-1", "not before its delay"
        clock.advance(0.05)  # the delay passes
        assert await _get(queue) == "delete-group", "then ahead of the 98 due creates"
        queue.add("create-50", urgent=True)  # a key already queued becomes urgent
        assert await _get(queue) == "create-50"

    asyncio.run(scenario())


def test_a_change_within_the_window_rides_on_the_pass_already_due() -> None:
    """A LoadBalancer due in 1 s (Octavia pending) is not pulled forward by each of its
    members' events: that pass sees them all. Outside the window, it is."""
    clock = ManualClock()
    queue = WorkQueue(clock=clock)
    queue.add("lb", after=0.8)
    queue.add("lb", within=1.0)
    assert queue.next_due() == clock.now + 0.8
    queue.add("lb", within=0.5)
    assert queue.next_due() == clock.now
    queue.add("vm", after=0.8)
    queue.add("vm", within=1.0, urgent=True)  # being deleted: never waits behind
    assert len(queue) == 2
    assert queue._due["vm"] == (clock.now, True)


def test_the_default_clock_is_monotonic_time() -> None:
    import time

    queue = WorkQueue()
    before = time.monotonic()
    queue.add("a", after=10.0)
    due = queue.next_due()
    assert due is not None and before + 10.0 <= due <= time.monotonic() + 10.0
