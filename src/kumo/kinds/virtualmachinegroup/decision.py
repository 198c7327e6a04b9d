"""One pass of a VirtualMachineGroup, decided: what it read (:class:`Observed`), the one
pure decision (:func:`decide`) and the Result it reports (:func:`report`). No I/O.

The composite lifecycle (``engine/composite.py``) runs it: the actuator observes, this
decides, the members, volumes, snapshots and server group steps apply, this reports.
Both identities take the same path: a Random group's decision has no volumes and no
snapshots, an Ordinal group's no imports; what differs per identity is which pure plan
decides the members (``plan.plan_members`` or ``plan.plan_ordinals``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kumo.api.common import import_key
from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.engine import conditions
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body
from kumo.engine.result import Result
from kumo.kinds.labels import GROUP_LABEL, ORDINAL_LABEL, TEMPLATE_HASH_LABEL
from kumo.kinds.virtualmachinegroup import plan, snapshot_plan
from kumo.ports.model import ServerGroup, Snapshot

#: Volume states (the Volume object's ``status.volumeStatus``) Cinder snapshots from.
STEADY = frozenset({"available", "in-use"})
SNAPSHOT_FIELD = "spec.snapshotBeforeReplace"


class Member(NamedTuple):
    """What a pass reads of one member's body (derived once per body: :func:`derive`)."""

    view: plan.MemberView  # template_hash: its label, as it is
    #: (name, reason, message) of its Ready condition when it reports an error
    failing: tuple[str, str, str] | None
    #: its spec.securityGroups and template-hash label: all its security-group patch
    #: depends on
    groups_label: tuple[tuple[str, ...], str]


def derive(body: Body) -> Member:
    view = member_view(body)
    status = body.get("status") or {}
    failing = None
    if status.get("phase") == "Error":
        ready = conditions.get_condition(status.get("conditions") or [], "Ready") or {}
        failing = (view.name, ready.get("reason", ""), ready.get("message", ""))
    groups = tuple((body.get("spec") or {}).get("securityGroups") or [])
    return Member(view, failing, (groups, view.template_hash))


def member_view(body: Body) -> plan.MemberView:
    meta = body["metadata"]
    status = body.get("status") or {}
    spec = body.get("spec") or {}
    ref = spec.get("import")
    ready = conditions.get_condition(status.get("conditions") or [], "Ready") or {}
    label = (meta.get("labels") or {}).get(TEMPLATE_HASH_LABEL, "")
    return plan.MemberView(
        name=meta["name"],
        template_hash=label,
        ready=conditions.is_true(status.get("conditions") or []),
        zone=spec.get("availabilityZone"),
        created=meta.get("creationTimestamp", ""),
        import_key=import_key(ref) if isinstance(ref, dict) else None,
        server_id=status.get("id"),
        reason=str(ready.get("reason") or ""),
    )


def volume_view(body: Body) -> plan.VolumeView:
    meta = body["metadata"]
    label = (meta.get("labels") or {}).get(ORDINAL_LABEL, "")
    return plan.VolumeView(
        name=meta["name"],
        ordinal=int(label) if label.isdigit() else -1,
        zone=(body.get("spec") or {}).get("availabilityZone"),
        deleting=bool(meta.get("deletionTimestamp")),
    )


def current(view: plan.MemberView, legacy: str, current_hash: str) -> plan.MemberView:
    """A member labelled with the legacy template hash is up to date: it counts as
    carrying the current one."""
    if current_hash and view.template_hash == legacy and legacy != current_hash:
        return dataclasses.replace(view, template_hash=current_hash)
    return view


@dataclass(frozen=True)
class Observed:
    """What one pass read; written nothing. ``views``: the members staying (seen live
    with the current hash normalised, and those created but not seen yet); ``going``:
    those being deleted (or deleted by this process and still shown live)."""

    spec: VirtualMachineGroupSpec
    group: str  # the group's name
    status: Body  # the group's status as read (imports, snapshotCount)
    server_group: ServerGroup | None
    hash: str
    legacy: str
    bodies: list[Body]  # live members' bodies
    members: list[Member]  # ... and what was derived from them
    views: list[plan.MemberView]
    going: list[plan.MemberView]
    #: identity Ordinal: the group's Volume objects (being deleted included) and those
    #: labelled with its name that no controller owns (taken back: ``strays``)
    volume_bodies: list[Body] = field(default_factory=list)
    volumes: list[plan.VolumeView] = field(default_factory=list)
    strays: list[str] = field(default_factory=list)
    #: Volume objects of a name a new member's volume would get that already exist
    existing_volumes: frozenset[str] = frozenset()
    #: the group's snapshots, listed only when the pass replaces a member for a template
    #: change and the spec asks for snapshots first
    snapshots: list[Snapshot] | None = None
    #: what apply did that the report needs (:class:`Applied`); None before apply
    applied: Applied | None = None


