"""The orphan sweep's decisions: which marked cloud resources have lost their object,
which of those to report, and which to delete.

A resource carrying ``kumo-owner=<uid>`` whose UID no object in the cluster has is a
leak: its object went away without Kumo's finalizer running (deleted before the first
pass added it, or a finalizer removed by hand). Nothing else would ever delete it.

Deletion is the dangerous half, so it is hedged four ways:

* **data is never swept** unless asked: a volume, snapshot, share or floating IP holds
  what Kumo cannot make again (data, an address others know). Its object may be gone
  for a reason the sweep cannot see (a finalizer removed by hand, an etcd restore, a
  re-create with new UIDs), so it is reported and kept, unless the operator names its
  kind in ``delete_data`` (``--orphan-sweep-data``);
* **grace**: a resource is deleted only after it was seen orphaned for ``grace``
  seconds without a break (an object being restored, a cache catching up);
* **circuit breaker**: when at least ``max_share`` of a project's marked resources, or
  more than ``max_orphans`` of them, look orphaned at once, nothing is deleted and the
  sweep says why: that is a missing informer, a wrong cluster or a restore, not leaks.
  While suspended no grace runs: every clock is cleared, so when the suspension ends
  each candidate waits a whole grace period again (a breaker that kept counting would
  delete everything overdue in the sweep that ends it). A project whose only marked
  resource is a leak is 100 % orphaned: it is reported, never swept;
* **never what is released**: ``deletionPolicy: Orphan`` swaps the marker for the orphan
  mark (:mod:`kumo.ports.model`), so a released resource is not listed here at all; a
  server group still holding servers is reported, not deleted; a router is taken apart
  only as far as its own network's subnets go (:func:`router_interfaces`).

Pure: the runtime lists, confirms the UIDs against the API server and acts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kumo.ports.model import Marked

#: Seconds a resource must stay orphaned before it is deleted.
GRACE_SECONDS = 600.0
#: The circuit breaker: this share of a project's marked resources orphaned at once …
MAX_SHARE = 0.5
#: … or more than this many of them.
MAX_ORPHANS = 20
#: Kinds (as :class:`Marked` names them) that hold data or an identity others rely on:
#: the sweep deletes them only when the operator names them (``--orphan-sweep-data``).
DATA_KINDS = frozenset({"volume", "snapshot", "share", "floatingip"})


class OrphanKept(Exception):
    """A delete the sweep stopped short of, on purpose: what is left is not Kumo's (a
    router with a subnet of another network on it). The message says what and why."""


@dataclass(frozen=True)
class Verdict:
    """One sweep's findings for one project."""

    orphaned: list[Marked]  # every marked resource whose owner is not a live object
    delete: list[Marked]  # of those, what to delete now
    kept: list[Marked] = field(default_factory=list)  # of those, data the sweep never deletes
    suspended: str | None = None  # why nothing is deleted this time, if so


@dataclass
class OrphanSweep:
    """Remembers since when each resource has looked orphaned (per project)."""

    grace: float = GRACE_SECONDS
    max_share: float = MAX_SHARE
    max_orphans: int = MAX_ORPHANS
    delete_data: frozenset[str] = frozenset()
    since: dict[tuple[str, str], float] = field(default_factory=dict)

    def deletes(self, kind: str) -> bool:
        """May the sweep ever delete a resource of this kind?"""
        return kind not in DATA_KINDS or kind in self.delete_data

    def judge(self, marked: Iterable[Marked], live_uids: set[str], now: float) -> Verdict:
        listed = list(marked)
        orphaned = sorted(
            (m for m in listed if m.owner not in live_uids), key=lambda m: (m.kind, m.id)
        )
        kept = [m for m in orphaned if not self.deletes(m.kind)]
        why = self.breaker(len(orphaned), len(listed))
        if why is not None:
            self.since.clear()  # no grace runs while suspended
            return Verdict(orphaned, [], kept, why)
        candidates = [m for m in orphaned if self.deletes(m.kind)]
        keys = {(m.kind, m.id) for m in candidates}
        self.since = {k: t for k, t in self.since.items() if k in keys}
        for key in keys:
            self.since.setdefault(key, now)
        due = [
            m
            for m in candidates
            if now - self.since[(m.kind, m.id)] >= self.grace and not m.busy and not m.in_use
        ]
        return Verdict(orphaned, due, kept)

    def breaker(self, orphaned: int, listed: int) -> str | None:
        """Why nothing may be deleted in a project with ``orphaned`` of its ``listed``
        marked resources orphaned; None when the sweep may go on."""
        if orphaned == 0:
            return None
        if orphaned >= self.max_share * listed:
            share = f"at least {self.max_share:.0%}"
        elif orphaned > self.max_orphans:
            share = f"more than {self.max_orphans}"
        else:
            return None
        return (
            f"{orphaned} of {listed} marked resources have no object ({share}): that looks "
            "like a missing watch, another cluster sharing the project or a restore, not "
            "like leaks; nothing is deleted, and no grace runs, until it falls (`kumo "
            "orphans` lists them, with how to import or delete each by hand)"
        )

    def forget(self, resource: Marked) -> None:
        self.since.pop((resource.kind, resource.id), None)


def router_interfaces(
    owner: str, interfaces: Iterable[str], subnet_owners: Mapping[str, str | None]
) -> tuple[list[str], list[str]]:
    """A leaked router's interfaces split into (its own, foreign): its own are on
    subnets of a network carrying the router's own owner (the Network object that made
    both); any other subnet — another object's, a user's, one the caller cannot place
    (absent from ``subnet_owners``) — is foreign: never detached, and it keeps the
    router."""
    own: list[str] = []
    foreign: list[str] = []
    for subnet_id in interfaces:
        (own if subnet_owners.get(subnet_id) == owner else foreign).append(subnet_id)
    return own, foreign
