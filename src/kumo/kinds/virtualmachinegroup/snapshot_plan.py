"""Pure decisions for ``spec.snapshotBeforeReplace``: which snapshots a rollout step
takes, which members it lets go, which snapshots it prunes.

A member a template change replaces (delete-then-create) is *cleared* once each of its
template volumes has an ``available`` snapshot taken for this replacement: one carrying
the Volume object's marker and the member's UID (``kumo-member``). That key is what makes
a step crash-safe: a pass after a kill -9 finds the snapshot made before it and never
takes a second one for the same member, and a member built later (another rollout, the
template changed back) has another UID, so it gets its own. A snapshot of the step in
``error`` stops there (the member is not replaced); once a member is cleared, the older
snapshots of its volumes beyond ``keep`` go, newest kept first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kumo.kinds.snapshots import SNAPSHOT_BUSY
from kumo.ports.model import SNAPSHOT_MEMBER_KEY, Snapshot, metadata_owner


@dataclass(frozen=True)
class VolumeRef:
    """One template volume of a member to replace."""

    name: str  # the Volume object
    uid: str  # its UID: the owner its snapshots carry
    volume_id: str | None  # the Cinder volume (None: not made yet, nothing to copy)
    #: Cinder snapshots a volume only while it is available or in-use (not attaching,
    #: detaching, extending): until then the step waits.
    steady: bool = True


@dataclass(frozen=True)
class Replacement:
    """A member a rollout is about to delete, and its template volumes."""

    member: str
    member_uid: str
    volumes: tuple[VolumeRef, ...]


@dataclass(frozen=True)
class SnapshotPlan:
    create: list[tuple[Replacement, VolumeRef]] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)
    """Members whose every volume has its snapshot, available: they may go."""
    waiting: list[str] = field(default_factory=list)
    """Members whose snapshots are being made (or are to be made now)."""
    failed: list[tuple[str, Snapshot, VolumeRef]] = field(default_factory=list)
    """Members whose snapshot ended in error: they stay."""
    prune: list[Snapshot] = field(default_factory=list)
    count: int = 0
    """Kumo's snapshots of the group's volumes once this plan is carried out."""


def step_snapshots(
    replacement: Replacement, volume: VolumeRef, snapshots: Sequence[Snapshot]
) -> list[Snapshot]:
    """The snapshots of ``volume`` taken before replacing that member (not deleting)."""
    return [
        s
        for s in snapshots
        if metadata_owner(s.metadata) == volume.uid
        and s.volume_id == volume.volume_id
        and s.metadata.get(SNAPSHOT_MEMBER_KEY) == replacement.member_uid
        and s.status != "deleting"
    ]


def plan_snapshots(
    keep: int,
    replacements: Sequence[Replacement],
    snapshots: Sequence[Snapshot],
    owners: frozenset[str],
) -> SnapshotPlan:
    """Decide one rollout step. ``snapshots``: the group's listing; only those owned by
    one of ``owners`` (the group's Volume objects' UIDs) are ever counted or pruned."""
    mine = [s for s in snapshots if metadata_owner(s.metadata) in owners]
    plan = SnapshotPlan()
    for replacement in replacements:
        states = []
        for volume in replacement.volumes:
            if volume.volume_id is None:
                continue  # no Cinder volume yet: nothing to lose
            taken = step_snapshots(replacement, volume, mine)
            if not taken:
                if volume.steady:
                    plan.create.append((replacement, volume))
                states.append("creating")
            elif any(s.status == "available" for s in taken):
                states.append("available")
            elif failed := next((s for s in taken if s.status.startswith("error")), None):
                plan.failed.append((replacement.member, failed, volume))
                states.append("error")
            else:
                states.append("creating")
        if "error" in states:
            continue
        if all(state == "available" for state in states):
            plan.cleared.append(replacement.member)
            plan.prune.extend(_beyond(keep, replacement, mine))
        else:
            plan.waiting.append(replacement.member)
    pruned = {s.id for s in plan.prune}
    live = [s for s in mine if s.status != "deleting" and s.id not in pruned]
    return SnapshotPlan(
        plan.create, plan.cleared, plan.waiting, plan.failed, plan.prune,
        count=len(live) + len(plan.create),
    )  # fmt: skip


def _beyond(keep: int, replacement: Replacement, mine: Sequence[Snapshot]) -> list[Snapshot]:
    """A cleared member's volumes' snapshots past the newest ``keep`` (the step's own
    counts as the newest whatever the clocks say)."""
    beyond: list[Snapshot] = []
    for volume in replacement.volumes:
        if volume.volume_id is None:
            continue
        current = {s.id for s in step_snapshots(replacement, volume, mine)}
        ranked = sorted(
            (
                s
                for s in mine
                if metadata_owner(s.metadata) == volume.uid and s.status != "deleting"
            ),
            key=lambda s: (s.id not in current, _newest_first(s.created_at), s.id),
        )
        # Cinder deletes a snapshot only once it is settled: a busy one goes next time.
        beyond.extend(s for s in ranked[keep:] if s.status not in SNAPSHOT_BUSY)
    return beyond


def _newest_first(created_at: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in created_at)
