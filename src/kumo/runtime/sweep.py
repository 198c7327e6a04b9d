"""The orphan sweep, run by the leader: resources carrying the marker of an object the
API server does not have are reported (metric, event, log) and, after a grace period,
deleted — never data (volumes, snapshots, shares, floating IPs) unless the operator
names the kind. The decisions are :mod:`kumo.engine.sweep`'s; this module lists,
confirms and acts.

Why: a resource whose object went away without Kumo's finalizer (deleted before the first
pass added it, a finalizer removed by hand) has nothing left to delete it. The cloud
watch already lists every marked resource, so finding them costs no API call; only a
deletion costs one, plus one fresh list per kind from the API server to confirm that
the owners really are gone (the informer cache could lag).

Each term of leadership starts from nothing: the sweep forgets its clocks when
leadership is lost, and after it is gained judges a project only once its watch has
listed every service in full since (:meth:`CloudWatch.synced_since`) — a cache kept
from an earlier term may hold resources that went, or miss their owners' new ones.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from kumo.api.kinds import KindInfo
from kumo.engine.sweep import GRACE_SECONDS, MAX_ORPHANS, OrphanKept, OrphanSweep, Verdict
from kumo.ports.model import Marked
from kumo.runtime import metrics, orphans

log = logging.getLogger("kumo.sweep")

Mode = Literal["delete", "report", "off"]


@dataclass(frozen=True)
class SweepOptions:
    mode: Mode = "delete"
    interval: float = 60.0
    grace: float = GRACE_SECONDS
    #: Data kinds (``engine.sweep.DATA_KINDS``) the sweep may delete: none by default.
    delete_data: frozenset[str] = frozenset()
    #: The circuit breaker's absolute count: more orphans than this in one project.
    max_orphans: int = MAX_ORPHANS


@dataclass
class Target:
    """One project's cloud, as its watch lists it, and the namespaces that use it (where
    the sweep's events go: the owner is gone, so they cannot go on it)."""

    cloud: Any
    namespaces: set[str] = field(default_factory=set)
    sweep: OrphanSweep = field(default_factory=OrphanSweep)
    reported: set[tuple[str, str]] = field(default_factory=set)
    kept: set[tuple[str, str]] = field(default_factory=set)  # OrphanKept reported
    suspended: str | None = None


