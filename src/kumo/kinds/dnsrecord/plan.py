"""DNSRecord decisions, free of I/O: the record's name, the values its target stands for,
whether the observed recordset needs an update or a replacement.

Designate has no tags, so Kumo's ownership marker ``kumo-owner=<uid>@<cluster>`` is the
last word of the recordset's description (after the user's own description, if any;
kumo.ports.markers).
"""

from __future__ import annotations

import functools
import ipaddress
from dataclasses import dataclass

from kumo.api.dnsrecord import DNSRecordSpec
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Store
from kumo.kinds import references
from kumo.kinds.derived import Derived, PerBody
from kumo.kinds.labels import GROUP_LABEL
from kumo.ports.model import Recordset, is_legacy, owner_word, text_marker, text_owner

ACTIVE = "ACTIVE"
ERROR = "ERROR"
#: Designate's limit on a recordset description (the marker takes up to 61 of it).
DESCRIPTION_MAX = 160
#: Record types whose values can come from a target's addresses, and their IP version.
ADDRESS_TYPES = {"A": 4, "AAAA": 6}


def _targets() -> tuple[tuple[str, str, str], ...]:
    """(spec field, model attribute, target kind) of every reference DNSRecord declares in
    kinds/references.py: a new kind of target is one declared reference, not an edit here."""
    attrs = {(f.alias or name): name for name, f in DNSRecordSpec.model_fields.items()}
    declared = references.referencing("DNSRecord")
    return tuple((field, attrs[field], kind) for kind, field in declared.items())


TARGETS = _targets()


class WaitingForTarget(Exception):
    """The target exists but has no address yet: not an error, look again later."""


@dataclass(frozen=True)
class Target:
    """Where the values come from: ``field`` is the spec field (``spec.values`` for
    literals), ``kind``/``name`` the referenced object (None for literals)."""

    field: str
    kind: str | None = None
    name: str | None = None


# -- name and description ----------------------------------------------------------------


def fqdn(name: str, zone_name: str) -> str:
    """``api`` in ``kumo-demo.test.`` → ``api.kumo-demo.test.``; ``@`` is the apex; a
    name ending with '.' is already absolute and must lie inside the zone."""
    zone = zone_name if zone_name.endswith(".") else f"{zone_name}."
    if name == "@":
        return zone
    if not name.endswith("."):
        return f"{name}.{zone}"
    if name.lower() != zone.lower() and not name.lower().endswith(f".{zone.lower()}"):
        raise TerminalError(
            "NameOutsideZone", f"{name!r} is not inside zone {zone!r}", field="spec.name"
        )
    return name


def description(user: str | None, uid: str) -> str:
    """The user's description followed by Kumo's marker (Designate has no tags)."""
    marker = owner_word(uid)
    text = _describe(user, uid)
    if len(text) > DESCRIPTION_MAX:
        room = DESCRIPTION_MAX - len(marker) - 1
        raise TerminalError(
            "DescriptionTooLong",
            f"at most {room} characters (Designate allows {DESCRIPTION_MAX} and Kumo "
            f"appends its ownership marker {marker!r})",
            field="spec.description",
        )
    return text


def _describe(user: str | None, uid: str) -> str:
    return f"{user} {owner_word(uid)}" if user else owner_word(uid)


def is_owned(rs: Recordset, uid: str) -> bool:
    return owner_of_recordset(rs) == uid


def owner_of_recordset(rs: Recordset) -> str | None:
    """The owning object's UID from the marker word in the description, if there."""
    return text_owner(rs.description)


def legacy(rs: Recordset) -> bool:
    """Its marker word is from before markers named the cluster: re-mark it."""
    return is_legacy(text_marker(rs.description))


# -- target ----------------------------------------------------------------------------------


def target(spec: DNSRecordSpec) -> Target:
    """The one target the spec names (the schema enforces exactly one at admission; this
    is the controller's own check) and whether the record type can use it."""
    refs = [
        Target(f"spec.{camel}", kind, getattr(spec, attr))
        for camel, attr, kind in TARGETS
        if getattr(spec, attr)
    ]
    given = refs + ([Target("spec.values")] if spec.values else [])
    if len(given) != 1:
        fields = ", ".join(t.field for t in given) or "none"
        raise TerminalError(
            "InvalidSpec",
            f"give exactly one of {', '.join(t[0] for t in TARGETS)} or values (given: {fields})",
            field="spec",
        )
    chosen = given[0]
    if chosen.kind is not None and spec.type not in ADDRESS_TYPES:
        raise TerminalError(
            "UnsupportedTarget",
            f"a {spec.type} record takes literal values, not {chosen.field[5:]}",
            field="spec.type",
        )
    return chosen


