"""Volume decisions, free of I/O: names, states, what cannot be applied, what an import
must match, and which attachments block a delete.

Ownership: Cinder volumes have metadata, no tags; Kumo writes ``kumo: managed`` and
``kumo-owner: <uid>`` there (:func:`kumo.ports.markers.marker_metadata`). A volume without
the marker is never changed, attached, detached or deleted by Kumo.
"""

from __future__ import annotations

from kumo.api.volume import VolumeSpec
from kumo.engine.dryrun import Change
from kumo.ports.model import Volume

AVAILABLE = "available"
IN_USE = "in-use"
#: Settled states: Cinder accepts a change (extend while available; Cinder ≥ 3.42
#: extends in-use volumes too, the lab's fake driver does not, so Kumo waits).
SETTLED = {AVAILABLE, IN_USE}
#: States in which Cinder gave up on the volume.
ERROR = {"error", "error_extending", "error_restoring", "error_managing"}


def volume_name(namespace: str, name: str) -> str:
    return f"{namespace}-{name}"


def is_busy(volume: Volume) -> bool:
    return volume.status not in SETTLED and volume.status not in ERROR


def unapplied_changes(spec: VolumeSpec, volume: Volume, type_name: str | None) -> list[str]:
    """Spec fields that differ from the volume and that Kumo does not apply."""
    changed = []
    if spec.size < volume.size:
        changed.append("spec.size")
    if type_name and volume.volume_type and type_name != volume.volume_type:
        changed.append("spec.volumeType")
    if spec.availability_zone and spec.availability_zone != volume.availability_zone:
        changed.append("spec.availabilityZone")
    return changed


def import_mismatches(
    spec: VolumeSpec, volume: Volume, type_name: str | None, image_id: str | None
) -> list[Change]:
    """What an imported volume must match (old = cloud, new = spec): what Kumo cannot
    change in place. A bigger spec size is fine (extended after the import)."""
    changes = []
    if spec.size < volume.size:
        changes.append(Change("spec.size", volume.size, spec.size))
    if type_name and volume.volume_type != type_name:
        changes.append(Change("spec.volumeType", volume.volume_type, type_name))
    if spec.availability_zone and volume.availability_zone != spec.availability_zone:
        changes.append(
            Change("spec.availabilityZone", volume.availability_zone, spec.availability_zone)
        )
    if image_id and volume.source_image != image_id:
        changes.append(Change("spec.image", volume.source_image, image_id))
    if spec.snapshot and volume.snapshot_id != spec.snapshot:
        changes.append(Change("spec.snapshot", volume.snapshot_id, spec.snapshot))
    return changes


def foreign_servers(volume: Volume, owned_servers: set[str]) -> list[str]:
    """Servers the volume is attached to that Kumo does not own: the volume is never
    detached from them, so never deleted while attached to them."""
    return sorted(s for s in volume.attachments if s not in owned_servers)
