"""Pure decisions for VirtualMachineGroup: how many members to create, which to delete.

Like a ReplicaSet and a Deployment in one: members built from an older template
are rolled over within ``maxSurge``/``maxUnavailable``; scale-down removes members
that are not ready first, then the newest.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from kumo.api.common import ManagedSpec
from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec

DEFAULT_POLICY = ManagedSpec.model_fields["deletion_policy"].default


@dataclass(frozen=True)
class MemberView:
    name: str
    template_hash: str
    ready: bool
    zone: str | None = None
    created: str = ""


@dataclass(frozen=True)
class MemberPlan:
    create_zones: list[str | None] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)


def template_hash(spec: VirtualMachineGroupSpec, server_group_id: str | None) -> str:
    """Members whose label differs from this are rolled over."""
    payload = {"template": spec.template.model_dump(by_alias=True), "serverGroup": server_group_id}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:10]


def plan_members(
    spec: VirtualMachineGroupSpec, current_hash: str, members: list[MemberView]
) -> MemberPlan:
    """Decide creations and deletions for one pass (members being deleted excluded)."""
    desired = spec.replicas
    updated = [m for m in members if m.template_hash == current_hash]
    old = [m for m in members if m.template_hash != current_hash]
    delete: list[str] = []

    # Old members that are not ready never count towards availability: drop them.
    broken_old = [m for m in old if not m.ready]
    delete += [m.name for m in broken_old]
    old = [m for m in old if m.ready]

    if len(updated) > desired:  # scale down among current members
        delete += [m.name for m in _victims(updated, len(updated) - desired)]
        updated = [m for m in updated if m.name not in delete]
        delete += [m.name for m in old]
        return MemberPlan([], delete)

    # Bring current members up to `desired` without exceeding desired + maxSurge in all.
    need = desired - len(updated)
    room = desired + spec.strategy.max_surge - (len(updated) + len(old))
    creates = max(0, min(need, room))

    # Retire old members while at least desired - maxUnavailable stay ready.
    ready_total = sum(m.ready for m in updated) + len(old)
    removable = ready_total - (desired - spec.strategy.max_unavailable)
    delete += [m.name for m in _victims(old, max(0, min(len(old), removable)))]
    zones = _zones_for(spec.availability_zones, [*updated, *old], creates)
    return MemberPlan(zones, delete)


def policy_patches(policy: str, members: Mapping[str, str | None]) -> list[str]:
    """Members (name → their spec.deletionPolicy) to patch to the group's ``policy``.

    deletionPolicy is not a server property (it is not in the template hash), so a
    change is patched onto existing members instead of rolling them over.
    """
    return sorted(name for name, has in members.items() if (has or DEFAULT_POLICY) != policy)


def _victims(members: list[MemberView], count: int) -> list[MemberView]:
    """Not-ready first, then newest first (like a ReplicaSet)."""
    ranked = sorted(members, key=lambda m: (m.ready, _neg(m.created), m.name))
    return ranked[:count]


def _neg(created: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in created)


def _zones_for(zones: list[str], members: list[MemberView], count: int) -> list[str | None]:
    if not zones:
        return [None] * count
    load = Counter({z: 0 for z in zones})
    load.update(m.zone for m in members if m.zone is not None and m.zone in load)
    picked: list[str | None] = []
    for _ in range(count):
        zone = min(zones, key=lambda z: (load[z], zones.index(z)))
        load[zone] += 1
        picked.append(zone)
    return picked


def validate(spec: VirtualMachineGroupSpec) -> str | None:
    """Spec problems the schema cannot express (no CEL on Kubernetes 1.20)."""
    if spec.strategy.max_surge == 0 and spec.strategy.max_unavailable == 0:
        return "spec.strategy: maxSurge and maxUnavailable cannot both be 0"
    return None