@dataclass(frozen=True)
class Applied:
    snapshots_made: int = 0
    #: a snapshot the cloud refused: the member stays, the rollout stops
    refused: TerminalError | None = None
    refused_members: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Decision:
    """Every write of one pass, in the order apply makes them."""

    adopt_volumes: list[str] = field(default_factory=list)
    snapshots: snapshot_plan.SnapshotPlan | None = None
    replacing: list[snapshot_plan.Replacement] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)  # members
    delete_volumes: list[str] = field(default_factory=list)
    member_policy: list[str] = field(default_factory=list)  # deletionPolicy patches
    volume_policy: list[str] = field(default_factory=list)
    security_groups: list[tuple[str, Body]] = field(default_factory=list)
    drop_imports: list[str] = field(default_factory=list)
    create_volumes: list[tuple[str, int, str, str | None]] = field(default_factory=list)
    creates: list[plan.NewMember] = field(default_factory=list)
    #: the Scaling event's message (None: nothing scaled)
    scaling: str | None = None
    #: no member left on an older template: server groups of an earlier haPolicy go
    settled: bool = False
    retained: list[str] = field(default_factory=list)
    #: Volume objects that exist and are not the group's → the ordinals not made
    blocked: dict[str, int] = field(default_factory=dict)
    #: members held back until their snapshots are available
    held: frozenset[str] = frozenset()


def member_plan(o: Observed) -> tuple[list[plan.NewMember], list[str], plan.OrdinalPlan | None]:
    """The members' part: (creates, deletes, the Ordinal plan with its volumes)."""
    spec = o.spec
    if spec.identity == "Ordinal":
        ordinal = plan.plan_ordinals(spec, o.group, o.hash, o.views, o.going, o.volumes)
        creates = [plan.NewMember(zone, ordinal=i) for i, zone in ordinal.creates]
        return creates, ordinal.delete, ordinal
    decided = plan.plan_members(spec, o.hash, o.views, imported(o), o.going)
    return decided.creates, decided.delete, None


def imported(o: Observed) -> dict[str, plan.Imported]:
    return plan.imported_refs(o.status.get("imports") or [], [*o.views, *o.going])


def replacements(o: Observed, delete: Sequence[str]) -> list[snapshot_plan.Replacement]:
    """``snapshotBeforeReplace``: the members ``delete`` replaces for a template change,
    with their template volumes (empty when the spec asks for no snapshots)."""
    spec = o.spec
    if spec.snapshot_before_replace is None or not spec.volume_templates:
        return []
    names = set(plan.template_replacements(spec, o.group, o.hash, o.views, delete))
    return [_replacement(o, b) for b in o.bodies if b["metadata"]["name"] in names]


def wants_snapshots(o: Observed) -> bool:
    """Whether the pass must list the group's snapshots (it replaces a member for a
    template change and the spec asks for snapshots first): a converged group lists none."""
    if o.spec.snapshot_before_replace is None or not o.spec.volume_templates:
        return False
    _, delete, _ = member_plan(o)
    return bool(replacements(o, delete))


