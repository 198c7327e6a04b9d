"""Cinder snapshots of Volume objects' volumes: their marker, and what the Volume kind does
with them when it goes.

A stateful group's ``snapshotBeforeReplace`` takes them (kinds/virtualmachinegroup/
snapshots.py); each is owned by the Volume object of the volume it copies (``kumo-owner``
= that object's UID), so it lives and goes with that Volume: Cinder refuses to delete a
volume that has snapshots, so the Volume kind deletes its own first (and releases them
with it under ``deletionPolicy: Orphan``). Snapshots are not watched: they are listed
only by a rollout step, and by a Volume's deletion when the object carries
:data:`SNAPSHOTS_ANNOTATION` (set before its first snapshot is made), so a Volume never
snapshotted costs no listing.
"""

from __future__ import annotations

from kumo.engine import ownership
from kumo.engine.objects import Body, Context, Obj
from kumo.ports.model import (
    SHARE_OWNER_KEY,
    SNAPSHOT_GROUP_KEY,
    SNAPSHOT_MEMBER_KEY,
    SNAPSHOT_TEMPLATE_KEY,
    Snapshot,
    marker_metadata,
    metadata_owner,
    released_metadata,
)

#: On a Volume object: Kumo may have snapshotted its volume (its deletion looks for them).
SNAPSHOTS_ANNOTATION = "kumo.dev/snapshots"
#: Snapshot states in which Cinder still works on it.
SNAPSHOT_BUSY = frozenset({"creating", "deleting", "updating", "unmanaging"})


def group_key(namespace: str, group: str) -> str:
    """The value of ``kumo-group`` on a group's snapshots (a group made again under the
    same name finds those of the Volumes it takes back)."""
    return f"{namespace}/{group}"


def snapshot_metadata(
    volume_uid: str, namespace: str, group: str, member_uid: str, template: str
) -> dict[str, str]:
    """The metadata of a snapshot taken before replacing member ``member_uid``: the
    Volume object's marker, and what the rollout step it belongs to is."""
    return {
        **marker_metadata(volume_uid),
        SNAPSHOT_GROUP_KEY: group_key(namespace, group),
        SNAPSHOT_MEMBER_KEY: member_uid,
        SNAPSHOT_TEMPLATE_KEY: template,
    }


def snapshotted(body: Body) -> bool:
    return (body["metadata"].get("annotations") or {}).get(SNAPSHOTS_ANNOTATION) == "true"


async def owned_by(ctx: Context, uid: str) -> list[Snapshot]:
    """The snapshots carrying ``uid``'s marker (one filtered listing)."""
    found = await ctx.cloud.list_snapshots({SHARE_OWNER_KEY: uid})
    return [s for s in found if metadata_owner(s.metadata) == uid]


async def delete_for(ctx: Context, obj: Obj) -> list[Snapshot]:
    """A snapshotted Volume going: delete the snapshots carrying its marker; return
    those not gone yet (the volume waits for them: Cinder refuses it while they exist)."""
    if not snapshotted(obj.body):
        return []
    left = await owned_by(ctx, obj.uid)
    for snapshot in left:
        if snapshot.status != "deleting":
            await ctx.cloud.delete_snapshot(snapshot.id)
    if left:
        ctx.events.emit(
            obj, "Normal", "DeletingSnapshots", f"deleting {len(left)} snapshot(s) of the volume"
        )
    return left


def owned(ctx: Context, uid: str) -> ownership.Owned[Snapshot]:
    """The snapshots carrying ``uid``'s marker as the ownership routine sees them, for a
    Volume's ``deletionPolicy: Orphan`` (they stay, with the orphan mark, released by the
    one Orphan step). No status field records them; the listing reads the API."""
    cloud = ctx.cloud

    async def get_by_id(snapshot_id: str) -> Snapshot | None:
        return next((s for s in await owned_by(ctx, uid) if s.id == snapshot_id), None)

    async def fetch(snapshot: Snapshot) -> Snapshot | None:
        """Listed by the marker: one no longer listed carries it no more (or is gone)."""
        return await get_by_id(snapshot.id)

    async def release(snapshot: Snapshot) -> None:
        await cloud.set_snapshot_metadata(snapshot.id, released_metadata(snapshot.metadata, uid))

    return ownership.Owned(
        noun="snapshot",
        id_of=lambda s: s.id,
        owner_of=lambda s: metadata_owner(s.metadata),
        get_by_id=get_by_id,
        list_owned=lambda: owned_by(ctx, uid),
        delete=lambda s: cloud.delete_snapshot(s.id),
        id_field="",
        release=release,
        fetch=fetch,
    )
