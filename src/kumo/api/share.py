"""Share (short name `share`): a Manila share whose access rules follow machines.

The CaaS seed's export-policy controller: NFS storage reachable only from the machines
that should reach it, as they come and go. Each `access` entry names a
VirtualMachineGroup (every Ready member's address), one VirtualMachine, or a literal
CIDR; Kumo keeps one Manila `ip` access rule per address.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from kumo.api.common import (
    CIDR_MAX,
    CLOUD_NAME_MAX,
    CloudRef,
    Description,
    KumoModel,
    ManagedSpec,
    ManagedStatus,
    ObjectName,
    exactly_one_of,
    fixed_once_created,
    once_created,
)

ShareProtocol = Literal["NFS", "CIFS", "CEPHFS", "GLUSTERFS", "HDFS", "MAPRFS"]
AccessLevel = Literal["rw", "ro"]

#: Manila's per-share size is the cloud's to limit (quota, backend); this only keeps a
#: typo from asking for petabytes.
MAX_SHARE_GIB = 100_000
#: The most access entries of one share (each a group, a VM or a CIDR: one entry may
#: stand for many addresses).
MAX_ACCESS = 100


class ShareAccess(KumoModel):
    """Who may mount the share. Give exactly one of the three sources."""

    model_config = ConfigDict(
        json_schema_extra=exactly_one_of("virtualMachineGroupRef", "virtualMachineRef", "cidr")
    )

    virtual_machine_group_ref: ObjectName | None = None
    """Every Ready member of this VirtualMachineGroup (same namespace), following
    scaling, healing and rolling replacement."""
    virtual_machine_ref: ObjectName | None = None
    """This VirtualMachine (same namespace), once Ready with an address."""
    cidr: str | None = Field(default=None, min_length=1, max_length=CIDR_MAX)
    """A literal IPv4/IPv6 address or CIDR, e.g. `10.10.0.0/24`."""
    access_level: AccessLevel = "rw"
    """`rw` (read-write) or `ro` (read-only)."""


class ShareSpec(ManagedSpec):
    """Desired state of a Share."""

    #: What Manila fixes when the share is created, and the size that only grows.
    object_rules = (
        fixed_once_created(
            "protocol",
            "spec.protocol is immutable: a share's protocol is fixed when it is created; "
            "create another Share to change it",
        ),
        fixed_once_created(
            "shareType",
            "spec.shareType is immutable: a share's type is fixed when it is created; "
            "create another Share to change it",
        ),
        fixed_once_created(
            "availabilityZone",
            "spec.availabilityZone is immutable: a share stays in the zone it was created "
            "in; create another Share to move it",
        ),
        once_created(
            "self.spec.size >= oldSelf.spec.size",
            "spec.size cannot shrink: Manila only extends a share in place, and shrinking "
            "could lose data",
        ),
    )

    protocol: ShareProtocol = "NFS"
    """Share protocol; the cloud must offer it (the lab's dummy backend: NFS, CIFS).
    Cannot change on an existing share."""
    size: int = Field(ge=1, le=MAX_SHARE_GIB)
    """Size in GiB. Growing is done in place (Manila extend); shrinking is refused and
    reported (`ShrinkRefused`): data could be lost."""
    share_type: CloudRef | None = None
    """Manila share type by name or ID; unset: the cloud's default share type.
    Cannot change on an existing share."""
    description: Description | None = None
    """Share description."""
    availability_zone: str | None = Field(default=None, max_length=CLOUD_NAME_MAX)
    """Manila availability zone; unset: the cloud's default. Cannot change later."""
    access: list[ShareAccess] = Field(default_factory=list, max_length=MAX_ACCESS)
    """Access rules (at most 100 entries): one Manila `ip` rule per address. Empty:
    nobody may mount."""


class AccessRuleStatus(KumoModel):
    """One access rule Kumo holds on the share."""

    access_to: str
    """The address or CIDR."""
    access_level: str
    """`rw` or `ro`."""
    id: str | None = None
    """Manila access rule ID."""
    state: str | None = None
    """Manila's state: `queued_to_apply`, `applying`, `active`, `queued_to_deny`,
    `denying`, `error`."""
    virtual_machine: str | None = None
    """The VirtualMachine this rule is for (unset for a literal CIDR). A VM's deletion
    waits until no Share lists it here."""


class ShareStatus(ManagedStatus):
    """Observed state of a Share."""

    share_status: str | None = None
    """Manila's share status (`creating`, `available`, `extending`, …)."""
    size: int | None = None
    """Current size in GiB."""
    protocol: str | None = None
    """The share's protocol."""
    share_type_id: str | None = None
    """The share type's ID."""
    export_location: str | None = None
    """The preferred export location (what a client mounts)."""
    export_locations: list[str] = Field(default_factory=list)
    """Every export location of the share (preferred first)."""
    access_rules: list[AccessRuleStatus] = Field(default_factory=list)
    """The rules Kumo holds on the share (with Kumo's marker), as Manila reports them."""
    rules: str | None = None
    """Access rules `active/desired`, for `kubectl get`."""
    foreign_rules: list[str] = Field(default_factory=list)
    """Rules on the share without Kumo's marker (`ip:10.0.0.9 rw`): never changed or
    removed by Kumo; an address they cover is not added again."""
    unapplied_changes: list[str] = Field(default_factory=list)
    """Spec fields that differ from the share but cannot be applied (a smaller size, a
    different protocol, share type or zone)."""
