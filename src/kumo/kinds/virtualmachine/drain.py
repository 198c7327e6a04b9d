"""A VirtualMachine's deletion drains it first: every LoadBalancer holding it as a pool
member drops it (after its ``drainSeconds``, bounded by a timeout), then every Share
revokes its access rule, and only then is the server deleted (members, then storage,
then servers)."""

from __future__ import annotations

from kumo.engine.objects import Body, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import ordering

#: How long deletion waits for LoadBalancers to drop the VM before deleting anyway,
#: beyond the longest ``drainSeconds`` of the LoadBalancers holding it.
DRAIN_TIMEOUT_SECONDS = 120.0


def waiting(store: Store, obj: Obj) -> Result | None:
    """What the VM's finalizer waits for before its server goes, or None."""
    holding = load_balancers_using(store, obj)
    if holding and deleting_for(obj) < drain_timeout(holding):
        return Result.waiting("Draining", "Draining", draining_message(holding, obj))
    shares = ordering.shares_holding(store, obj)
    if shares:
        return Result.waiting(
            "Draining",
            "WaitingForShares",
            f"Share(s) {', '.join(shares)} revoke its access first",
        )
    return None


def load_balancers_using(store: Store, obj: Obj) -> list[Body]:
    """LoadBalancers whose status lists the VM as a member of some port."""
    return [
        lb
        for lb in store.list("LoadBalancer", obj.namespace)
        if ordering.listed_members(lb, obj.name)
    ]


def drain_seconds(lb: Body) -> int:
    """The longest drainSeconds of a LoadBalancer's ports (10 when unset, as in the API)."""
    ports = (lb.get("spec") or {}).get("ports") or []
    return max(
        (int((p.get("realServers") or {}).get("drainSeconds", 10)) for p in ports), default=10
    )


def drain_timeout(holding: list[Body]) -> float:
    return DRAIN_TIMEOUT_SECONDS + max(drain_seconds(lb) for lb in holding)


def draining_message(holding: list[Body], obj: Obj) -> str:
    """``draining from LoadBalancer web for 10s``, or still waiting for the LB to start."""
    parts = []
    for lb in holding:
        name = lb["metadata"]["name"]
        draining = any(
            m.get("name") == obj.name and m.get("drainingSince")
            for port in (lb.get("status") or {}).get("ports") or []
            for m in port.get("members") or []
        )
        if draining:
            parts.append(f"draining from LoadBalancer {name} for {drain_seconds(lb)}s")
        else:
            parts.append(f"waiting for LoadBalancer {name} to drop it")
    return "; ".join(parts)


def deleting_for(obj: Obj) -> float:
    return ordering.seconds_since(obj.meta.get("deletionTimestamp"))
