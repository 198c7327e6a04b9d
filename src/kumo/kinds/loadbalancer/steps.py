"""The LoadBalancer's cloud writes: one frozen dataclass per kind of Octavia change, and
:func:`call`, which makes one.

The plan (``plan.py``) lists steps; the actuator makes the first (Octavia takes one
change at a time) and, in a dry pass, records the rest. A step is data — a plan is read
and tested as the exact writes it will make — and :func:`call` is one exhaustive
``match``, so mypy checks every write against the port and fails when a new step is not
handled (no dispatch by name).

Each step carries ``why`` (the pass's message while it is under way) and ``events``
((reason, message) pairs announced as Normal events once Octavia accepted it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from kumo.ports import LoadBalancingPort
from kumo.ports.model import MemberSpec

Events = tuple[tuple[str, str], ...]


@dataclass(frozen=True, kw_only=True)
class Said:
    """What every step says about itself (keyword-only, after the write's own fields)."""

    why: str
    events: Events = ()


@dataclass(frozen=True)
class UpdateLoadBalancer(Said):
    lb_id: str
    description: str | None


@dataclass(frozen=True)
class CreateListener(Said):
    lb_id: str
    name: str
    protocol: str
    port: int
    tags: list[str]


@dataclass(frozen=True)
class DeleteListener(Said):
    listener_id: str


@dataclass(frozen=True)
class CreatePool(Said):
    listener_id: str
    name: str
    protocol: str
    tags: list[str]


@dataclass(frozen=True)
class DeletePool(Said):
    pool_id: str


@dataclass(frozen=True)
class CreateHealthMonitor(Said):
    pool_id: str
    protocol: str
    url_path: str | None
    tags: list[str]


@dataclass(frozen=True)
class DeleteHealthMonitor(Said):
    monitor_id: str


@dataclass(frozen=True)
class AddMembers(Said):
    """Octavia's batch update with only additions: the pool's other members untouched."""

    pool_id: str
    members: list[MemberSpec]


@dataclass(frozen=True)
class ReplaceOwnedMembers(Said):
    """Octavia's batch update of Kumo's members (foreign ones are sent back as they are)."""

    pool_id: str
    uid: str
    members: list[MemberSpec]


@dataclass(frozen=True)
class CreateMember(Said):
    pool_id: str
    member: MemberSpec


@dataclass(frozen=True)
class UpdateOwnedMember(Said):
    pool_id: str
    member_id: str
    uid: str
    member: MemberSpec


@dataclass(frozen=True)
class DeleteOwnedMember(Said):
    pool_id: str
    member_id: str
    uid: str


MemberStep = AddMembers | ReplaceOwnedMembers | CreateMember | UpdateOwnedMember | DeleteOwnedMember
Step = (
    UpdateLoadBalancer
    | CreateListener
    | DeleteListener
    | CreatePool
    | DeletePool
    | CreateHealthMonitor
    | DeleteHealthMonitor
    | MemberStep
)
#: The steps that change a pool's members (a pool being filled times its batches by them).
MEMBER_STEPS = (AddMembers, ReplaceOwnedMembers, CreateMember, UpdateOwnedMember, DeleteOwnedMember)


def members_of(step: Step) -> str | None:
    """The pool whose members ``step`` changes, or None for any other step."""
    return step.pool_id if isinstance(step, MEMBER_STEPS) else None


async def call(cloud: LoadBalancingPort, step: Step) -> None:
    """Make the write ``step`` stands for (errors, Octavia's 409 included, propagate)."""
    match step:
        case UpdateLoadBalancer():
            await cloud.update_load_balancer(step.lb_id, description=step.description)
        case CreateListener():
            await cloud.create_listener(
                step.lb_id, name=step.name, protocol=step.protocol, port=step.port, tags=step.tags
            )
        case DeleteListener():
            await cloud.delete_listener(step.listener_id)
        case CreatePool():
            await cloud.create_pool(
                step.listener_id, name=step.name, protocol=step.protocol, tags=step.tags
            )
        case DeletePool():
            await cloud.delete_pool(step.pool_id)
        case CreateHealthMonitor():
            await cloud.create_health_monitor(
                step.pool_id, protocol=step.protocol, url_path=step.url_path, tags=step.tags
            )
        case DeleteHealthMonitor():
            await cloud.delete_health_monitor(step.monitor_id)
        case AddMembers():
            await cloud.add_members(step.pool_id, step.members)
        case ReplaceOwnedMembers():
            await cloud.replace_owned_members(step.pool_id, step.uid, step.members)
        case CreateMember():
            await cloud.create_member(step.pool_id, step.member)
        case UpdateOwnedMember():
            await cloud.update_owned_member(step.pool_id, step.member_id, step.uid, step.member)
        case DeleteOwnedMember():
            await cloud.delete_owned_member(step.pool_id, step.member_id, step.uid)
        case _:
            assert_never(step)
