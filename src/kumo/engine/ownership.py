"""The one routine that decides which cloud resource an object owns.

Every kind's main resource (a Nova server, an Octavia load balancer, a Designate
recordset, a Nova server group) is found the same way, so the rules cannot drift apart:

1. by the ID recorded in status — and only if it carries this object's marker; one
   that does not is *never* changed or deleted, whatever status says: the object
   reports ``NotOwned`` naming it (a status written by someone else, a restore from
   backup, an object migrated from another operator);
2. else adopted by marker — a crashed run created it but could not record its ID;
   of duplicates (two creates before a crash) one is kept (the recorded one, else one
   that fits the spec, else the lowest ID) and the others deleted — unless the kind
   holds data (``Owned.holds_data``: volumes, shares): a second volume carrying the
   marker is most often a restore or a copy someone made, so it is reported
   (``DuplicateFound``, naming both) and left, and deleted only when the kind proves
   Kumo made it and it holds nothing (``Owned.disposable``, kinds/duplicates.py). When
   drift saw several carrying the marker while status names one (a create retried
   after its answer was lost, a copy appearing), ``ctx.audit`` makes step 1 look for
   them too;
3. else, when the spec says ``import: {id | name}``, that resource is taken over
   (:func:`take_over`): refused if another object's marker is on it (``AlreadyOwned``),
   or, carrying no marker at all, if the object may not import or observe such a
   resource (``ImportNotAllowed``: ``Context.import_gate``, the shared default cloud),
   checked against what cannot change (``ImportMismatch`` naming the field — never
   fixed by replacing it), marked, and its ID recorded. Under ``managementPolicy:
   Observe`` it is only read: not marked, and the check's findings become drift;
4. else created, and its ID recorded in status at once, before anything else can fail
   — also when status names an imported resource that is gone since: from its import
   on it is managed like Kumo's own.

A resource named by status that lacks the marker is taken over only when it is the
one ``import`` names (Observe imported it, then the user switched to Manage).

Markers name the cluster as well as the object (kumo.ports.markers): ``owner_of`` reads
another cluster's marker as ``<uid>@<cluster>``, which is no object's UID, so every rule
above treats another cluster's resource as another object's: never adopted, deleted as a
duplicate or imported (``AlreadyOwned``, naming the cluster). A *legacy* marker (written
before markers named the cluster) is read as its UID: the object with that UID finds it
as above, and re-marks it with this cluster's marker at once (event ``Remarked``).

Deletion (:func:`delete_owned`) deletes exactly what carries the marker — of a kind
that holds data, the recorded one and the disposable duplicates; the other duplicates
are released (the orphan mark instead of the marker) and reported. A kind gives
the routine an :class:`Owned` — how to get by ID, list what carries the marker, read a
resource's marker and delete it; creating stays with the kind (:func:`create_owned`
records the ID), because what a create needs differs per kind.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.engine.failpoints import failpoint
from kumo.engine.objects import Body, Context, Obj
from kumo.engine.result import Result

R = TypeVar("R")


@dataclass(frozen=True)
class Owned(Generic[R]):
    """How the engine sees one kind of cloud resource an object owns.

    Obligations: ``get_by_id`` returns None when the resource is gone; ``list_owned``
    returns exactly the resources carrying ``obj``'s marker; ``delete`` succeeds when the
    resource is already gone.
    """

    noun: str  # "server", "load balancer", … — for messages and events
    id_of: Callable[[R], str]
    owner_of: Callable[[R], str | None]  # the UID in the resource's marker, if any
    get_by_id: Callable[[str], Awaitable[R | None]]
    list_owned: Callable[[], Awaitable[list[R]]]
    delete: Callable[[R], Awaitable[None]]
    id_field: str = "id"  # where status records the ID ("": nowhere, a Volume's snapshots)
    recorded: Callable[[R], Body] | None = None  # more status fields naming it (a zone)
    unfit: Callable[[R], bool] | None = None  # of duplicates, keep one that fits the spec
    #: For ``spec.import``: resources with this name; what differs from the spec that
    #: cannot change in place (old = cloud, new = spec); put the marker on it.
    find_by_name: Callable[[str], Awaitable[list[R]]] | None = None
    #: Its name: a recorded resource that still has the name ``import`` gives is the one
    #: it names, with no listing (an observed object asks on every pass).
    name_of: Callable[[R], str] | None = None
    verify: Callable[[R], Awaitable[list[Change]]] | None = None
    mark: Callable[[R], Awaitable[R]] | None = None  # returns it as marked
    #: ``deletionPolicy: Orphan``: replace the marker by the orphan mark (kumo.ports.model),
    #: so the orphan sweep never takes it for a leak and an import may take it over.
    release: Callable[[R], Awaitable[None]] | None = None
    #: Its marker is a legacy one (no cluster): found, it is re-marked with ``mark``.
    legacy: Callable[[R], bool] | None = None
    #: It holds data (a volume, a share): a duplicate is reported, never deleted unless
    #: ``disposable`` proves it Kumo's own and empty.
    holds_data: bool = False
    #: Of a kind that holds data: may this duplicate go? True only for one Kumo made
    #: itself (its create in doubt, the same name) that holds nothing (never attached).
    disposable: Callable[[R], Awaitable[bool]] | None = None
    #: The resource as the cloud's API has it now, not the watch's cache (None: gone):
    #: what the Orphan step reads back (``orphan.py``). Absent: ``get_by_id``.
    fetch: Callable[[R], Awaitable[R | None]] | None = None

    def status_of(self, resource: R) -> Body:
        fields = {self.id_field: self.id_of(resource)}
        if self.recorded is not None:
            fields.update(self.recorded(resource))
        return fields


class NotOwned(TerminalError):
    """The resource status names does not carry this object's marker: hands off."""

    def __init__(self, noun: str, resource_id: str, field: str) -> None:
        super().__init__(
            "NotOwned",
            f"{noun} {resource_id} does not carry Kumo's marker for this object: Kumo "
            "will not change or delete it (remove the ID from status to have Kumo create "
            "its own)",
            field=f"status.{field}",
        )


