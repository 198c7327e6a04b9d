"""`kumo plan`: what the next reconcile of each object would do, changing nothing.

Each object — from manifests (``-f``: files, folders, kustomizations, ``-`` for
standard input; read by :mod:`kumo.runtime.manifests`) laid over what the cluster
holds, or the cluster's objects themselves — goes through the engine's dry pass
(:meth:`kumo.engine.reconciler.Engine.preview`): the kind's real actuator, with the
namespace's cloud resolved exactly as the operator resolves it (its
``kumo-cloud-credentials`` Secret, else the default cloud), reads made for real and
every write recorded instead of made. The recorded writes are the plan; nothing is
written to the cloud or to Kubernetes.

A pass is one step: a server still has to build, a load balancer's later ports need IDs
that do not exist yet. What the pass would wait for is printed as ``then:``.
Exit codes (like ``terraform plan -detailed-exitcode``): 0 no changes, 1 error, 2 changes.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

import pydantic

from kumo.api.kinds import KINDS
from kumo.cloud.credentials import CloudRegistry
from kumo.cloud.dryrun import DryRunCloud
from kumo.engine import reconciler
from kumo.engine.dryrun import Action, MutedEvents
from kumo.engine.errors import ReconcileError
from kumo.engine.objects import Body, Context, Obj
from kumo.engine.reconciler import Engine, field_path
from kumo.runtime.store import MemoryStore

INFO_BY_KIND = {k.kind: k for k in KINDS}
#: The UID a manifest not yet in the cluster is planned with: no resource carries it.
NEW_UID = "00000000-0000-0000-0000-000000000000"
#: Events of a dry pass that explain a change (others only repeat it).
EXPLAINING = {"Replacing", "ImmutableFieldChanged", "MonitorsNotApplied", "Draining", "Imported"}
SYMBOL = {"create": "+", "update": "~", "delete": "-", "replace": "-/+"}


@dataclass
class ObjectPlan:
    """The plan of one object."""

    kind: str
    namespace: str
    name: str
    new: bool = False
    mode: str = "manage"
    actions: list[Action] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    then: str = ""
    drift: list[dict[str, str]] = field(default_factory=list)
    error: str = ""

    @property
    def changes(self) -> bool:
        """Would Kumo change anything? Observed objects never do."""
        return self.mode == "manage" and bool(self.actions)


# -- input ---------------------------------------------------------------------------------


def overlay(store: MemoryStore, manifest: Body) -> tuple[Body, bool]:
    """The object as it would be once applied: the cluster's object (UID, status) with
    the manifest's spec and a new generation if the spec changed; or a new object."""
    meta = manifest["metadata"]
    live = store.get(manifest["kind"], meta["namespace"], meta["name"])
    if live is None:
        body = {**manifest, "metadata": {**meta, "uid": NEW_UID, "generation": 1}}
        body.pop("status", None)
        return body, True
    body = {**live, "spec": manifest.get("spec") or {}}
    if body["spec"] != live.get("spec"):
        generation = int(live["metadata"].get("generation") or 1) + 1
        body["metadata"] = {**live["metadata"], "generation": generation}
    return body, False


# -- planning ------------------------------------------------------------------------------


async def plan_object(engine: Engine, ctx: Context, obj: Obj, new: bool) -> ObjectPlan:
    """One object's dry pass, as the controller would run it now."""
    found = ObjectPlan(obj.info.kind, obj.namespace, obj.name, new=new, mode=reconciler.mode(obj))
    try:
        spec = obj.info.spec_model.model_validate(obj.spec)
    except pydantic.ValidationError as error:
        found.error = f"InvalidSpec: {field_path(error)}"
        return found
    actuator = ACTUATORS[obj.info.kind]
    preview = await engine.preview(actuator, ctx, obj, spec, observe=found.mode == "observe")
    found.actions = preview.actions
    found.notes = [
        f"{reason}: {text}" for _, reason, text in preview.events if reason in EXPLAINING
    ]
    if found.mode != "manage":
        found.drift = preview.drift
    result = preview.result
    if preview.error is not None:
        found.error = f"{preview.error.reason}: {preview.error.message}"
    elif result is not None and (not result.done if obj.deleting else not result.ready):
        found.then = result.message
    if obj.deleting and obj.spec.get("deletionPolicy") == "Orphan":
        found.actions, found.notes = [], ["deletionPolicy: Orphan: the resources stay"]
    return found


def _actuators() -> dict[str, Any]:
    from kumo.kinds import registry

    return {a.info.kind: a for a in registry.actuators()}