def desired_records(
    spec: DNSRecordSpec, namespace: str, store: Store, scope: str | None = None
) -> list[str]:
    """The values to publish, sorted and without duplicates.

    Raises TerminalError when the spec or its target cannot work (naming the field) and
    :class:`WaitingForTarget` when the target exists but has no address yet. ``scope``
    (the record's UID): read a group's members through the cache of what each one
    publishes (:data:`MEMBERS`), so a pass parses only the members that changed."""
    chosen = target(spec)
    if chosen.kind is None:
        return literal_records(spec.type, spec.values)
    assert chosen.name is not None
    body = store.get(chosen.kind, namespace, chosen.name)
    if body is None:
        raise TerminalError(
            "TargetNotFound",
            f"{chosen.kind} {chosen.name!r} not found in namespace {namespace!r}",
            field=chosen.field,
        )
    version = ADDRESS_TYPES[spec.type]
    if chosen.kind == "LoadBalancer":
        found = lb_addresses(body)
        what = f"LoadBalancer {chosen.name!r} has no VIP yet"
    elif chosen.kind == "VirtualMachine":
        found = vm_addresses(body, version)
        what = f"VirtualMachine {chosen.name!r} has no address yet"
    elif chosen.kind == "FloatingIP":
        found = fip_addresses(body)
        what = f"FloatingIP {chosen.name!r} has no address yet"
    else:
        vms = store.labelled("VirtualMachine", namespace, GROUP_LABEL, chosen.name)
        found = group_addresses(vms, chosen.name, version, scope)
        what = f"VirtualMachineGroup {chosen.name!r} has no Ready member with an address yet"
    if not found:
        raise WaitingForTarget(what)
    records = sorted({ip for ip in found if _version(ip) == version})
    if not records:
        raise TerminalError(
            "AddressFamilyMismatch",
            f"{chosen.kind} {chosen.name!r} has no IPv{version} address "
            f"({', '.join(sorted(set(found)))}): a {spec.type} record cannot point at it",
            field="spec.type",
        )
    return [canonical(spec.type, ip) for ip in records]


def lb_addresses(lb: Body) -> list[str]:
    vip = (lb.get("status") or {}).get("vip")
    return [vip] if vip else []


def fip_addresses(fip: Body) -> list[str]:
    address = (fip.get("status") or {}).get("address")
    return [address] if address else []


def vm_addresses(vm: Body, version: int) -> list[str]:
    """IPv4: the VM's primary address (status.ip, else its first IPv4 address).
    IPv6: every IPv6 address of the VM."""
    status = vm.get("status") or {}
    every = [a["ip"] for a in status.get("addresses") or [] if a.get("ip")]
    primary = status.get("ip")
    if version == 4:
        v4 = [ip for ip in [primary, *every] if ip and _version(ip) == 4]
        if v4:
            return v4[:1]
    else:
        v6 = [ip for ip in every if _version(ip) == 6]
        if v6:
            return v6
    return ([primary] if primary else []) + every  # wrong family only: reported by caller


