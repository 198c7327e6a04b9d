"""LoadBalancer actuator: observe the Octavia tree, make the next change, report.

Order of a pass: check what only Kumo can check (region, groups, unique ports) →
find the load balancer (status.id, else adopt by marker, else create and record its
ID at once) → wait while Octavia holds it PENDING_* → observe listeners, pools,
monitors and members → apply the FIRST planned step and come back in a second
(Octavia refuses a second change while the first is pending). Status always carries
what was observed, so VirtualMachines can see when they have been drained, and when
each leaving member's drain began; while members drain, the next pass is due when the
earliest drain ends.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from collections.abc import Callable
from typing import Any

from kumo.api import kinds
from kumo.api.loadbalancer import LoadBalancerSpec
from kumo.engine import orphan, ownership
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError, TransientError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import ordering, references
from kumo.kinds.derived import Derived
from kumo.kinds.labels import GROUP_LABEL
from kumo.kinds.loadbalancer import members, monitors, plan
from kumo.ports import markers
from kumo.ports.model import LoadBalancer, marker_tags, owner_of, released_tags

#: Seconds between passes while Octavia works: a step takes it about a second.
STEP_SECONDS = 1.0
#: Seconds between finalize passes while Octavia deletes.
DELETE_SECONDS = 2.0
#: Safety net while the VIP's Network is not Ready (its status change wakes the LB).
NETWORK_SECONDS = 30.0
#: The cloud adapter's methods that change a pool's members (the pool's ID first).
MEMBER_OPS = frozenset(
    {
        "replace_owned_members",
        "add_members",
        "create_member",
        "update_owned_member",
        "delete_owned_member",
    }
)


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class LoadBalancerActuator:
    info = kinds.LOAD_BALANCER

    def __init__(self, clock: Callable[[], datetime.datetime] = utc_now) -> None:
        self.clock = clock
        """The time drains are measured with (tests pass their own)."""
        #: (LB UID, port index) → (what of the port decides, each VM's wanted member
        #: derived again only from a changed body: kinds/derived.py). A cache: a pass
        #: after one VM's change does not build every member again; rebuilt from the
        #: bodies after a restart, and whenever the port's group or ports change.
        self._wanted: dict[tuple[str, int], tuple[Any, Derived[Any]]] = {}
        #: (LB UID, pool ID) → when Kumo last changed the pool's members: a pool being
        #: filled takes new members at most once per ``members.fill_interval``.
        #: Lost with a restart (the next fill's first batch goes at once).
        self._member_writes: dict[tuple[str, str], datetime.datetime] = {}

    async def reconcile(self, ctx: Context, obj: Obj, spec: LoadBalancerSpec) -> Result:
        _check_region(ctx.cloud, spec)
        plan.validate(spec)
        vip = references.resolve(ctx.store, obj.namespace, "Network", spec.vip_network, "id")
        if vip.waiting and not obj.status.get("id"):
            return Result.waiting(
                "Pending",
                "WaitingForNetwork",
                f"spec.vipNetwork: {vip.waiting}",
                after=NETWORK_SECONDS,
            )
        if vip.value and vip.value != spec.vip_network:  # a Network object's: its ID
            spec = spec.model_copy(update={"vip_network": vip.value})
        wanted, groups = self._wanted_members(ctx.store, obj, spec)
        owned = _load_balancers(ctx, obj, spec)
        lb = await ownership.find_owned(ctx, obj, owned)
        if lb is None:
            lb = await ownership.create_owned(
                ctx, obj, owned, lambda: _create(ctx, obj, spec), "after-lb-create"
            )
            return _waiting(ctx, obj, spec, plan.Tree(lb), "load balancer is being created")
        if lb.provisioning_status == plan.ERROR:
            raise TerminalError(
                "LoadBalancerError", f"Octavia put load balancer {lb.id} in ERROR", field="spec"
            )
        pending = plan.is_pending(lb)
        tree = await _observe_tree(ctx.cloud, lb, known=pending)
        clock = members.DrainClock(
            self.clock(),
            members.recorded_drains(obj.status),
            _addresses(ctx.store, obj.namespace, tree),
            ctx.cloud.list_live_server_addresses(),
        )
        changes = plan.pool_changes(spec, wanted, tree, obj.uid, clock)
        drains = plan.draining(spec, wanted, tree, obj.uid, clock, changes)
        if pending:
            message = f"load balancer is {lb.provisioning_status}"
            return _waiting(ctx, obj, spec, tree, message, drains)
        unapplied = await _unapplied_changes(ctx, obj, spec, lb)
        name = plan.lb_name(obj.namespace, obj.name)
        held = None if ctx.dry_run else self._hold_fills(obj, spec, tree, changes, groups, clock)
        steps = plan.plan_steps(spec, wanted, tree, obj.uid, name, clock, changes)
        if steps:
            result = await _apply(ctx, obj, spec, tree, steps, drains, self._wrote_members(obj))
        elif held is not None:
            # The time the batch is due, not a countdown or a count: the message (and so
            # the status) stays the same from one VM turning Ready to the next.
            due = members.ceil_second(clock.now + datetime.timedelta(seconds=held))
            message = (
                f"new members wait for their pool's next batch at {due:%Y-%m-%dT%H:%M:%SZ}: "
                "more of the group's VMs are on their way, and a pool being filled takes new "
                f"members at most every {members.FILL_BATCH_SECONDS:.0f}s (longer for a big "
                "pool)"
            )
            result = _waiting(ctx, obj, spec, tree, message, drains)
            result.requeue_after = held
        else:
            result = _converged(ctx, obj, spec, tree, drains)
            result.requeue_after = members.next_drain_end(drains, clock.now)
        result.status["unappliedChanges"] = unapplied
        result.status["foreignResources"] = plan.foreign_children(spec, tree, obj.uid)
        return result

    def _wanted_members(
        self, store: Store, obj: Obj, spec: LoadBalancerSpec
    ) -> tuple[list[list[members.WantedMember]], list[list[Body]]]:
        """Desired members per port (:func:`plan.wanted_members`), each VM read once per
        body, and per port its group's VMs (for :func:`plan.coming_vms`); a dangling
        group reference is the user's to fix (and must not empty the pools: bad input
        never deletes anything)."""
        _check_groups(store, obj.namespace, spec)
        wanted = []
        groups = []
        for i, port in enumerate(spec.ports):
            key = plan.port_key(port)
            known = self._wanted.get((obj.uid, i))
            if known is None or known[0] != key:
                known = self._wanted[obj.uid, i] = (key, Derived(plan.port_wanting(port)))
            group = port.real_servers.virtual_machine_group_ref
            vms = store.labelled("VirtualMachine", obj.namespace, GROUP_LABEL, group)
            found = known[1].of(obj.uid, vms)
            wanted.append(plan.sort_wanted(w for w in found if w is not None))
            groups.append(vms)
        for stale in [k for k in self._wanted if k[0] == obj.uid and k[1] >= len(spec.ports)]:
            del self._wanted[stale]
        return wanted, groups

    def _hold_fills(
        self,
        obj: Obj,
        spec: LoadBalancerSpec,
        tree: plan.Tree,
        changes: list[members.PoolMembers | None],
        groups: list[list[Body]],
        clock: members.DrainClock,
    ) -> float | None:
        """Hold the additions of each pool being filled (:func:`members.fill_hold`): its
        change in ``changes`` becomes "nothing to do" for this pass. Returns the seconds
        until the first held batch is due, or None. The
        group is counted only for a pool with additions after a recent write: a
        converged pass does not scan it."""
        due: float | None = None
        for i, (port, change) in enumerate(zip(spec.ports, changes, strict=True)):
            pool = plan.pool_for(tree, plan.listener_for(tree, port.port))
            if change is None or pool is None or not change.changed or not change.added:
                continue
            last = self._member_writes.get((obj.uid, pool.id))
            if last is None:
                continue
            current = tree.members.get(pool.id, [])
            coming = plan.coming_vms(groups[i])
            left = members.fill_hold(change, current, obj.uid, coming, last, clock.now)
            if left is not None:
                changes[i] = dataclasses.replace(change, changed=False)
                due = left if due is None else min(due, left)
        return due

    def _wrote_members(self, obj: Obj) -> Callable[[plan.Step], None]:
        """What :func:`_apply` calls once Octavia accepted a step: a member change of a
        pool starts that pool's fill interval."""

        def wrote(step: plan.Step) -> None:
            if step.op in MEMBER_OPS:
                self._member_writes[obj.uid, step.args[0]] = self.clock()

        return wrote

    async def finalize(self, ctx: Context, obj: Obj, spec: LoadBalancerSpec | None) -> Result:
        """Delete with cascade (Octavia removes listeners, pools, members and monitors
        with it), then wait until neither the recorded ID nor the marker finds one."""
        waiting = ordering.wait_for_referrers(ctx.store, obj)
        if waiting:
            return waiting
        self._forget(obj)
        return await ownership.finalize_owned(ctx, obj, _load_balancers(ctx, obj), DELETE_SECONDS)

    async def release(self, ctx: Context, obj: Obj, spec: LoadBalancerSpec | None) -> Result:
        """Only the load balancer carries the orphan mark: its listeners, pools and
        members are Octavia's children of it, never swept on their own. While Octavia
        is busy with it (409 while ``PENDING_*``: a group's deletion changing its
        members, say) the release waits, and the finalizer with it."""
        self._forget(obj)
        return await orphan.release_owned(ctx, obj, _load_balancers(ctx, obj), after=STEP_SECONDS)

    def _forget(self, obj: Obj) -> None:
        """The object goes: its cache of wanted members with it."""
        for known in [k for k in self._wanted if k[0] == obj.uid]:
            del self._wanted[known]
        for pool in [k for k in self._member_writes if k[0] == obj.uid]:
            del self._member_writes[pool]

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """LoadBalancers whose members change when a VM (of a referenced group) or a
        referenced group changes: a VM turning Ready, getting an IP or being deleted."""
        meta = body.get("metadata") or {}
        if unblocked := ordering.unblocked_by(kind, body, self.info.kind):
            return unblocked  # a referrer that goes first (a DNSRecord) may unblock deletion
        if kind == "Network":  # Ready now: LoadBalancers waiting for it may be created
            return references.unbuilt_referrers(store, self.info.kind, kind, body)
        if kind == "VirtualMachine":
            group = (meta.get("labels") or {}).get(GROUP_LABEL)
        elif kind == "VirtualMachineGroup":
            group = meta.get("name")
        else:
            return []
        if not group:
            return []
        namespace = meta.get("namespace", "default")
        return [
            Key(self.info.kind, namespace, lb["metadata"]["name"])
            for lb in store.list(self.info.kind, namespace)
            if group in plan.referenced_groups(lb.get("spec") or {})
            and (kind != "VirtualMachine" or plan.moves_members(lb, body))
            and (kind != "VirtualMachineGroup" or ordering.needs_target(lb, body))
        ]


