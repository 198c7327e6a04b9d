"""An Ordinal VirtualMachineGroup's per-member Volume objects: member i's volume of
template t is the Volume object ``<group>-<t>-<i>``, created before the member (which
names it in its ``spec.volumes``), owned by the group, in the member's zone. Retained
ones (``volumeRetention``) are taken back by a group of the same name, and let go of
when the group goes.
"""

from __future__ import annotations

import time

from kumo.api import kinds
from kumo.api.common import API_VERSION
from kumo.api.virtualmachinegroup import VirtualMachineGroupSpec
from kumo.engine.objects import Body, Context, Obj, Store
from kumo.kinds.labels import GROUP_LABEL, ORDINAL_LABEL, VOLUME_TEMPLATE_LABEL
from kumo.kinds.virtualmachinegroup import decision, members, plan

EXPECTATION_TTL = members.EXPECTATION_TTL


class Expectations:
    """Per group UID: {Volume object name: (its view, since)}: created, not seen yet."""

    def __init__(self) -> None:
        self.by_uid: dict[str, dict[str, tuple[plan.VolumeView, float]]] = {}

    def expect(self, ctx: Context, obj: Obj, view: plan.VolumeView) -> None:
        if ctx.dry_run:
            return
        self.by_uid.setdefault(obj.uid, {})[view.name] = (view, time.monotonic())

    def pending(self, obj: Obj, bodies: list[Body]) -> list[plan.VolumeView]:
        """Volume objects created but not yet seen (so none is created twice)."""
        seen = {b["metadata"]["name"] for b in bodies}
        expected = self.by_uid.get(obj.uid, {})
        found = []
        for name, (view, since) in list(expected.items()):
            if name in seen or time.monotonic() - since > EXPECTATION_TTL:
                del expected[name]
            else:
                found.append(view)
        return found

    def unseen(self, obj: Obj, seen: set[str]) -> list[str]:
        return [name for name in self.by_uid.get(obj.uid, {}) if name not in seen]

    def seen(self, uid: str, name: str) -> None:
        self.by_uid.get(uid, {}).pop(name, None)

    def forget(self, uid: str) -> None:
        self.by_uid.pop(uid, None)


def strays(store: Store, obj: Obj) -> list[Body]:
    """Volume objects labelled with the group's name that no controller owns (retained
    when a group of this name was deleted): this group takes them back, so its members
    of those ordinals get the same volumes."""
    found = []
    for body in store.list(kinds.VOLUME.kind, obj.namespace):
        meta = body["metadata"]
        labels = meta.get("labels") or {}
        owners = meta.get("ownerReferences") or []
        if (
            labels.get(GROUP_LABEL) != obj.name
            or ORDINAL_LABEL not in labels
            or meta.get("deletionTimestamp")
            or any(r.get("controller") for r in owners)
        ):
            continue
        found.append(body)
    return found


def existing(store: Store, obj: Obj, spec: VirtualMachineGroupSpec) -> frozenset[str]:
    """Names a member's volume may get (ordinals below replicas) held by a Volume object."""
    return frozenset(
        name
        for i in range(spec.replicas)
        for t in spec.volume_templates
        if store.get(
            kinds.VOLUME.kind, obj.namespace, name := plan.volume_name(obj.name, t.name, i)
        )
        is not None
    )


async def adopt(ctx: Context, obj: Obj, names: list[str], bodies: list[Body]) -> None:
    """Take back the Volume objects ``names`` (:func:`strays`): the group's owner reference
    added."""
    by_name = {b["metadata"]["name"]: b for b in bodies}
    for name in names:
        owners = by_name[name]["metadata"].get("ownerReferences") or []
        await ctx.kube.patch(
            kinds.VOLUME,
            obj.namespace,
            name,
            {"metadata": {"ownerReferences": [*owners, members.owner(obj)]}},
        )
    if names:
        ctx.events.emit(
            obj, "Normal", "VolumesAdopted", f"took back retained Volume(s) {', '.join(names)}"
        )


async def delete(ctx: Context, obj: Obj, names: list[str]) -> None:
    """The Volume kind waits for the member naming it to go, then deletes it."""
    for name in names:
        await ctx.kube.delete(kinds.VOLUME, obj.namespace, name)


async def create(
    ctx: Context,
    obj: Obj,
    spec: VirtualMachineGroupSpec,
    volumes: list[tuple[str, int, str, str | None]],
    expect: Expectations,
) -> None:
    for name, ordinal, template, zone in volumes:
        body = volume_body(obj, spec, name, ordinal, template, zone)
        await ctx.kube.create(kinds.VOLUME, obj.namespace, body)
        expect.expect(ctx, obj, plan.VolumeView(name, ordinal, zone))


def volume_body(
    obj: Obj,
    spec: VirtualMachineGroupSpec,
    name: str,
    ordinal: int,
    template: str,
    zone: str | None,
) -> Body:
    """Member ``ordinal``'s Volume object of ``template``: in the member's zone, with the
    group's deletionPolicy, owned by the group."""
    tmpl = next(t for t in spec.volume_templates if t.name == template)
    volume_spec: Body = {
        "size": tmpl.size,
        "deletionPolicy": spec.deletion_policy,
        "description": f"volume {template} of {plan.member_name(obj.name, ordinal)}",
    }
    if tmpl.volume_type:
        volume_spec["volumeType"] = tmpl.volume_type
    if zone:
        volume_spec["availabilityZone"] = zone
    return {
        "apiVersion": API_VERSION,
        "kind": kinds.VOLUME.kind,
        "metadata": {
            "name": name,
            "namespace": obj.namespace,
            "labels": {
                GROUP_LABEL: obj.name,
                ORDINAL_LABEL: str(ordinal),
                VOLUME_TEMPLATE_LABEL: template,
            },
            "ownerReferences": [members.owner(obj)],
        },
        "spec": volume_spec,
    }


async def let_go(ctx: Context, obj: Obj, body: Body) -> None:
    """Remove the group's owner reference from a Volume object it keeps (retained at the
    group's deletion): Kubernetes' garbage collector would delete it after the group."""
    refs = body["metadata"].get("ownerReferences") or []
    rest = [r for r in refs if r.get("uid") != obj.uid]
    if len(rest) != len(refs):
        await ctx.kube.patch(
            kinds.VOLUME,
            obj.namespace,
            body["metadata"]["name"],
            {"metadata": {"ownerReferences": rest or None}},
        )


def views(bodies: list[Body]) -> list[plan.VolumeView]:
    return [decision.volume_view(b) for b in bodies]
