"""LoadBalancer actuator: an Octavia load balancer, its listeners, pools, monitors and
members, on the engine's composite lifecycle (``engine/composite.py``):

* anchor (``anchor.py``): check region, ports, VIP network and groups, then find or
  create the load balancer;
* observe: its tree (members as last read while Octavia holds it ``PENDING_*``), the
  drain clock, the wanted members (``wanted.py``), the VIP network and flavor;
* decide (``decision.decide``): pure; the steps (``plan.py``, typed writes in
  ``steps.py``), the drains, a pool fill held, the warnings;
* apply: the FIRST step (Octavia refuses a second change while the first is pending;
  a dry pass records the rest), its events once Octavia took it. Octavia's 409 is the
  engine's: ``Composite.busy`` makes it a wait (``decision.busy``);
* report (``decision.report``): status in one go; the engine writes it once.

Within a pass the warnings (``ImmutableFieldChanged``, then ``MonitorsNotApplied``)
come before the step's Normal events. ``MonitorsNotApplied`` is said once Octavia took
the step or refused it as busy — not when the step failed otherwise, since status is
not written then and the next pass would say it again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from collections.abc import Callable

from kumo.api import kinds
from kumo.api.loadbalancer import LoadBalancerSpec
from kumo.engine import composite, orphan, ownership
from kumo.engine.lifecycle import Wait
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import ordering, references
from kumo.kinds.labels import GROUP_LABEL
from kumo.kinds.loadbalancer import anchor, decision, members, plan, steps, wanted
from kumo.ports import LoadBalancingPort
from kumo.ports.model import LoadBalancer

#: Seconds between finalize passes while Octavia deletes.
DELETE_SECONDS = 2.0

Decision = decision.Decision
Observed = decision.Observed


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class LoadBalancerActuator:
    info = kinds.LOAD_BALANCER

    def __init__(self, clock: Callable[[], datetime.datetime] = utc_now) -> None:
        self.clock = clock
        """The time drains are measured with (tests pass their own)."""
        self.wanted = wanted.Wanted()
        #: LB UID → pool ID → when Kumo last changed the pool's members: a pool being
        #: filled takes new members at most once per ``members.fill_interval``.
        #: Lost with a restart (the next fill's first batch goes at once).
        self._member_writes: dict[str, dict[str, datetime.datetime]] = {}

    async def reconcile(self, ctx: Context, obj: Obj, spec: LoadBalancerSpec) -> Result:
        async def found() -> anchor.Anchored | Wait:
            return await anchor.anchor(ctx, obj, spec)

        async def observe(a: anchor.Anchored) -> Observed:
            return await self._observe(ctx, obj, a)

        async def apply(o: Observed, d: Decision) -> Observed:
            await self._apply(ctx, obj, d)
            return o  # status shows the tree as read: Octavia applies the step later

        def busy(o: Observed, d: Decision) -> Wait:
            _warn(ctx, obj, "MonitorsNotApplied", d.monitors_warning)
            return decision.busy(o, d)

        lifecycle = composite.Composite(
            found, observe, decision.decide, apply, decision.report, busy
        )
        return await composite.reconcile_composite(lifecycle)

    async def _observe(self, ctx: Context, obj: Obj, a: anchor.Anchored) -> Observed:
        """Read what the decision needs; no write. On the pass that created the load
        balancer nothing more is read (Octavia has only started building it)."""
        spec, lb = a.spec, a.lb
        wanted_members, groups = self.wanted.of(ctx.store, obj, spec)
        name = plan.lb_name(obj.namespace, obj.name)
        o = Observed(spec, obj.uid, name, obj.status, plan.Tree(lb), wanted_members, groups)
        if a.created:
            return o
        pending = plan.is_pending(lb)
        tree = await _observe_tree(ctx.cloud, lb, known=pending)
        clock = members.DrainClock(
            self.clock(),
            members.recorded_drains(obj.status),
            _addresses(ctx.store, obj.namespace, tree),
            ctx.cloud.list_live_server_addresses(),
        )
        placement = None if pending else await anchor.placement(ctx.cloud, spec)
        writes = {} if ctx.dry_run else dict(self._member_writes.get(obj.uid, {}))
        return dataclasses.replace(
            o, tree=tree, clock=clock, placement=placement, member_writes=writes
        )

    async def _apply(self, ctx: Context, obj: Obj, d: Decision) -> None:
        """One change, then wait: Octavia holds the LB PENDING_UPDATE until it is
        applied. A dry pass (plan, Observe) records every step computable now instead:
        none is made. A 409 leaves here for the engine (``busy`` above)."""
        _warn(ctx, obj, "ImmutableFieldChanged", d.changed_warning)
        if d.refused is not None:
            raise d.refused
        step = d.planned[0] if d.planned else None
        if step is not None:
            if ctx.dry_run:
                for later in d.planned[1:]:
                    await steps.call(ctx.cloud, later)
            ctx.log.info("%s: %s", obj.key, step.why)
            await steps.call(ctx.cloud, step)
            pool = steps.members_of(step)
            if pool is not None and not ctx.dry_run:
                self._member_writes.setdefault(obj.uid, {})[pool] = self.clock()
        _warn(ctx, obj, "MonitorsNotApplied", d.monitors_warning)
        for reason, text in step.events if step is not None else ():
            ctx.events.emit(obj, "Normal", reason, text)

    async def finalize(self, ctx: Context, obj: Obj, spec: LoadBalancerSpec | None) -> Result:
        """Delete with cascade (Octavia removes listeners, pools, members and monitors
        with it), then wait until neither the recorded ID nor the marker finds one."""
        waiting = ordering.wait_for_referrers(ctx.store, obj)
        if waiting:
            return waiting
        self._forget(obj)
        owned = anchor.load_balancers(ctx, obj)
        return await ownership.finalize_owned(ctx, obj, owned, DELETE_SECONDS)

    async def release(self, ctx: Context, obj: Obj, spec: LoadBalancerSpec | None) -> Result:
        """Only the load balancer carries the orphan mark: its listeners, pools and
        members are Octavia's children of it, never swept on their own. While Octavia
        is busy with it (409 while ``PENDING_*``: a group's deletion changing its
        members, say) the release waits, and the finalizer with it."""
        self._forget(obj)
        owned = anchor.load_balancers(ctx, obj)
        return await orphan.release_owned(ctx, obj, owned, after=decision.STEP_SECONDS)

    def _forget(self, obj: Obj) -> None:
        """The object goes: its caches with it."""
        self.wanted.forget(obj.uid)
        self._member_writes.pop(obj.uid, None)

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
            if group in wanted.referenced_groups(lb.get("spec") or {})
            and (kind != "VirtualMachine" or wanted.moves_members(lb, body))
            and (kind != "VirtualMachineGroup" or ordering.needs_target(lb, body))
        ]


def _warn(ctx: Context, obj: Obj, reason: str, message: str | None) -> None:
    if message:
        ctx.events.emit(obj, "Warning", reason, message)


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


async def _observe_tree(cloud: LoadBalancingPort, lb: LoadBalancer, known: bool) -> plan.Tree:
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
