"""A VirtualMachine's volumes: attached and detached in place, never by replacing the
server.

Each pass on an ACTIVE server: every entry of ``spec.volumes`` is resolved (a Volume
object once it is Ready, else the cloud's volume by name or ID); one already attached
to this server is reported; an available one is attached; one attached to another
server (the server this one replaces, on its way out) is waited for, never taken from
it. A volume Kumo attached (``status.volumes``) that left the spec is detached; one
attached by hand is left alone. A replaced server gets the same volumes once Nova has
freed them from the old one.

Attachments are read from the volumes (Cinder's ``attachments``): for Kumo's Volumes
that is the watch's cache, no call at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kumo.api.virtualmachine import VirtualMachineSpec
from kumo.cloud.model import Server, Volume
from kumo.engine import lifecycle
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Context, Obj
from kumo.kinds import references

#: Safety net while a Volume is not Ready (its status change wakes the VM).
VOLUME_SECONDS = 10.0
#: While Cinder attaches, detaches, or another server still holds the volume.
MOVING_SECONDS = 2.0
UUID = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")


@dataclass
class Volumes:
    """What a pass found and did: the status entries and the waits."""

    attached: list[dict[str, Any]] = field(default_factory=list)
    waits: list[lifecycle.Wait] = field(default_factory=list)


async def keep(ctx: Context, obj: Obj, spec: VirtualMachineSpec, server: Server) -> Volumes:
    """Attach what the spec wants, detach what Kumo attached and the spec dropped."""
    found = Volumes()
    wanted: set[str] = set()
    for i, entry in enumerate(spec.volumes):
        where = f"spec.volumes[{i}]"
        volume = await _resolve(ctx, obj, entry.volume_ref, entry.name, where, found)
        if volume is None:
            continue
        wanted.add(volume.id)
        name = entry.volume_ref or entry.name or volume.id
        if server.id in volume.attachments:
            found.attached.append({"id": volume.id, "name": name})
        elif volume.attachments:
            found.waits.append(
                lifecycle.Wait(
                    f"{where}: volume {volume.id} is attached to server(s) "
                    f"{', '.join(sorted(volume.attachments))}; attached here once it is free "
                    "(Kumo never detaches it from another server)",
                    reason="VolumeInUse",
                    after=MOVING_SECONDS,
                )
            )
        elif volume.status == "available":
            await ctx.cloud.attach_volume(server.id, volume.id, entry.device)
            ctx.events.emit(
                obj, "Normal", "VolumeAttached", f"attached volume {volume.id} ({where})"
            )
            found.attached.append({"id": volume.id, "name": name})
            found.waits.append(
                lifecycle.Wait(f"attaching volume {volume.id}", reason="Attaching", after=1.0)
            )
        else:
            found.waits.append(
                lifecycle.Wait(
                    f"{where}: volume {volume.id} is {volume.status}",
                    reason="WaitingForVolume",
                    after=MOVING_SECONDS,
                )
            )
    for before in obj.status.get("volumes") or []:
        volume_id = before.get("id")
        if not volume_id or volume_id in wanted:
            continue
        volume = await ctx.cloud.get_volume(volume_id)
        if volume is not None and server.id in volume.attachments:
            # Listed until Cinder says it is off: a detach Nova drops is asked again.
            found.attached.append({"id": volume_id, "name": before.get("name") or volume_id})
            if volume.status != "detaching":
                await ctx.cloud.detach_volume(server.id, volume_id)
                ctx.events.emit(
                    obj,
                    "Normal",
                    "VolumeDetached",
                    f"detaching volume {volume_id} ({before.get('name')}: no longer in "
                    "spec.volumes)",
                )
            found.waits.append(
                lifecycle.Wait(f"detaching volume {volume_id}", reason="Detaching", after=1.0)
            )
    return found


async def _resolve(
    ctx: Context,
    obj: Obj,
    ref: str | None,
    name: str | None,
    where: str,
    found: Volumes,
) -> Volume | None:
    """The volume an entry names, or None with a wait added (not Ready, not there)."""
    if ref is not None:
        if ctx.store.get("Volume", obj.namespace, ref) is None:
            found.waits.append(
                lifecycle.Wait(
                    f"{where}.volumeRef: no Volume {ref!r} in namespace {obj.namespace}",
                    reason="WaitingForVolume",
                    after=VOLUME_SECONDS,
                )
            )
            return None
        resolved = references.resolve(ctx.store, obj.namespace, "Volume", ref, "id")
        if resolved.waiting or not resolved.value:
            found.waits.append(
                lifecycle.Wait(
                    f"{where}.volumeRef: {resolved.waiting}",
                    reason="WaitingForVolume",
                    after=VOLUME_SECONDS,
                )
            )
            return None
        volume = await ctx.cloud.get_volume(resolved.value)
        if volume is None:
            found.waits.append(
                lifecycle.Wait(
                    f"{where}.volumeRef: Volume {ref!r}'s volume {resolved.value} is gone",
                    reason="WaitingForVolume",
                    after=VOLUME_SECONDS,
                )
            )
        return volume
    assert name is not None
    if UUID.match(name):
        volume = await ctx.cloud.get_volume(name)
        if volume is not None:
            return volume
    matches = await ctx.cloud.find_volumes_by_name(name)
    if len(matches) > 1:
        raise TerminalError(
            "VolumeAmbiguous",
            f"{len(matches)} volumes are named {name!r}: name one by ID",
            field=f"{where}.name",
        )
    if not matches:
        raise TerminalError("VolumeNotFound", f"no volume {name!r}", field=f"{where}.name")
    return matches[0]


def one_wait(waits: list[lifecycle.Wait]) -> lifecycle.Wait | None:
    """Several waits of a pass as one step's wait: the first's reason, every message,
    the shortest requeue."""
    if not waits:
        return None
    return lifecycle.Wait(
        "; ".join(w.message for w in waits),
        reason=waits[0].reason,
        phase=waits[0].phase,
        after=min(w.after for w in waits),
    )
