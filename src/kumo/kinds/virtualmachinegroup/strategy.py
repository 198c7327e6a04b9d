"""The rollout limits a VirtualMachineGroup's `spec.strategy` comes to, in members.

Pure: called by the group's plan (``plan.py``) for every pass, and by its ``validate``
for what admission refuses (the second line, for objects stored before a rule existed
or an API server without CEL). Unset limits default by identity, as a StatefulSet
needs no strategy and a Deployment's is 25 % / 25 %:

- ``Random``: maxSurge 1, maxUnavailable 0 (a new member is Ready before an old one goes);
- ``Ordinal``: maxSurge 0, maxUnavailable 1 (a member exists once under its name: it is
  deleted, then made again); ``maxSurge: 0`` alone on a Random group also means
  maxUnavailable 1.

A percentage is of ``replicas`` as a Deployment's: surge rounds up, unavailability down,
and should both come to 0 (``"10%"`` of 3 members unavailable, no surge), unavailability
is 1 — a rollout must be able to replace a member.
"""

from __future__ import annotations

from dataclasses import dataclass

from kumo.api.virtualmachinegroup import Identity, RolloutStrategy

Limit = int | str


@dataclass(frozen=True)
class Limits:
    """How many members a rollout may add beyond ``replicas`` and leave not Ready."""

    max_surge: int
    max_unavailable: int


def is_zero(limit: Limit) -> bool:
    """``0`` or ``"0%"``: none, whatever ``replicas`` is (what admission can tell)."""
    return limit in (0, "0%")


def scaled(limit: Limit, replicas: int, round_up: bool) -> int:
    """A count as is; a percentage of ``replicas``, rounded up or down."""
    if isinstance(limit, int):
        return limit
    share = int(limit.rstrip("%")) * replicas
    return -(-share // 100) if round_up else share // 100


def given(strategy: RolloutStrategy, identity: Identity) -> tuple[Limit, Limit]:
    """The limits as written, unset ones filled by identity (before any percentage)."""
    surge: Limit = (
        strategy.max_surge
        if strategy.max_surge is not None
        else (0 if identity == "Ordinal" else 1)
    )
    unavailable: Limit
    if strategy.max_unavailable is not None:
        unavailable = strategy.max_unavailable
    else:
        unavailable = 1 if identity == "Ordinal" or is_zero(surge) else 0
    return surge, unavailable


def resolve(strategy: RolloutStrategy, identity: Identity, replicas: int) -> Limits:
    """The limits in members for a group of ``replicas``."""
    surge, unavailable = given(strategy, identity)
    limits = Limits(scaled(surge, replicas, True), scaled(unavailable, replicas, False))
    if limits.max_surge == 0 and limits.max_unavailable == 0:
        return Limits(0, 1)
    return limits


def problem(strategy: RolloutStrategy, identity: Identity) -> str | None:
    """What admission refuses about ``strategy`` (same messages), or None."""
    surge, unavailable = given(strategy, identity)
    if identity == "Ordinal" and not is_zero(surge):
        return (
            "spec.strategy.maxSurge: must be 0 with identity Ordinal (a member is replaced "
            "delete-then-create under its own name and volumes; leave it unset)"
        )
    if is_zero(surge) and is_zero(unavailable):
        if identity == "Ordinal":
            return (
                "spec.strategy.maxUnavailable: cannot be 0 with identity Ordinal (maxSurge is "
                "0: a rollout could never replace a member; leave it unset for 1)"
            )
        return (
            "spec.strategy: maxSurge and maxUnavailable cannot both be 0 (a rollout could "
            "never replace a member)"
        )
    return None
