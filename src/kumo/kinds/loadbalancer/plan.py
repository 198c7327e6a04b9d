"""LoadBalancer steps, free of I/O: what the next cloud changes are, port by port.

Octavia locks a load balancer while it applies a change (``PENDING_*``; another
change meanwhile gets 409), so the actuator makes ONE change per pass.
:func:`plan_steps` lists the first thing each port still needs, in spec order; the
actuator applies the first step and looks again. A step is a typed write
(``steps.py``), so a plan can be read (and tested) as the exact calls it will make.

Members change in one batch per pool, or one member per call (``members.py``); a
member whose VM leaves drains first (weight 0 for the port's ``drainSeconds``, then
removed). Who should be a member is ``wanted.py``'s; which monitor is applied,
``monitors.py``'s; the pass's decision and status, ``decision.py``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kumo.api.loadbalancer import LoadBalancerSpec, Port
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.kinds.loadbalancer import members, steps
from kumo.kinds.loadbalancer.monitors import monitor_label, monitor_matches
from kumo.ports.model import (
    HealthMonitor,
    Listener,
    LoadBalancer,
    Member,
    Pool,
    marker_tags,
    owner_of,
)

ACTIVE = "ACTIVE"
ERROR = "ERROR"


@dataclass(frozen=True)
class Tree:
    """What one pass observed under Kumo's load balancer."""

    lb: LoadBalancer
    listeners: list[Listener] = field(default_factory=list)
    pools: list[Pool] = field(default_factory=list)
    members: dict[str, list[Member]] = field(default_factory=dict)
    """Pool ID → its members."""
    monitors: dict[str, HealthMonitor] = field(default_factory=dict)
    """Health monitor ID → monitor (only those that still exist)."""


# -- naming and validation -----------------------------------------------------------------


def lb_name(namespace: str, name: str) -> str:
    """Namespace first: two teams may both call their LB ``web`` in one project."""
    return f"{namespace}-{name}"


def child_name(lb: str, port: int) -> str:
    return f"{lb}-{port}"


def validate(spec: LoadBalancerSpec) -> None:
    """What the CRD schema cannot say on Kubernetes 1.20: frontend ports are unique
    (Octavia refuses a second listener on a port, so the spec could never converge)."""
    seen: set[int] = set()
    for i, port in enumerate(spec.ports):
        if port.port in seen:
            raise TerminalError(
                "DuplicatePort", f"port {port.port} is listed twice", field=f"spec.ports[{i}].port"
            )
        seen.add(port.port)


# -- observed tree -----------------------------------------------------------------------------


def immutable_changes(
    spec: LoadBalancerSpec, lb: LoadBalancer, network_id: str, flavor_id: str | None
) -> list[Change]:
    """Spec fields Octavia cannot change on an existing load balancer that differ from
    it (old = the load balancer's, new = the spec's, resolved to IDs)."""
    changed = []
    if (spec.zone or None) != lb.availability_zone:
        changed.append(Change("spec.zone", lb.availability_zone, spec.zone))
    if lb.vip_network_id and network_id != lb.vip_network_id:
        field = "spec.vipNetwork" if spec.vip_network else "spec.vipType"
        changed.append(Change(field, lb.vip_network_id, network_id))
    if flavor_id != lb.flavor_id:
        changed.append(Change("spec.serviceType", lb.flavor_id, flavor_id))
    if spec.vip_address and lb.vip_address and spec.vip_address != lb.vip_address:
        changed.append(Change("spec.vipAddress", lb.vip_address, spec.vip_address))
    return changed


def is_pending(lb: LoadBalancer) -> bool:
    return lb.provisioning_status.startswith("PENDING_")


def listener_for(tree: Tree, port: int) -> Listener | None:
    return next((x for x in tree.listeners if x.port == port), None)


def pool_for(tree: Tree, listener: Listener | None) -> Pool | None:
    if listener is None:
        return None
    return next(
        (p for p in tree.pools if p.listener_id == listener.id or p.id == listener.default_pool_id),
        None,
    )


