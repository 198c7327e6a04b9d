"""Volume (short name `vol`): a Cinder volume.

Empty, or made from an image or a volume snapshot. The size only grows (an in-place
extend); type, zone and source are fixed when the volume is created. The marker
(`kumo: managed`, `kumo-owner: <uid>`) is in the volume's metadata.
"""

from __future__ import annotations

from pydantic import Field

from kumo.api.common import (
    CloudRef,
    Description,
    ImportableSpec,
    ManagedSpec,
    ManagedStatus,
    Rule,
    fixed_once_created,
    once_created,
)

#: Cinder's per-volume size is the cloud's to limit (quota, backend); this only keeps a
#: typo from asking for petabytes.
MAX_VOLUME_GIB = 100_000


class VolumeSpec(ManagedSpec, ImportableSpec):
    """Desired state of a Volume."""

    cel_rules = (
        Rule(
            "!(has(self.image) && has(self.snapshot))",
            "spec.image, spec.snapshot: give at most one source (neither: an empty volume)",
        ),
    )

    #: What Cinder fixes when the volume is created, and the size that only grows.
    object_rules = (
        fixed_once_created(
            "volumeType",
            "spec.volumeType is immutable: Kumo does not retype volumes; create another "
            "Volume to change it",
        ),
        fixed_once_created(
            "availabilityZone",
            "spec.availabilityZone is immutable: a volume stays in the zone it was created "
            "in; create another Volume to move it",
        ),
        fixed_once_created(
            "image", "spec.image is immutable: a volume's source is fixed when it is created"
        ),
        fixed_once_created(
            "snapshot", "spec.snapshot is immutable: a volume's source is fixed when it is created"
        ),
        once_created(
            "self.spec.size >= oldSelf.spec.size",
            "spec.size cannot shrink: Cinder only extends a volume in place, and shrinking "
            "could lose data",
        ),
    )

    size: int = Field(ge=1, le=MAX_VOLUME_GIB)
    """Size in GiB. Growing is done in place (Cinder extend); shrinking is refused
    (admission, and `ShrinkRefused` for a volume already bigger than the spec)."""
    volume_type: CloudRef | None = None
    """Cinder volume type by name or ID; unset: the cloud's default. Cannot change later."""
    availability_zone: CloudRef | None = None
    """Cinder availability zone; unset: the cloud's default. Cannot change later."""
    image: CloudRef | None = None
    """Source: a Glance image (name or ID) written onto the new volume. At most one of
    `image` and `snapshot`; neither: an empty volume."""
    snapshot: CloudRef | None = None
    """Source: a Cinder volume snapshot ID the new volume is made from."""
    description: Description | None = None
    """Volume description."""


class VolumeStatus(ManagedStatus):
    """Observed state of a Volume."""

    volume_status: str | None = None
    """Cinder's status (`creating`, `available`, `in-use`, `extending`, …)."""
    size: int | None = None
    """Current size in GiB."""
    volume_type: str | None = None
    """The volume's type."""
    attachments: list[str] = Field(default_factory=list)
    """IDs of the servers the volume is attached to."""
    unapplied_changes: list[str] = Field(default_factory=list)
    """Spec fields that differ from the volume but cannot be applied (a smaller size)."""
