"""DNSRecord actuator: observe the Designate recordset, diff with the target, act.

Order of a pass: resolve the zone and the record's name → work out the values from the
target (a dangling reference is an error, a target without an address yet is a wait) →
find the recordset (status.id, else adopt by marker, else create and record its ID at
once) → replace it if its zone, name or type changed → update values, TTL and
description in place → wait while Designate has it PENDING → report.

The record follows its target: events of LoadBalancers, VirtualMachines and groups
enqueue the DNSRecords that point at them (see :meth:`DNSRecordActuator.dependents`).
When the target is deleted, the record keeps its last values (and reports
TargetNotFound) until the DNSRecord itself is deleted.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kumo.api import kinds
from kumo.api.dnsrecord import DNSRecordSpec
from kumo.engine import lifecycle, orphan, ownership
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import ordering, references
from kumo.kinds.dnsrecord import plan
from kumo.kinds.labels import GROUP_LABEL
from kumo.ports.model import Recordset, released_words

#: Seconds between passes while Designate pushes a change (about a second in the lab).
PENDING_SECONDS = 1.0
#: Safety net while waiting for a target's address (its events enqueue us anyway).
TARGET_SECONDS = 10.0


class DNSRecordActuator:
    info = kinds.DNS_RECORD

    async def reconcile(self, ctx: Context, obj: Obj, spec: DNSRecordSpec) -> Result:
        zone_id, zone_name = await ctx.cloud.zone(spec.zone)
        name = plan.fqdn(spec.name, zone_name)
        description = plan.description(spec.description, obj.uid)
        try:
            records = plan.desired_records(spec, obj.namespace, ctx.store, obj.uid)
        except plan.WaitingForTarget as waiting:
            kept = {k: obj.status.get(k) for k in ("zoneId", "fqdn", "records")}
            return Result.waiting(
                "Waiting", "WaitingForTarget", str(waiting), after=TARGET_SECONDS, **kept
            )

        owned = _recordsets(
            ctx,
            obj,
            zone_id,
            name=name,
            type_=spec.type,
            description=description,
            zone_name=zone_name,
        )

        async def create() -> Recordset:
            return await _create(ctx, spec, zone_id, name, records, description)

        async def refuse_foreign() -> None:
            await _refuse_foreign(ctx, obj, zone_id, name, spec.type)

        async def replace(rs: Recordset) -> lifecycle.Replacement | None:
            # Designate removes a deleted recordset at once: create right away (no wait).
            if not plan.needs_replacement(rs, zone_id, name, spec.type):
                return None
            return lifecycle.Replacement(f"{rs.name} {rs.type}: zone, name or type changed")

        async def update(rs: Recordset) -> lifecycle.Step[Recordset]:
            if not plan.needs_update(records, spec.ttl, description, rs):
                return lifecycle.Step(rs)
            rs = await ctx.cloud.update_recordset(
                rs.zone_id, rs.id, records=records, ttl=spec.ttl, description=description
            )
            ctx.events.emit(
                obj, "Normal", "Updated", f"recordset {name} {spec.type} → {', '.join(records)}"
            )
            return lifecycle.Step(rs, _pending("recordset is being updated"), stop=True)

        async def report(rs: Recordset) -> Result:
            if rs.status == plan.ERROR:
                raise TerminalError(
                    "RecordsetError",
                    f"Designate put recordset {rs.id} ({name}) in ERROR",
                    field="spec",
                )
            if rs.status != plan.ACTIVE:
                return lifecycle.merge([_pending(f"recordset is {rs.status}")], plan.status(rs))
            return Result(
                phase="Active",
                ready=True,
                reason="Ready",
                message=f"{name} {spec.type} {', '.join(rs.records)} is ACTIVE",
                status=plan.status(rs),
            )

        return await lifecycle.reconcile_owned(
            ctx,
            obj,
            lifecycle.Lifecycle(
                owned=owned,
                create=create,
                created=lambda _: _pending("recordset is being created"),
                report=report,
                failpoint="after-recordset-create",
                status=plan.status,
                before_create=refuse_foreign,
                replace=replace,
                updaters=[update],
            ),
        )

    async def finalize(self, ctx: Context, obj: Obj, spec: DNSRecordSpec | None) -> Result:
        """Delete every recordset carrying the marker where it may be (:func:`_zones`),
        plus the recorded one; done when none is left."""
        owned = _recordsets(ctx, obj, *await _zones(ctx, obj))
        plan.MEMBERS.forget(obj.uid)
        return await ownership.finalize_owned(ctx, obj, owned, PENDING_SECONDS)

    async def release(self, ctx: Context, obj: Obj, spec: DNSRecordSpec | None) -> Result:
        """Release every recordset carrying the marker, looked for where finalize looks:
        after a crash between the create and the ID's record, status names no zone and
        the recordset is in the spec's zone only."""
        owned = _recordsets(ctx, obj, *await _zones(ctx, obj))
        plan.MEMBERS.forget(obj.uid)
        return await orphan.release_owned(ctx, obj, owned, after=PENDING_SECONDS)

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """DNSRecords whose values change with this object: the LoadBalancer, VM or group
        they name, and — for a VM of a group — the records naming its group."""
        meta = body.get("metadata") or {}
        wanted: set[tuple[str, str]] = set()
        if kind in references.referencing(self.info.kind):
            wanted.add((kind, meta.get("name", "")))
        group = (meta.get("labels") or {}).get(GROUP_LABEL)
        if kind == "VirtualMachine" and group:
            wanted.add(("VirtualMachineGroup", group))
        if not wanted:
            return []
        namespace = meta.get("namespace", "default")
        found = []
        for record in store.list(self.info.kind, namespace):
            hit = wanted & set(plan.referenced(record.get("spec") or {}).items())
            if hit == {("VirtualMachineGroup", group)} and not plan.moves_records(record, body):
                continue  # a member whose change leaves the record's values as they are
            if kind == "VirtualMachineGroup" and not ordering.needs_target(record, body):
                continue  # the group's status moved: its members' own events tell
            if hit:
                found.append(Key(self.info.kind, namespace, record["metadata"]["name"]))
        return found


