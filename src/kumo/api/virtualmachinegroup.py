"""VirtualMachineGroup (short name `vmg`): N VirtualMachines and one Nova server group."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, Strict, StringConstraints, field_validator

from kumo.api.common import (
    CloudName,
    CloudRef,
    Description,
    ImportRef,
    KumoModel,
    ManagedSpec,
    ManagedStatus,
    Rule,
    atomic_list,
)
from kumo.api.virtualmachine import VirtualMachineTemplate
from kumo.api.volume import MAX_VOLUME_GIB

HaPolicy = Literal["soft", "hard", "none"]
Identity = Literal["Random", "Ordinal"]
RetentionPolicy = Literal["Retain", "Delete"]

#: The most volume templates per member (a VM attaches at most 25 volumes).
MAX_VOLUME_TEMPLATES = 25

#: The most members one group may ask for (a typo must not create 10,000 servers).
MAX_REPLICAS = 1000

#: The most availability zones members are spread over.
MAX_ZONES = 32

#: Nova server group policy for each haPolicy (`none` has no server group).
SERVER_GROUP_POLICY: dict[str, str] = {"soft": "soft-anti-affinity", "hard": "anti-affinity"}


#: A share of `replicas`, as a Deployment's rollout limits take one ("25%").
PERCENT_PATTERN = r"^(100|[1-9]?[0-9])%$"

#: A count of members, or a percentage of `replicas` (a Kubernetes int-or-string).
IntOrPercent = (
    Annotated[int, Strict(), Field(ge=0, le=MAX_REPLICAS)]
    | Annotated[str, StringConstraints(pattern=PERCENT_PATTERN)]
)


def cel_zero(value: str) -> str:
    """CEL: the int-or-string ``value`` is 0 whatever ``replicas`` is (``0`` or ``"0%"``)."""
    return f"(type({value}) == int ? {value} == 0 : {value} == '0%')"


class RolloutStrategy(KumoModel):
    """How members are replaced when the template changes. Unset limits default by
    `identity`: `Random` surges (maxSurge 1, maxUnavailable 0), `Ordinal` replaces
    delete-then-create (maxSurge 0, maxUnavailable 1); with `maxSurge: 0` alone,
    maxUnavailable is 1. A percentage is of `replicas`, as in a Deployment: maxSurge
    rounds up, maxUnavailable down, and if both come to 0, maxUnavailable is 1."""

    cel_rules = (
        Rule(
            f"!has(self.maxSurge) || !has(self.maxUnavailable) || "
            f"!{cel_zero('self.maxSurge')} || !{cel_zero('self.maxUnavailable')}",
            "spec.strategy: maxSurge and maxUnavailable cannot both be 0 (a rollout could "
            "never replace a member)",
        ),
    )

    max_surge: IntOrPercent | None = None
    """How many members above `replicas` may exist during a rollout: a count or a
    percentage of `replicas` ("25%", rounded up). Unset: 1 (`Random`), 0 (`Ordinal`,
    which allows only 0)."""
    max_unavailable: IntOrPercent | None = None
    """How many members below `replicas` may be not Ready during a rollout: a count or a
    percentage of `replicas` ("25%", rounded down). Unset: 0 (`Random`), or 1 with
    identity `Ordinal` or `maxSurge: 0`."""


class GroupImport(KumoModel):
    """Existing servers the group's members take over instead of booting new ones."""

    members: list[ImportRef] = Field(max_length=MAX_REPLICAS, json_schema_extra=atomic_list)
    """Servers to take over, each by `id` or `name`, each at most once. A member the
    group creates (at creation, scale-out, rollout) imports, through its own
    `spec.import`, the first of the first `replicas` entries that no member has imported
    or is importing; later entries are not imported (`status.imports` says what became
    of each). Nova cannot add an existing server to a server group: an imported server
    stays outside the group's, so `haPolicy` does not hold for it until a template
    change rolls it over."""

    @field_validator("members")
    @classmethod
    def _each_once(cls, members: list[ImportRef]) -> list[ImportRef]:
        """Repeats are refused here (``InvalidSpec``): the schema cannot, see atomic_list."""
        seen: dict[str, int] = {}
        for index, ref in enumerate(members):
            if ref.key in seen:
                raise ValueError(
                    f"members[{index}] repeats members[{seen[ref.key]}] ({ref.key}): "
                    "each server can be imported once"
                )
            seen[ref.key] = index
        return members