def is_ready_member(vm: Body) -> bool:
    """A member is published once Ready, and no longer once it is being deleted."""
    meta = vm.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return False
    conditions = (vm.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    return ready is not None and ready.get("status") == "True"


def moves_records(record: Body, vm: Body) -> bool:
    """Can this state of a member VM change a group record's values, as its status shows
    them? Yes when it should be published at an address the record lacks, or is not to
    be published and holds one of its values (or has no address to tell by). A member
    building, or one already unpublished, wakes no record: each member event of a big
    group made its record recompute every member's address."""
    spec = record.get("spec") or {}
    version = ADDRESS_TYPES.get(str(spec.get("type") or "A"))
    if version is None:  # not an address record: let it look
        return True
    published = PUBLISHED(record)
    status = vm.get("status") or {}
    known = [a.get("ip") for a in status.get("addresses") or []] + [status.get("ip")]
    known = [ip for ip in known if isinstance(ip, str) and ip]
    if is_ready_member(vm):
        mine = [canonical(str(spec.get("type")), ip) for ip in vm_addresses(vm, version)]
        mine = [ip for ip in mine if _version(ip) == version]
        return not set(mine) <= published
    if not known:
        return bool(published)
    return any(canonical(str(spec.get("type")), ip) in published for ip in known)


def group_addresses(
    vms: list[Body], group: str, version: int, scope: str | None = None
) -> list[str]:
    """The addresses of ``group``'s Ready members among ``vms`` (``scope``: see
    :func:`desired_records`)."""
    found: list[str] = []
    if scope is not None:
        for label, published in MEMBERS.of(scope, vms):
            if label == group and published is not None:
                found += published[0] if version == 4 else published[1]
        return found
    for vm in vms:
        labels = (vm.get("metadata") or {}).get("labels") or {}
        if labels.get(GROUP_LABEL) == group and is_ready_member(vm):
            found += vm_addresses(vm, version)
    return found


def _publishes(vm: Body) -> tuple[str | None, tuple[list[str], list[str]] | None]:
    """A VM's group label, and what it publishes (IPv4, IPv6) when a Ready member."""
    label = ((vm.get("metadata") or {}).get("labels") or {}).get(GROUP_LABEL)
    if not is_ready_member(vm):
        return label, None
    return label, (vm_addresses(vm, 4), vm_addresses(vm, 6))


#: What each VM publishes, derived again only from a changed body (kinds/derived.py;
#: per record UID): a record's pass after one member's change parses one member, not
#: every VM of the namespace. Never the truth: rebuilt from the bodies after a restart.
MEMBERS = Derived(_publishes)


def _published(record: Body) -> frozenset[str]:
    return frozenset((record.get("status") or {}).get("records") or [])


#: A record's status.records as a set, built once per status (every member's event asks).
PUBLISHED = PerBody(_published)


def literal_records(type_: str, values: list[str]) -> list[str]:
    """Literal values checked for their type: A/AAAA must be addresses of the right
    family, CNAME takes exactly one name (made absolute), TXT is quoted when needed."""
    if type_ == "CNAME" and len(values) != 1:
        raise TerminalError(
            "InvalidSpec",
            f"a CNAME record takes exactly one value, not {len(values)}",
            field="spec.values",
        )
    records = []
    for i, value in enumerate(values):
        if type_ in ADDRESS_TYPES and _version(value) != ADDRESS_TYPES[type_]:
            raise TerminalError(
                "InvalidRecord",
                f"{value!r} is not an IPv{ADDRESS_TYPES[type_]} address",
                field=f"spec.values[{i}]",
            )
        records.append(canonical(type_, value))
    return sorted(set(records))


@functools.lru_cache(maxsize=8192)
def canonical(type_: str, value: str) -> str:
    """The form Designate stores: compressed addresses, absolute CNAMEs, quoted TXT."""
    if type_ in ADDRESS_TYPES:
        try:
            return ipaddress.ip_address(value).compressed
        except ValueError:
            return value
    if type_ == "CNAME":
        return value if value.endswith(".") else f"{value}."
    if type_ == "TXT" and any(c.isspace() for c in value) and not _quoted(value):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    return value


def _quoted(value: str) -> bool:
    return len(value) >= 2 and value.startswith('"') and value.endswith('"')


@functools.lru_cache(maxsize=8192)
def _version(value: str) -> int | None:
    try:
        return ipaddress.ip_address(value).version
    except ValueError:
        return None


def referenced(spec: Body) -> dict[str, str]:
    """Kind → name a raw DNSRecord spec points at (for dependents; no validation)."""
    return {kind: spec[camel] for camel, _, kind in TARGETS if spec.get(camel)}


# -- observed recordset ---------------------------------------------------------------------


def same_records(type_: str, desired: list[str], observed: list[str]) -> bool:
    return sorted(set(desired)) == sorted({canonical(type_, v) for v in observed})


def needs_update(records: list[str], ttl: int, description: str, rs: Recordset) -> bool:
    """Can be corrected in place: values, TTL, description."""
    return (
        not same_records(rs.type, records, rs.records)
        or rs.ttl != ttl
        or (rs.description or "") != description
    )


def needs_replacement(rs: Recordset, zone_id: str, name: str, type_: str) -> bool:
    """Designate cannot move a recordset to another zone, rename it or change its type:
    Kumo deletes its own recordset and creates the new one."""
    return rs.zone_id != zone_id or rs.name.lower() != name.lower() or rs.type != type_


def import_mismatches(rs: Recordset, zone_id: str, name: str, type_: str) -> list[Change]:
    """What Designate cannot change on a recordset to import (old = the recordset's)."""
    found = []
    if rs.zone_id != zone_id:
        found.append(Change("spec.zone", rs.zone_id, zone_id))
    if rs.name.lower() != name.lower():
        found.append(Change("spec.name", rs.name, name))
    if rs.type != type_:
        found.append(Change("spec.type", rs.type, type_))
    return found


def conflicting(recordsets: list[Recordset], name: str, type_: str, uid: str) -> Recordset | None:
    """A recordset that is not Kumo's and occupies the name: same type, or a CNAME on
    either side (a CNAME shares its name with nothing). Kumo leaves it alone."""
    for rs in recordsets:
        if is_owned(rs, uid) or rs.name.lower() != name.lower():
            continue
        if rs.type == type_ or "CNAME" in (rs.type, type_):
            return rs
    return None


def status(rs: Recordset) -> dict[str, object]:
    return {
        "id": rs.id,
        "zoneId": rs.zone_id,
        "fqdn": rs.name,
        "records": sorted(rs.records),
    }