class AlreadyOwned(TerminalError):
    def __init__(self, noun: str, resource_id: str, owner: str) -> None:
        uid, at, cluster = owner.partition("@")
        whose = (
            f"a Kumo object of another cluster (uid {uid}, cluster {cluster})"
            if at
            else f"another Kumo object (uid {owner})"
        )
        super().__init__(
            "AlreadyOwned",
            f"{noun} {resource_id} carries the marker of {whose}: Kumo will not import it",
            field="spec.import",
        )


class ImportNotAllowed(TerminalError):
    """The resource carries no Kumo marker, and this object may not take it over or
    observe it (``Context.import_gate`` says why): nothing is read further or changed."""

    def __init__(self, noun: str, resource_id: str, why: str) -> None:
        super().__init__(
            "ImportNotAllowed",
            f"{noun} {resource_id} carries no Kumo marker, and {why}",
            field="spec.import",
        )


async def record(ctx: Context, obj: Obj, fields: Body) -> None:
    """The crash-safety write: record (or forget, with None values) the owned
    resource's ID at once, so that a crash after a create, an adoption, an import or a
    delete leaves a status the next pass reads right. The only status write in the
    middle of a pass (``lifecycle.record`` is this one); the engine writes the rest
    once, at its end."""
    obj.body = await ctx.kube.patch_status(obj, fields)


def import_ref(obj: Obj) -> dict[str, str] | None:
    """``spec.import`` of the object, if it asks to take over a resource."""
    ref = obj.spec.get("import")
    return ref if isinstance(ref, dict) and (ref.get("id") or ref.get("name")) else None


async def find_owned(ctx: Context, obj: Obj, owned: Owned[R]) -> R | None:
    """The resource ``obj`` owns, by recorded ID, adopted by marker or imported; None
    if there is none.

    Raises :class:`NotOwned` when status names a resource without the marker (unless
    it is the one ``spec.import`` names), :class:`AlreadyOwned` or ``ImportMismatch``
    when an import cannot be taken over.
    """
    known = obj.status.get(owned.id_field)
    ref = import_ref(obj)
    if known:
        resource = await owned.get_by_id(known)
        if resource is not None:
            if owned.owner_of(resource) != obj.uid:
                if ref is not None and await _names_it(owned, ref, resource):
                    return await take_over(ctx, obj, owned, resource)
                raise NotOwned(owned.noun, known, owned.id_field)
            if ctx.audit:  # a create whose answer was lost, then retried: a second one
                others = [r for r in await owned.list_owned() if owned.id_of(r) != known]
                await _settle_duplicates(ctx, obj, owned, resource, others)
            return await remark(ctx, obj, owned, resource)
    candidates = [r for r in await owned.list_owned() if owned.owner_of(r) == obj.uid]
    if not candidates:
        if ref is None:
            return None
        try:
            named = await _imported(owned, ref)
        except TerminalError as error:
            if error.reason != "ImportNotFound" or not known or ref.get("id") not in (None, known):
                raise
            # Status recorded it: imported once and gone since. From its import on it was
            # managed like Kumo's own, so it is rebuilt like Kumo's own.
            ctx.events.emit(
                obj,
                "Normal",
                f"Imported{owned.noun.title().replace(' ', '')}Gone",
                f"the imported {owned.noun} {known} is gone: building a new one from the spec",
            )
            return None
        return await take_over(ctx, obj, owned, named)
    unfit = owned.unfit or (lambda _: False)
    candidates.sort(key=lambda r: (owned.id_of(r) != known, unfit(r), owned.id_of(r)))
    keep, *duplicates = candidates
    await _settle_duplicates(ctx, obj, owned, keep, duplicates)
    if owned.id_of(keep) != known:
        ctx.events.emit(
            obj,
            "Normal",
            "Adopted",
            f"adopted {owned.noun} {owned.id_of(keep)} carrying Kumo's marker",
        )
        await record(ctx, obj, owned.status_of(keep))
    return await remark(ctx, obj, owned, keep)