ACTUATORS = _actuators()


async def run_plan(
    manifests: list[Body], namespace: str | None, default: Any, kube: Any
) -> list[ObjectPlan]:
    """Plans for the CLI: credentials resolved like the operator's (``default`` is its
    default cloud source); the registry's connections are closed afterwards."""
    clouds = CloudRegistry(default, kube.get_secret_data)
    try:
        return await plan_all(kube, clouds, manifests, namespace)
    finally:
        await clouds.close_all()


async def plan_all(
    kube: Any, clouds: CloudRegistry, manifests: list[Body], namespace: str | None
) -> list[ObjectPlan]:
    """Plans of ``manifests`` (over the cluster's objects), or of the cluster's objects
    in ``namespace`` (all namespaces: None) when there are none."""
    namespaces = sorted({m["metadata"]["namespace"] for m in manifests}) or [namespace]
    store = MemoryStore()
    for ns in namespaces:
        for info in KINDS:
            for body in await kube.list(info, ns):
                store.put(info.kind, body)
    targets: list[tuple[Body, bool]] = []
    if manifests:
        for manifest in manifests:
            body, new = overlay(store, manifest)
            store.put(body["kind"], body)
            targets.append((body, new))
    else:
        targets = [(b, False) for info in KINDS for b in store.list(info.kind, namespace)]
    engine = Engine(dry_run=DryRunCloud)
    plans = []
    for body, new in targets:
        obj = Obj(INFO_BY_KIND[body["kind"]], body)
        try:
            cloud = await clouds.for_namespace(obj.namespace)
        except ReconcileError as error:
            plans.append(ObjectPlan(obj.info.kind, obj.namespace, obj.name, new, error=str(error)))
            continue
        ctx = Context(cloud=cloud, kube=kube, store=store, events=MutedEvents())
        plans.append(await plan_object(engine, ctx, obj, new))
    return plans


# -- output --------------------------------------------------------------------------------


def exit_code(plans: list[ObjectPlan]) -> int:
    if any(p.error for p in plans):
        return 1
    return 2 if any(p.changes for p in plans) else 0


def _value(value: Any) -> str:
    if value is None:
        return "(absent)"
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return json.dumps(value, sort_keys=True) if isinstance(value, str | dict) else str(value)


def render_text(plans: list[ObjectPlan]) -> str:
    lines: list[str] = []
    counts = {"create": 0, "update": 0, "delete": 0}
    for p in plans:
        tag = " (new)" if p.new else ""
        mode = {"observe": " (managementPolicy: Observe)", "report": " (driftPolicy: Report)"}
        lines.append(f"{p.kind} {p.namespace}/{p.name}{tag}{mode.get(p.mode, '')}")
        if p.error:
            lines.append(f"  ! {p.error}")
        if p.mode != "manage":
            lines.append("  no changes: Kumo only reports drift for this object")
            lines += [
                f"  drift {d['field']}: {d['actual']} (spec: {d['desired']})" for d in p.drift
            ]
        else:
            for action in p.actions:
                counts[action.verb] = counts.get(action.verb, 0) + 1
                lines.append(f"  {SYMBOL.get(action.verb, '*')} {action.line()}")
                for c in action.changes:
                    old = "" if c.old is None and action.verb == "create" else f"{_value(c.old)} → "
                    lines.append(f"      {c.field}: {old}{_value(c.new)}")
            if not p.actions and not p.error:
                lines.append("  no changes")
        lines += [f"  note: {n}" for n in p.notes]
        if p.then and p.mode == "manage":
            lines.append(f"  then: {p.then} (later passes continue from there)")
    changed = sum(1 for p in plans if p.changes)
    errors = sum(1 for p in plans if p.error)
    lines.append(
        f"Plan: {counts['create']} to create, {counts['update']} to update, "
        f"{counts['delete']} to delete — {changed} of {len(plans)} object(s) change, "
        f"{errors} error(s)."
    )
    return "\n".join(lines) + "\n"


def render_json(plans: list[ObjectPlan]) -> str:
    out = []
    for p in plans:
        entry = asdict(p)
        entry["changes"] = p.changes
        out.append(entry)
    return json.dumps({"objects": out, "exitCode": exit_code(plans)}, indent=2, default=str) + "\n"


def write(plans: list[ObjectPlan], output: str) -> int:
    sys.stdout.write(render_json(plans) if output == "json" else render_text(plans))
    return exit_code(plans)
