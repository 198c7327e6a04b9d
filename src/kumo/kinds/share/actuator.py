"""Share actuator: observe the Manila share and its access rules, diff, act, report.

Order of a pass: work out the wanted addresses from the referenced VMs and groups (a
dangling reference is an error, never a reason to revoke) → find the share (status.id,
else adopt by marker, else create and record its ID at once) → wait while Manila works
on it (creating, extending) → extend if the spec grew → revoke Kumo's rules that are no
longer wanted, grant the missing ones → wait until every rule is active → report, with
the export locations. A smaller size is never applied: it is reported (`ShrinkRefused`)
once the rules are in place.

Rules follow membership: events of VirtualMachines, groups and LoadBalancers enqueue the
Shares they concern (:meth:`ShareActuator.dependents`). Status lists which VM each of
Kumo's rules is for; a VM's deletion waits until no Share lists it (kinds/ordering.py).
"""

from __future__ import annotations

from typing import Any

from kumo.api import kinds
from kumo.api.share import ShareSpec
from kumo.engine import lifecycle, orphan, ownership
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import duplicates, marking
from kumo.kinds.labels import GROUP_LABEL
from kumo.kinds.references import referenced_names
from kumo.kinds.share import plan
from kumo.ports.model import (
    AccessRule,
    Share,
    marker_metadata,
)

#: Seconds between passes while Manila works (a share or a rule takes about a second).
STEP_SECONDS = 1.0
#: Seconds between finalize passes while Manila deletes.
DELETE_SECONDS = 2.0


