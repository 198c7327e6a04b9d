"""`kubectl kumo why`: from an object that is not Ready, through its references, to the
first thing that blocks it, and what to do about it.

Pure, over the same snapshot as :mod:`kumo.kinds.tree`. A ``WaitingFor<Kind>`` reason
(``WaitingForNetwork``) or a ``<Kind>NotFound`` one (``NetworkNotFound``) points at the
declared references to that kind (:data:`kumo.kinds.references.REFERENCES`); while an
object is being deleted, ``WaitingFor<Kind>`` points at the objects of that kind that
name it. The first of them that is missing or not Ready is followed in turn; an object
with nothing to follow is the blocker. Without such a reason, an object that is not
stalled follows the first reference, then the first object it owns (a group's member),
that is not Ready.
"""

from __future__ import annotations

from dataclasses import dataclass

from kumo.api.common import PAUSED_ANNOTATION, RECONCILE_REQUEST_ANNOTATION
from kumo.engine.objects import Body
from kumo.kinds.ordering import WAIT_REASONS
from kumo.kinds.tree import (
    KUMO_KINDS,
    ObjectKey,
    Objects,
    condition,
    deleting,
    is_ready,
    owned,
    paused,
    referenced,
    summary,
    users,
)

WAITING = "WaitingFor"
NOT_FOUND = "NotFound"
#: Reasons that name the kind waited for other than ``WaitingFor<Kind>``.
KIND_OF_REASON = {reason: kind for kind, reason in WAIT_REASONS.items()}


@dataclass(frozen=True)
class Step:
    """One object on the way to the blocker, and how the one before it reaches it."""

    kind: str
    name: str
    namespace: str
    #: "" (the object asked about), "spec.<field>" (the previous object names it),
    #: "owns" (the previous object owns it) or "used by: spec.<field>" (it names the
    #: previous object, whose deletion waits for it).
    via: str
    exists: bool
    ready: str
    reason: str
    message: str

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class Answer:
    """The steps from the object asked about to the blocker (the last step; the
    object itself when it is Ready), and what to do."""

    steps: tuple[Step, ...]
    ready: bool
    todo: str

    @property
    def blocker(self) -> Step:
        return self.steps[-1]

    def as_json(self) -> dict[str, object]:
        return {
            "ready": self.ready,
            "blocker": vars(self.blocker) | {"ref": self.blocker.ref},
            "todo": self.todo,
            "steps": [vars(s) for s in self.steps],
        }


def _step(objects: Objects, key: ObjectKey, via: str) -> Step:
    kind, namespace, name = key
    body = objects.get(key)
    if body is None:
        where = f"no {kind} {name!r} in namespace {namespace}"
        return Step(kind, name, namespace, via, False, "-", NOT_FOUND, where)
    ready, reason, message = summary(body)
    return Step(kind, name, namespace, via, True, ready, reason, message)


def reason_kinds(reason: str) -> set[str]:
    """The kinds a reason points at: ``WaitingForNetwork``, ``WaitingForVirtualMachines``,
    ``NetworkNotFound``, ``WaitingForDNS``; every kind for ``WaitingForTarget``."""
    if reason in KIND_OF_REASON:
        return {KIND_OF_REASON[reason]}
    if reason == f"{WAITING}Target":
        return set(KUMO_KINDS)
    word = (
        reason.removeprefix(WAITING)
        if reason.startswith(WAITING)
        else reason.removesuffix(NOT_FOUND)
        if reason.endswith(NOT_FOUND)
        else ""
    )
    return {k for k, info in KUMO_KINDS.items() if word and word in (k, info.kind + "s")}


def _blocks(objects: Objects, key: ObjectKey) -> bool:
    body = objects.get(key)
    return body is None or not is_ready(body)