class VolumeTemplate(KumoModel):
    """One volume per member: member `<group>-<i>` owns the Volume object
    `<group>-<name>-<i>`, attached through its `spec.volumes`."""

    name: str = Field(min_length=1, max_length=40, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    """Part of each Volume object's name (`<group>-<name>-<i>`); unique in the list."""
    size: int = Field(ge=1, le=MAX_VOLUME_GIB)
    """Size in GiB of each member's volume."""
    volume_type: CloudRef | None = None
    """Cinder volume type by name or ID; unset: the cloud's default."""


class VolumeRetention(KumoModel):
    """What becomes of members' Volume objects (like a StatefulSet's
    persistentVolumeClaimRetentionPolicy). `Retain`: the Volume object stays, detached, and
    a member of the same ordinal gets it again; `Delete`: the group deletes it (and the
    Volume kind the Cinder volume)."""

    when_scaled_down: RetentionPolicy = "Retain"
    """Volumes of members removed by a scale-down (ordinals >= replicas)."""
    when_deleted: RetentionPolicy = "Retain"
    """Volumes left when the group is deleted (retained ones lose their owner reference:
    a group of the same name created later takes them back)."""


#: The most snapshots kept per volume (a typo must not keep a thousand).
MAX_SNAPSHOTS_KEPT = 100


class SnapshotBeforeReplace(KumoModel):
    """Cinder snapshots of a member's volumes before a template change replaces it."""

    keep: int = Field(default=1, ge=1, le=MAX_SNAPSHOTS_KEPT)
    """How many of Kumo's snapshots to keep per volume, newest first: once a member's
    new snapshots are `available`, older ones of the same volume beyond `keep` are
    deleted (only snapshots carrying Kumo's marker for that volume)."""


class VirtualMachineGroupSpec(ManagedSpec):
    """Desired state of a VirtualMachineGroup."""

    cel_rules = (
        Rule(
            "!has(self.volumeTemplates) || size(self.volumeTemplates) == 0 "
            "|| (has(self.identity) && self.identity == 'Ordinal')",
            "spec.volumeTemplates: requires spec.identity: Ordinal (a volume belongs to "
            "an ordinal)",
        ),
        Rule(
            # No strategy, or no maxSurge: Ordinal's default is 0.
            "!has(self.identity) || self.identity != 'Ordinal' || !has(self.strategy) "
            f"|| !has(self.strategy.maxSurge) || {cel_zero('self.strategy.maxSurge')}",
            "spec.strategy.maxSurge: must be 0 with identity Ordinal (a member is replaced "
            "delete-then-create under its own name and volumes; leave it unset)",
        ),
        Rule(
            "!has(self.identity) || self.identity != 'Ordinal' || !has(self.strategy) "
            f"|| !has(self.strategy.maxUnavailable) "
            f"|| !{cel_zero('self.strategy.maxUnavailable')}",
            "spec.strategy.maxUnavailable: cannot be 0 with identity Ordinal (maxSurge is 0: "
            "a rollout could never replace a member; leave it unset for 1)",
        ),
        Rule(
            "!has(self.identity) || self.identity != 'Ordinal' || !has(self.__import__)",
            "spec.import: not supported with identity Ordinal",
        ),
        Rule(
            "!has(self.volumeTemplates) || "
            "self.volumeTemplates.all(t, self.volumeTemplates.exists_one(u, u.name == t.name))",
            "spec.volumeTemplates: names must be unique",
        ),
        Rule(
            "!has(self.snapshotBeforeReplace) "
            "|| (has(self.volumeTemplates) && size(self.volumeTemplates) > 0)",
            "spec.snapshotBeforeReplace: requires spec.volumeTemplates (it snapshots "
            "members' template volumes)",
        ),
    )

    #: A member's name and volumes are fixed by its ordinal: neither may change.
    object_rules = (
        Rule(
            "(has(self.spec.identity) ? self.spec.identity : 'Random') == "
            "(has(oldSelf.spec.identity) ? oldSelf.spec.identity : 'Random')",
            "spec.identity is immutable: members are named by it; create another group",
        ),
        Rule(
            "(has(self.spec.volumeTemplates) ? self.spec.volumeTemplates : []) == "
            "(has(oldSelf.spec.volumeTemplates) ? oldSelf.spec.volumeTemplates : [])",
            "spec.volumeTemplates is immutable: members' volumes exist; create another group",
        ),
    )

    replicas: int = Field(default=1, ge=0, le=MAX_REPLICAS)
    """Number of VirtualMachines to keep. `kubectl scale` changes it."""
    template: VirtualMachineTemplate
    """Spec of every member VirtualMachine. A change rolls members over to new servers."""
    ha_policy: HaPolicy = "soft"
    """Spread over hypervisors: `soft` (Nova soft-anti-affinity), `hard` (anti-affinity:
    scheduling fails rather than share a host) or `none` (no server group)."""
    description: Description | None = None
    """Free text; also the description of the members' servers unless the template sets one."""
    availability_zones: list[CloudName] = Field(default_factory=list, max_length=MAX_ZONES)
    """Spread members round-robin over these Nova availability zones (at most 32)."""
    strategy: RolloutStrategy = Field(default_factory=RolloutStrategy)
    """Rolling replacement limits; unset ones default by `identity`."""
    import_: GroupImport | None = Field(default=None, alias="import")
    """Take over existing servers as members (each member imports one; see
    `import.members`) instead of booting new ones."""
    identity: Identity = "Random"
    """`Random`: members are named `<group>-<random>`. `Ordinal`: members are named
    `<group>-<i>`, i = 0..replicas-1; scale-down removes the highest ordinals, a missing
    ordinal is made again under the same name, a rollout deletes then recreates each
    member (maxSurge 0, maxUnavailable 1 by default). Cannot change."""
    volume_templates: list[VolumeTemplate] = Field(
        default_factory=list, max_length=MAX_VOLUME_TEMPLATES, json_schema_extra=atomic_list
    )
    """Per-member volumes (identity `Ordinal` only): member i gets the Volume object
    `<group>-<name>-<i>` per template, created before it, in its zone, attached through
    its `spec.volumes` (a replaced server gets the same volumes). Cannot change."""
    volume_retention: VolumeRetention = Field(default_factory=VolumeRetention)
    """What becomes of the members' volumes on scale-down and on the group's deletion."""
    snapshot_before_replace: SnapshotBeforeReplace | None = None
    """Before a template change replaces member i (delete-then-create), snapshot each of
    its template volumes and wait for `available`; a snapshot that fails stops the
    rollout there (the member is not replaced). Unset: no snapshots."""

    @field_validator("volume_templates")
    @classmethod
    def _unique_names(cls, templates: list[VolumeTemplate]) -> list[VolumeTemplate]:
        names = [t.name for t in templates]
        if len(set(names)) != len(names):
            raise ValueError("volumeTemplates: names must be unique")
        return templates


ImportState = Literal["Pending", "BeyondReplicas", "Importing", "Imported"]


class MemberImport(KumoModel):
    """What became of one entry of `spec.import.members`."""

    id: str | None = None
    """The server ID, as the entry gives it."""
    name: str | None = None
    """The server name, as the entry gives it."""
    state: ImportState
    """`Imported`: a member took the server over (for good: it is not offered again).
    `Importing`: a member carries it in its `spec.import` (see that member's status).
    `Pending`: the next member the group creates imports it. `BeyondReplicas`: not
    imported, the entry is past the first `replicas` ones."""
    member: str | None = None
    """The member VirtualMachine importing it, or that imported it."""
    server_id: str | None = None
    """The server the member took over."""


class VirtualMachineGroupStatus(ManagedStatus):
    """Observed state of a VirtualMachineGroup."""

    replicas: int = 0
    """Members that exist."""
    ready_replicas: int = 0
    """Members whose server is ACTIVE."""
    updated_replicas: int = 0
    """Members built from the current template."""
    server_group_id: str | None = None
    """The Nova server group the group owns."""
    selector: str | None = None
    """Label selector of the members (used by the scale subresource)."""
    members: list[str] = Field(default_factory=list)
    """Names of the member VirtualMachines."""
    imports: list[MemberImport] = Field(default_factory=list)
    """One entry per `spec.import.members` entry, in its order: what became of it."""
    retained_volumes: list[str] = Field(default_factory=list)
    """Volume objects kept for ordinals >= replicas (`volumeRetention.whenScaledDown:
    Retain`), detached; a member of that ordinal gets them again."""
    retained_volume_count: int = 0
    """How many `retainedVolumes` there are."""
    snapshot_count: int = 0
    """Kumo's snapshots of the members' volumes (`snapshotBeforeReplace`), as counted
    at the latest rollout step that took or pruned one."""
