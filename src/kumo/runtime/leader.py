"""Leader election through a ``coordination.k8s.io/v1`` Lease: one active writer.

Two Kumo processes against one API server (two Deployment replicas, a rollout, a local
``kumo run`` beside the in-cluster one) would both reconcile, and adoption by marker
cannot close the list-then-create race between two writers. So only the holder of one
Lease reconciles; the others keep their caches warm and wait as standby.

Why the Lease API directly and not kopf's peering: a Lease is what every Kubernetes
controller uses (``kubectl get lease -n kumo-system`` shows the holder), needs no extra
CRD, and has a fencing rule we control — the leader stops writing when it has not
renewed for ``renew_deadline``, strictly before any standby may take over
(``lease_seconds`` after it last *observed* a renewal, measured on its own clock, so
clock skew between machines does not matter). kopf's peering pauses by priority and
resumes cooperatively, which does not give that guarantee.

The decision (:func:`next_record`) is a pure function; :class:`LeaderElector` runs it
against a :class:`LeaseAPI` (the real client in ``runtime/kube.py``, a fake in tests).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol

from kumo.engine.errors import ReconcileError

log = logging.getLogger("kumo.leader")


@dataclass(frozen=True)
class LeaseRecord:
    """The fields of a Lease's spec that election reads and writes."""

    holder: str = ""
    lease_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    transitions: int = 0
    resource_version: str | None = None  # of the object this record was read from

    def same_as(self, other: LeaseRecord | None) -> bool:
        """Whether nothing a holder changes on renewal differs (ignores resourceVersion)."""
        return other is not None and replace(self, resource_version=None) == replace(
            other, resource_version=None
        )


class LeaseAPI(Protocol):
    async def get_lease(self) -> LeaseRecord | None: ...

    async def create_lease(self, record: LeaseRecord) -> LeaseRecord: ...

    async def update_lease(self, record: LeaseRecord) -> LeaseRecord: ...


def micro_time(at: datetime | None = None) -> str:
    """Kubernetes MicroTime: RFC 3339 in UTC with microseconds."""
    return (at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def next_record(
    current: LeaseRecord | None,
    identity: str,
    lease_seconds: int,
    *,
    observed_for: float,
    now: str,
) -> LeaseRecord | None:
    """The record to write to become or stay leader, or None when another holds the lease.

    ``observed_for`` is how long (on this process's clock) ``current`` has been seen
    unchanged: another holder's lease has expired once that exceeds its duration.
    """
    if current is None:
        return LeaseRecord(identity, lease_seconds, now, now, 0)
    held_by_other = current.holder not in ("", identity)
    if held_by_other and observed_for < current.lease_seconds:
        return None
    if current.holder == identity:
        return replace(current, lease_seconds=lease_seconds, renew_time=now)
    return replace(
        current,
        holder=identity,
        lease_seconds=lease_seconds,
        acquire_time=now,
        renew_time=now,
        transitions=current.transitions + 1,
    )


Callback = Callable[[], Awaitable[None]]


class LeaderElector:
    """Acquire, renew and release one Lease; call back when leadership starts and ends.

    Timing (defaults): a standby retries every ``retry_seconds``; a leader renews every
    ``renew_seconds`` and gives up after ``renew_deadline`` without a successful renewal,
    which is shorter than ``lease_seconds`` so it has stopped before anyone else starts.
    A killed leader is replaced within ``lease_seconds + retry_seconds``; one that
    releases on shutdown within ``retry_seconds``.
    """

    def __init__(
        self,
        api: LeaseAPI,
        identity: str,
        *,
        lease_seconds: int = 10,
        renew_seconds: float = 2.0,
        renew_deadline: float = 7.0,
        retry_seconds: float = 2.0,
    ) -> None:
        if not renew_seconds < renew_deadline < lease_seconds:
            raise ValueError("need renew_seconds < renew_deadline < lease_seconds")
        self.api = api
        self.identity = identity
        self.lease_seconds = lease_seconds
        self.renew_seconds = renew_seconds
        self.renew_deadline = renew_deadline
        self.retry_seconds = retry_seconds
        self.leading = False
        self.holder: str | None = None  # as last read
        self.last_contact = -1e9  # monotonic time of the last successful lease read/write
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0

    @property
    def healthy(self) -> bool:
        """Whether the lease was read or written recently: a standby that can take over."""
        return time.monotonic() - self.last_contact < self.lease_seconds

    async def try_acquire_or_renew(self) -> bool:
        """One attempt, bounded in time; any failure (API down, hung, 409) is a "no"."""
        try:
            async with asyncio.timeout(self.renew_deadline - self.renew_seconds):
                return await self._attempt()
        except ReconcileError as error:  # 409: someone else wrote first; 5xx: try again
            level = logging.DEBUG if error.reason == "KubernetesConflict" else logging.WARNING
            log.log(level, "lease: %s", error)
        except Exception as error:  # connection refused, timeout, …: the API is not there
            log.warning("lease: %s: %s", type(error).__name__, error)
        return False

    async def _attempt(self) -> bool:
        """Read the lease, decide, write: True when this process holds it now."""
        current = await self.api.get_lease()
        now = time.monotonic()
        self.last_contact = now
        if current is None or not current.same_as(self._observed):
            self._observed, self._observed_at = current, now
        self.holder = current.holder if current else None
        wanted = next_record(
            current,
            self.identity,
            self.lease_seconds,
            observed_for=now - self._observed_at,
            now=micro_time(),
        )
        if wanted is None:
            return False
        if current is None:
            written = await self.api.create_lease(wanted)
        else:
            written = await self.api.update_lease(wanted)
        self._observed, self._observed_at = written, time.monotonic()
        self.last_contact = self._observed_at
        self.holder = self.identity
        return True

    async def run(self, on_started: Callback, on_stopped: Callback) -> None:
        """Wait as standby until this process holds the lease, lead until it is lost."""
        while not await self.try_acquire_or_renew():
            await asyncio.sleep(self.retry_seconds * random.uniform(1.0, 1.2))
        self.leading = True
        log.info("became leader (lease holder %s)", self.identity)
        await on_started()
        last_renewal = time.monotonic()
        while True:
            await asyncio.sleep(self.renew_seconds)
            if await self.try_acquire_or_renew():
                last_renewal = time.monotonic()
            elif time.monotonic() - last_renewal > self.renew_deadline or self.holder not in (
                None,
                self.identity,
            ):
                break
        self.leading = False
        log.error("lost leadership (holder now %s): stopping", self.holder)
        await on_stopped()

    async def release(self) -> None:
        """Give the lease up at once (graceful shutdown): a standby takes over immediately."""
        if not self.leading:
            return
        self.leading = False
        try:
            async with asyncio.timeout(self.renew_deadline - self.renew_seconds):
                current = await self.api.get_lease()
                if current is not None and current.holder == self.identity:
                    await self.api.update_lease(
                        replace(current, holder="", lease_seconds=1, renew_time=micro_time())
                    )
                    log.info("released the lease")
        except Exception as error:  # best effort: the lease then simply expires
            log.warning("could not release the lease: %s: %s", type(error).__name__, error)
