"""VirtualMachineGroup (short name `vmg`): N VirtualMachines and one Nova server group."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kumo.api.common import MAX_DESCRIPTION, KumoModel, ManagedSpec, ManagedStatus
from kumo.api.virtualmachine import VirtualMachineTemplate

HaPolicy = Literal["soft", "hard", "none"]

#: The most members one group may ask for (a typo must not create 10,000 servers).
MAX_REPLICAS = 1000

#: Nova server group policy for each haPolicy (`none` has no server group).
SERVER_GROUP_POLICY: dict[str, str] = {"soft": "soft-anti-affinity", "hard": "anti-affinity"}


class RolloutStrategy(KumoModel):
    """How members are replaced when the template changes."""

    max_surge: int = Field(default=1, ge=0)
    """How many members above `replicas` may exist during a rollout."""
    max_unavailable: int = Field(default=0, ge=0)
    """How many members below `replicas` may be not Ready during a rollout."""


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
