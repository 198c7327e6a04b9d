"""Pure decisions for VirtualMachineGroup: how many members to create, which to delete.

Like a ReplicaSet and a Deployment in one: members built from an older template
are rolled over within ``maxSurge``/``maxUnavailable``; scale-down removes members
that are not ready first, then the newest.

Import (``spec.import.members``): a new member takes the next entry no member has
imported or carries (its own ``spec.import``). What was imported is read back from the
members and the group's ``status.imports`` — never from memory — so a restart does not
offer a server twice. The import ref is not part of the template hash: it never makes a
member look out of date.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kumo.api.common import ImportRef, ManagedSpec, import_key
from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.kinds.labels import TEMPLATE_HASH_LABEL
from kumo.kinds.virtualmachinegroup import strategy

DEFAULT_POLICY = ManagedSpec.model_fields["deletion_policy"].default
#: Reasons of an import refused before the server was marked (engine/ownership.py).
IMPORT_FAILED = frozenset(
    {"ImportNotFound", "ImportAmbiguous", "ImportMismatch", "AlreadyOwned", "ImportNotAllowed"}
)


@dataclass(frozen=True)
class MemberView:
    name: str
    template_hash: str
    ready: bool
    zone: str | None = None
    created: str = ""
    import_key: str | None = None  # the ref its spec.import carries (ImportRef.key)
    server_id: str | None = None  # its status.id: with import_key, the imported server
    reason: str = ""  # its Ready condition's reason


@dataclass(frozen=True)
class NewMember:
    zone: str | None = None
    import_: ImportRef | None = None  # the server it imports instead of booting one
    ordinal: int | None = None  # identity Ordinal: its ordinal (its name and volumes)


@dataclass(frozen=True)
class MemberPlan:
    creates: list[NewMember] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)

    @property
    def create_zones(self) -> list[str | None]:
        return [c.zone for c in self.creates]


@dataclass(frozen=True)
class Imported:
    """A ref a member took over: it is never offered to another member."""

    member: str
    server_id: str


#: Template fields added since groups first hashed their template: in the hash only when
#: set, so a group that does not use them keeps its members.
NEW_TEMPLATE_FIELDS = ("allowedAddressPairs",)


def template_hash(
    spec: VirtualMachineGroupSpec, server_group_id: str | None, legacy: bool = False
) -> str:
    """Members whose label differs from this are rolled over. The template's security
    groups are left out (as an empty list, so a template without any keeps its hash):
    members take a change of them in place (:func:`security_group_patch`). ``legacy``:
    the hash members made before carry (their security groups in it). A change of the
    template's ``allowedAddressPairs`` rolls the members (each sets them on its server's
    own port)."""
    template = spec.template.model_dump(by_alias=True)
    if not legacy:
        template["securityGroups"] = []
    for name in NEW_TEMPLATE_FIELDS:  # counted only when set: other groups keep their hash
        if not template.get(name):
            template.pop(name, None)
    payload = {"template": template, "serverGroup": server_group_id}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:10]


def security_group_patch(
    spec: VirtualMachineGroupSpec, member: Mapping[str, Any], current: str, legacy: str
) -> dict[str, Any] | None:
    """The patch giving a member the template's security groups in place (its VM applies
    them with Nova's add/remove security group), and the current template hash when it
    carries the legacy one; None when it has both already."""
    want = list(spec.template.security_groups)
    patch: dict[str, Any] = {}
    if list((member.get("spec") or {}).get("securityGroups") or []) != want:
        patch["spec"] = {"securityGroups": want}
    labels = (member.get("metadata") or {}).get("labels") or {}
    if legacy != current and labels.get(TEMPLATE_HASH_LABEL) == legacy:
        patch["metadata"] = {"labels": {TEMPLATE_HASH_LABEL: current}}
    return patch or None


def plan_members(
    spec: VirtualMachineGroupSpec,
    current_hash: str,
    members: list[MemberView],
    imported: Mapping[str, Imported] | None = None,
    going: Sequence[MemberView] = (),
) -> MemberPlan:
    """Decide creations and deletions for one pass (``members`` exclude those being
    deleted, ``going``). New members import free refs first."""
    imported = imported or {}
    # (A member whose imported server is gone since rebuilds it itself: engine/ownership.py.)
    count, delete, placed = _plan_templates(spec, current_hash, members)
    refs: list[ImportRef] = []
    if count and refs_of(spec):  # (no refs to offer: who holds which needs no look)
        deleted = set(delete)  # sets, not lists: a pass stays linear in the group's size
        leaving = {*going, *(m for m in members if m.name in deleted)}
        # A ref stays with its member until that member goes — and while it goes, unless
        # its import failed: then it marked nothing its deletion could take along, and
        # the member replacing it (say, built from a template that fixes a mismatch) may
        # have it.
        held = [m for m in [*members, *going] if m not in leaving or m.reason not in IMPORT_FAILED]
        taken = {*imported, *(m.import_key for m in held if m.import_key)}
        refs = free_refs(spec, taken)[:count]
    zones = _zones_for(spec.availability_zones, placed, count - len(refs))
    # An imported server is where it is: its member gets no zone (nor counts towards one).
    creates = [NewMember(import_=ref) for ref in refs] + [NewMember(zone) for zone in zones]
    return MemberPlan(creates, delete)


def _plan_templates(
    spec: VirtualMachineGroupSpec, current_hash: str, members: list[MemberView]
) -> tuple[int, list[str], list[MemberView]]:
    """Scale and roll over by template hash: how many to create, whom to delete, and
    the members that stay or count for zone spreading."""
    desired = spec.replicas
    updated = [m for m in members if m.template_hash == current_hash]
    old = [m for m in members if m.template_hash != current_hash]
    delete: list[str] = []

    # Old members that are not ready never count towards availability: drop them.
    broken_old = [m for m in old if not m.ready]
    delete += [m.name for m in broken_old]
    old = [m for m in old if m.ready]

    if len(updated) > desired:  # scale down among current members
        delete += [m.name for m in _victims(updated, len(updated) - desired)]
        deleted = set(delete)
        updated = [m for m in updated if m.name not in deleted]
        delete += [m.name for m in old]
        return 0, delete, updated

    # Bring current members up to `desired` without exceeding desired + maxSurge in all.
    limits = strategy.resolve(spec.strategy, spec.identity, desired)
    need = desired - len(updated)
    room = desired + limits.max_surge - (len(updated) + len(old))
    creates = max(0, min(need, room))

    # Retire old members while at least desired - maxUnavailable stay ready.
    ready_total = sum(m.ready for m in updated) + len(old)
    removable = ready_total - (desired - limits.max_unavailable)
    delete += [m.name for m in _victims(old, max(0, min(len(old), removable)))]
    return creates, delete, [*updated, *old]


def refs_of(spec: VirtualMachineGroupSpec) -> list[ImportRef]:
    return spec.import_.members if spec.import_ is not None else []


def free_refs(spec: VirtualMachineGroupSpec, taken: Collection[str]) -> list[ImportRef]:
    """Refs a new member may import, in order: among the first ``replicas`` entries,
    those no member has imported or carries."""
    return [ref for ref in refs_of(spec)[: spec.replicas] if ref.key not in taken]


def imported_refs(
    recorded: list[Mapping[str, Any]], members: list[MemberView]
) -> dict[str, Imported]:
    """Refs taken over for good: recorded in ``status.imports`` (the member may be gone
    since), or carried by a member that has a server (it can only be the imported one)."""
    found: dict[str, Imported] = {}
    for entry in recorded:
        key = import_key(entry)
        if key and entry.get("state") == "Imported" and entry.get("serverId"):
            found[key] = Imported(str(entry.get("member") or ""), str(entry["serverId"]))
    for m in members:
        if m.import_key and m.server_id:
            found.setdefault(m.import_key, Imported(m.name, m.server_id))
    return found


def import_status(
    spec: VirtualMachineGroupSpec, members: list[MemberView], imported: Mapping[str, Imported]
) -> list[dict[str, Any]]:
    """``status.imports``: one entry per ``spec.import.members`` entry, in order.
    ``members`` are all the group's members, being deleted and just created included
    (a later one carrying the same ref as one going is the one named)."""
    if not refs_of(spec):
        return []
    carrying = {m.import_key: m.name for m in members if m.import_key}
    entries: list[dict[str, Any]] = []
    for index, ref in enumerate(refs_of(spec)):
        entry: dict[str, Any] = {"id": ref.id, "name": ref.name}
        if ref.key in imported:
            done = imported[ref.key]
            entry |= {"state": "Imported", "member": done.member, "serverId": done.server_id}
        elif ref.key in carrying:
            entry |= {"state": "Importing", "member": carrying[ref.key]}
        else:
            entry["state"] = "BeyondReplicas" if index >= spec.replicas else "Pending"
        entries.append(entry)
    return entries


def newly_imported(
    previous: list[Mapping[str, Any]], entries: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Entries that became ``Imported`` since ``previous`` (the status before)."""
    before = {import_key(e): e.get("state") for e in previous}
    return [
        e for e in entries if e["state"] == "Imported" and before.get(import_key(e)) != "Imported"
    ]