async def remark(ctx: Context, obj: Obj, owned: Owned[R], resource: R) -> R:
    """A resource of ``obj``'s carrying a legacy marker (no cluster) gets this cluster's
    marker: from then on only this cluster can take it for its own, and the orphan sweep
    may act on it once ``obj`` is gone. Observing, nothing is written."""
    if ctx.observe or owned.legacy is None or owned.mark is None:
        return resource
    if not owned.legacy(resource):
        return resource
    resource = await owned.mark(resource)
    ctx.events.emit(
        obj,
        "Normal",
        "Remarked",
        f"{owned.noun} {owned.id_of(resource)} carried Kumo's marker from before markers "
        "named the cluster: marked as this cluster's",
    )
    return resource


async def _names_it(owned: Owned[R], ref: dict[str, str], resource: R) -> bool:
    """Is the resource status names the one ``spec.import`` names? (Status alone never
    hands Kumo a foreign resource: someone may have written it.)"""
    resource_id = owned.id_of(resource)
    if ref.get("id"):
        return ref["id"] == resource_id
    if owned.find_by_name is None:
        return False
    if owned.name_of is not None and owned.name_of(resource) == ref["name"]:
        return True  # one of those with that name, as a listing by name would show
    return any(owned.id_of(r) == resource_id for r in await owned.find_by_name(ref["name"]))


async def _imported(owned: Owned[R], ref: dict[str, str]) -> R:
    """The resource ``spec.import`` names; ImportNotFound / ImportAmbiguous if not one."""
    if ref.get("id"):
        found = await owned.get_by_id(ref["id"])
        if found is None:
            raise TerminalError(
                "ImportNotFound", f"{owned.noun} {ref['id']} not found", field="spec.import.id"
            )
        return found
    name = ref["name"]
    if owned.find_by_name is None:
        raise TerminalError(
            "InvalidSpec", f"a {owned.noun} can only be imported by ID", field="spec.import.name"
        )
    matches = await owned.find_by_name(name)
    if not matches:
        raise TerminalError(
            "ImportNotFound", f"no {owned.noun} named {name!r}", field="spec.import.name"
        )
    if len(matches) > 1:
        ids = ", ".join(sorted(owned.id_of(r) for r in matches))
        raise TerminalError(
            "ImportAmbiguous",
            f"{len(matches)} {owned.noun}s are named {name!r} ({ids}): import one by ID",
            field="spec.import.name",
        )
    return matches[0]


async def take_over(ctx: Context, obj: Obj, owned: Owned[R], resource: R) -> R:
    """Import ``resource``: refuse another object's, check what cannot change, mark it
    and record its ID. Observing, only read it: what the check finds is drift."""
    rid = owned.id_of(resource)
    owner = owned.owner_of(resource)
    if owner is not None and owner != obj.uid:
        raise AlreadyOwned(owned.noun, rid, owner)
    if owner is None and ctx.import_gate is not None:
        refused = await ctx.import_gate()
        if refused is not None:
            raise ImportNotAllowed(owned.noun, rid, refused)
    mismatches = await owned.verify(resource) if owned.verify is not None else []
    if ctx.observe:
        ctx.findings.extend(mismatches)
    elif mismatches:
        fields = ", ".join(
            f"{c.field} is {c.new!r} but the {owned.noun} has {c.old!r}" for c in mismatches
        )
        raise TerminalError(
            "ImportMismatch",
            f"{owned.noun} {rid} cannot be imported as is: {fields} (Kumo does not replace "
            "an imported resource: fix the spec, or import another)",
            field=mismatches[0].field,
        )
    if not ctx.observe and owner is None:
        if owned.mark is None:
            raise TerminalError(
                "InvalidSpec", f"a {owned.noun} cannot be imported", field="spec.import"
            )
        resource = await owned.mark(resource)
        ctx.events.emit(obj, "Normal", "Imported", f"imported {owned.noun} {rid}: marker added")
    if obj.status.get(owned.id_field) != rid:
        await record(ctx, obj, owned.status_of(resource))
    return resource


