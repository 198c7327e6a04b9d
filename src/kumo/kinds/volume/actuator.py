"""Volume actuator: observe the Cinder volume, diff, act, report.

Order of a pass: find the volume (status.id, else adopt by marker, else import, else
create and record its ID at once: a crash between create and status write leaves no
second volume) → wait while Cinder works on it (creating, extending, attaching) →
extend if the spec grew → update the description → report (size, attachments). A
smaller size is never applied: it is reported (`ShrinkRefused`).

Deletion: the snapshots carrying the Volume's marker (a stateful group's
``snapshotBeforeReplace``, kinds/snapshots.py) are deleted first — Cinder keeps a volume
that has snapshots — then every attachment to a server Kumo owns (a VirtualMachine's) is
detached, then the volume is deleted. A volume attached to a server Kumo does not own is
never detached or deleted: the pass stays Ready=False (`AttachedToForeignServer`,
naming the server). ``deletionPolicy: Orphan`` leaves it, attached or not.

The module-level functions (:func:`owned_volumes`, :func:`create_volume`,
:func:`delete_detached`) are what another kind making volumes for its own objects
reuses (a stateful VirtualMachineGroup's volume templates).
"""

from __future__ import annotations

from typing import Any

from kumo.api import kinds
from kumo.api.volume import VolumeSpec
from kumo.engine import lifecycle, orphan, ownership
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import duplicates, marking, references, snapshots
from kumo.kinds.volume import plan
from kumo.ports.model import (
    Volume,
    marker_metadata,
    of_this_cluster,
    owner_of,
)

#: Seconds between passes while Cinder works (an empty volume takes a second or two).
STEP_SECONDS = 1.0
#: Seconds between finalize passes while Cinder detaches or deletes.
DELETE_SECONDS = 2.0


class VolumeActuator:
    info = kinds.VOLUME

    async def reconcile(self, ctx: Context, obj: Obj, spec: VolumeSpec) -> Result:
        type_name = await ctx.cloud.volume_type_name(spec.volume_type) if spec.volume_type else None
        image_id = await ctx.cloud.image_id(spec.image) if spec.image else None

        name = plan.volume_name(obj.namespace, obj.name)

        async def create() -> Volume:
            return await create_volume(
                ctx, obj.uid, name, spec, type_name=type_name, image_id=image_id
            )

        async def busy(volume: Volume) -> lifecycle.Wait | None:
            if volume.status in plan.ERROR:
                raise TerminalError(
                    "VolumeError", f"Cinder put volume {volume.id} in {volume.status}", field="spec"
                )
            return _step(f"volume is {volume.status}") if plan.is_busy(volume) else None

        async def extend(volume: Volume) -> lifecycle.Step[Volume]:
            if spec.size <= volume.size:
                return lifecycle.Step(volume)
            if volume.status != plan.AVAILABLE:
                # Cinder extends an attached volume only from 3.42 and with driver
                # support: report it, extend once detached.
                return lifecycle.Step(
                    volume, _step(f"waiting to extend to {spec.size} GiB until detached")
                )
            await ctx.cloud.extend_volume(volume.id, spec.size)
            ctx.events.emit(
                obj, "Normal", "Extending", f"extending volume {volume.id} to {spec.size} GiB"
            )
            return lifecycle.Step(volume, _step(f"extending to {spec.size} GiB"), stop=True)

        async def describe(volume: Volume) -> lifecycle.Step[Volume]:
            if (spec.description or None) != (volume.description or None):
                await ctx.cloud.update_volume(volume.id, description=spec.description)
            return lifecycle.Step(volume)

        async def report(volume: Volume) -> Result:
            unapplied = plan.unapplied_changes(spec, volume, type_name)
            status = {**_observed(volume), "unappliedChanges": unapplied}
            if "spec.size" in unapplied:
                raise TerminalError(
                    "ShrinkRefused",
                    f"{spec.size} GiB is smaller than the volume's {volume.size} GiB: Kumo "
                    "does not shrink volumes (data could be lost); set size back to at "
                    f"least {volume.size}",
                    field="spec.size",
                    status=status,
                )
            if unapplied and unapplied != (obj.status.get("unappliedChanges") or []):
                ctx.events.emit(
                    obj,
                    "Warning",
                    "ImmutableFieldChanged",
                    f"{', '.join(unapplied)} cannot be applied to the existing volume",
                )
            where = (
                f"attached to {', '.join(volume.attachments)}" if volume.attachments else "detached"
            )
            return Result(
                phase="Available",
                ready=True,
                reason="Ready",
                message=f"volume {volume.id} ({volume.size} GiB) is {volume.status}, {where}",
                status=status,
            )

        async def verify(volume: Volume) -> list[Change]:
            return plan.import_mismatches(spec, volume, type_name, image_id)

        return await lifecycle.reconcile_owned(
            ctx,
            obj,
            lifecycle.Lifecycle(
                owned=owned_volumes(ctx, obj.uid, name, verify=verify),
                create=create,
                created=lambda _: _step("volume is being created"),
                report=report,
                failpoint="after-volume-create",
                status=_observed,
                busy=busy,
                updaters=[extend, describe],
            ),
        )

    async def finalize(self, ctx: Context, obj: Obj, spec: VolumeSpec | None) -> Result:
        """Detach from Kumo's servers, then delete; done when neither the recorded ID
        nor the marker finds one. Attached to a foreign server: never touched. Not while
        a VirtualMachine names it (``spec.volumes[].volumeRef``): it detaches it first."""
        users = volume_users(ctx.store, obj.namespace, obj.name)
        if users:
            return Result.waiting(
                "Deleting",
                "WaitingForVirtualMachines",
                f"VirtualMachine(s) {', '.join(users)} use the volume (spec.volumes); it is "
                "deleted once they let it go",
                after=DELETE_SECONDS,
            )
        owned = owned_volumes(ctx, obj.uid, plan.volume_name(obj.namespace, obj.name))
        # Its snapshots go once it is detached (Kumo's servers first, and never while a
        # foreign server holds it: then the volume stays, and so do they).
        attached = snapshots.snapshotted(obj.body) and any(
            v.attachments for v in await ownership.carrying_marker(obj, owned)
        )
        left = [] if attached else await snapshots.delete_for(ctx, obj)
        if left:
            return Result.waiting(
                "Deleting",
                "Deleting",
                f"deleting snapshot(s) {', '.join(sorted(s.id for s in left))} first",
                after=DELETE_SECONDS,
            )
        return await ownership.finalize_owned(ctx, obj, owned, DELETE_SECONDS)

    async def release(self, ctx: Context, obj: Obj, spec: VolumeSpec | None) -> Result:
        """The volume stays, attached or not, with the orphan mark instead of the marker;
        so do its snapshots."""
        name = plan.volume_name(obj.namespace, obj.name)
        volumes = owned_volumes(ctx, obj.uid, name)
        if not snapshots.snapshotted(obj.body):
            return await orphan.release_owned(ctx, obj, volumes)
        return await orphan.release_owned(ctx, obj, snapshots.owned(ctx, obj.uid), volumes)

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """Volumes being deleted that wait for a VM naming them (its change, its
        deletion, may end the wait)."""
        return references.deleting_targets(store, kind, body, self.info.kind)


