"""Leader election: the pure decision, and electors racing over one in-memory Lease."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest

from kumo.engine.errors import TransientError
from kumo.runtime.leader import LeaderElector, LeaseRecord, next_record
from tests.unit.waiting import until

NOW = "2026-11-22T10:00:00.000000Z"


class FakeLeaseAPI:
    """One Lease with the API server's optimistic concurrency (409 on a stale version)."""

    def __init__(self) -> None:
        self.record: LeaseRecord | None = None
        self.version = 0
        self.down = False
        self.unreachable: BaseException | None = None  # raised as is: not a ReconcileError
        self.hang = False
        self.writes: list[str] = []  # holders written, in order
        self.written_at: list[float] = []  # time.monotonic() of each write, as the electors
        self.reads = 0

    async def _check(self) -> None:
        if self.down:
            raise TransientError("KubernetesConflict", "503 from the API server")
        if self.unreachable is not None:
            raise self.unreachable
        if self.hang:
            await asyncio.Event().wait()  # an API server that accepts and never answers

    def _store(self, record: LeaseRecord) -> LeaseRecord:
        self.version += 1
        self.record = replace(record, resource_version=str(self.version))
        self.writes.append(record.holder)
        self.written_at.append(time.monotonic())
        return self.record

    async def get_lease(self) -> LeaseRecord | None:
        await self._check()
        self.reads += 1
        return self.record

    async def create_lease(self, record: LeaseRecord) -> LeaseRecord:
        await self._check()
        if self.record is not None:
            raise TransientError("KubernetesConflict", "409 already exists")
        return self._store(record)

    async def update_lease(self, record: LeaseRecord) -> LeaseRecord:
        await self._check()
        assert self.record is not None
        if record.resource_version != self.record.resource_version:
            raise TransientError("KubernetesConflict", "409 stale resourceVersion")
        return self._store(record)


def fast(api: FakeLeaseAPI, identity: str) -> LeaderElector:
    return LeaderElector(
        api, identity, lease_seconds=1, renew_seconds=0.05, renew_deadline=0.4, retry_seconds=0.05
    )


def test_no_lease_is_created_for_us() -> None:
    wanted = next_record(None, "a", 10, observed_for=0, now=NOW)
    assert wanted == LeaseRecord("a", 10, NOW, NOW, 0)


def test_a_live_lease_of_another_is_respected() -> None:
    held = LeaseRecord("b", 10, NOW, NOW, 3, "7")
    assert next_record(held, "a", 10, observed_for=9.9, now=NOW) is None


def test_an_expired_lease_is_taken_over_with_a_transition() -> None:
    held = LeaseRecord("b", 10, NOW, NOW, 3, "7")
    wanted = next_record(held, "a", 10, observed_for=10.1, now="later")
    assert wanted is not None
    assert (wanted.holder, wanted.transitions, wanted.acquire_time, wanted.resource_version) == (
        "a",
        4,
        "later",
        "7",
    )


def test_a_released_lease_is_taken_at_once() -> None:
    released = LeaseRecord("", 1, NOW, NOW, 3, "8")
    wanted = next_record(released, "a", 10, observed_for=0, now=NOW)
    assert wanted is not None and wanted.holder == "a"


def test_own_lease_is_renewed_keeping_acquire_time() -> None:
    own = LeaseRecord("a", 10, "then", "then", 2, "9")
    wanted = next_record(own, "a", 10, observed_for=100, now=NOW)
    assert wanted == replace(own, renew_time=NOW)


async def _run(elector: LeaderElector, events: list[str]) -> None:
    async def started() -> None:
        events.append(f"{elector.identity} leads")

    async def stopped() -> None:
        events.append(f"{elector.identity} lost")

    await elector.run(started, stopped)


