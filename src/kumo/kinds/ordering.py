"""Deletion order across kinds.

* A DNSRecord goes before the object it points at. When both are deleted together
  (``kubectl delete -f examples/``), the target's finalizer waits while a DNSRecord that
  references it is itself being deleted, so DNS never points at an address that is
  already gone. A record that is *not* being deleted does not block its target (that
  would hang deletion for ever); it reports ``TargetNotFound`` instead.
* A VirtualMachine leaves in the order LoadBalancer → Share → server: its Shares keep
  its access rule while a LoadBalancer still lists it as a member
  (:func:`load_balancers_holding`), and its finalizer waits until no Share lists a rule
  for it (:func:`shares_holding`) before the server is deleted.
Every wait is bounded (``WAIT_LIMIT_SECONDS``).
"""

from __future__ import annotations

import datetime

from kumo.engine.objects import Body, Key, Obj, Store
from kumo.kinds.references import referencing

#: Which DNSRecord field references which kind.
DNS_REF_FIELD = referencing("DNSRecord")
WAIT_LIMIT_SECONDS = 120.0


def seconds_since(timestamp: str | None) -> float:
    if not timestamp:
        return 0.0
    then = datetime.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    return (datetime.datetime.now(datetime.UTC) - then).total_seconds()


def dns_records_going(store: Store, obj: Obj) -> list[str]:
    """DNSRecords being deleted that still reference ``obj`` (within the wait limit)."""
    if seconds_since(obj.meta.get("deletionTimestamp")) >= WAIT_LIMIT_SECONDS:
        return []
    field = DNS_REF_FIELD[obj.info.kind]
    return sorted(
        record["metadata"]["name"]
        for record in store.list("DNSRecord", obj.namespace)
        if (record.get("spec") or {}).get(field) == obj.name
        and record["metadata"].get("deletionTimestamp")
        and record["metadata"].get("finalizers")
    )


def dns_target(body: Body, kind: str) -> list[Key]:
    """The object of ``kind`` a DNSRecord event concerns (to resume its deletion)."""
    name = (body.get("spec") or {}).get(DNS_REF_FIELD[kind])
    namespace = body["metadata"].get("namespace", "default")
    return [Key(kind, namespace, name)] if name else []


def load_balancers_holding(store: Store, namespace: str, vm_name: str) -> list[str]:
    """LoadBalancers whose status still lists the VM ``vm_name`` as a pool member."""
    return sorted(
        lb["metadata"]["name"]
        for lb in store.list("LoadBalancer", namespace)
        if any(
            m.get("name") == vm_name
            for port in (lb.get("status") or {}).get("ports") or []
            for m in port.get("members") or []
        )
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
