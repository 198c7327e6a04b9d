"""``spec.snapshotBeforeReplace``: the rollout step that snapshots a member's volumes before
the group deletes it (snapshot_plan.py decides; this carries it out).

Called by the actuator only when a pass is about to replace members for a template
change and the spec asks for snapshots: one filtered snapshot listing per such pass, none
otherwise (a converged group lists nothing and writes nothing). Snapshots are not watched,
so while one is being made the group looks again after :data:`STEP_SECONDS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kumo.api import kinds
from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.engine.errors import TerminalError
from kumo.engine.failpoints import failpoint
from kumo.engine.objects import Body, Context, Obj
from kumo.kinds import snapshots
from kumo.kinds.labels import VOLUME_TEMPLATE_LABEL
from kumo.kinds.virtualmachinegroup import plan, snapshot_plan
from kumo.ports.model import SNAPSHOT_GROUP_KEY

STEP_SECONDS = 2.0
#: Volume states (the Volume object's ``status.volumeStatus``) Cinder snapshots from.
STEADY = frozenset({"available", "in-use"})
FIELD = "spec.snapshotBeforeReplace"


@dataclass(frozen=True)
class Gate:
    """What the step lets through: members held back (not deleted this pass), the
    snapshot count, the failure to report (the rollout stops), a note for the message."""

    held: frozenset[str]
    count: int
    failure: TerminalError | None = None
    note: str = ""


async def gate(
    ctx: Context,
    obj: Obj,
    spec: VirtualMachineGroupSpec,
    hash_: str,
    members: Sequence[Body],
    volumes: Sequence[Body],
) -> Gate:
    """Snapshot the template volumes of ``members`` (those the pass would replace);
    hold back each whose snapshots are not all ``available``."""
    assert spec.snapshot_before_replace is not None
    replacements = [_replacement(obj, spec, m, volumes) for m in members]
    owners = frozenset(b["metadata"]["uid"] for b in volumes if b["metadata"].get("uid"))
    listed = await ctx.cloud.list_snapshots(
        {SNAPSHOT_GROUP_KEY: snapshots.group_key(obj.namespace, obj.name)}
    )
    decided = snapshot_plan.plan_snapshots(
        spec.snapshot_before_replace.keep, replacements, listed, owners
    )
    failure = _failed(decided)
    refused: set[str] = set()
    made = 0
    for replacement, volume in decided.create:
        if replacement.member in refused:
            continue
        try:
            await _take(ctx, obj, hash_, replacement, volume, volumes)
            made += 1
        except TerminalError as error:  # refused (a quota): this member stays
            refused.add(replacement.member)
            failure = failure or TerminalError(
                error.reason,
                f"snapshot of volume {volume.volume_id} (Volume {volume.name}) refused: "
                f"{error.detail}; member {replacement.member} is not replaced",
                field=FIELD,
                recheck=error.recheck,
            )
    for snapshot in decided.prune:
        await ctx.cloud.delete_snapshot(snapshot.id)
    if decided.prune:
        ctx.events.emit(
            obj,
            "Normal",
            "SnapshotsPruned",
            f"deleted {len(decided.prune)} snapshot(s) beyond keep "
            f"({spec.snapshot_before_replace.keep} per volume)",
        )
    held = frozenset(m.member for m in replacements) - set(decided.cleared)
    waiting = [m for m in decided.waiting if m not in refused]
    note = f"; snapshotting the volumes of {', '.join(waiting)} before replacing" if waiting else ""
    return Gate(held, decided.count - (len(decided.create) - made), failure, note)


def _replacement(
    obj: Obj, spec: VirtualMachineGroupSpec, member: Body, volumes: Sequence[Body]
) -> snapshot_plan.Replacement:
    name = member["metadata"]["name"]
    ordinal = plan.ordinal_of(obj.name, name)
    by_name = {b["metadata"]["name"]: b for b in volumes}
    refs = []
    for template in spec.volume_templates:
        body = by_name.get(plan.volume_name(obj.name, template.name, ordinal or 0))
        if body is None or not body["metadata"].get("uid"):
            continue
        status = body.get("status") or {}
        refs.append(
            snapshot_plan.VolumeRef(
                body["metadata"]["name"],
                body["metadata"]["uid"],
                status.get("id"),
                steady=status.get("volumeStatus") in STEADY,
            )
        )
    return snapshot_plan.Replacement(name, str(member["metadata"].get("uid", "")), tuple(refs))


async def _take(
    ctx: Context,
    obj: Obj,
    hash_: str,
    replacement: snapshot_plan.Replacement,
    volume: snapshot_plan.VolumeRef,
    volumes: Sequence[Body],
) -> None:
    """Mark the Volume object snapshotted (before: its deletion must look for them),
    then take the snapshot."""
    assert volume.volume_id is not None
    body = next(b for b in volumes if b["metadata"]["name"] == volume.name)
    if not snapshots.snapshotted(body):
        await ctx.kube.patch(
            kinds.VOLUME,
            obj.namespace,
            volume.name,
            {"metadata": {"annotations": {snapshots.SNAPSHOTS_ANNOTATION: "true"}}},
        )
    template = (body["metadata"].get("labels") or {}).get(VOLUME_TEMPLATE_LABEL, "")
    snapshot = await ctx.cloud.create_snapshot(
        volume.volume_id,
        name=f"{obj.namespace}-{volume.name}-{hash_}",
        description=(
            f"volume {template} of {replacement.member} before its replacement "
            f"(template {hash_}); Kumo keeps the newest per volume"
        ),
        metadata=snapshots.snapshot_metadata(
            volume.uid, obj.namespace, obj.name, replacement.member_uid, hash_
        ),
    )
    failpoint("after-snapshot-create")  # crash tests: the next pass must adopt it
    ctx.events.emit(
        obj,
        "Normal",
        "SnapshotCreated",
        f"snapshot {snapshot.id} of volume {volume.volume_id} (Volume {volume.name}) "
        f"before replacing {replacement.member}",
    )


def _failed(decided: snapshot_plan.SnapshotPlan) -> TerminalError | None:
    if not decided.failed:
        return None
    member, snapshot, volume = decided.failed[0]
    return TerminalError(
        "SnapshotFailed",
        f"snapshot {snapshot.id} of volume {volume.volume_id} (Volume {volume.name}) is "
        f"{snapshot.status}: member {member} is not replaced and the rollout stops; delete "
        "the snapshot to try again, or remove snapshotBeforeReplace to replace without one",
        field=FIELD,
    )