def stale_imports(spec: VirtualMachineGroupSpec, members: list[MemberView]) -> list[str]:
    """Members carrying a ref no longer listed that they never took over: their import
    is dropped (they build a server of their own), so a ref removed from the list, e.g.
    one that cannot be imported, does not leave a member stuck on it."""
    listed = {ref.key for ref in refs_of(spec)}
    return sorted(
        m.name for m in members if m.import_key and m.import_key not in listed and not m.server_id
    )


def outside_group(
    members: list[MemberView], imported: Mapping[str, Imported], group_members: Collection[str]
) -> list[str]:
    """Members whose imported server is not in the group's server group (Nova adds a
    server to a group only when it boots it): ``haPolicy`` does not hold for them."""
    return sorted(
        m.name
        for m in members
        if m.import_key in imported and m.server_id and m.server_id not in group_members
    )


def import_notes(
    spec: VirtualMachineGroupSpec,
    entries: list[dict[str, Any]],
    outside: list[str],
    group_id: str | None,
) -> str:
    """What the Ready message adds about imports: refs not imported and why, imported
    members outside the server group."""

    def refs(state: str) -> str:
        return ", ".join(str(import_key(e)) for e in entries if e["state"] == state)

    notes = []
    if beyond := refs("BeyondReplicas"):
        notes.append(
            f"spec.import.members: {beyond}: not imported, beyond replicas ({spec.replicas})"
        )
    if pending := refs("Pending"):
        notes.append(
            f"spec.import.members: {pending}: not imported yet, until the group creates a "
            "member (scale-out or rollout)"
        )
    if outside and group_id:
        notes.append(
            f"imported member(s) {', '.join(outside)} outside server group {group_id} "
            "(Nova cannot add an existing server to a group)"
        )
    return "".join(f"; {note}" for note in notes)