def decide(o: Observed) -> Decision:
    """The whole decision of one pass (pure)."""
    spec = o.spec
    creates, delete, ordinal = member_plan(o)
    replacing = replacements(o, delete)
    snapshots = None
    held: frozenset[str] = frozenset()
    if replacing:
        assert spec.snapshot_before_replace is not None
        owners = frozenset(
            b["metadata"]["uid"] for b in o.volume_bodies if b["metadata"].get("uid")
        )
        snapshots = snapshot_plan.plan_snapshots(
            spec.snapshot_before_replace.keep, replacing, o.snapshots or [], owners
        )
        held = frozenset(r.member for r in replacing) - set(snapshots.cleared)
        delete = [n for n in delete if n not in held]
    deleted = set(delete)
    new_volumes = ordinal.volumes if ordinal else []
    blocked = {name: i for name, i, _, _ in new_volumes if name in o.existing_volumes}
    stop = set(blocked.values())
    delete_volumes = ordinal.delete_volumes if ordinal else []
    live_volumes = {
        b["metadata"]["name"]: (b.get("spec") or {}).get("deletionPolicy")
        for b in o.volume_bodies
        if not b["metadata"].get("deletionTimestamp")
        and b["metadata"]["name"] not in set(delete_volumes)
    }
    members_policy = {
        b["metadata"]["name"]: (b.get("spec") or {}).get("deletionPolicy")
        for b in o.bodies
        if b["metadata"]["name"] not in deleted
    }
    stale = plan.stale_imports(spec, [m.view for m in o.members if m.view.name not in deleted])
    after = [v for v in o.views if v.name not in deleted]
    return Decision(
        adopt_volumes=o.strays,
        snapshots=snapshots,
        replacing=replacing,
        delete=delete,
        delete_volumes=delete_volumes,
        member_policy=plan.policy_patches(spec.deletion_policy, members_policy),
        volume_policy=plan.policy_patches(spec.deletion_policy, live_volumes),
        security_groups=_security_groups(o, deleted),
        drop_imports=stale if spec.identity != "Ordinal" else [],
        create_volumes=[v for v in new_volumes if v[1] not in stop],
        creates=[c for c in creates if c.ordinal not in stop],
        scaling=_scaling(spec, creates, delete, new_volumes, delete_volumes),
        settled=o.server_group is not None
        and not delete
        and all(v.template_hash == o.hash for v in after),
        retained=ordinal.retained if ordinal else [],
        blocked=blocked,
        held=held,
    )


def _security_groups(o: Observed, skip: set[str]) -> list[tuple[str, Body]]:
    """Members to give the template's security groups in place: the patch depends only on
    a member's security groups and template-hash label, so it is decided once per pair."""
    decided: dict[tuple[tuple[str, ...], str], Body | None] = {}
    patches = []
    for body, member in zip(o.bodies, o.members, strict=True):
        if member.groups_label not in decided:
            decided[member.groups_label] = plan.security_group_patch(o.spec, body, o.hash, o.legacy)
        patch = decided[member.groups_label]
        if member.view.name not in skip and patch is not None:
            patches.append((member.view.name, patch))
    return patches


def _scaling(
    spec: VirtualMachineGroupSpec,
    creates: Sequence[plan.NewMember],
    delete: Sequence[str],
    volumes: Sequence[Any],
    delete_volumes: Sequence[str],
) -> str | None:
    if spec.identity == "Ordinal":
        if not (delete or creates or delete_volumes):
            return None
        return (
            f"created {len(creates)} member(s) and {len(volumes)} "
            f"volume(s), deleting {len(delete)} member(s) and "
            f"{len(delete_volumes)} volume(s)"
        )
    if not (delete or creates):
        return None
    imports = sum(new.import_ is not None for new in creates)
    return (
        f"created {len(creates)}"
        + (f" ({imports} importing a server)" if imports else "")
        + f", deleting {len(delete)} member(s)"
    )


def _replacement(o: Observed, member: Body) -> snapshot_plan.Replacement:
    name = member["metadata"]["name"]
    ordinal = plan.ordinal_of(o.group, name)
    by_name = {b["metadata"]["name"]: b for b in o.volume_bodies}
    refs = []
    for template in o.spec.volume_templates:
        body = by_name.get(plan.volume_name(o.group, template.name, ordinal or 0))
        if body is None or not body["metadata"].get("uid"):
            continue
        status = body.get("status") or {}
        refs.append(
            snapshot_plan.VolumeRef(
                body["metadata"]["name"],
                body["metadata"]["uid"],
                status.get("id"),
                steady=status.get("volumeStatus") in STEADY,
            )
        )
    return snapshot_plan.Replacement(name, str(member["metadata"].get("uid", "")), tuple(refs))


def snapshot_failure(decided: snapshot_plan.SnapshotPlan) -> TerminalError | None:
    if not decided.failed:
        return None
    member, snapshot, volume = decided.failed[0]
    return TerminalError(
        "SnapshotFailed",
        f"snapshot {snapshot.id} of volume {volume.volume_id} (Volume {volume.name}) is "
        f"{snapshot.status}: member {member} is not replaced and the rollout stops; delete "
        "the snapshot to try again, or remove snapshotBeforeReplace to replace without one",
        field=SNAPSHOT_FIELD,
    )


