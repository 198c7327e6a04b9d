"""LoadBalancer decisions, free of I/O: who should be a member, what the next cloud
change is and what status reports.

Octavia locks a load balancer while it applies a change (``PENDING_*``; another
change meanwhile gets 409), so the actuator makes ONE change per pass.
:func:`plan_steps` lists the first thing each port still needs, in spec order; the
actuator applies the first step and looks again. A step names the cloud adapter
method to call, so a plan can be read (and tested) as the exact calls it will make.

Members change in one batch per pool (``replace_owned_members``; additions alone:
``add_members``), or — a few members
of a big pool — one member per call (see :func:`members.one_by_one`). A member whose VM
leaves (deleted, scaled in, rolled over, no longer Ready) drains first: weight 0 for
the port's ``drainSeconds``, then removed. When the drain started is recorded in status
(``members[].drainingSince``), so it survives a restart; the time comes in as ``now``
(:class:`DrainClock`): nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kumo.api.loadbalancer import LoadBalancerSpec, Port
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body
from kumo.kinds import ordering
from kumo.kinds.labels import GROUP_LABEL
from kumo.kinds.loadbalancer import members
from kumo.kinds.loadbalancer.monitors import (
    monitor_label,
    monitor_matches,
    monitor_port,
    unapplied_monitors,
)
from kumo.ports.model import (
    HealthMonitor,
    Listener,
    LoadBalancer,
    Member,
    MemberSpec,
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


@dataclass(frozen=True)
class Step:
    """One cloud change: ``await cloud.<op>(*args, **kwargs)``, and why it is needed;
    ``events`` (reason, message) are announced once the change was accepted."""

    op: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    why: str = ""
    events: tuple[tuple[str, str], ...] = ()


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


def referenced_groups(spec: Body) -> set[str]:
    """Group names a raw LoadBalancer spec points at (for dependents; no validation)."""
    return {
        ref
        for port in spec.get("ports") or []
        if (ref := (port.get("realServers") or {}).get("virtualMachineGroupRef"))
    }


# -- members ---------------------------------------------------------------------------------


def is_member_vm(vm: Body) -> bool:
    """A VM takes traffic once Ready with an IP, and stops as soon as it is being deleted
    (so its deletion can wait until it has been drained)."""
    meta = vm.get("metadata") or {}
    status = vm.get("status") or {}
    if meta.get("deletionTimestamp") or not status.get("ip"):
        return False
    conditions = status.get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    return ready is not None and ready.get("status") == "True"


#: Phases of a VM still on its way to serving (no phase: not reconciled yet). Not
#: Error, Stopped or Observed: a VM stuck there would delay every addition to its pool
#: by an interval for as long as it stays.
COMING_PHASES = frozenset({None, "Pending", "Building", "Replacing", "Running"})


def coming_vms(vms: Iterable[Body]) -> int:
    """How many of a group's VMs are on their way to its pools: not being deleted, not
    a member yet (:func:`is_member_vm`), and in a phase that leads there."""
    return sum(
        1
        for vm in vms
        if not (vm.get("metadata") or {}).get("deletionTimestamp")
        and (vm.get("status") or {}).get("phase") in COMING_PHASES
        and not is_member_vm(vm)
    )


def moves_members(lb: Body, vm: Body) -> bool:
    """Can this state of a VM of a referenced group change the LoadBalancer's pools, as
    its status shows them? Yes while it should be a member and is not listed at its
    address in every port of its group (or is listed draining), or is listed and should
    not be (being deleted, gone, not Ready, a new address). A VM that is neither, such as
    one building or one already dropped, wakes no LoadBalancer: each member event of a
    big group made every LoadBalancer on it run a pass over all its members."""
    name = vm["metadata"]["name"]
    group = (vm["metadata"].get("labels") or {}).get(GROUP_LABEL)
    ports = [
        p.get("port")
        for p in (lb.get("spec") or {}).get("ports") or []
        if ((p.get("realServers") or {}).get("virtualMachineGroupRef")) == group
    ]
    listed = ordering.listed_members(lb, name)
    if not is_member_vm(vm):
        return bool(listed)
    ip = vm["status"]["ip"]
    serving = {port for port, m in listed if m.get("address") == ip and m.get("weight") != 0}
    return len(listed) != len(ports) or serving != set(ports)


def wanted_members(vms: list[Body], port: Port) -> list[members.WantedMember]:
    wanted = port_wanting(port)
    return sort_wanted(w for w in map(wanted, vms) if w is not None)


def sort_wanted(found: Iterable[members.WantedMember]) -> list[members.WantedMember]:
    """Sorted by the fields in order, as WantedMember's own order, without a Python-level
    comparison per pair (a 300-member pool took ~2,500 of them per pass)."""
    return sorted(found, key=members.WantedMember.fields)


def port_wanting(port: Port) -> Callable[[Body], members.WantedMember | None]:
    """What a VM is to ``port``'s pool: the member it should be, or None (another
    group's, or not Ready with an address)."""
    group = port.real_servers.virtual_machine_group_ref
    backend, mport = port.real_servers.port, monitor_port(port)

    def wanted(vm: Body) -> members.WantedMember | None:
        if (vm["metadata"].get("labels") or {}).get(GROUP_LABEL) != group or not is_member_vm(vm):
            return None
        return members.WantedMember(vm["metadata"]["name"], vm["status"]["ip"], backend, mport)

    return wanted