class ShareActuator:
    info = kinds.SHARE

    async def reconcile(self, ctx: Context, obj: Obj, spec: ShareSpec) -> Result:
        wanted = plan.wanted_rules(spec, obj.namespace, ctx.store)
        type_id = await ctx.cloud.share_type_id(spec.share_type) if spec.share_type else None
        uid = obj.uid
        rules: list[AccessRule] = []  # listed once the share is found, kept up to date

        def observed(share: Share) -> dict[str, Any]:
            return _observed(share, rules, wanted, uid)

        async def create() -> Share:
            return await _create(ctx, obj, spec, type_id)

        async def busy(share: Share) -> lifecycle.Wait | None:
            nonlocal rules
            if share.status == plan.ERROR or share.status.endswith("_error"):
                raise TerminalError(
                    "ShareError", f"Manila put share {share.id} in {share.status}", field="spec"
                )
            rules = await ctx.cloud.list_access_rules(share.id)
            return None if share.status == plan.AVAILABLE else _step(f"share is {share.status}")

        async def extend(share: Share) -> lifecycle.Step[Share]:
            if spec.size <= share.size:
                return lifecycle.Step(share)
            await ctx.cloud.extend_share(share.id, spec.size)
            ctx.events.emit(
                obj, "Normal", "Extending", f"extending share {share.id} to {spec.size} GiB"
            )
            return lifecycle.Step(share, _step(f"extending to {spec.size} GiB"), stop=True)

        async def describe(share: Share) -> lifecycle.Step[Share]:
            if (spec.description or None) != (share.description or None):
                await ctx.cloud.update_share(share.id, description=spec.description)
            return lifecycle.Step(share)

        async def grant(share: Share) -> lifecycle.Step[Share]:
            nonlocal rules
            changes = plan.plan_rules(wanted, rules, uid)
            if not (changes.add or changes.remove):
                return lifecycle.Step(share)
            rules = await _apply(ctx, obj, share, changes)
            return lifecycle.Step(share, _step(_describe(changes)), stop=True)

        async def report(share: Share) -> Result:
            status = await _report(ctx, obj, spec, share, rules, wanted, type_id)
            pending = [r for r in rules if plan.is_mine(r, uid) and r.state != plan.ACTIVE]
            failed = [r for r in pending if r.state == plan.ERROR]
            if failed:  # the status keeps listing the rules for VMs
                raise TerminalError(
                    "AccessRuleError",
                    "Manila could not apply access rule(s) "
                    + ", ".join(f"{r.access_to} ({r.id})" for r in failed),
                    field="spec.access",
                    status=status,
                )
            if "spec.size" in status["unappliedChanges"]:
                raise TerminalError(
                    "ShrinkRefused",
                    f"{spec.size} GiB is smaller than the share's {share.size} GiB: Kumo does "
                    "not shrink shares (data could be lost); set size back to at least "
                    f"{share.size}",
                    field="spec.size",
                    status=status,
                )
            if pending:
                return lifecycle.merge(
                    [
                        _step(
                            f"access rule(s) {', '.join(r.access_to for r in pending)} "
                            "being applied"
                        )
                    ],
                    status,
                )
            return Result(
                phase="Available",
                ready=True,
                reason="Ready",
                message=f"share {share.id} ({share.size} GiB) is available at "
                f"{status.get('exportLocation') or 'no export location'}",
                status=status,
            )

        return await lifecycle.reconcile_owned(
            ctx,
            obj,
            lifecycle.Lifecycle(
                owned=_shares(ctx, obj),
                create=create,
                created=lambda _: _step("share is being created"),
                report=report,
                failpoint="after-share-create",
                status=observed,
                busy=busy,
                updaters=[extend, describe, grant],
            ),
        )

    async def finalize(self, ctx: Context, obj: Obj, spec: ShareSpec | None) -> Result:
        """Delete the share (Manila removes its access rules with it); done when neither
        the recorded ID nor the marker finds one."""
        return await ownership.finalize_owned(ctx, obj, _shares(ctx, obj), DELETE_SECONDS)

    async def release(self, ctx: Context, obj: Obj, spec: ShareSpec | None) -> Result:
        """The share stays with its access rules (their metadata names the object; they
        are the share's children, never swept on their own)."""
        return await orphan.release_owned(ctx, obj, _shares(ctx, obj))

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """Shares whose rules change with this object: a VM (named, of a named group, or
        listed in status), a group, or a LoadBalancer that let go of a VM being deleted."""
        meta = body.get("metadata") or {}
        namespace = meta.get("namespace", "default")
        name = meta.get("name", "")
        shares = store.list(self.info.kind, namespace)
        if kind == "VirtualMachine":
            group = (meta.get("labels") or {}).get(GROUP_LABEL)
            hit = [
                s
                for s in shares
                if name in _refs(s, "virtualMachineRef")
                or (group and group in _refs(s, "virtualMachineGroupRef"))
                or name in _rule_vms(s)
            ]
        elif kind == "VirtualMachineGroup":
            hit = [s for s in shares if name in _refs(s, "virtualMachineGroupRef")]
        elif kind == "LoadBalancer":
            deleting = {
                vm["metadata"]["name"]
                for vm in store.list("VirtualMachine", namespace)
                if vm["metadata"].get("deletionTimestamp")
            }
            hit = [s for s in shares if _rule_vms(s) & deleting]
        else:
            return []
        return [Key(self.info.kind, namespace, s["metadata"]["name"]) for s in hit]


def _refs(share: Body, field: str) -> list[str]:
    return referenced_names(share.get("spec") or {}, f"access[].{field}")


def _rule_vms(share: Body) -> set[str]:
    return {
        r["virtualMachine"]
        for r in (share.get("status") or {}).get("accessRules") or []
        if r.get("virtualMachine")
    }


# -- observe / create ----------------------------------------------------------------------


def _shares(ctx: Context, obj: Obj) -> ownership.Owned[Share]:
    """The object's Manila share as the ownership routine sees it (metadata
    ``kumo-owner: <uid>``). One Manila is still working on is left for the next pass. A
    share holds data: a second one carrying the marker is reported, and deleted only
    when Kumo made it itself and nobody was given access (kinds/duplicates.py)."""
    cloud = ctx.cloud
    name = plan.share_name(obj.namespace, obj.name)

    async def delete(share: Share) -> None:
        if share.status not in plan.BUSY:
            await cloud.delete_share(share.id)

    return ownership.Owned(
        noun="share",
        id_of=lambda s: s.id,
        # its ``mark`` is a legacy marker's (a share is never imported)
        **marking.by_metadata(Share, obj.uid, cloud.set_share_metadata),
        get_by_id=cloud.get_share,
        list_owned=lambda: cloud.list_owned_shares(obj.uid),
        delete=delete,
        holds_data=True,
        disposable=duplicates.share_disposable(obj.uid, name, cloud),
        fetch=lambda s: cloud.fetch_share(s.id),
    )