def import_entries(o: Observed) -> list[dict[str, Any]]:
    """``status.imports`` after the pass (members going and just created included)."""
    return plan.import_status(o.spec, [*o.going, *o.views], imported(o))


def outside(o: Observed) -> list[str]:
    if o.server_group is None:
        return []
    return plan.outside_group(o.views, imported(o), o.server_group.members)


def report(o: Observed, d: Decision, step_seconds: float) -> Result:
    """The pass's Result from what apply left (``o``); raises the snapshot step's
    failure with that status. ``step_seconds``: the look again while a snapshot is
    made (snapshots are not watched)."""
    spec = o.spec
    applied = o.applied or Applied()
    count = o.status.get("snapshotCount") or 0
    if d.snapshots is not None:
        count = d.snapshots.count - (len(d.snapshots.create) - applied.snapshots_made)
    entries = import_entries(o)
    # Both identities report every field: the API server defaults the two counts to 0
    # (the CRD schema), so a status without them differs from the stored one and every
    # pass of a Random group wrote it again.
    extra: dict[str, Any] = {
        "imports": entries or None,
        "retainedVolumes": d.retained or None,
        "retainedVolumeCount": len(d.retained),
        "snapshotCount": count,
    }
    group_id = o.server_group.id if o.server_group else None
    notes = plan.import_notes(spec, entries, outside(o), group_id)
    notes += f"; {len(d.retained)} volume(s) retained" if d.retained else ""
    if d.snapshots is not None:
        waiting = [m for m in d.snapshots.waiting if m not in applied.refused_members]
        if waiting:
            notes += f"; snapshotting the volumes of {', '.join(waiting)} before replacing"
    if d.blocked:
        ordinals = sorted(set(d.blocked.values()))
        notes += (
            f"; Volume(s) {', '.join(sorted(d.blocked))} exist and are not this group's: "
            f"member(s) {', '.join(plan.member_name(o.group, i) for i in ordinals)} "
            "not made"
        )
    result = _result(o, extra, notes)
    failure = None
    if d.snapshots is not None:
        failure = snapshot_failure(d.snapshots) or (o.applied.refused if o.applied else None)
    if failure is not None:
        raise TerminalError(
            failure.reason,
            failure.detail,
            field=failure.field,
            recheck=failure.recheck,
            status=result.status,
        )
    if d.held:
        result.requeue_after = step_seconds
    return result


def _result(o: Observed, extra: dict[str, Any], notes: str) -> Result:
    spec, views = o.spec, o.views
    ready = sum(v.ready for v in views)
    updated = sum(v.template_hash == o.hash for v in views)
    status = {
        "replicas": len(views),
        "readyReplicas": ready,
        "updatedReplicas": updated,
        "serverGroupId": o.server_group.id if o.server_group else None,
        "selector": f"{GROUP_LABEL}={o.group}",
        # Ordinal names in ordinal order (g-2 before g-10).
        "members": sorted(
            (v.name for v in views),
            key=(lambda n: (len(n), n)) if spec.identity == "Ordinal" else None,
        ),
        **extra,
    }
    converged = len(views) == ready == updated == spec.replicas
    message = f"{ready}/{spec.replicas} members ready, {updated} up to date"
    failing = _failing_member(o.members)
    if failing and not converged:
        name, reason, detail = failing
        where = "spec.haPolicy: " if reason == "NoValidHost" else ""
        message = f"{where}{message}; member {name}: {reason}: {detail}"
    message += notes
    return Result(
        phase="Ready" if converged else ("Degraded" if failing else "Scaling"),
        ready=converged,
        reason="Ready" if converged else ("MemberFailed" if failing else "Progressing"),
        message=message,
        status=status,
    )


def _failing_member(members: Sequence[Member]) -> tuple[str, str, str] | None:
    """The first member (by name) reporting an error, to say in the group why it is not
    Ready."""
    failing = [m.failing for m in members if m.failing is not None]
    return min(failing) if failing else None


def newly_imported(o: Observed) -> list[tuple[dict[str, Any], bool]]:
    """Import entries that became ``Imported`` this pass, each with whether its member
    stays outside the server group."""
    entries = import_entries(o)
    out = set(outside(o))
    return [
        (entry, entry["member"] in out)
        for entry in plan.newly_imported(o.status.get("imports") or [], entries)
    ]