def policy_patches(policy: str, members: Mapping[str, str | None]) -> list[str]:
    """Members (name → their spec.deletionPolicy) to patch to the group's ``policy``.

    deletionPolicy is not a server property (it is not in the template hash), so a
    change is patched onto existing members instead of rolling them over.
    """
    return sorted(name for name, has in members.items() if (has or DEFAULT_POLICY) != policy)


def _victims(members: list[MemberView], count: int) -> list[MemberView]:
    """Not-ready first, then newest first (like a ReplicaSet)."""
    ranked = sorted(members, key=lambda m: (m.ready, _neg(m.created), m.name))
    return ranked[:count]


def _neg(created: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in created)


def _zones_for(zones: list[str], members: list[MemberView], count: int) -> list[str | None]:
    if not zones:
        return [None] * count
    load = Counter({z: 0 for z in zones})
    load.update(m.zone for m in members if m.zone is not None and m.zone in load)
    picked: list[str | None] = []
    for _ in range(count):
        zone = min(zones, key=lambda z: (load[z], zones.index(z)))
        load[zone] += 1
        picked.append(zone)
    return picked


def validate(spec: VirtualMachineGroupSpec) -> str | None:
    """Spec problems the schema cannot express (no CEL on Kubernetes 1.20)."""
    if problem := strategy.problem(spec.strategy, spec.identity):
        return problem
    if spec.volume_templates and spec.identity != "Ordinal":
        return "spec.volumeTemplates: requires spec.identity: Ordinal"
    if spec.identity == "Ordinal" and spec.import_ is not None:
        return "spec.import: not supported with identity Ordinal"
    if spec.snapshot_before_replace is not None and not spec.volume_templates:
        return "spec.snapshotBeforeReplace: requires spec.volumeTemplates"
    return None