async def _create(ctx: Context, obj: Obj, spec: ShareSpec, type_id: str | None) -> Share:
    """A new share carrying the marker; a create in doubt is remembered
    (kinds/duplicates.py)."""
    name = plan.share_name(obj.namespace, obj.name)

    async def create() -> Share:
        share: Share = await ctx.cloud.create_share(
            name=name,
            size=spec.size,
            protocol=spec.protocol,
            share_type_id=type_id,
            description=spec.description,
            availability_zone=spec.availability_zone,
            metadata=marker_metadata(obj.uid),
        )
        return share

    return await duplicates.created(obj.uid, name, create)


# -- act / report ----------------------------------------------------------------------------


async def _apply(ctx: Context, obj: Obj, share: Share, changes: plan.RulePlan) -> list[AccessRule]:
    """Revoke, then grant (Manila queues both); the rules as they now stand — revoked
    ones are still listed until Manila has removed them, so VMs keep waiting."""
    for rule in changes.remove:
        await ctx.cloud.delete_access_rule(share.id, rule.id)
        ctx.events.emit(
            obj,
            "Normal",
            "AccessRevoked",
            f"revoked {rule.access_level} access of {rule.access_to}",
        )
    for wish in changes.add:
        await ctx.cloud.create_access_rule(
            share.id,
            access_to=wish.access_to,
            access_level=wish.access_level,
            metadata=plan.rule_metadata(obj.uid, wish),
        )
        ctx.events.emit(
            obj,
            "Normal",
            "AccessGranted",
            f"granted {wish.access_level} access to {wish.access_to}"
            + (f" (VirtualMachine {wish.vm})" if wish.vm else ""),
        )
    rules: list[AccessRule] = await ctx.cloud.list_access_rules(share.id)
    return rules


def _describe(changes: plan.RulePlan) -> str:
    parts = []
    if changes.remove:
        parts.append("revoking " + ", ".join(r.access_to for r in changes.remove))
    if changes.add:
        parts.append("granting " + ", ".join(w.access_to for w in changes.add))
    return "; ".join(parts)


def _observed(
    share: Share, rules: list[AccessRule], wanted: list[plan.WantedRule], uid: str
) -> dict[str, Any]:
    return {
        "shareStatus": share.status,
        "size": share.size,
        "protocol": share.protocol,
        "shareTypeId": share.share_type_id,
        "accessRules": plan.rules_status(rules, uid),
        "rules": plan.rules_summary(rules, wanted),
        "foreignRules": plan.foreign_rules(rules, uid),
    }


def _step(message: str) -> lifecycle.Wait:
    return lifecycle.Wait(message, reason="Provisioning", phase="Provisioning", after=STEP_SECONDS)


async def _report(
    ctx: Context,
    obj: Obj,
    spec: ShareSpec,
    share: Share,
    rules: list[AccessRule],
    wanted: list[plan.WantedRule],
    type_id: str | None,
) -> dict[str, Any]:
    """Status of an available share: the observation, export locations, what cannot be
    applied (one warning when that list changes)."""
    locations = await ctx.cloud.list_export_locations(share.id)
    paths = [x.path for x in sorted(locations, key=lambda x: (not x.preferred, x.path))]
    unapplied = plan.unapplied_changes(spec, share, type_id)
    if unapplied and unapplied != (obj.status.get("unappliedChanges") or []):
        ctx.events.emit(
            obj,
            "Warning",
            "ImmutableFieldChanged",
            f"{', '.join(unapplied)} cannot be applied to the existing share "
            "(a share is never shrunk; protocol, share type and zone are fixed at creation)",
        )
    return {
        **_observed(share, rules, wanted, obj.uid),
        "exportLocation": paths[0] if paths else None,
        "exportLocations": paths,
        "unappliedChanges": unapplied,
    }
