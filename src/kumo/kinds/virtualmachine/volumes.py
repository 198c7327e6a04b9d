"""A VirtualMachine's ``spec.volumes``, attached and detached in place once its server
is ACTIVE: Volume objects once Ready, the cloud's volumes by name or ID. A volume another
server holds is waited for, never taken from it; a replaced server gets the same volumes."""

from __future__ import annotations

import dataclasses

from kumo.api.virtualmachine import VirtualMachineSpec
from kumo.engine import lifecycle
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Context, Obj, Store
from kumo.kinds import references
from kumo.kinds.virtualmachine import plan
from kumo.ports.model import Server, owner_of

#: Seconds between passes while a volume attaches or detaches, or while one waited for
#: is attached elsewhere (a Volume's own status change wakes the VM sooner).
VOLUME_SECONDS = 2.0
VOLUME_IN_USE_SECONDS = 10.0
#: Safety net while waiting for a Volume object to be Ready (its status change wakes the VM).
VOLUME_REF_SECONDS = 30.0


def naming_volume(volume: Body, store: Store, kind: str) -> list[str]:
    """VMs whose ``spec.volumes`` name the Volume object ``volume``."""
    meta = volume.get("metadata") or {}
    return [
        vm["metadata"]["name"]
        for vm in store.list(kind, meta.get("namespace", "default"))
        if meta.get("name")
        in references.referenced_names(vm.get("spec") or {}, "volumes[].volumeRef")
    ]


def wanted_volumes(ctx: Context, obj: Obj, spec: VirtualMachineSpec) -> list[plan.WantedVolume]:
    """``spec.volumes`` with the IDs known without asking the cloud: a Volume object's
    (once Ready), a name the last status resolved, a volume given by ID."""
    known = plan.known_volume_ids(obj.status)
    found = []
    for i, v in enumerate(spec.volumes):
        if v.volume_ref is not None:
            body = ctx.store.get("Volume", obj.namespace, v.volume_ref)
            resolved = references.resolve(ctx.store, obj.namespace, "Volume", v.volume_ref, "id")
            volume_id = resolved.value if body is not None else None
            found.append(plan.WantedVolume(i, v.volume_ref, v.device, volume_id, ref=True))
        else:
            assert v.name is not None  # the model's validator
            volume_id = v.name if plan.UUID.match(v.name) else known.get(v.name)
            found.append(plan.WantedVolume(i, v.name, v.device, volume_id))
    return found


async def apply_volumes(
    ctx: Context, obj: Obj, server: Server, wanted: list[plan.WantedVolume]
) -> lifecycle.Step[Server]:
    """Detach what the spec dropped, attach what it names, in place (the server stays).
    A volume attached to another server is waited for, never taken from it."""
    waits: list[lifecycle.Wait] = []
    ids: list[str] = []
    for i, w in enumerate(wanted):
        if w.ref:
            if w.id is None:
                waits.append(_volume_ref_wait(ctx, obj, w))
                continue
        elif w.id is None or w.id not in server.volumes:
            w = wanted[i] = dataclasses.replace(w, id=await _named_volume_id(ctx, w))
        assert w.id is not None
        ids.append(w.id)
    # A Volume object named but not resolvable now (being deleted: it waits for this VM)
    # keeps what it had: only leaving spec.volumes detaches it.
    known = plan.known_volume_ids(obj.status)
    held = {known[w.name] for w in wanted if w.id is None and w.name in known}
    managed = {str(v.get("id")) for v in obj.status.get("volumes") or []} - held
    attach, detach = plan.volume_changes(ids, server.volumes, managed)
    volumes = set(server.volumes)
    for volume_id in detach:
        await ctx.cloud.detach_volume(server.id, volume_id)
        volumes.discard(volume_id)
        ctx.events.emit(
            obj, "Normal", "VolumeDetached", f"detaching volume {volume_id} from server {server.id}"
        )
        waits.append(_volume_wait(f"detaching volume {volume_id}", "DetachingVolume"))
    by_id = {w.id: w for w in wanted if w.id}
    for volume_id in attach:
        w = by_id[volume_id]
        volume = await ctx.cloud.get_volume(volume_id)
        if volume is None:
            raise TerminalError(
                "VolumeNotFound", f"volume {w.name!r} ({volume_id}) not found", field=w.field
            )
        if server.id in volume.attachments:  # Cinder has it on this server already
            volumes.add(volume_id)
            continue
        elsewhere = [s for s in volume.attachments if s != server.id]
        if elsewhere:
            waits.append(await _in_use_wait(ctx, obj, w, elsewhere[0]))
            continue
        if volume.status != "available":
            waits.append(
                _volume_wait(
                    f"{w.field}: volume {volume_id} is {volume.status}, attached once available",
                    "WaitingForVolume",
                )
            )
            continue
        await ctx.cloud.attach_volume(server.id, volume_id, w.device)
        volumes.add(volume_id)
        ctx.events.emit(
            obj, "Normal", "VolumeAttached", f"attaching volume {volume_id} to server {server.id}"
        )
        waits.append(_volume_wait(f"attaching volume {volume_id}", "AttachingVolume"))
    server = dataclasses.replace(server, volumes=tuple(sorted(volumes)))
    if not waits:
        return lifecycle.Step(server)
    first = min(waits, key=lambda w: _WAIT_ORDER.index(w.reason))
    rest = [w for w in waits if w is not first]
    return lifecycle.Step(server, wait=_merged(first, rest))


