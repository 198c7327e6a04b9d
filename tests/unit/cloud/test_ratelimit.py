"""The token bucket honours its rate and its burst (on a fake clock: no real waiting)."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest

from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.ratelimit import TokenBucket


class FakeTime:
    """A clock that only moves when the bucket sleeps (or the test says so)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


def bucket(rate: float, burst: int | None = None) -> tuple[TokenBucket, FakeTime]:
    fake = FakeTime()
    return TokenBucket(rate, burst, clock=fake.clock, sleep=fake.sleep), fake


def take(b: TokenBucket, n: int) -> None:
    async def many() -> None:
        for _ in range(n):
            await b.acquire()

    asyncio.run(many())


def test_a_full_bucket_lets_the_burst_through_at_once() -> None:
    b, fake = bucket(rate=2.0, burst=3)
    take(b, 3)
    assert fake.sleeps == []
    take(b, 1)
    assert fake.sleeps == [pytest.approx(0.5)]


def test_beyond_the_burst_calls_go_at_the_rate() -> None:
    b, fake = bucket(rate=4.0, burst=2)
    take(b, 2 + 20)
    assert fake.now == pytest.approx(20 / 4.0)
    assert all(s == pytest.approx(0.25) for s in fake.sleeps)


def test_a_quiet_spell_refills_no_more_than_the_burst() -> None:
    b, fake = bucket(rate=10.0, burst=5)
    take(b, 5)
    fake.now += 3600.0
    take(b, 5)
    assert fake.sleeps == []
    take(b, 1)
    assert fake.sleeps == [pytest.approx(0.1)]


def test_a_partly_refilled_bucket_waits_only_for_the_rest() -> None:
    b, fake = bucket(rate=1.0, burst=1)
    take(b, 1)
    fake.now += 0.75
    take(b, 1)
    assert fake.sleeps == [pytest.approx(0.25)]


@pytest.mark.parametrize(("rate", "capacity"), [(20.0, 20.0), (0.5, 1.0), (3.7, 3.0)])
def test_default_burst_is_one_second_of_rate(rate: float, capacity: float) -> None:
    assert TokenBucket(rate).capacity == capacity


def test_concurrent_callers_share_the_rate() -> None:
    b, fake = bucket(rate=5.0, burst=1)

    async def crowd() -> list[float]:
        stamps: list[float] = []

        async def one() -> None:
            await b.acquire()
            stamps.append(fake.now)

        await asyncio.gather(*(one() for _ in range(6)))
        return stamps

    stamps = asyncio.run(crowd())
    assert stamps == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])


def test_real_clock_and_sleep_by_default() -> None:
    b = TokenBucket(rate=50.0, burst=1)
    started = time.monotonic()
    take(b, 3)
    # Two real waits of 0.02 s: at least that (the sleep is what is tested); the upper
    # bound only catches a unit slip (seconds for milliseconds), not a slow machine.
    assert 0.035 <= time.monotonic() - started < 2.0


@pytest.mark.parametrize(
    ("concurrency", "rate", "burst"), [(8, 20.0, 20.0), (8, 5.0, 8.0), (16, 0.5, 16.0)]
)
def test_each_cloud_bursts_to_its_concurrency_or_one_second_of_rate(
    concurrency: int, rate: float, burst: float
) -> None:
    conn = SimpleNamespace(config=SimpleNamespace(get_region_name=lambda: "tokyo1"))
    cloud = OpenStackCloud(conn, concurrency=concurrency, rate=rate)  # type: ignore[arg-type]
    assert (cloud._bucket.rate, cloud._bucket.capacity) == (rate, burst)