def test_one_leader_at_a_time_and_takeover_after_a_kill() -> None:
    async def scenario() -> list[str]:
        api, events = FakeLeaseAPI(), []
        a, b = fast(api, "a"), fast(api, "b")
        task_a = asyncio.create_task(_run(a, events))
        await until(lambda: a.leading, "a leads")
        task_b = asyncio.create_task(_run(b, events))
        await until(lambda: b.holder == "a", "b saw a lead")
        reads = api.reads  # a's renewals and b's retries alternate: b retried a few times
        await until(lambda: api.reads >= reads + 6, "b and a read the lease a few times")
        assert events == ["a leads"] and not b.leading and b.holder == "a"
        assert b.healthy, "a standby that reads the lease is healthy"
        task_a.cancel()  # kill -9: no release
        await asyncio.gather(task_a, return_exceptions=True)
        last_renewal = api.written_at[-1]
        await until(lambda: b.leading, "b takes over")
        assert api.writes[-2:] == ["a", "b"], "taken over from a, not released by it"
        # b counts the lease's time from when it saw a's last renewal, which is after a
        # wrote it: never before the lease (1 s) expired, however late b looked.
        assert api.written_at[-1] - last_renewal >= 1.0 - 1e-6, "never before the lease expired"
        task_b.cancel()
        return events

    assert asyncio.run(scenario()) == ["a leads", "b leads"]


def test_release_hands_over_within_a_retry() -> None:
    async def scenario() -> float:
        api, events = FakeLeaseAPI(), []
        a, b = fast(api, "a"), fast(api, "b")
        task_a = asyncio.create_task(_run(a, events))
        await until(lambda: a.leading, "a leads")
        task_b = asyncio.create_task(_run(b, events))
        await until(lambda: b.holder == "a", "b saw a lead")
        task_a.cancel()  # SIGTERM: a stops leading, then gives the lease up
        await asyncio.gather(task_a, return_exceptions=True)
        assert a.leading, "still the holder: what release() is for"
        await a.release()
        assert not a.leading and api.writes[-1] == "", "a wrote the lease released"
        released = api.written_at[-1]
        await until(lambda: b.leading, "b takes the released lease")
        task_b.cancel()
        assert api.record is not None and api.record.holder == "b"
        assert api.writes[-2:] == ["", "b"], "b took the lease a released, not an expired one"
        return api.written_at[-1] - released

    assert asyncio.run(scenario()) < 0.5, "within a retry (0.05 s), not the lease time (1 s)"


def test_leader_that_cannot_renew_stops_before_the_lease_expires() -> None:
    async def scenario() -> tuple[list[str], float]:
        api, events = FakeLeaseAPI(), []
        a = fast(api, "a")
        task = asyncio.create_task(_run(a, events))
        await until(lambda: a.leading, "a leads")
        api.down = True
        await asyncio.wait_for(task, 2)
        return events, time.monotonic() - api.written_at[-1]

    events, after = asyncio.run(scenario())
    assert events == ["a leads", "a lost"]
    # A standby may take over 1 s (the lease) after it saw a's last renewal, never sooner.
    assert after < 1.0, "stopped within the renew deadline, before anyone may take over"


def test_lease_timings_must_fence() -> None:
    with pytest.raises(ValueError):
        LeaderElector(FakeLeaseAPI(), "a", lease_seconds=5, renew_seconds=2, renew_deadline=6)


@pytest.mark.parametrize("outage", ["refused", "hung"])
def test_leader_stops_when_the_api_server_is_gone_or_hangs(outage: str) -> None:
    """Not a ReconcileError: a refused connection or a request that never returns must
    fence the leader just the same (found by the chaos suite's API-server outage)."""

    async def scenario() -> list[str]:
        api, events = FakeLeaseAPI(), []
        a = fast(api, "a")
        task = asyncio.create_task(_run(a, events))
        await until(lambda: a.leading, "a leads")
        if outage == "refused":
            api.unreachable = ConnectionRefusedError("connect call failed")
        else:
            api.hang = True
        await asyncio.wait_for(task, 2)
        return events

    assert asyncio.run(scenario()) == ["a leads", "a lost"]