# -- steps -----------------------------------------------------------------------------------


def plan_steps(
    spec: LoadBalancerSpec,
    wanted: list[list[members.WantedMember]],
    tree: Tree,
    uid: str,
    name: str,
    clock: members.DrainClock,
    changes: list[members.PoolMembers | None] | None = None,
) -> list[steps.Step]:
    """Everything that can be decided now: per port, its next step (a port's later
    steps depend on IDs its earlier steps create), or its member changes — each
    single-member call stands alone, so all of them are listed. Empty means converged.
    ``changes``: :func:`pool_changes` of the same arguments, if the caller has them."""
    found: list[steps.Step] = []
    if (tree.lb.description or "") != (spec.description or ""):
        found.append(
            steps.UpdateLoadBalancer(tree.lb.id, spec.description, why="description changed")
        )
    if changes is None:
        changes = pool_changes(spec, wanted, tree, uid, clock)
    for port, port_wanted, change in zip(spec.ports, wanted, changes, strict=True):
        found += port_steps(port, port_wanted, tree, uid, name, clock, change)
    return found + stale_steps(spec, tree, uid)


def pool_changes(
    spec: LoadBalancerSpec,
    wanted: list[list[members.WantedMember]],
    tree: Tree,
    uid: str,
    clock: members.DrainClock,
) -> list[members.PoolMembers | None]:
    """Per port, its pool's members as they should be after this pass (None: no pool
    yet). Decided once per pass: the drains reported and the steps planned both read
    it (each was an O(members) computation of its own)."""
    found: list[members.PoolMembers | None] = []
    for port, port_wanted in zip(spec.ports, wanted, strict=True):
        pool = pool_for(tree, listener_for(tree, port.port))
        current = tree.members.get(pool.id, []) if pool is not None else []
        found.append(members.pool_members(port, port_wanted, current, uid, clock) if pool else None)
    return found


def port_steps(
    port: Port,
    wanted: list[members.WantedMember],
    tree: Tree,
    uid: str,
    name: str,
    clock: members.DrainClock,
    change: members.PoolMembers | None = None,
) -> list[steps.Step]:
    """The next change for one port: listener, then pool, then monitor, then members
    (``change``: its pool's :func:`members.pool_members`, if known)."""
    rs = port.real_servers
    listener = listener_for(tree, port.port)
    if listener is None:
        why = f"port {port.port}: add listener"
        new = child_name(name, port.port)
        return [
            steps.CreateListener(
                tree.lb.id, new, port.protocol, port.port, marker_tags(uid), why=why
            )
        ]
    pool = pool_for(tree, listener)
    if listener.protocol.upper() != port.protocol.upper():
        _must_own("listener", listener.id, listener.tags, uid, f"port {port.port}: protocol")
        if pool is not None:
            _must_own("pool", pool.id, pool.tags, uid, f"port {port.port}: protocol")
        return [remove_listener(listener, pool, f"port {port.port}: protocol changed")]
    if pool is None:
        why = f"port {port.port}: add pool"
        new = child_name(name, port.port)
        return [steps.CreatePool(listener.id, new, rs.protocol, marker_tags(uid), why=why)]
    if pool.protocol.upper() != rs.protocol.upper():
        _must_own("pool", pool.id, pool.tags, uid, f"port {port.port}: backend protocol")
        return [steps.DeletePool(pool.id, why=f"port {port.port}: backend protocol changed")]
    monitor = monitor_step(port, pool, tree, uid)
    if monitor is not None:
        return [monitor]
    current = tree.members.get(pool.id, [])
    if change is None:
        change = members.pool_members(port, wanted, current, uid, clock)
    return members.member_steps(port, change, current, pool.id, uid)