# -- checks ----------------------------------------------------------------------------------


def _check_region(cloud: Any, spec: LoadBalancerSpec) -> None:
    if spec.region and spec.region != cloud.region:
        raise TerminalError(
            "RegionMismatch",
            f"region {spec.region!r} is not the region of this namespace's cloud "
            f"credentials ({cloud.region or 'unset'!r})",
            field="spec.region",
        )


def _addresses(store: Store, namespace: str, tree: plan.Tree) -> dict[str, str | None]:
    """The current address of the VM each pool member is named after (a member at
    another address has lost its server; one whose VM is missing, its VM). Only the
    members' VMs: a map of the namespace's every VM was O(namespace) per pass."""
    found: dict[str, str | None] = {}
    for listed in tree.members.values():
        for m in listed:
            vm = store.get("VirtualMachine", namespace, m.name)
            if vm is not None:
                found[m.name] = (vm.get("status") or {}).get("ip")
    return found


def _check_groups(store: Store, namespace: str, spec: LoadBalancerSpec) -> None:
    for i, port in enumerate(spec.ports):
        group = port.real_servers.virtual_machine_group_ref
        if store.get("VirtualMachineGroup", namespace, group) is None:
            raise TerminalError(
                "GroupNotFound",
                f"VirtualMachineGroup {group!r} not found in namespace {namespace!r}",
                field=f"spec.ports[{i}].realServers.virtualMachineGroupRef",
            )


