"""``spec.snapshotBeforeReplace``: the writes of the rollout step that snapshots a member's
volumes before the group deletes it (``snapshot_plan.py`` decides, in the pass's one
decision: ``decision.py``).

The group lists its snapshots only when a pass is about to replace members for a template
change and the spec asks for snapshots (``decision.wants_snapshots``): a converged group
lists nothing and writes nothing. Snapshots are not watched, so while one is being made the
group looks again after :data:`STEP_SECONDS`.
"""

from __future__ import annotations

from collections.abc import Sequence

from kumo.api import kinds
from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.engine.errors import TerminalError
from kumo.engine.failpoints import failpoint
from kumo.engine.objects import Body, Context, Obj
from kumo.kinds import snapshots
from kumo.kinds.labels import VOLUME_TEMPLATE_LABEL
from kumo.kinds.virtualmachinegroup import decision, snapshot_plan
from kumo.ports.model import SNAPSHOT_GROUP_KEY, Snapshot

STEP_SECONDS = 2.0


async def listed(ctx: Context, obj: Obj) -> list[Snapshot]:
    """The group's snapshots (one filtered listing)."""
    return await ctx.cloud.list_snapshots(
        {SNAPSHOT_GROUP_KEY: snapshots.group_key(obj.namespace, obj.name)}
    )


async def apply(
    ctx: Context,
    obj: Obj,
    spec: VirtualMachineGroupSpec,
    hash_: str,
    decided: snapshot_plan.SnapshotPlan,
    volumes: Sequence[Body],
) -> decision.Applied:
    """Take the snapshots ``decided`` asks for and prune those beyond ``keep``. A
    snapshot the cloud refuses (a quota) keeps its member: the refusal is reported."""
    assert spec.snapshot_before_replace is not None
    refused: set[str] = set()
    failure: TerminalError | None = None
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
                field=decision.SNAPSHOT_FIELD,
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
    return decision.Applied(made, failure, frozenset(refused))


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
