"""Dry runs: a reconcile pass whose writes are recorded instead of made.

``kumo plan`` and ``managementPolicy: Observe`` (and ``driftPolicy: Report``) run the
kind's real actuator — the same decisions as a managing pass, no second copy — with a
cloud that answers reads from the real adapter and records every write as an
:class:`Action` (``kumo.cloud.dryrun.DryRunCloud``), and with :class:`RecordingKube`,
which keeps status patches on a local copy and records object writes. What a dry pass
would have written *is* the plan, and for an observed object its drift.

Who calls it: :meth:`kumo.engine.reconciler.Engine.preview` (Observe, Report, plan).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kumo.api.common import import_key
from kumo.engine.objects import Body, External, KubeApi, Obj
from kumo.ports import Cloud

if TYPE_CHECKING:
    from kumo.api.kinds import KindInfo


@dataclass(frozen=True)
class Change:
    """One field a write would change: ``field`` is the spec field it comes from
    (``spec.description``) or, for Kumo's own bookkeeping, the cloud field (``tags``)."""

    field: str
    old: Any
    new: Any

    @property
    def from_spec(self) -> bool:
        return self.field.startswith("spec")


@dataclass(frozen=True)
class Action:
    """One write a pass would make: ``verb`` is create, update, replace or delete;
    ``noun`` what (server, listener, members of pool …, VirtualMachine); ``target`` its
    ID or name; ``changes`` field by field; ``note`` what else to know (why a replace)."""

    verb: str
    noun: str
    target: str = ""
    changes: tuple[Change, ...] = ()
    note: str = ""

    def line(self) -> str:
        head = f"{self.verb} {self.noun}" + (f" {self.target}" if self.target else "")
        return head + (f" ({self.note})" if self.note else "")


class DryCloud(Cloud, Protocol):
    """A cloud whose writes are recorded, not made (``kumo.cloud.dryrun.DryRunCloud``):
    what :class:`~kumo.engine.reconciler.Engine`'s dry-run hook makes of the real one."""

    actions: list[Action]


class Recorder(Protocol):
    """What a dry-run cloud exposes besides the adapter's methods."""

    actions: list[Action]


@dataclass
class RecordingKube:
    """A :class:`KubeApi` for dry runs: reads go to ``inner``; status patches and
    finalizers only change the pass's local copy of the object; creates, patches and
    deletes of objects are recorded as actions."""

    inner: KubeApi
    actions: list[Action] = field(default_factory=list)

    async def patch_status(self, obj: Obj, status: Body) -> Body:
        body = copy.deepcopy(obj.body)
        merged = {**(body.get("status") or {}), **status}
        body["status"] = {k: v for k, v in merged.items() if v is not None}
        return body

    async def set_finalizers(self, obj: Obj, finalizers: list[str]) -> Body:
        body = copy.deepcopy(obj.body)
        body.setdefault("metadata", {})["finalizers"] = finalizers
        return body

    async def create(self, info: KindInfo, namespace: str, body: Body) -> Body:
        name = body["metadata"].get("name") or f"{body['metadata'].get('generateName', '')}…"
        spec = body.get("spec") or {}
        changes = tuple(Change(f"spec.{k}", None, v) for k, v in sorted(spec.items()))
        ref = spec.get("import")
        key = import_key(ref) if isinstance(ref, dict) else None
        # A new object that takes an existing resource over (a group's member importing
        # a server) is no new resource in the cloud: say so on the line.
        note = f"imports {key}" if key else ""
        self.actions.append(Action("create", info.kind, name, changes, note))
        created = copy.deepcopy(body)
        created["metadata"].setdefault("name", name)
        return created

    async def patch(self, info: KindInfo, namespace: str, name: str, patch: Body) -> Body:
        spec = patch.get("spec") or {}
        changes = tuple(Change(f"spec.{k}", None, v) for k, v in sorted(spec.items()))
        self.actions.append(Action("update", info.kind, name, changes))
        return {"metadata": {"name": name, "namespace": namespace}, **patch}

    async def delete(self, info: KindInfo, namespace: str, name: str) -> None:
        self.actions.append(Action("delete", info.kind, name))

    async def get_config_map(self, namespace: str, name: str) -> Body | None:
        return await self.inner.get_config_map(namespace, name)

    async def get_secret(self, namespace: str, name: str) -> Body | None:
        return await self.inner.get_secret(namespace, name)

    async def get_external(self, ref: External, namespace: str, name: str) -> Body | None:
        return await self.inner.get_external(ref, namespace, name)


class MutedEvents:
    """Events of a dry pass describe writes that did not happen: kept, not posted."""

    def __init__(self) -> None:
        self.emitted: list[tuple[str, str, str]] = []

    def emit(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.emitted.append((type_, reason, message))


def _text(value: Any) -> str:
    if value is None:
        return "(absent)"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "(none)"
    return str(value)


def drift_entries(actions: list[Action], findings: list[Change]) -> list[dict[str, str]]:
    """``status.drift`` from what a dry pass would have done: each spec field it would
    change (desired = the spec's value, actual = the cloud's), a missing resource, one
    to replace or delete. Kumo's bookkeeping (its marker tags, ``kumo:`` metadata) is
    not drift from the spec and is left out. ``findings`` are what an import check
    found that no write would fix (an immutable field)."""
    entries: list[dict[str, str]] = []
    for change in findings:
        entries.append(
            {"field": change.field, "desired": _text(change.new), "actual": _text(change.old)}
        )
    for action in actions:
        spec_changes = [c for c in action.changes if c.from_spec]
        if action.verb == "update":
            for change in spec_changes:
                entries.append(
                    {
                        "field": change.field,
                        "desired": _text(change.new),
                        "actual": _text(change.old),
                    }
                )
        elif action.verb == "create":
            entries.append({"field": action.noun, "desired": "present", "actual": "absent"})
        elif action.verb in ("delete", "replace"):
            entries.append(
                {
                    "field": action.noun,
                    "desired": action.note or f"{action.verb}d",
                    "actual": action.target or "present",
                }
            )
    unique: list[dict[str, str]] = []
    for entry in entries:
        if entry not in unique:
            unique.append(entry)
    return unique


def changed(actions: list[Action]) -> bool:
    """Whether a pass would write anything at all."""
    return bool(actions)
