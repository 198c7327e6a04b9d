"""One pass of a LoadBalancer, decided: what it read (:class:`Observed`), the one pure
decision (:func:`decide`) and the Result it reports (:func:`report`, or :func:`busy`
when Octavia refused the step with a 409). No I/O, no clock: the time is the
observation's.

The composite lifecycle (``engine/composite.py``) runs it: the anchor finds or creates
the load balancer, the actuator observes its tree, this decides, the actuator makes the
first step (Octavia takes one change at a time), this reports. What a pass says:

* the load balancer was created this pass, or Octavia holds it ``PENDING_*``: waiting,
  nothing planned (no ``unappliedChanges`` or ``foreignResources`` then);
* a step to make: waiting, its ``why`` the message;
* only additions to a pool being filled, held for its next batch: waiting until then;
* nothing: Ready, looked at again when the earliest drain ends.

Status always carries what was observed (ports, members, drains), so VirtualMachines see
when they have been drained, and the next pass when each drain began.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field
from typing import Any

from kumo.api.loadbalancer import LoadBalancerSpec, Port
from kumo.engine.errors import TerminalError
from kumo.engine.lifecycle import Wait
from kumo.engine.objects import Body
from kumo.engine.result import Result
from kumo.kinds.loadbalancer import members, monitors, plan, steps, wanted
from kumo.ports.model import Member

#: Seconds between passes while Octavia works: a step takes it about a second.
STEP_SECONDS = 1.0
PROVISIONING = "Provisioning"


@dataclass(frozen=True)
class Observed:
    """What a pass read: the spec (its VIP network resolved), the tree, the members."""

    spec: LoadBalancerSpec
    uid: str
    name: str
    """The load balancer's name in Octavia (its children are named after it)."""
    old: Body
    """The object's status as the pass found it (drain starts, warnings given)."""
    tree: plan.Tree
    wanted: list[list[members.WantedMember]]
    """Per port, the members its group's Ready VMs should be."""
    groups: list[list[Body]]
    """Per port, its group's VMs (those still coming hold a pool being filled)."""
    clock: members.DrainClock | None = None
    """None on the pass that created the load balancer (nothing read of it yet)."""
    placement: tuple[str, str | None] | None = None
    """The VIP network and flavor the spec resolves to (not read while it is pending)."""
    member_writes: dict[str, datetime.datetime] = field(default_factory=dict)
    """Pool ID → when Kumo last changed its members (none in a dry pass)."""


@dataclass(frozen=True)
class Decision:
    """Every write and every word of the pass."""

    message: str
    ports: list[dict[str, Any]]
    """Status's ``ports``, from the observed tree."""
    planned: list[steps.Step] = field(default_factory=list)
    """What to change, first step first (only the first is made; a dry pass records all)."""
    ready: bool = False
    after: float | None = STEP_SECONDS
    """When to look again (None: only on a change; Ready with no drain running)."""
    unapplied: list[str] | None = None
    """Spec fields Octavia cannot change that differ (None: not looked at this pass)."""
    foreign: list[str] | None = None
    """Listeners and pools Kumo did not create where it would remove its own."""
    changed_warning: str | None = None
    """``ImmutableFieldChanged``: said before the step."""
    monitors_warning: str | None = None
    """``MonitorsNotApplied``: said once the step was made or refused as busy."""
    refused: TerminalError | None = None
    """A step the plan cannot make (a foreign child in the way): the pass fails with it."""


def decide(o: Observed) -> Decision:
    """The whole decision of a pass (module docstring for what it says)."""
    spec, tree, uid, lb = o.spec, o.tree, o.uid, o.tree.lb
    if o.clock is None:
        return _decision(o, "load balancer is being created", {})
    changes = plan.pool_changes(spec, o.wanted, tree, uid, o.clock)
    drains = plan.draining(spec, o.wanted, tree, uid, o.clock, changes)
    if plan.is_pending(lb) or o.placement is None:
        return _decision(o, f"load balancer is {lb.provisioning_status}", drains)
    unapplied = [c.field for c in plan.immutable_changes(spec, lb, *o.placement)]
    changed = None
    if unapplied and unapplied != (o.old.get("unappliedChanges") or []):
        changed = (
            f"{', '.join(unapplied)} cannot change on an existing Octavia load balancer; "
            "delete and recreate the LoadBalancer to apply (its VIP will change)"
        )
    held = hold_fills(o, o.clock, changes)
    try:
        planned = plan.plan_steps(spec, o.wanted, tree, uid, o.name, o.clock, changes)
    except TerminalError as refused:
        return Decision("", [], changed_warning=changed, refused=refused)
    foreign = plan.foreign_children(spec, tree, uid)
    if planned:
        more = len(planned) - 1
        message = planned[0].why + (f" (at least {more} more change(s) to go)" if more else "")
        decided = _decision(o, message, drains, planned)
    elif held is not None:
        # The time the batch is due, not a countdown or a count: the message (and so
        # the status) stays the same from one VM turning Ready to the next.
        due = members.ceil_second(o.clock.now + datetime.timedelta(seconds=held))
        message = (
            f"new members wait for their pool's next batch at {due:%Y-%m-%dT%H:%M:%SZ}: "
            "more of the group's VMs are on their way, and a pool being filled takes new "
            f"members at most every {members.FILL_BATCH_SECONDS:.0f}s (longer for a big "
            "pool)"
        )
        decided = dataclasses.replace(_decision(o, message, drains), after=held)
    else:
        message = f"load balancer {lb.id} is ACTIVE ({lb.operating_status}) at {lb.vip_address}"
        if drains:
            message += f"; draining {', '.join(sorted({d.member.name for d in drains.values()}))}"
        decided = dataclasses.replace(
            _decision(o, message, drains),
            ready=True,
            after=members.next_drain_end(drains, o.clock.now),
        )
    return dataclasses.replace(
        decided, unapplied=unapplied, foreign=foreign, changed_warning=changed
    )