def port_key(port: Port) -> tuple[str, int, int | None]:
    """All of a port that :func:`port_wanting` reads: equal keys, same answers."""
    rs = port.real_servers
    return (rs.virtual_machine_group_ref, rs.port, monitor_port(port))


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
) -> list[Step]:
    """Everything that can be decided now: per port, its next step (a port's later
    steps depend on IDs its earlier steps create), or its member changes — each
    single-member call stands alone, so all of them are listed. Empty means converged.
    ``changes``: :func:`pool_changes` of the same arguments, if the caller has them."""
    steps: list[Step] = []
    if (tree.lb.description or "") != (spec.description or ""):
        steps.append(
            Step(
                "update_load_balancer",
                (tree.lb.id,),
                {"description": spec.description},
                "description changed",
            )
        )
    if changes is None:
        changes = pool_changes(spec, wanted, tree, uid, clock)
    for port, port_wanted, change in zip(spec.ports, wanted, changes, strict=True):
        steps += port_steps(port, port_wanted, tree, uid, name, clock, change)
    return steps + stale_steps(spec, tree, uid)


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
) -> list[Step]:
    """The next change for one port: listener, then pool, then monitor, then members
    (``change``: its pool's :func:`members.pool_members`, if known)."""
    rs = port.real_servers
    listener = listener_for(tree, port.port)
    if listener is None:
        kwargs = {
            "name": child_name(name, port.port),
            "protocol": port.protocol,
            "port": port.port,
            "tags": marker_tags(uid),
        }
        return [Step("create_listener", (tree.lb.id,), kwargs, f"port {port.port}: add listener")]
    pool = pool_for(tree, listener)
    if listener.protocol.upper() != port.protocol.upper():
        _must_own("listener", listener.id, listener.tags, uid, f"port {port.port}: protocol")
        if pool is not None:
            _must_own("pool", pool.id, pool.tags, uid, f"port {port.port}: protocol")
        return [remove_listener(listener, pool, f"port {port.port}: protocol changed")]
    if pool is None:
        kwargs = {
            "name": child_name(name, port.port),
            "protocol": rs.protocol,
            "tags": marker_tags(uid),
        }
        return [Step("create_pool", (listener.id,), kwargs, f"port {port.port}: add pool")]
    if pool.protocol.upper() != rs.protocol.upper():
        _must_own("pool", pool.id, pool.tags, uid, f"port {port.port}: backend protocol")
        why = f"port {port.port}: backend protocol changed"
        return [Step("delete_pool", (pool.id,), {}, why)]
    monitor = monitor_step(port, pool, tree, uid)
    return [monitor] if monitor else member_steps(port, wanted, pool, tree, uid, clock, change)


def remove_listener(listener: Listener, pool: Pool | None, why: str) -> Step:
    """Pool first, then the listener (next pass): deleting the pool first never leaves
    a listener pointing at a missing pool, and each call stands alone if we crash."""
    if pool is not None:
        return Step("delete_pool", (pool.id,), {}, f"{why}: remove pool")
    return Step("delete_listener", (listener.id,), {}, f"{why}: remove listener")


def monitor_step(port: Port, pool: Pool, tree: Tree, uid: str) -> Step | None:
    """Apply the port's FIRST monitor; replace ours when it differs (delete now, create
    next pass); never touch a monitor without Kumo's marker."""
    want = port.monitors[0] if port.monitors else None
    current = tree.monitors.get(pool.health_monitor_id) if pool.health_monitor_id else None
    if current is not None:
        if owner_of(current.tags) == uid and (want is None or not monitor_matches(want, current)):
            return Step(
                "delete_health_monitor", (current.id,), {}, f"port {port.port}: monitor changed"
            )
        return None
    if want is None or pool.health_monitor_id:
        return None
    kwargs = {"protocol": want.protocol, "url_path": want.endpoint, "tags": marker_tags(uid)}
    return Step(
        "create_health_monitor",
        (pool.id,),
        kwargs,
        f"port {port.port}: add monitor {monitor_label(want)}",
    )