# -- identity Ordinal: stateful groups ---------------------------------------------------------
#
# Member i is named ``<group>-<i>``; each volume template ``t`` gives it the Volume object
# ``<group>-<t>-<i>``, created before the member and named in its ``spec.volumes`` (the
# VirtualMachine attaches it, and attaches it again to any server that replaces its own).
# A member is never surged: its name and its volumes exist once, so a rollout deletes it
# and makes it again once gone, within maxUnavailable.


def member_name(group: str, ordinal: int) -> str:
    return f"{group}-{ordinal}"


def volume_name(group: str, template: str, ordinal: int) -> str:
    return f"{group}-{template}-{ordinal}"


def ordinal_of(group: str, name: str) -> int | None:
    """The ordinal of member ``name`` of ``group``; None when it is not ``<group>-<i>``."""
    prefix = f"{group}-"
    rest = name[len(prefix) :] if name.startswith(prefix) else ""
    if not rest.isdigit() or (len(rest) > 1 and rest.startswith("0")):
        return None
    return int(rest)


@dataclass(frozen=True)
class VolumeView:
    """One of the group's Volume objects."""

    name: str
    ordinal: int
    zone: str | None = None
    deleting: bool = False


@dataclass(frozen=True)
class OrdinalPlan:
    creates: list[tuple[int, str | None]] = field(default_factory=list)  # (ordinal, zone)
    delete: list[str] = field(default_factory=list)  # members, highest ordinal first
    volumes: list[tuple[str, int, str, str | None]] = field(default_factory=list)
    """Volume objects to create before their member: (name, ordinal, template, zone)."""
    delete_volumes: list[str] = field(default_factory=list)
    retained: list[str] = field(default_factory=list)
    """Volume objects kept for ordinals >= replicas (whenScaledDown: Retain)."""


def ordinal_zone(
    spec: VirtualMachineGroupSpec, ordinal: int, volumes: Sequence[VolumeView]
) -> str | None:
    """Member i's zone: its volumes' (a volume stays where it was made, and Nova attaches
    only within a zone), else round-robin over ``availabilityZones`` by ordinal (so a
    replacement goes where its predecessor was)."""
    for volume in volumes:
        if volume.ordinal == ordinal and volume.zone:
            return volume.zone
    zones = spec.availability_zones
    return zones[ordinal % len(zones)] if zones else None


