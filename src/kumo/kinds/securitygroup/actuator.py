"""SecurityGroup actuator: observe the Neutron group and its rules, diff, act, report.

Order of a pass (the engine's lifecycle): work out the wanted rules from the spec and
the objects it names (a dangling reference is an error, never a reason to remove a
rule) → find the group (status.id, else adopt by its marker, else import, else create
and record its ID at once) → complete its marker tags → put the description right → remove every rule the spec
does not want (an event names each: one added by hand, Neutron's default egress rules)
and add the missing ones → report. Neutron applies rules at once: no waiting.

Rules follow their targets: events of VirtualMachines, groups, LoadBalancers and other
SecurityGroups enqueue the SecurityGroups that name them (:meth:`dependents`). Drift
— a rule deleted or added by hand — reaches the object through the cloud watch (the
group's ``revision_number`` moved), within one interval.

Deletion waits while a Kumo VirtualMachine names the group in ``spec.securityGroups``
(``WaitingForVirtualMachines``) and while Neutron refuses because ports still use it
(``SecurityGroupInUse``); ``deletionPolicy: Orphan`` swaps the marker (tags and
description word) for the orphan mark.

Marked at create: Neutron takes no tags in a create, so the POST carries the marker word
in the description (kinds/described.py) and the tags follow. A group whose create answer
was lost, or whose tags never came (Kumo killed between the calls), is adopted by its
description on the next pass and its tags completed — never made a second time.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kumo.api import kinds
from kumo.api.securitygroup import SecurityGroupSpec
from kumo.engine import lifecycle, orphan, ownership
from kumo.engine.errors import TransientError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.result import Result
from kumo.kinds import described, marking
from kumo.kinds.labels import GROUP_LABEL
from kumo.kinds.references import referenced_names
from kumo.kinds.securitygroup import plan
from kumo.ports.model import SecurityGroup, SecurityGroupRule, marker_tags, rule_label

#: Safety net while waiting for a target (its events enqueue the group anyway).
TARGET_SECONDS = 10.0
#: Between finalize passes while VMs or ports still use the group.
DELETE_SECONDS = 3.0
#: The referencing fields of a rule and the kind each names.
REF_FIELDS = {
    "securityGroupRef": "SecurityGroup",
    "virtualMachineGroupRef": "VirtualMachineGroup",
    "loadBalancerRef": "LoadBalancer",
}


class SecurityGroupActuator:
    info = kinds.SECURITY_GROUP

    async def reconcile(self, ctx: Context, obj: Obj, spec: SecurityGroupSpec) -> Result:
        def resolve(group_id: str | None) -> plan.Wanted:
            return plan.wanted_rules(spec, obj.namespace, obj.name, group_id, ctx.store)

        wanted = resolve(obj.status.get("id"))  # a dangling reference fails before any change

        def observed(group: SecurityGroup) -> dict[str, Any]:
            rules = list(group.rules)
            return {
                "name": group.name,
                "rules": plan.rules_summary(rules, wanted),
                "appliedRules": plan.applied_rules(rules, wanted),
            }

        description = described.text(spec.description, obj.uid)

        async def create() -> SecurityGroup:
            group: SecurityGroup = await ctx.cloud.create_security_group(
                name=plan.group_name(obj.namespace, obj.name),
                description=description,
                tags=marker_tags(obj.uid),
            )
            return group

        async def retag(group: SecurityGroup) -> lifecycle.Step[SecurityGroup]:
            set_tags = ctx.cloud.set_security_group_tags
            return lifecycle.Step(await described.complete_tags(group, obj.uid, set_tags))

        async def describe(group: SecurityGroup) -> lifecycle.Step[SecurityGroup]:
            if description != (group.description or ""):
                await ctx.cloud.update_security_group(group.id, description=description)
                group = dataclasses.replace(group, description=description)
            return lifecycle.Step(group)

        async def keep_rules(group: SecurityGroup) -> lifecycle.Step[SecurityGroup]:
            nonlocal wanted
            wanted = resolve(group.id)
            changes = plan.plan_rules(wanted, list(group.rules))
            if changes.add or changes.remove:
                group = await _apply(ctx, obj, group, changes)
            return lifecycle.Step(group)

        async def report(group: SecurityGroup) -> Result:
            status = observed(group)
            if wanted.waiting:
                wait = lifecycle.Wait(
                    "; ".join(wanted.waiting),
                    reason="WaitingForTarget",
                    phase="Waiting",
                    after=TARGET_SECONDS,
                )
                return lifecycle.merge([wait], status)
            return Result(
                phase="Active",
                ready=True,
                reason="Ready",
                message=f"security group {group.id} holds {len(group.rules)} rule(s)",
                status=status,
            )

        return await lifecycle.reconcile_owned(
            ctx,
            obj,
            lifecycle.Lifecycle(
                owned=_groups(ctx, obj),
                create=create,
                created=lambda _: lifecycle.Wait("security group created", after=0.2),
                report=report,
                status=observed,
                updaters=[retag, describe, keep_rules],
            ),
        )

    async def finalize(self, ctx: Context, obj: Obj, spec: SecurityGroupSpec | None) -> Result:
        """Delete the group (Neutron removes its rules with it) once no Kumo VM names it;
        while Neutron refuses because ports use it, wait and say which."""
        names = {n for n in (obj.name, obj.status.get("name"), obj.status.get("id")) if n}
        users = plan.users(ctx.store.list("VirtualMachine", obj.namespace), names)
        if users:
            return Result.waiting(
                "Deleting",
                "WaitingForVirtualMachines",
                f"VirtualMachine(s) {', '.join(users)} use the security group "
                "(spec.securityGroups)",
                after=DELETE_SECONDS,
            )
        try:
            return await ownership.finalize_owned(ctx, obj, _groups(ctx, obj), DELETE_SECONDS)
        except TransientError as error:
            if error.reason != "CloudBusy" or not obj.status.get("id"):
                raise
            ports = await ctx.cloud.security_groups_in_use(obj.status["id"])
            return Result.waiting(
                "Deleting",
                "SecurityGroupInUse",
                f"Neutron refuses to delete security group {obj.status['id']}: "
                f"port(s) {', '.join(ports) or '(unknown)'} use it",
                after=DELETE_SECONDS,
            )

    async def release(self, ctx: Context, obj: Obj, spec: SecurityGroupSpec | None) -> Result:
        """The group stays with its rules, its tags swapped for the orphan mark."""
        return await orphan.release_owned(ctx, obj, _groups(ctx, obj))

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        """SecurityGroups whose rules change with this object (a VM of a named group, the
        group, a LoadBalancer, another SecurityGroup), and those being deleted that wait
        for a VM."""
        meta = body.get("metadata") or {}
        namespace = meta.get("namespace", "default")
        name = meta.get("name", "")
        groups = store.list(self.info.kind, namespace)
        if kind == "VirtualMachine":
            group = (meta.get("labels") or {}).get(GROUP_LABEL)
            hit = [
                g
                for g in groups
                if (group and group in _refs(g, "virtualMachineGroupRef"))
                or (g.get("metadata") or {}).get("deletionTimestamp")
            ]
        elif kind in REF_FIELDS.values():
            fields = [f for f, target in REF_FIELDS.items() if target == kind]
            hit = [
                g
                for g in groups
                if any(name in _refs(g, f) for f in fields)
                and (kind, g["metadata"]["name"]) != (self.info.kind, name)
            ]
        else:
            return []
        return [Key(self.info.kind, namespace, g["metadata"]["name"]) for g in hit]


def _refs(group: Body, field: str) -> list[str]:
    return referenced_names(group.get("spec") or {}, f"rules[].{field}")


# -- observe / act ---------------------------------------------------------------------------


def _groups(ctx: Context, obj: Obj) -> ownership.Owned[SecurityGroup]:
    """The object's Neutron group as the ownership routine sees it (tags ``kumo``,
    ``kumo-owner=<uid>``, or before they came the description's marker word);
    ``spec.import`` finds one by ID or name and marks it (tags, then description)."""
    cloud = ctx.cloud

    async def delete(group: SecurityGroup) -> None:
        await cloud.delete_security_group(group.id)

    async def set_description(group_id: str, text: str) -> None:
        await cloud.update_security_group(group_id, description=text)

    return ownership.Owned(
        noun="security group",
        id_of=lambda g: g.id,
        **marking.by_description(
            SecurityGroup, obj.uid, cloud.set_security_group_tags, set_description
        ),
        get_by_id=cloud.get_security_group,
        list_owned=lambda: cloud.list_owned_security_groups(obj.uid),
        delete=delete,
        find_by_name=cloud.find_security_groups_by_name,
        fetch=lambda g: cloud.fetch_security_group(g.id),
    )


async def _apply(
    ctx: Context, obj: Obj, group: SecurityGroup, changes: plan.RulePlan
) -> SecurityGroup:
    """Remove, then add (a rule that changed is a removal and an addition); the group
    with its rules as they now stand."""
    rules: list[SecurityGroupRule] = list(group.rules)
    for rule in changes.remove:
        await ctx.cloud.delete_security_group_rule(group.id, rule.id)
        rules = [r for r in rules if r.id != rule.id]
        ctx.events.emit(
            obj,
            "Normal",
            "RuleRemoved",
            f"removed rule {rule_label(rule)} ({rule.id}; {plan.origin(rule)}, not in spec.rules)",
        )
    for wish in changes.add:
        created: SecurityGroupRule = await ctx.cloud.create_security_group_rule(
            group.id,
            direction=wish.direction,
            ethertype=wish.ethertype,
            protocol=wish.protocol,
            port_range_min=wish.port_range_min,
            port_range_max=wish.port_range_max,
            remote_ip_prefix=wish.remote_ip_prefix,
            remote_group_id=wish.remote_group_id,
            description=plan.RULE_DESCRIPTION,
        )
        rules.append(created)
        ctx.events.emit(
            obj,
            "Normal",
            "RuleAdded",
            f"added rule {wish.label}" + (f" (VirtualMachine {wish.vm})" if wish.vm else ""),
        )
    return dataclasses.replace(group, rules=tuple(rules))