def member_steps(
    port: Port,
    wanted: list[members.WantedMember],
    pool: Pool,
    tree: Tree,
    uid: str,
    clock: members.DrainClock,
    change: members.PoolMembers | None = None,
) -> list[Step]:
    """Every member change the pool needs now — additions, drains starting (weight 0),
    removals whose drain is over — as ONE batch update, or, when only a few members of
    a big pool change, as single-member calls (:func:`members.one_by_one`), applied one
    per pass. Foreign members are not Kumo's to list: the adapter sends them back as
    they are (batch) or refuses to touch them (single calls)."""
    current = tree.members.get(pool.id, [])
    if change is None:
        change = members.pool_members(port, wanted, current, uid, clock)
    if not change.changed:
        return []
    started = {d.member.id for d in change.started}
    calls = members.one_by_one(change, current, uid)
    if calls is not None:
        steps = []
        for i, call in enumerate(calls, 1):
            what = members.label(call.spec)
            events: tuple[tuple[str, str], ...] = ()
            if call.op == "create_member":
                args: tuple[Any, ...] = (pool.id, call.spec)
                verb = "add member"
            elif call.op == "delete_owned_member":
                args = (pool.id, call.member_id, uid)
                verb = "remove member"
                events = (_removed_event(port, call.spec),)
            else:
                args = (pool.id, call.member_id, uid, call.spec)
                verb = "update member"
                if call.member_id in started:
                    verb = "drain member"
                    events = (_draining_event(port, call.spec),)
            steps.append(
                Step(
                    call.op, args, {}, f"port {port.port}: {verb} {what} ({i}/{len(calls)})", events
                )
            )
        return steps
    if members.only_additions(change, current, uid):
        return [
            Step(
                "add_members",
                (pool.id, change.added),
                {},
                f"port {port.port}: add {len(change.added)} member(s)",
            )
        ]
    parts = [f"{len(change.added)} to add"] if change.added else []
    parts += [f"{len(change.started)} to drain"] if change.started else []
    parts += [f"{len(change.removed)} to remove"] if change.removed else []
    events = tuple(_draining_event(port, d.member) for d in change.started)
    events += tuple(_removed_event(port, d.member) for d in change.removed)
    return [
        Step(
            "replace_owned_members",
            (pool.id, uid, change.batch),
            {},
            f"port {port.port}: update members ({', '.join(parts) or 'correct weights'})",
            events,
        )
    ]


def _draining_event(port: Port, m: Member | MemberSpec) -> tuple[str, str]:
    leaving = f"weight 0 for {port.real_servers.drain_seconds}s, then removed"
    return ("Draining", f"member {members.label(m)} of port {port.port}: {leaving}")


def _removed_event(port: Port, m: Member | MemberSpec) -> tuple[str, str]:
    return ("MemberRemoved", f"member {members.label(m)} removed from port {port.port}")


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


def stale_steps(spec: LoadBalancerSpec, tree: Tree, uid: str) -> list[Step]:
    """Kumo's listeners for ports no longer in spec, and Kumo's pools no listener uses.
    A listener or pool without Kumo's marker — someone added it to Kumo's load balancer
    by hand — is left alone (see :func:`foreign_children`)."""
    ports = {p.port for p in spec.ports}
    steps = [
        remove_listener(
            x,
            mine if (mine := pool_for(tree, x)) and owner_of(mine.tags) == uid else None,
            f"port {x.port}: no longer in spec",
        )
        for x in tree.listeners
        if x.port not in ports and owner_of(x.tags) == uid
    ]
    used = {p.id for x in tree.listeners if (p := pool_for(tree, x)) is not None}
    steps += [
        Step("delete_pool", (p.id,), {}, f"pool {p.id}: not used by any listener")
        for p in tree.pools
        if p.id not in used and owner_of(p.tags) == uid
    ]
    return steps


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


# -- status ----------------------------------------------------------------------------------


def port_status(
    port: Port, tree: Tree | None, uid: str, drains: dict[str, members.Draining] | None = None
) -> dict[str, Any]:
    listener = listener_for(tree, port.port) if tree else None
    pool = pool_for(tree, listener) if tree else None
    members = tree.members.get(pool.id, []) if tree and pool else []
    return {
        "port": port.port,
        "listenerId": listener.id if listener else None,
        "poolId": pool.id if pool else None,
        "healthMonitorId": pool.health_monitor_id if pool else None,
        "members": [
            _member_status(m, (drains or {}).get(m.id))
            for m in sorted(members, key=lambda m: (m.name, m.address, m.port))
        ],
        "unappliedMonitors": unapplied_monitors(port, pool, tree, uid),
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


def status(
    spec: LoadBalancerSpec, tree: Tree, uid: str, drains: dict[str, members.Draining] | None = None
) -> dict[str, Any]:
    """Kind status from what was observed, written on every pass (also while waiting):
    VirtualMachines read ports[].members to learn they have been drained, and the next
    pass reads members[].drainingSince to know when a drain began."""
    lb = tree.lb
    return {
        "id": lb.id,
        "vip": lb.vip_address,
        "provisioningStatus": lb.provisioning_status,
        "operatingStatus": lb.operating_status,
        "ports": [port_status(p, tree, uid, drains) for p in spec.ports],
    }
