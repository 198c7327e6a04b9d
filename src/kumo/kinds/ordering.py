"""Deletion order across kinds.

* A referrer declared ``referrer_first`` in :mod:`kumo.kinds.references` (a DNSRecord)
  goes before the object it points at. When both are deleted together (``kubectl delete
  -f examples/``), the target's finalizer waits while a referrer that references it is
  itself being deleted (:func:`wait_for_referrers`), so DNS never points at an address
  that is already gone; the referrer's events wake the target (:func:`unblocked_by`). A
  referrer that is *not* being deleted does not block its target (that would hang
  deletion for ever); it reports ``TargetNotFound`` instead.
* A VirtualMachine leaves in the order LoadBalancer → Share → server: its Shares keep
  its access rule while a LoadBalancer still lists it as a member
  (:func:`load_balancers_holding`), and its finalizer waits until no Share lists a rule
  for it (:func:`shares_holding`) before the server is deleted.
Every wait is bounded (``WAIT_LIMIT_SECONDS``).
"""

from __future__ import annotations

import datetime
from typing import Any

from kumo.engine.conditions import parse_rfc3339
from kumo.engine.objects import Body, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds.derived import PerBody
from kumo.kinds.references import goes_first, referenced_names

WAIT_LIMIT_SECONDS = 120.0
#: The Ready reason of a target waiting for referrers of a kind (else ``WaitingFor<Kind>``).
WAIT_REASONS = {"DNSRecord": "WaitingForDNS"}


def seconds_since(timestamp: str | None) -> float:
    if not timestamp:
        return 0.0
    return (datetime.datetime.now(datetime.UTC) - parse_rfc3339(timestamp)).total_seconds()


def referrers_going(store: Store, obj: Obj) -> dict[str, list[str]]:
    """Referrer kind → the objects being deleted that still reference ``obj`` and go
    first (within the wait limit)."""
    if seconds_since(obj.meta.get("deletionTimestamp")) >= WAIT_LIMIT_SECONDS:
        return {}
    going: dict[str, set[str]] = {}
    for ref in goes_first(obj.info.kind):
        for referrer in store.list(ref.referrer, obj.namespace):
            meta = referrer["metadata"]
            if (
                obj.name in referenced_names(referrer.get("spec") or {}, ref.field)
                and meta.get("deletionTimestamp")
                and meta.get("finalizers")
            ):
                going.setdefault(ref.referrer, set()).add(meta["name"])
    return {kind: sorted(names) for kind, names in going.items()}


def wait_for_referrers(store: Store, obj: Obj) -> Result | None:
    """What ``obj``'s finalizer returns while referrers that go first are being deleted
    (``None``: nothing to wait for)."""
    going = referrers_going(store, obj)
    if not going:
        return None
    reason = WAIT_REASONS.get(next(iter(going)), f"WaitingFor{next(iter(going))}")
    who = "; ".join(f"{kind}(s) {', '.join(names)}" for kind, names in going.items())
    return Result.waiting("Deleting", reason, f"{who} go first")


def unblocked_by(kind: str, body: Body, target: str) -> list[Key]:
    """The objects of ``target`` that ``body``, an object of ``kind``, references when
    ``kind`` goes first: its change (its deletion) may end their wait."""
    fields = [ref.field for ref in goes_first(target) if ref.referrer == kind]
    if not fields:
        return []
    spec = body.get("spec") or {}
    namespace = (body.get("metadata") or {}).get("namespace", "default")
    return [Key(target, namespace, name) for f in fields for name in referenced_names(spec, f)]


def _listed_members(lb: Body) -> dict[str, tuple[tuple[Any, Body], ...]]:
    members: dict[str, list[tuple[Any, Body]]] = {}
    for port in (lb.get("status") or {}).get("ports") or []:
        for m in port.get("members") or []:
            members.setdefault(m.get("name"), []).append((port.get("port"), m))
    return {name: tuple(found) for name, found in members.items()}


#: A LoadBalancer's status, indexed once per body (kinds/derived.py): each VM's event
#: and each deleting VM's pass looks itself up in it, which was a scan of every member.
_LISTED = PerBody(_listed_members)


def listed_members(lb: Body, vm_name: str) -> tuple[tuple[Any, Body], ...]:
    """(port, member entry) of each member a LoadBalancer's status lists for the VM
    ``vm_name`` (entries are shared: do not change them)."""
    return _LISTED(lb).get(vm_name, ())


def load_balancers_holding(store: Store, namespace: str, vm_name: str) -> list[str]:
    """LoadBalancers whose status still lists the VM ``vm_name`` as a pool member."""
    return sorted(
        lb["metadata"]["name"]
        for lb in store.list("LoadBalancer", namespace)
        if listed_members(lb, vm_name)
    )


def shares_holding(store: Store, obj: Obj) -> list[str]:
    """Shares whose status still lists an access rule for the VirtualMachine ``obj``
    (within the wait limit): its server must not go before they revoke it."""
    if seconds_since(obj.meta.get("deletionTimestamp")) >= WAIT_LIMIT_SECONDS:
        return []
    return sorted(
        share["metadata"]["name"]
        for share in store.list("Share", obj.namespace)
        if any(
            rule.get("virtualMachine") == obj.name
            for rule in (share.get("status") or {}).get("accessRules") or []
        )
    )


def needs_target(referrer: Body, target: Body) -> bool:
    """Does an event of ``target`` (a group a LoadBalancer's pools or a DNSRecord follow)
    concern ``referrer`` beyond what its members' own events tell? Only while the
    referrer is not Ready (it may wait for the group to exist) or the group is going: a
    group's status moving with each member (readyReplicas) made every follower of a big
    group pass over all members once more per member event."""
    if (target.get("metadata") or {}).get("deletionTimestamp"):
        return True
    conditions = (referrer.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    return ready is None or ready.get("status") != "True"