class Sweeper:
    def __init__(
        self,
        kube: Any,
        kinds: Iterable[KindInfo],
        live_uids: Callable[[], set[str]],
        options: SweepOptions,
        namespace: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube
        self.kinds = list(kinds)
        self.live_uids = live_uids
        self.options = options
        #: A namespaced operator sees only its namespace's objects: the owners of what it
        #: finds may live elsewhere, so it reports and never deletes.
        self.namespace = namespace
        #: The watches' clock (the event loop's is ``time.monotonic``): grace, and the
        #: moment leadership was gained, which :meth:`CloudWatch.synced_since` compares.
        self.clock = clock
        self.targets: dict[int, Target] = {}
        self._counted: set[tuple[str, str]] = set()  # (kind, kept) the gauge has a sample of
        #: When this term of leadership began (-inf: leading since before any listing).
        self.leading_since = float("-inf")

    def lead(self) -> None:
        """Leadership gained: judge nothing a watch listed before now."""
        self.step_down()
        self.leading_since = self.clock()

    def step_down(self) -> None:
        """Leadership lost (or about to be regained): forget every clock and report; the
        metrics say nothing for a standby."""
        self.targets.clear()
        for kind, kept in self._counted:
            metrics.ORPHANS.labels(kind, kept).set(0)
        self._counted = set()
        metrics.ORPHAN_SWEEP_SUSPENDED.set(0)

    def watching(self, cloud: Any, namespace: str) -> None:
        """A reconcile in ``namespace`` uses ``cloud`` (whose watch runs)."""
        watch = getattr(cloud, "watch", None)
        if watch is None or not hasattr(watch, "marked"):
            return
        target = self.targets.get(id(watch))
        if target is None:
            target = self.targets[id(watch)] = Target(cloud)
            target.sweep.delete_data = self.options.delete_data
            target.sweep.max_orphans = self.options.max_orphans
        target.sweep.grace = self.options.grace
        target.namespaces.add(namespace)

    def forget(self, watch: Any) -> None:
        self.targets.pop(id(watch), None)

    async def run(self) -> None:
        if self.options.mode == "off":
            return
        while True:
            await asyncio.sleep(self.options.interval)  # a period, not a synchronisation
            try:
                await self.sweep_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("orphan sweep failed (next one in %.0fs)", self.options.interval)

    async def sweep_once(self) -> None:
        """Judge every project whose watch has listed in full this term; confirm with
        the API server before any delete."""
        verdicts: list[tuple[Target, Verdict]] = []
        live = self.live_uids()
        for target in list(self.targets.values()):
            watch = target.cloud.watch
            if not watch.synced_since(self.leading_since):
                log.debug("orphan sweep: a project waits for its watch's first full listing")
                continue
            verdicts.append((target, target.sweep.judge(watch.marked(), live, self.clock())))
        if verdicts:
            metrics.ORPHAN_SWEEPS.inc()
        counts: dict[tuple[str, str], int] = {}
        for _, verdict in verdicts:
            for m in verdict.orphaned:
                key = (m.kind, "true" if self._keeps(m, verdict) else "false")
                counts[key] = counts.get(key, 0) + 1
        for key in set(counts) | self._counted:
            metrics.ORPHANS.labels(*key).set(counts.get(key, 0))
        self._counted = set(counts)
        if any(v.delete for _, v in verdicts) and self._deleting():
            live = live | await self._listed_uids()
        # One gauge for every project: set once from all of them (per project, the last
        # project judged would overwrite a suspension found in another).
        metrics.ORPHAN_SWEEP_SUSPENDED.set(int(any(v.suspended for _, v in verdicts)))
        for target, verdict in verdicts:
            await self._act(target, verdict, live)

    async def _act(self, target: Target, verdict: Verdict, live: set[str]) -> None:
        for m in verdict.orphaned:
            if (m.kind, m.id) not in target.reported:
                target.reported.add((m.kind, m.id))
                await self._event(
                    target,
                    "Warning",
                    "OrphanFound",
                    f"{m.kind} {m.id} ({_short(m.name)}) carries the marker of object uid "
                    f"{m.owner}, which the API server does not have: "
                    f"{self._fate(m, verdict)}.\n{orphans.remedy(m)}",
                )
        found = {(m.kind, m.id) for m in verdict.orphaned}
        target.reported &= found
        target.kept &= found
        if verdict.suspended != target.suspended:
            target.suspended = verdict.suspended
            if verdict.suspended:
                await self._event(target, "Warning", "OrphanSweepSuspended", verdict.suspended)
        if not self._deleting():
            return
        for m in verdict.delete:
            if m.owner in live:  # the fresh list found its object after all
                target.sweep.forget(m)
                continue
            try:
                await target.cloud.watch.delete_marked(m)
            except OrphanKept as kept:  # partly Kumo's: what is not stays, reported once
                if (m.kind, m.id) not in target.kept:
                    target.kept.add((m.kind, m.id))
                    await self._event(target, "Warning", "OrphanKept", str(kept))
                continue
            except Exception as error:  # e.g. a security group ports still use: next time
                log.warning("could not delete orphaned %s %s: %s", m.kind, m.id, error)
                continue
            target.sweep.forget(m)
            metrics.ORPHANS_DELETED.labels(m.kind).inc()
            await self._event(
                target,
                "Normal",
                "OrphanDeleted",
                f"deleted {m.kind} {m.id} ({m.name}): its object (uid {m.owner}) has been gone "
                f"for over {int(self.options.grace)}s",
            )

    def _deleting(self) -> bool:
        """Does this sweep delete at all (not report-only, not a namespaced operator)?"""
        return self.options.mode == "delete" and self.namespace is None

    def _keeps(self, m: Marked, verdict: Verdict) -> bool:
        """Will the sweep never delete ``m`` as it is set up (not: not yet)?"""
        return not self._deleting() or m in verdict.kept

    def _fate(self, m: Marked, verdict: Verdict) -> str:
        if not self._deleting():
            return "reported only (the sweep does not delete here)"
        if m in verdict.kept:
            return (
                f"kept, never deleted by the sweep: a {m.kind} may hold data "
                f"(--orphan-sweep-data {m.kind} lets the sweep delete it)"
            )
        if m.in_use:
            return "kept while servers are in it"
        if verdict.suspended:
            return "kept while the sweep is suspended (see OrphanSweepSuspended)"
        return f"it is deleted after {int(self.options.grace)}s"

    async def _listed_uids(self) -> set[str]:
        """Every object's UID, read from the API server now (not the informer cache)."""
        uids: set[str] = set()
        for info in self.kinds:
            for body in await self.kube.list(info, self.namespace):
                uids.add(body["metadata"]["uid"])
        return uids

    async def _event(self, target: Target, type_: str, reason: str, message: str) -> None:
        log.log(logging.WARNING if type_ == "Warning" else logging.INFO, "%s: %s", reason, message)
        for namespace in sorted(target.namespaces):
            try:
                await self.kube.post_namespace_event(namespace, type_, reason, message)
            except Exception as error:  # events are best effort
                log.warning("could not post event in %s: %s", namespace, error)


def _short(name: str, limit: int = 80) -> str:
    """A name cut to fit an event (the API server keeps 1,000 characters of a message,
    and the commands come after it)."""
    return name if len(name) <= limit else f"{name[: limit - 1]}…"
