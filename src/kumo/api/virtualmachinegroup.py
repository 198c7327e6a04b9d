"""VirtualMachineGroup (short name `vmg`): N VirtualMachines and one Nova server group."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from kumo.api.common import (
    MAX_DESCRIPTION,
    ImportRef,
    KumoModel,
    ManagedSpec,
    ManagedStatus,
    Rule,
    atomic_list,
)
from kumo.api.virtualmachine import VirtualMachineTemplate

HaPolicy = Literal["soft", "hard", "none"]

#: The most members one group may ask for (a typo must not create 10,000 servers).
MAX_REPLICAS = 1000

#: Nova server group policy for each haPolicy (`none` has no server group).
SERVER_GROUP_POLICY: dict[str, str] = {"soft": "soft-anti-affinity", "hard": "anti-affinity"}


class RolloutStrategy(KumoModel):
    """How members are replaced when the template changes."""

    cel_rules = (
        Rule(
            "self.maxSurge > 0 || self.maxUnavailable > 0",
            "spec.strategy: maxSurge and maxUnavailable cannot both be 0 (a rollout could "
            "never replace a member)",
        ),
    )

    max_surge: int = Field(default=1, ge=0)
    """How many members above `replicas` may exist during a rollout."""
    max_unavailable: int = Field(default=0, ge=0)
    """How many members below `replicas` may be not Ready during a rollout."""


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


class VirtualMachineGroupSpec(ManagedSpec):
    """Desired state of a VirtualMachineGroup."""

    replicas: int = Field(default=1, ge=0, le=MAX_REPLICAS)
    """Number of VirtualMachines to keep. `kubectl scale` changes it."""
    template: VirtualMachineTemplate
    """Spec of every member VirtualMachine. A change rolls members over to new servers."""
    ha_policy: HaPolicy = "soft"
    """Spread over hypervisors: `soft` (Nova soft-anti-affinity), `hard` (anti-affinity:
    scheduling fails rather than share a host) or `none` (no server group)."""
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION)
    """Free text; also the description of the members' servers unless the template sets one."""
    availability_zones: list[str] = Field(default_factory=list)
    """Spread members round-robin over these Nova availability zones."""
    strategy: RolloutStrategy = Field(default_factory=RolloutStrategy)
    """Rolling replacement limits."""
    import_: GroupImport | None = Field(default=None, alias="import")
    """Take over existing servers as members (each member imports one; see
    `import.members`) instead of booting new ones."""


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
