"""Kumo objects one object makes of other kinds (a KumoCluster's Network, SecurityGroups,
LoadBalancer, …; a KumoMachine's VirtualMachine): what they should be, made, brought
back to that, deleted.

A child is named by its maker (the name is the part: ``<cluster>-api``), carries an
ownerReference to it (controller, ``blockOwnerDeletion``: the garbage collector deletes
it after its owner, and ``kubectl get`` shows who made it) and its labels. An object of
that name the maker does not own is never changed or deleted: it is reported
(``NameTaken``) and left alone. The maker decides purely (:func:`plan`), then writes
(:func:`apply`); the children's own controllers do the cloud work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kumo.api.kinds import KindInfo
from kumo.engine.errors import TransientError
from kumo.engine.objects import Body, Context, Obj


@dataclass(frozen=True)
class Child:
    """What one child should be: its kind, name, labels and spec (wire names)."""

    info: KindInfo
    name: str
    spec: Body
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """The writes that make the children what they should be."""

    create: list[Child] = field(default_factory=list)
    #: (child, merge patch of its spec and labels)
    patch: list[tuple[Child, Body]] = field(default_factory=list)
    #: Names held by objects the maker does not own: ``Kind name``.
    taken: list[str] = field(default_factory=list)


def owned_by(body: Body, uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in body["metadata"].get("ownerReferences") or [])


def owner_reference(owner: Obj) -> Body:
    return {
        "apiVersion": owner.info.api_version,
        "kind": owner.info.kind,
        "name": owner.name,
        "uid": owner.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def body(owner: Obj, child: Child) -> Body:
    """The object to create."""
    return {
        "apiVersion": child.info.api_version,
        "kind": child.info.kind,
        "metadata": {
            "name": child.name,
            "namespace": owner.namespace,
            "labels": dict(child.labels),
            "ownerReferences": [owner_reference(owner)],
        },
        "spec": pruned(child.spec),
    }


def covers(have: Any, want: Any) -> bool:
    """Does ``have`` (as the API server holds it, defaults filled in) already say what
    ``want`` says? Keys ``want`` leaves out are the API server's (defaults) or the
    user's; a None in ``want`` means the key must be absent."""
    if want is None:
        return have is None
    if isinstance(want, dict):
        return isinstance(have, dict) and all(covers(have.get(k), v) for k, v in want.items())
    if isinstance(want, list):
        return (
            isinstance(have, list)
            and len(have) == len(want)
            and all(covers(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)


def spec_patch(want: Body, have: Body) -> Body:
    """A JSON merge patch (RFC 7386) of the top-level fields of ``want`` that ``have``
    does not cover (None values remove a field); {} when it covers them all."""
    return {k: v for k, v in want.items() if not covers(have.get(k), v)}


def pruned(value: Any) -> Any:
    """``value`` without its None entries (what a create sends)."""
    if isinstance(value, dict):
        return {k: pruned(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [pruned(v) for v in value]
    return value


def plan(uid: str, wanted: list[Child], found: dict[tuple[str, str], Body | None]) -> Plan:
    """Pure: the writes for ``wanted`` children given what the store holds of each
    (``found[(kind, name)]``, None: absent), for the maker of UID ``uid``. A child being
    deleted is left to go (the next pass makes it again)."""
    out = Plan()
    for child in wanted:
        have = found.get((child.info.kind, child.name))
        if have is None:
            out.create.append(child)
            continue
        if not owned_by(have, uid):
            out.taken.append(f"{child.info.kind} {child.name}")
            continue
        if have["metadata"].get("deletionTimestamp"):
            continue
        patch: Body = {}
        if spec := spec_patch(child.spec, have.get("spec") or {}):
            patch["spec"] = spec
        labels = have["metadata"].get("labels") or {}
        if missing := {k: v for k, v in child.labels.items() if labels.get(k) != v}:
            patch["metadata"] = {"labels": missing}
        if patch:
            out.patch.append((child, patch))
    return out


async def apply(ctx: Context, owner: Obj, decided: Plan) -> list[str]:
    """Carry out ``decided``: creates, then patches. Returns the names created (a create
    the API server answers 409 for was made by an earlier pass the watch has not shown
    yet: it counts as made)."""
    made = []
    for child in decided.create:
        try:
            await ctx.kube.create(child.info, owner.namespace, body(owner, child))
        except TransientError as error:
            if error.reason != "KubernetesConflict":
                raise
        made.append(f"{child.info.kind} {child.name}")
    for child, patch in decided.patch:
        await ctx.kube.patch(child.info, owner.namespace, child.name, patch)
    return made


async def delete(ctx: Context, owner: Obj, info: KindInfo, names: list[str]) -> list[str]:
    """Delete the children of ``info`` named, those ``owner`` owns and not yet being
    deleted; returns those still there (being deleted or just asked)."""
    left = []
    for name in names:
        found = ctx.store.get(info.kind, owner.namespace, name)
        if found is None or not owned_by(found, owner.uid):
            continue
        left.append(name)
        if not found["metadata"].get("deletionTimestamp"):
            await ctx.kube.delete(info, owner.namespace, name)
    return left


def summary(info: KindInfo, name: str, found: Body | None) -> str:
    """``Network web: not Ready (WaitingForRouter: ...)``: why a child is not Ready."""
    if found is None:
        return f"{info.kind} {name}: not made yet"
    status: dict[str, Any] = found.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if ready is None:
        return f"{info.kind} {name}: not reconciled yet"
    return f"{info.kind} {name}: {ready.get('reason') or 'not Ready'}"