def suspect(objects: Objects, body: Body) -> tuple[str, ObjectKey] | None:
    """(how ``body`` reaches it, the object) to follow from ``body``, which is not Ready;
    None when ``body`` itself is the blocker."""
    _, reason, message = summary(body)
    kinds = reason_kinds(reason)
    if deleting(body) and reason.startswith(WAITING):
        # A deletion waits for the objects naming this one (WaitingForUsers: any).
        candidates = [
            (f"used by: {via}", key)
            for via, key in users(objects, body)
            if not kinds or reason == f"{WAITING}Users" or key[0] in kinds
        ]
        return next(((v, k) for v, k in candidates if k in objects), None)
    refs = referenced(body)
    if kinds:
        matching = [(via, key) for via, key in refs if key[0] in kinds]
        # The one the message names first, else the first that is not Ready.
        matching.sort(
            key=lambda item: repr(item[1][2]) not in message and item[1][2] not in message
        )
        for via, key in matching:
            missing = key not in objects
            # A name with no object stands for the cloud's own resource of that name:
            # it blocks only when the cloud has none either (…NotFound).
            if (missing and reason.endswith(NOT_FOUND)) or (not missing and _blocks(objects, key)):
                return via, key
    stalled = condition(body, "Stalled") or {}
    if stalled.get("status") == "True" or paused(body) or deleting(body):
        return None
    for via, key in refs:
        if key in objects and _blocks(objects, key):
            return via, key
    for key in owned(objects, body):
        if _blocks(objects, key):
            return "owns", key
    return None


def why(objects: Objects, root: ObjectKey) -> Answer:
    """The way from ``root`` (which must be in ``objects``) to what blocks it."""
    steps = [_step(objects, root, "")]
    seen = {root}
    key = root
    while True:
        body = objects.get(key)
        if body is None or is_ready(body):
            break
        found = suspect(objects, body)
        if found is None or found[1] in seen:
            break
        via, key = found
        seen.add(key)
        steps.append(_step(objects, key, via))
    ready = len(steps) == 1 and is_ready(objects[root])
    return Answer(tuple(steps), ready, todo(objects, steps, ready))


def todo(objects: Objects, steps: list[Step], ready: bool) -> str:
    """What to do about the last of ``steps``."""
    last = steps[-1]
    plural = KUMO_KINDS[last.kind].plural if last.kind in KUMO_KINDS else last.kind.lower()
    ns = f" -n {last.namespace}"
    if ready:
        return "nothing: it is Ready"
    if not last.exists:
        before = steps[-2]
        return (
            f"create {last.kind} {last.name!r} in namespace {last.namespace} "
            f"(kubectl apply{ns} -f <a {last.kind} named {last.name}>), or change "
            f"{before.ref}'s {last.via} to name one that exists"
            + (
                f" (the cloud has none of that name either: {before.message})"
                if before.message
                else ""
            )
        )
    body = objects[(last.kind, last.namespace, last.name)]
    if paused(body):
        return (
            f"it is paused: resume it with kubectl annotate{ns} {plural} {last.name} "
            f"{PAUSED_ANNOTATION}-"
        )
    if deleting(body):
        return (
            f"it is being deleted and waits: {last.message or last.reason}; let what it "
            "waits for go, or wait"
        )
    if last.reason == "NotReconciled":
        return (
            "Kumo has not reconciled it: is the operator running and watching namespace "
            f"{last.namespace}? (kubectl -n kumo-system get pods, and its log)"
        )
    stalled = condition(body, "Stalled") or {}
    if stalled.get("status") == "True":
        return (
            f"fix what the message names ({last.message}): Kumo retries when the spec "
            f"changes, or at once after kubectl annotate{ns} --overwrite {plural} "
            f"{last.name} {RECONCILE_REQUEST_ANNOTATION}=$(date +%s)"
        )
    return (
        f"nothing to fix yet: Kumo is working on it ({last.reason}: {last.message}); "
        f"wait, or follow kubectl get{ns} {plural} {last.name} -w"
    )


def render(answer: Answer) -> str:
    first = answer.steps[0]
    if answer.ready:
        return f"{first.ref} is Ready.\n"
    lines = []
    for i, s in enumerate(answer.steps):
        state = (
            "does not exist"
            if not s.exists
            else f"Ready={s.ready} {s.reason}" + (f": {s.message}" if s.message else "")
        )
        how = f"{'  ' * (i - 1)}└─ {s.via} → " if i else ""
        lines.append(f"{how}{s.ref}: {state}")
    lines.append("")
    lines.append(
        f"Blocked by: {answer.blocker.ref}" + ("" if answer.blocker.exists else " (missing)")
    )
    lines.append(f"To do: {answer.todo}")
    return "\n".join(lines) + "\n"