async def _settle_duplicates(
    ctx: Context, obj: Obj, owned: Owned[R], keep: R, duplicates: list[R]
) -> None:
    """Several carry the marker: ``keep`` stays. The others are Kumo's own (two creates
    before a crash) and deleted — unless they may hold data: then each is reported and
    left (:func:`_disposable`)."""
    for duplicate in duplicates:
        if owned.owner_of(duplicate) != obj.uid:
            continue
        if not await _disposable(owned, duplicate):
            _report(ctx, obj, owned, duplicate, f"like {owned.id_of(keep)}, which Kumo keeps")
            continue
        await owned.delete(duplicate)
        ctx.events.emit(
            obj,
            "Normal",
            "DuplicateDeleted",
            f"deleted duplicate {owned.noun} {owned.id_of(duplicate)} (kept {owned.id_of(keep)})",
        )


async def _disposable(owned: Owned[R], duplicate: R) -> bool:
    """May Kumo delete this second resource carrying the marker? Always where the kind
    holds no data; where it does, only what ``Owned.disposable`` proves Kumo's own and
    empty."""
    if not owned.holds_data:
        return True
    return owned.disposable is not None and await owned.disposable(duplicate)


def _report(
    ctx: Context, obj: Obj, owned: Owned[R], duplicate: R, whose: str, then: str = ""
) -> None:
    ctx.events.emit(
        obj,
        "Warning",
        "DuplicateFound",
        f"{owned.noun} {owned.id_of(duplicate)} carries Kumo's marker for this object "
        f"{whose}: it may hold data (a restore, a clone, a copy), so Kumo neither deletes "
        f"nor uses it{then}; delete it, or import it elsewhere, yourself",
    )


async def create_owned(
    ctx: Context,
    obj: Obj,
    owned: Owned[R],
    create: Callable[[], Awaitable[R]],
    failpoint_name: str | None = None,
) -> R:
    """Create (the kind stamps the marker) and record the ID at once, so a crash after
    this line leaves a resource the next pass adopts, never a second one.

    ``failpoint_name``: the crash point right after the create call. None where the
    create is two calls (a Neutron POST carrying the marker in its description, then the
    tags): the cloud adapter names the crash point between them itself."""
    resource = await create()
    if failpoint_name is not None:
        failpoint(failpoint_name)
    await record(ctx, obj, owned.status_of(resource))
    ctx.events.emit(obj, "Normal", "Created", f"created {owned.noun} {owned.id_of(resource)}")
    return resource


async def finalize_owned(ctx: Context, obj: Obj, owned: Owned[R], after: float = 2.0) -> Result:
    """A finalize pass: delete what carries the marker, done once nothing of ours is left
    (the cloud deletes asynchronously, so come back ``after`` seconds)."""
    going = await delete_owned(ctx, obj, owned)
    if not going:
        return Result(phase="Deleted", done=True)
    ids = ", ".join(sorted(owned.id_of(r) for r in going))
    return Result.waiting("Deleting", "Deleting", f"deleting {owned.noun}(s) {ids}", after=after)


async def delete_owned(ctx: Context, obj: Obj, owned: Owned[R]) -> list[R]:
    """Delete everything carrying ``obj``'s marker (the recorded one included, if it
    carries it); return what was asked to go — empty means nothing of ours is left.
    A foreign resource named by status is left alone. Of a kind that holds data only the
    recorded one (or the only one) and disposable duplicates go; the other duplicates
    stay, released and reported."""
    going = await carrying_marker(obj, owned)
    if owned.holds_data and len(going) > 1:
        going = await _spare_duplicates(ctx, obj, owned, going)
    for resource in going:
        await owned.delete(resource)
    return going


async def _spare_duplicates(ctx: Context, obj: Obj, owned: Owned[R], found: list[R]) -> list[R]:
    """Of several carrying the marker, those that may be deleted: the recorded one and
    the disposable ones. The rest (none recorded: all but the disposable) are released,
    so no sweep takes them for leaks, and reported."""
    known = obj.status.get(owned.id_field)
    going: list[R] = []
    for resource in found:
        if owned.id_of(resource) == known or await _disposable(owned, resource):
            going.append(resource)
            continue
        if owned.release is not None:
            await owned.release(resource)
        whose = f"like {known}" if known else "like another, and status names none"
        left = f" and leaves it in the cloud with the mark kumo-orphan={obj.uid}"
        _report(ctx, obj, owned, resource, whose, left if owned.release is not None else "")
    return going


async def carrying_marker(obj: Obj, owned: Owned[R]) -> list[R]:
    """The recorded resource (if it carries the marker) and every other one that does."""
    found: dict[str, R] = {}
    known = obj.status.get(owned.id_field)
    if known:
        resource = await owned.get_by_id(known)
        if resource is not None and owned.owner_of(resource) == obj.uid:
            found[known] = resource
    for resource in await owned.list_owned():
        found.setdefault(owned.id_of(resource), resource)
    return [r for r in found.values() if owned.owner_of(r) == obj.uid]
