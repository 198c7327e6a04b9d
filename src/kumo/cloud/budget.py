"""BuildBudget: how many of Kumo's servers one cloud may have queued in Nova at once.

Nova takes a ``POST /servers`` in a second or so and builds it in its own time; a
client that creates a thousand servers at once leaves hundreds of them as *build
requests* waiting to be scheduled. Nova keeps those as serialized objects and every
``GET /servers/detail`` — even with ``changes-since`` — loads, filters and returns all
of them (``BuildRequestList.get_by_filters``), so each listing costs nova-api time in
proportion to the backlog, the scheduler and conductor fall behind, and the cloud
builds *slower* for being asked faster (measured on the lab: 944 creates in 11 min,
67 built). So Kumo keeps at most ``limit`` servers per cloud *queued* — accepted, not yet
on a host (``kumo run --max-queued-builds``; 0 = no limit) — and the rest of the VMs
wait, first come first served. Servers a compute is building are not counted: a limit
on all of ``BUILD`` held back a 100-VM group that the computes could have built at once
(on the lab, 229 s to converge where 100 creates at once took 155 s).

This class is the pure bookkeeping, with no clock of its own and no I/O: the caller
says how many servers the cloud watch sees queued. A VM that got a slot holds a
*reservation* until its create returned (the server is then in the watch's cache, in
``BUILD`` with no host); a reservation whose create never came (the reconcile adopted
instead, or crashed) lapses after ``hold`` seconds. A VM told to wait is queued; when
queued servers reach a host, :meth:`release` names the waiters that now fit, and the
watch enqueues them. A waiter that stops asking (its object deleted) lapses after
``hold``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

#: Default ``kumo run --max-queued-builds``: enough waiting to keep a few compute hosts
#: busy (Nova's ``max_concurrent_builds`` is 10 per host) without a backlog.
MAX_QUEUED_BUILDS = 50
#: Seconds a reservation or a queued waiter lasts without news.
HOLD_SECONDS = 120.0


class BuildBudget:
    def __init__(self, limit: int, clock: Callable[[], float], hold: float = HOLD_SECONDS) -> None:
        self.limit = limit
        self._clock = clock
        self._hold = hold
        self._reserved: dict[str, float] = {}  # owner UID → when the slot lapses
        self._waiting: OrderedDict[str, float] = OrderedDict()  # FIFO: UID → lapses at
        #: No entry lapses before this (the earliest lapse at the last scan: entries made
        #: since lapse later, ``hold`` after a later now), so most calls scan nothing.
        self._next_lapse = float("inf")

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def admit(self, uid: str, queued: int) -> bool:
        """May the object ``uid`` create its server now, with ``queued`` of the cloud's
        servers queued in Nova? If not, it waits (keeping its place if it already did)."""
        if self.limit <= 0:
            return True
        now = self._clock()
        self._lapse(now)
        if uid in self._reserved:
            return True
        free = self.limit - queued - len(self._reserved)
        # (A waiter's place is looked up only when a turn is free: while a fleet waits,
        # hundreds of waiters ask, and finding one's place is a scan of the queue.)
        if free > 0:
            ahead = list(self._waiting).index(uid) if uid in self._waiting else len(self._waiting)
            if ahead < free:
                self._waiting.pop(uid, None)
                self._reserved[uid] = until = now + self._hold
                self._next_lapse = min(self._next_lapse, until)
                return True
        self._waiting[uid] = until = now + self._hold  # asking again keeps one's place
        self._next_lapse = min(self._next_lapse, until)
        return False

    def withdraw(self, uid: str) -> None:
        """``uid`` no longer wants a turn (its object is being deleted): the waiters
        behind it move up now, not when its place lapses."""
        self._waiting.pop(uid, None)
        self._reserved.pop(uid, None)

    def created(self, uid: str) -> None:
        """``uid``'s create returned (or failed): the watch's cache counts it from now."""
        self._reserved.pop(uid, None)

    def release(self, queued: int) -> list[str]:
        """The waiters, first come first served, that fit with ``queued`` servers now
        queued: the caller looks at them again (they are admitted when they ask)."""
        if self.limit <= 0 or not self._waiting:
            return []
        self._lapse(self._clock())
        free = self.limit - queued - len(self._reserved)
        return list(self._waiting)[: max(free, 0)]

    def _lapse(self, now: float) -> None:
        if now < self._next_lapse:
            return
        for table in (self._reserved, self._waiting):
            for uid in [u for u, until in table.items() if until <= now]:
                del table[uid]
        self._next_lapse = min(
            (*self._reserved.values(), *self._waiting.values()), default=float("inf")
        )