# -- observe / create ----------------------------------------------------------------------


def _load_balancers(
    ctx: Context, obj: Obj, spec: LoadBalancerSpec | None = None
) -> ownership.Owned[LoadBalancer]:
    """The object's Octavia LB as the ownership routine sees it (tag ``kumo-owner=<uid>``).
    Deleting cascades to its listeners, pools, members and monitors; one already going
    (PENDING_DELETE) or busy (409) is left for the next pass. ``spec.import`` checks
    the fields Octavia cannot change (zone, VIP network, flavor) and tags only the load
    balancer: its listeners, pools, monitors and members are used as they are where
    they fit the spec, and never removed (they carry no marker)."""
    cloud = ctx.cloud

    async def delete(lb: LoadBalancer) -> None:
        if not plan.is_pending(lb):
            await _busy_is_waiting(cloud.delete_load_balancer(lb.id))

    async def verify(lb: LoadBalancer) -> list[Change]:
        assert spec is not None
        network_id, flavor_id = await _placement(cloud, spec)
        return plan.immutable_changes(spec, lb, network_id, flavor_id)

    async def mark(lb: LoadBalancer) -> LoadBalancer:
        tags = markers.marked_tags(lb.tags, obj.uid)
        await cloud.set_load_balancer_tags(lb.id, tags)
        return dataclasses.replace(lb, tags=tags, provisioning_status="PENDING_UPDATE")

    async def release(lb: LoadBalancer) -> None:
        # A 409 (CloudBusy) is the Orphan step's to wait for: not swallowed here.
        await cloud.set_load_balancer_tags(lb.id, released_tags(lb.tags, obj.uid))

    return ownership.Owned(
        noun="load balancer",
        id_of=lambda lb: lb.id,
        owner_of=lambda lb: owner_of(lb.tags),
        legacy=lambda lb: markers.legacy_tags(lb.tags),
        get_by_id=cloud.get_load_balancer,
        list_owned=lambda: cloud.list_owned_load_balancers(obj.uid),
        delete=delete,
        find_by_name=lambda name: cloud.find_load_balancers_by_name(name),
        name_of=lambda lb: lb.name,
        verify=verify,
        mark=mark,
        release=release,
        fetch=lambda lb: cloud.fetch_load_balancer(lb.id),
    )