def plan_ordinals(
    spec: VirtualMachineGroupSpec,
    group: str,
    current_hash: str,
    members: list[MemberView],
    going: Sequence[MemberView] = (),
    volumes: Sequence[VolumeView] = (),
) -> OrdinalPlan:
    """Creations and deletions of an Ordinal group for one pass (``members`` exclude
    those being deleted, ``going``; ``volumes`` are the group's Volume objects)."""
    desired = spec.replicas
    by_ordinal = {m.name: ordinal_of(group, m.name) for m in members}

    def rank(name: str) -> int:  # highest ordinal first; a name not <group>-<i> before all
        ordinal = by_ordinal[name]
        return -(ordinal if ordinal is not None else 1 << 30)

    beyond_members = [m.name for m in members if (by_ordinal[m.name] or 0) >= desired]
    strays = [m.name for m in members if by_ordinal[m.name] is None]
    delete = sorted({*beyond_members, *strays}, key=rank)
    gone = set(delete)
    kept = [m for m in members if m.name not in gone]

    # Rollout, delete-then-create: old members not ready go at once; ready ones go,
    # highest ordinal first, while desired - maxUnavailable stay ready.
    old = [m for m in kept if m.template_hash != current_hash]
    broken = [m for m in old if not m.ready]
    ready_old = sorted((m for m in old if m.ready), key=lambda m: rank(m.name))
    ready_total = sum(m.ready for m in kept)
    limits = strategy.resolve(spec.strategy, spec.identity, desired)
    removable = max(0, ready_total - (desired - limits.max_unavailable))
    delete += [m.name for m in broken] + [m.name for m in ready_old[:removable]]

    # A missing ordinal is made again under its name, once the one of that name is gone.
    # Nor while one of its Volume objects is being deleted: the member would name it, and
    # a Volume's deletion waits for the VMs naming it. It is made again once gone.
    present = {m.name for m in members} | {m.name for m in going}
    waiting = {v.ordinal for v in volumes if v.deleting}
    creates = [
        (i, ordinal_zone(spec, i, volumes))
        for i in range(desired)
        if member_name(group, i) not in present and i not in waiting
    ]

    known = {v.name for v in volumes}
    new_volumes = [
        (volume_name(group, t.name, i), i, t.name, zone)
        for i, zone in creates
        for t in spec.volume_templates
        if volume_name(group, t.name, i) not in known
    ]
    beyond = sorted(
        (v for v in volumes if v.ordinal >= desired and not v.deleting),
        key=lambda v: (-v.ordinal, v.name),
    )
    if spec.volume_retention.when_scaled_down == "Delete":
        return OrdinalPlan(creates, delete, new_volumes, [v.name for v in beyond], [])
    return OrdinalPlan(creates, delete, new_volumes, [], sorted(v.name for v in beyond))


def template_replacements(
    spec: VirtualMachineGroupSpec,
    group: str,
    current_hash: str,
    members: Sequence[MemberView],
    delete: Sequence[str],
) -> list[str]:
    """Of the members a pass deletes, those a template change replaces (an ordinal below
    ``replicas`` built from an older template): what ``snapshotBeforeReplace`` snapshots
    first. Not a scale-down's (their volumes stay or go by ``volumeRetention``)."""
    going = set(delete)
    return [
        m.name
        for m in members
        if m.name in going
        and m.template_hash != current_hash
        and (ordinal := ordinal_of(group, m.name)) is not None
        and ordinal < spec.replicas
    ]


def volume_deletion(
    when_deleted: str, volumes: Sequence[VolumeView]
) -> tuple[list[str], list[str]]:
    """The group is being deleted: (Volume objects to delete, those to let go of: their
    owner reference removed, so they outlive the group). ``when_deleted``: see
    :func:`when_deleted`."""
    names = sorted(v.name for v in volumes if not v.deleting)
    if when_deleted == "Delete":
        return names, []
    return [], names


def when_deleted(spec: Mapping[str, Any]) -> str:
    """``spec.volumeRetention.whenDeleted`` read from the body, so a group whose spec no
    longer validates still goes its way; anything but ``Delete`` retains (the default,
    and what loses no data)."""
    retention = spec.get("volumeRetention")
    value = retention.get("whenDeleted") if isinstance(retention, Mapping) else None
    return "Delete" if value == "Delete" else "Retain"