def _decision(
    o: Observed,
    message: str,
    drains: dict[str, members.Draining],
    planned: list[steps.Step] | None = None,
) -> Decision:
    """A waiting decision, with the status ports observed and the monitors warning."""
    ports = [port_status(p, o.tree, o.uid, drains) for p in o.spec.ports]
    warning = monitors.monitors_warning(o.old, ports)
    return Decision(message, ports, planned or [], monitors_warning=warning)


def hold_fills(
    o: Observed, clock: members.DrainClock, changes: list[members.PoolMembers | None]
) -> float | None:
    """Hold the additions of each pool being filled (:func:`members.fill_hold`): its
    change in ``changes`` becomes "nothing to do" for this pass. Returns the seconds
    until the first held batch is due, or None. The group is counted only for a pool
    with additions after a recent write: a converged pass does not scan it."""
    due: float | None = None
    for i, (port, change) in enumerate(zip(o.spec.ports, changes, strict=True)):
        pool = plan.pool_for(o.tree, plan.listener_for(o.tree, port.port))
        if change is None or pool is None or not change.changed or not change.added:
            continue
        last = o.member_writes.get(pool.id)
        if last is None:
            continue
        current = o.tree.members.get(pool.id, [])
        coming = wanted.coming_vms(o.groups[i])
        left = members.fill_hold(change, current, o.uid, coming, last, clock.now)
        if left is not None:
            changes[i] = dataclasses.replace(change, changed=False)
            due = left if due is None else min(due, left)
    return due


def status(o: Observed, d: Decision) -> dict[str, Any]:
    """Kind status from what was observed, written on every pass (also while waiting):
    VirtualMachines read ports[].members to learn they have been drained, and the next
    pass reads members[].drainingSince to know when a drain began."""
    lb = o.tree.lb
    found: dict[str, Any] = {
        "id": lb.id,
        "vip": lb.vip_address,
        "provisioningStatus": lb.provisioning_status,
        "operatingStatus": lb.operating_status,
        "ports": d.ports,
    }
    if d.unapplied is not None:
        found.update(unappliedChanges=d.unapplied, foreignResources=d.foreign)
    return found


def report(o: Observed, d: Decision) -> Result:
    """The Result of a pass whose step (if any) Octavia accepted."""
    if d.ready:
        return Result(
            phase="Active",
            ready=True,
            reason="Ready",
            message=d.message,
            status=status(o, d),
            requeue_after=d.after,
        )
    after = d.after if d.after is not None else STEP_SECONDS
    return Result.waiting(PROVISIONING, PROVISIONING, d.message, after=after, **status(o, d))


def busy(o: Observed, d: Decision) -> Wait:
    """Octavia refused the step (409: still ``PENDING_*``): wait, and try it again."""
    why = f"load balancer busy, will retry: {d.planned[0].why}"
    return Wait(why, PROVISIONING, PROVISIONING, STEP_SECONDS, status(o, d))


# -- status ----------------------------------------------------------------------------------


def port_status(
    port: Port, tree: plan.Tree | None, uid: str, drains: dict[str, members.Draining] | None = None
) -> dict[str, Any]:
    listener = plan.listener_for(tree, port.port) if tree else None
    pool = plan.pool_for(tree, listener) if tree else None
    current = tree.members.get(pool.id, []) if tree and pool else []
    return {
        "port": port.port,
        "listenerId": listener.id if listener else None,
        "poolId": pool.id if pool else None,
        "healthMonitorId": pool.health_monitor_id if pool else None,
        "members": [
            _member_status(m, (drains or {}).get(m.id))
            for m in sorted(current, key=lambda m: (m.name, m.address, m.port))
        ],
        "unappliedMonitors": monitors.unapplied_monitors(
            port, pool, tree.monitors if tree else None, uid
        ),
    }


def _member_status(m: Member, leaving: members.Draining | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": m.id,
        "name": m.name,
        "address": m.address,
        "port": m.port,
        "weight": m.weight,
    }
    if leaving is not None:
        entry["drainingSince"] = members.rfc3339(leaving.since)
    return entry