async def _create(ctx: Context, obj: Obj, spec: LoadBalancerSpec) -> LoadBalancer:
    """Resolve every reference first (bad input fails before anything exists), then
    create with the marker (the ownership routine records the ID)."""
    network_id, flavor_id = await _placement(ctx.cloud, spec)
    lb: LoadBalancer = await ctx.cloud.create_load_balancer(
        name=plan.lb_name(obj.namespace, obj.name),
        vip_network_id=network_id,
        description=spec.description,
        availability_zone=spec.zone,
        flavor_id=flavor_id,
        tags=marker_tags(obj.uid),
    )
    return lb


async def _placement(cloud: Any, spec: LoadBalancerSpec) -> tuple[str, str | None]:
    """The VIP network and Octavia flavor the spec asks for."""
    if spec.vip_network:
        network_id = await cloud.network_id(spec.vip_network, field="spec.vipNetwork")
    else:
        network_id = await cloud.default_network_id(
            external=spec.vip_type == "public", field="spec.vipType"
        )
    flavor_id = None
    if spec.service_type != "generic":
        flavor_id = await cloud.lb_flavor_id(spec.service_type)
    return network_id, flavor_id


async def _unapplied_changes(
    ctx: Context, obj: Obj, spec: LoadBalancerSpec, lb: LoadBalancer
) -> list[str]:
    """Spec fields Octavia cannot change on an existing load balancer that now differ.

    Kumo does not recreate the load balancer on its own (that would change the VIP and
    drop traffic); it reports the fields and warns once."""
    network_id, flavor_id = await _placement(ctx.cloud, spec)
    changed = [c.field for c in plan.immutable_changes(spec, lb, network_id, flavor_id)]
    if changed != (obj.status.get("unappliedChanges") or []) and changed:
        ctx.events.emit(
            obj,
            "Warning",
            "ImmutableFieldChanged",
            f"{', '.join(changed)} cannot change on an existing Octavia load balancer; "
            "delete and recreate the LoadBalancer to apply (its VIP will change)",
        )
    return changed


