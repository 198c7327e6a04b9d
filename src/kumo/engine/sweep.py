"""The orphan sweep's decisions: which marked cloud resources have lost their object,
which of those to report, and which to delete.

A resource carrying ``kumo-owner=<uid>`` whose UID no object in the cluster has is a
leak: its object went away without Kumo's finalizer running (deleted before the first
pass added it, or a finalizer removed by hand). Nothing else would ever delete it.

Deletion is the dangerous half, so it is hedged three ways:

* **grace**: a resource is deleted only after it was seen orphaned for ``grace``
  seconds without a break (an object being restored, a cache catching up);
* **circuit breaker**: when more than ``max_share`` of a project's marked resources (and
  more than ``min_suspend`` of them) look orphaned at once, nothing is deleted and the
  sweep says why: that is a missing informer, a wrong cluster or a restore, not leaks;
* **never what is released**: ``deletionPolicy: Orphan`` swaps the marker for the orphan
  mark (:mod:`kumo.ports.model`), so a released resource is not listed here at all; a
  server group still holding servers is reported, not deleted.

Pure: the runtime lists, confirms the UIDs against the API server and acts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kumo.ports.model import Marked

#: Seconds a resource must stay orphaned before it is deleted.
GRACE_SECONDS = 600.0
#: The circuit breaker: this share of a project's marked resources orphaned at once …
MAX_SHARE = 0.5
#: … and more than this many of them.
MIN_SUSPEND = 5


@dataclass(frozen=True)
class Verdict:
    """One sweep's findings for one project."""

    orphaned: list[Marked]  # every marked resource whose owner is not a live object
    delete: list[Marked]  # of those, what to delete now
    suspended: str | None = None  # why nothing is deleted this time, if so


@dataclass
class OrphanSweep:
    """Remembers since when each resource has looked orphaned (per project)."""

    grace: float = GRACE_SECONDS
    max_share: float = MAX_SHARE
    min_suspend: int = MIN_SUSPEND
    since: dict[tuple[str, str], float] = field(default_factory=dict)

    def judge(self, marked: Iterable[Marked], live_uids: set[str], now: float) -> Verdict:
        listed = list(marked)
        orphaned = sorted(
            (m for m in listed if m.owner not in live_uids), key=lambda m: (m.kind, m.id)
        )
        keys = {(m.kind, m.id) for m in orphaned}
        self.since = {k: t for k, t in self.since.items() if k in keys}
        for key in keys:
            self.since.setdefault(key, now)
        if len(orphaned) > self.min_suspend and len(orphaned) > self.max_share * len(listed):
            why = (
                f"{len(orphaned)} of {len(listed)} marked resources have no object: that looks "
                "like a missing watch, another cluster sharing the project or a restore, not "
                "like leaks; nothing is deleted until it falls"
            )
            return Verdict(orphaned, [], why)
        due = [
            m
            for m in orphaned
            if now - self.since[(m.kind, m.id)] >= self.grace and not m.busy and not m.in_use
        ]
        return Verdict(orphaned, due)

    def forget(self, resource: Marked) -> None:
        self.since.pop((resource.kind, resource.id), None)