# -- observe / create ------------------------------------------------------------------------


async def _zones(ctx: Context, obj: Obj) -> list[str]:
    """Where the object's recordsets may be: the recorded zone and the spec's (they
    differ after a zone change; a crash before the record leaves only the spec's). The
    spec's zone is read from the body, so a spec that no longer validates still names
    it; a zone that does not exist (any more) holds nothing of ours."""
    zones = {z for z in [obj.status.get("zoneId")] if z}
    ref = obj.spec.get("zone")
    if isinstance(ref, str) and ref:
        with contextlib.suppress(TerminalError):
            zones.add(await ctx.cloud.zone_id(ref))
    return sorted(zones)


def _recordsets(
    ctx: Context,
    obj: Obj,
    *zone_ids: str,
    name: str = "",
    type_: str = "",
    description: str = "",
    zone_name: str = "",
) -> ownership.Owned[Recordset]:
    """The object's recordset as the ownership routine sees it: the marker is the last
    word of its description (Designate has no tags), looked for in ``zone_ids``. Of
    duplicates, the one at the spec's zone, name and type is kept. ``spec.import`` finds
    a recordset by ID or by name (with the spec's type) in the spec's zone, checks its
    zone, name and type, and marks it by setting the description."""
    cloud = ctx.cloud
    known_zone = obj.status.get("zoneId") or (zone_ids[0] if zone_ids else "")

    async def get_by_id(recordset_id: str) -> Recordset | None:
        if not known_zone:
            return None
        try:
            found: Recordset | None = await cloud.get_recordset(known_zone, recordset_id)
        except TerminalError as error:  # the recorded zone is gone, and what was in it
            if error.reason != "NotFound":
                raise
            return None
        return found

    async def list_owned() -> list[Recordset]:
        return [rs for zone_id in zone_ids for rs in await _find_or_none(cloud, zone_id, obj.uid)]

    async def delete(rs: Recordset) -> None:
        await cloud.delete_recordset(rs.zone_id, rs.id)

    zone = zone_ids[0] if zone_ids else ""

    async def find_by_name(ref: str) -> list[Recordset]:
        wanted = plan.fqdn(ref, zone_name).lower()  # relative to the zone, like spec.name
        listed: list[Recordset] = await cloud.list_zone_recordsets(zone)
        return [rs for rs in listed if rs.name.lower() == wanted and rs.type == type_]

    async def verify(rs: Recordset) -> list[Change]:
        return plan.import_mismatches(rs, zone, name, type_)

    async def mark(rs: Recordset) -> Recordset:
        marked: Recordset = await cloud.update_recordset(
            rs.zone_id, rs.id, records=rs.records, ttl=rs.ttl or 300, description=description
        )
        return marked

    async def release(rs: Recordset) -> None:
        text = released_words(rs.description or "", obj.uid, plan.DESCRIPTION_MAX)
        await cloud.update_recordset(
            rs.zone_id, rs.id, records=rs.records, ttl=rs.ttl or 300, description=text
        )

    async def fetch(rs: Recordset) -> Recordset | None:
        listed: list[Recordset] = await cloud.fetch_zone_recordsets(rs.zone_id)  # the API's
        return next((r for r in listed if r.id == rs.id), None)

    return ownership.Owned(
        noun="recordset",
        id_of=lambda rs: rs.id,
        owner_of=plan.owner_of_recordset,
        legacy=plan.legacy,
        get_by_id=get_by_id,
        list_owned=list_owned,
        delete=delete,
        recorded=lambda rs: {"zoneId": rs.zone_id},
        unfit=lambda rs: plan.needs_replacement(rs, zone, name, type_),
        find_by_name=find_by_name,
        verify=verify,
        mark=mark,
        release=release,
        fetch=fetch,
    )


async def _refuse_foreign(ctx: Context, obj: Obj, zone_id: str, name: str, type_: str) -> None:
    """Before creating: a recordset that is not Kumo's occupying the name stays, and the
    object says so (one list of the zone, only when Kumo is about to create)."""
    listed = await ctx.cloud.list_zone_recordsets(zone_id)
    foreign = plan.conflicting(listed, name, type_, obj.uid)
    if foreign is not None:
        raise TerminalError(
            "RecordExists",
            f"recordset {foreign.name} {foreign.type} ({foreign.id}) already exists and "
            "does not carry Kumo's marker; Kumo leaves it alone",
            field="spec.name",
        )


async def _create(
    ctx: Context,
    spec: DNSRecordSpec,
    zone_id: str,
    name: str,
    records: list[str],
    description: str,
) -> Recordset:
    rs: Recordset = await ctx.cloud.create_recordset(
        zone_id,
        name=name,
        type=spec.type,
        records=records,
        ttl=spec.ttl,
        description=description,
    )
    return rs


async def _find_or_none(cloud: Any, zone_id: str, uid: str) -> list[Recordset]:
    """Recordsets with the marker; a zone that is gone (404) holds none."""
    try:
        found: list[Recordset] = await cloud.list_owned_recordsets(zone_id, uid)
    except TerminalError as error:
        if error.reason != "NotFound":
            raise
        return []
    return found


def _pending(message: str) -> lifecycle.Wait:
    return lifecycle.Wait(message, after=PENDING_SECONDS)