async def _observe_tree(cloud: Any, lb: LoadBalancer, known: bool = False) -> plan.Tree:
    """The load balancer's children from the cloud watch; ``known``: members as last
    read (a pending LB reports them while Octavia applies a change; nothing is decided
    from them until it is ACTIVE again)."""
    listeners = await cloud.list_listeners(lb.id)
    pools = await cloud.list_pools(lb.id)
    read = cloud.list_known_members if known else cloud.list_members
    member_lists = await asyncio.gather(*(read(p.id) for p in pools))
    monitor_ids = [p.health_monitor_id for p in pools if p.health_monitor_id]
    monitors = await asyncio.gather(*(cloud.get_health_monitor(i) for i in monitor_ids))
    return plan.Tree(
        lb=lb,
        listeners=listeners,
        pools=pools,
        members={p.id: m for p, m in zip(pools, member_lists, strict=True)},
        monitors={m.id: m for m in monitors if m is not None},
    )


# -- act / report ----------------------------------------------------------------------------


async def _apply(
    ctx: Context,
    obj: Obj,
    spec: LoadBalancerSpec,
    tree: plan.Tree,
    steps: list[plan.Step],
    drains: dict[str, members.Draining],
    accepted: Callable[[plan.Step], None] | None = None,
) -> Result:
    """One change, then wait: Octavia holds the LB PENDING_UPDATE until it is applied.
    A dry run (plan, Observe) records every step computable now instead: none is made.
    ``accepted`` hears of the step once Octavia took it (not when it said busy)."""
    if ctx.dry_run:
        for later in steps[1:]:
            await getattr(ctx.cloud, later.op)(*later.args, **later.kwargs)
    step = steps[0]
    ctx.log.info("%s: %s", obj.key, step.why)
    busy = await _busy_is_waiting(getattr(ctx.cloud, step.op)(*step.args, **step.kwargs))
    if not busy:
        if accepted is not None and not ctx.dry_run:
            accepted(step)
        for reason, text in step.events:
            ctx.events.emit(obj, "Normal", reason, text)
    more = f" (at least {len(steps) - 1} more change(s) to go)" if len(steps) > 1 else ""
    message = f"load balancer busy, will retry: {step.why}" if busy else f"{step.why}{more}"
    return _waiting(ctx, obj, spec, tree, message, drains)


async def _busy_is_waiting(call: Any) -> bool:
    """Octavia's 409 while PENDING_* means "wait", not "fail": True when it said so."""
    try:
        await call
    except TransientError as error:
        if error.reason != "CloudBusy":
            raise
        return True
    return False


def _report(
    ctx: Context,
    obj: Obj,
    spec: LoadBalancerSpec,
    tree: plan.Tree,
    drains: dict[str, members.Draining] | None = None,
) -> dict[str, Any]:
    """Status from the observation, plus one warning when the unapplied monitors change."""
    status = plan.status(spec, tree, obj.uid, drains)
    warning = monitors.monitors_warning(obj.status, status["ports"])
    if warning:
        ctx.events.emit(obj, "Warning", "MonitorsNotApplied", warning)
    return status


def _waiting(
    ctx: Context,
    obj: Obj,
    spec: LoadBalancerSpec,
    tree: plan.Tree,
    message: str,
    drains: dict[str, members.Draining] | None = None,
) -> Result:
    status = _report(ctx, obj, spec, tree, drains)
    return Result.waiting("Provisioning", "Provisioning", message, after=STEP_SECONDS, **status)


def _converged(
    ctx: Context,
    obj: Obj,
    spec: LoadBalancerSpec,
    tree: plan.Tree,
    drains: dict[str, members.Draining],
) -> Result:
    """Ready; members still draining are named (the next pass removes them when due)."""
    lb = tree.lb
    message = f"load balancer {lb.id} is ACTIVE ({lb.operating_status}) at {lb.vip_address}"
    if drains:
        names = ", ".join(sorted({d.member.name for d in drains.values()}))
        message += f"; draining {names}"
    return Result(
        phase="Active",
        ready=True,
        reason="Ready",
        message=message,
        status=_report(ctx, obj, spec, tree, drains),
    )