def remove_listener(listener: Listener, pool: Pool | None, why: str) -> steps.Step:
    """Pool first, then the listener (next pass): deleting the pool first never leaves
    a listener pointing at a missing pool, and each call stands alone if we crash."""
    if pool is not None:
        return steps.DeletePool(pool.id, why=f"{why}: remove pool")
    return steps.DeleteListener(listener.id, why=f"{why}: remove listener")


def monitor_step(port: Port, pool: Pool, tree: Tree, uid: str) -> steps.Step | None:
    """Apply the port's FIRST monitor; replace ours when it differs (delete now, create
    next pass); never touch a monitor without Kumo's marker."""
    want = port.monitors[0] if port.monitors else None
    current = tree.monitors.get(pool.health_monitor_id) if pool.health_monitor_id else None
    if current is not None:
        if owner_of(current.tags) == uid and (want is None or not monitor_matches(want, current)):
            return steps.DeleteHealthMonitor(current.id, why=f"port {port.port}: monitor changed")
        return None
    if want is None or pool.health_monitor_id:
        return None
    why = f"port {port.port}: add monitor {monitor_label(want)}"
    tags = marker_tags(uid)
    return steps.CreateHealthMonitor(pool.id, want.protocol, want.endpoint, tags, why=why)


def draining(
    spec: LoadBalancerSpec,
    wanted: list[list[members.WantedMember]],
    tree: Tree,
    uid: str,
    clock: members.DrainClock,
    changes: list[members.PoolMembers | None] | None = None,
) -> dict[str, members.Draining]:
    """Every leaving member of Kumo's under this load balancer, by Octavia member ID
    (``changes``: :func:`pool_changes` of the same arguments, if the caller has them)."""
    if changes is None:
        changes = pool_changes(spec, wanted, tree, uid, clock)
    found: dict[str, members.Draining] = {}
    for change in changes:
        if change is not None:
            found.update((d.member.id, d) for d in change.draining)
    return found


def stale_steps(spec: LoadBalancerSpec, tree: Tree, uid: str) -> list[steps.Step]:
    """Kumo's listeners for ports no longer in spec, and Kumo's pools no listener uses.
    A listener or pool without Kumo's marker — someone added it to Kumo's load balancer
    by hand — is left alone (see :func:`foreign_children`)."""
    ports = {p.port for p in spec.ports}
    found = [
        remove_listener(
            x,
            mine if (mine := pool_for(tree, x)) and owner_of(mine.tags) == uid else None,
            f"port {x.port}: no longer in spec",
        )
        for x in tree.listeners
        if x.port not in ports and owner_of(x.tags) == uid
    ]
    used = {p.id for x in tree.listeners if (p := pool_for(tree, x)) is not None}
    found += [
        steps.DeletePool(p.id, why=f"pool {p.id}: not used by any listener")
        for p in tree.pools
        if p.id not in used and owner_of(p.tags) == uid
    ]
    return found


def foreign_children(spec: LoadBalancerSpec, tree: Tree, uid: str) -> list[str]:
    """Listeners and pools under Kumo's LB that Kumo did not create and would otherwise
    remove: reported (status.foreignResources), never deleted."""
    ports = {p.port for p in spec.ports}
    used = {p.id for x in tree.listeners if (p := pool_for(tree, x)) is not None}
    found = [
        f"listener {x.id} (port {x.port})"
        for x in tree.listeners
        if x.port not in ports and owner_of(x.tags) != uid
    ]
    found += [f"pool {p.id}" for p in tree.pools if p.id not in used and owner_of(p.tags) != uid]
    return found


def _must_own(noun: str, resource_id: str, tags: list[str] | None, uid: str, what: str) -> None:
    """Changing this port needs a child replaced; refuse when Kumo did not create it."""
    if owner_of(tags) != uid:
        raise TerminalError(
            "NotOwned",
            f"{noun} {resource_id} does not carry Kumo's marker: Kumo will not replace it "
            f"to apply the change of {what}",
            field="spec.ports",
        )