#: The reason a VM waiting on several volumes reports: the one the user must act on first.
_WAIT_ORDER = ("VolumeInUse", "WaitingForVolume", "AttachingVolume", "DetachingVolume")


def _merged(first: lifecycle.Wait, rest: list[lifecycle.Wait]) -> lifecycle.Wait:
    return dataclasses.replace(
        first,
        message="; ".join(w.message for w in [first, *rest]),
        after=min(w.after for w in [first, *rest]),
    )


def _volume_wait(message: str, reason: str, after: float = VOLUME_SECONDS) -> lifecycle.Wait:
    return lifecycle.Wait(message, reason=reason, phase="Running", after=after)


def _volume_ref_wait(ctx: Context, obj: Obj, w: plan.WantedVolume) -> lifecycle.Wait:
    if ctx.store.get("Volume", obj.namespace, w.name) is None:
        why = f"Volume {w.name!r} not found in namespace {obj.namespace}"
    else:
        resolved = references.resolve(ctx.store, obj.namespace, "Volume", w.name, "id")
        why = resolved.waiting or f"Volume {w.name!r} is not Ready yet"
    return _volume_wait(f"{w.field}: {why}", "WaitingForVolume", after=VOLUME_REF_SECONDS)


async def _named_volume_id(ctx: Context, w: plan.WantedVolume) -> str:
    """The ID of a cloud volume given by name or ID (``spec.volumes[].name``)."""
    if plan.UUID.match(w.name):
        return w.name
    found = await ctx.cloud.find_volumes_by_name(w.name)
    if len(found) != 1:
        what = "not found" if not found else f"matches {len(found)} volumes: give its ID"
        raise TerminalError(
            "VolumeNotFound" if not found else "AmbiguousVolume",
            f"volume {w.name!r} {what}",
            field=w.field,
        )
    return found[0].id


async def _in_use_wait(
    ctx: Context, obj: Obj, w: plan.WantedVolume, server_id: str
) -> lifecycle.Wait:
    """A wanted volume attached to another server: never detached from it here. The VM's
    own previous server (replaced, being deleted) frees it when Nova deletes it."""
    other = await ctx.cloud.get_server(server_id)
    if other is None or owner_of(other.tags) == obj.uid:
        note = "this VM's previous server: Nova frees it as it deletes that server"
        return _volume_wait(
            f"{w.field}: volume {w.id} is still attached to server {server_id} ({note})",
            "WaitingForVolume",
        )
    return _volume_wait(
        f"{w.field}: volume {w.id} is in use by server {server_id} ({other.name}); it is "
        "attached once that server lets it go",
        "VolumeInUse",
        after=VOLUME_IN_USE_SECONDS,
    )