def volume_users(store: Store, namespace: str, name: str) -> list[str]:
    """The objects naming the Volume ``name`` in a declared reference (a VM's
    ``spec.volumes[].volumeRef``), sorted."""
    users = references.users_of(store, namespace, kinds.VOLUME.kind, name)
    return sorted(n for names in users.values() for n in names)


# -- reusable: what another kind making volumes calls too -----------------------------------


def owned_volumes(
    ctx: Context,
    uid: str,
    name: str,
    *,
    verify: Any = None,
) -> ownership.Owned[Volume]:
    """The volume(s) carrying ``uid``'s marker as the ownership routine sees them. Its
    ``delete`` is :func:`delete_detached`. A volume holds data: a second one carrying
    the marker (a restore, a clone) is reported, and deleted only when Kumo made it
    itself under ``name`` and it was never attached (kinds/duplicates.py)."""
    cloud = ctx.cloud

    async def delete(volume: Volume) -> None:
        await delete_detached(ctx, volume)

    return ownership.Owned(
        noun="volume",
        id_of=lambda v: v.id,
        **marking.by_metadata(Volume, uid, cloud.set_volume_metadata),
        get_by_id=cloud.get_volume,
        list_owned=lambda: cloud.list_owned_volumes(uid),
        delete=delete,
        find_by_name=cloud.find_volumes_by_name,
        verify=verify,
        holds_data=True,
        disposable=duplicates.volume_disposable(uid, name),
        fetch=lambda v: cloud.fetch_volume(v.id),
    )


async def create_volume(
    ctx: Context,
    uid: str,
    name: str,
    spec: VolumeSpec,
    *,
    type_name: str | None,
    image_id: str | None,
) -> Volume:
    """A new volume carrying ``uid``'s marker; a create in doubt is remembered (the one
    duplicate Kumo may delete is one it made then: kinds/duplicates.py)."""

    async def create() -> Volume:
        volume: Volume = await ctx.cloud.create_volume(
            name=name,
            size=spec.size,
            volume_type=type_name,
            availability_zone=spec.availability_zone,
            image_id=image_id,
            snapshot_id=spec.snapshot,
            description=spec.description,
            metadata=marker_metadata(uid),
        )
        return volume

    return await duplicates.created(uid, name, create)


async def delete_detached(ctx: Context, volume: Volume) -> None:
    """Detach ``volume`` (Kumo's) from every server Kumo owns, then delete it once
    detached. Attached to a server without Kumo's marker: raise, naming the server —
    neither the attachment nor the volume is touched. Busy: left for the next pass."""
    if plan.is_busy(volume) and volume.status != "deleting":
        return
    if volume.status == "deleting":
        return
    owned: set[str] = set()
    for server_id in volume.attachments:
        server = await ctx.cloud.get_server(server_id)
        if server is not None and of_this_cluster(owner_of(server.tags)):
            owned.add(server_id)
        elif server is None:
            owned.add(server_id)  # gone: Nova cleans the attachment up; nothing to protect
    foreign = plan.foreign_servers(volume, owned)
    if foreign:
        raise TerminalError(
            "AttachedToForeignServer",
            f"volume {volume.id} is attached to server(s) {', '.join(foreign)} that Kumo "
            "does not own: Kumo neither detaches nor deletes it; detach it yourself, or "
            "use deletionPolicy: Orphan",
            field="metadata.deletionTimestamp",
        )
    if volume.attachments:
        for server_id in volume.attachments:
            await ctx.cloud.detach_volume(server_id, volume.id)
        return
    await ctx.cloud.delete_volume(volume.id)


# -- observe / report ------------------------------------------------------------------------


def _observed(volume: Volume) -> dict[str, Any]:
    return {
        "volumeStatus": volume.status,
        "size": volume.size,
        "volumeType": volume.volume_type,
        "attachments": list(volume.attachments),
    }


def _step(message: str) -> lifecycle.Wait:
    return lifecycle.Wait(message, reason="Provisioning", phase="Provisioning", after=STEP_SECONDS)
