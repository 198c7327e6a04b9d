"""Pause and reconcile-now: two annotations every kind honours, decided here for all.

* ``kumo.dev/paused: "true"`` holds one object while someone works on the cloud by hand
  (Crossplane's ``crossplane.io/paused``). Its passes go on, as dry runs
  (:meth:`kumo.engine.reconciler.Engine.preview`: reads are real, writes are recorded,
  not made), so Kumo makes no cloud write and no Kubernetes write (no member object, no
  finalizer) for it, but still reports what it sees: ``status.drift`` lists what a pass
  would change, and a ``Paused`` condition (True, reason ``Paused``) says it is held and
  what it would do. ``Ready`` keeps its last truth (status, reason, message, generation);
  ``Reconciling`` is False and ``Stalled`` True only while not Ready (reason ``Paused``
  both), so kstatus, which has no "suspended" state, reads a paused object as
  ``Current`` or ``Failed`` (paused), never ``InProgress`` for ever; Argo CD's health
  script (``deploy/argocd/health.lua``) reads ``Suspended``.
  A paused object being deleted keeps its finalizer: its cloud resources are neither
  deleted nor released until the annotation goes (as Crossplane does). Removing the
  annotation (or any other value) resumes at once, and the ``Paused`` condition goes.
* ``kumo.dev/reconcile-requested-at: <any new value>`` asks for a pass now (Flux's
  ``reconcile.fluxcd.io/requestedAt``): the annotation's change wakes the object, the
  pass runs even while a permanent error is held, and its status write records the value
  as ``status.lastHandledReconcileAt``, so a client knows its request was served.

Who calls it: :meth:`kumo.engine.reconciler.Engine.run` (and ``_write_status``); the
controller wakes an object on any annotation change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kumo.api.common import PAUSED_ANNOTATION, RECONCILE_REQUEST_ANNOTATION
from kumo.engine import conditions
from kumo.engine.conditions import Condition
from kumo.engine.objects import Body, Obj
from kumo.engine.result import Result

if TYPE_CHECKING:
    from kumo.engine.errors import ReconcileError
    from kumo.engine.reconciler import Preview

PAUSED = "Paused"
#: The status field that says which reconcile request was last served.
HANDLED = "lastHandledReconcileAt"


def is_paused(obj: Obj) -> bool:
    """Whether ``obj`` carries ``kumo.dev/paused: "true"`` (any case; other values, or
    none, mean not paused)."""
    value = obj.annotations.get(PAUSED_ANNOTATION)
    return isinstance(value, str) and value.strip().lower() == "true"


def requested(obj: Obj) -> str | None:
    """The value of ``kumo.dev/reconcile-requested-at``, to record once served."""
    value = obj.annotations.get(RECONCILE_REQUEST_ANNOTATION)
    return value if isinstance(value, str) else None


def held(obj: Obj, preview: Preview | None, invalid: ReconcileError | None) -> Result:
    """The status of one paused pass: what the dry pass (``preview``; None while the
    object is deleting or its spec does not validate, ``invalid``) read and would have
    written. The kind's status fields are the dry pass's when it would create nothing
    (what it read is real), else the last ones (a "created" resource of a dry pass is no
    resource). The phase says ``Paused``; ``Ready`` is kept by the status write."""
    fields: Body = {}
    drift: list[dict[str, str]] = []
    if obj.deleting:
        policy = obj.spec.get("deletionPolicy", "Delete")
        doing = f"deletion waits (deletionPolicy: {policy}): the finalizer stays"
    elif invalid is not None:
        doing = f"the spec is invalid ({invalid.reason}: {invalid.message})"
    elif preview is None or preview.error is not None:
        error = preview.error if preview is not None else None
        doing = f"a pass would fail: {error.reason}: {error.message}" if error else "nothing"
    else:
        drift = preview.drift
        lines = [a.line() for a in preview.actions]
        doing = "a pass would " + "; ".join(lines) if lines else "the cloud matches the spec"
        if preview.result is not None and not any(a.verb == "create" for a in preview.actions):
            fields = dict(preview.result.status)
    message = f"paused ({PAUSED_ANNOTATION}): Kumo writes nothing to the cloud; {doing}"
    return Result(
        phase=PAUSED, reason=PAUSED, message=message, status=fields, drift=drift, paused=message
    )


def set_conditions(old: list[Condition], message: str, generation: int | None) -> list[Condition]:
    """The conditions of a paused pass: ``Paused`` True; ``Ready`` as it was (Unknown for
    an object paused before its first pass); ``Reconciling`` False; ``Stalled`` True
    while not Ready — Kumo will not get it Ready until its user removes the annotation,
    which is what ``Stalled`` means — else False (all with reason ``Paused``). kstatus
    then reads a paused object as ``Current`` when it was Ready and ``Failed`` (saying
    it is paused) when not: never ``InProgress`` for as long as the pause lasts."""
    new = list(old)
    if conditions.get_condition(new, conditions.READY) is None:
        new = conditions.set_condition(
            new, conditions.READY, None, PAUSED, "paused before its first pass", generation=None
        )
    ready = conditions.is_true(new, conditions.READY)
    waits = "" if ready else f"not Ready, and Kumo gets no further until {PAUSED_ANNOTATION} goes"
    new = conditions.set_condition(
        new, conditions.RECONCILING, False, PAUSED, "", generation=generation
    )
    new = conditions.set_condition(
        new, conditions.STALLED, not ready, PAUSED, waits, generation=generation
    )
    return conditions.set_condition(new, PAUSED, True, PAUSED, message, generation=generation)


def transition(old: list[Condition], new: list[Condition]) -> tuple[str, str] | None:
    """The event of a pass that pauses (``Paused``) or resumes (``Resumed``) the
    object, as (reason, message); None when neither."""
    was = conditions.is_true(old, PAUSED)
    now = conditions.is_true(new, PAUSED)
    if now and not was:
        return PAUSED, f"{PAUSED_ANNOTATION}: Kumo makes no cloud write for it until it goes"
    if was and not now:
        return "Resumed", f"{PAUSED_ANNOTATION} removed: Kumo manages it again"
    return None


def unpaused(old: list[Condition]) -> list[Condition]:
    """Conditions without ``Paused`` (a pass that is not paused)."""
    return [c for c in old if c.get("type") != PAUSED]
