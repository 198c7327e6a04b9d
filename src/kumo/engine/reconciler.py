"""The one reconcile shape every kind goes through.

``run`` takes an object, decides between finalize and reconcile, calls the kind's
actuator, turns errors into conditions (``Ready``, and ``Stalled`` saying whether
the user must act), and writes status in one patch at the end (the only earlier
writes are a kind's ID records, ``ownership.record``). It returns when to look at
the object again (``None``: only on the next change or resync). It knows no kind
and imports neither kopf nor openstacksdk.

Policies (``spec.managementPolicy``, ``spec.driftPolicy``) are applied here, for every
kind alike: a pass that only observes runs the kind's actuator as a dry run
(:meth:`Engine.preview`, writes recorded, not made — see ``dryrun.py``) and reports
what it would have changed as ``status.drift`` and the ``Drifted`` condition.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic

from kumo.engine import conditions, failpoints, pause, trace
from kumo.engine.dryrun import (
    Action,
    Change,
    DryCloud,
    MutedEvents,
    RecordingKube,
    drift_entries,
)
from kumo.engine.errors import ObjectGone, ReconcileError, TerminalError, TransientError
from kumo.engine.objects import Actuator, Body, Context, Key, Obj
from kumo.engine.result import Result
from kumo.ports import Cloud

log = logging.getLogger("kumo.engine")

MANAGED_STATUS_KEYS = ("phase", "conditions", "observedGeneration")
#: Failures counted per key at most: 2**30 s is far past any cap, and 2**n of an
#: uncapped count overflows a float after ~1,024 failures (OverflowError).
MAX_BACKOFF_EXPONENT = 30
DRIFTED = "Drifted"
#: How often an observed object is looked at again: a change to a resource without Kumo's
#: marker names no owner to wake, so its drift is found by this re-read (from the cloud
#: watch's cache, which keeps what an Observe names fresh: no request per pass).
OBSERVE_SECONDS = 30.0

Mode = Literal["manage", "observe", "report"]


def mode(obj: Obj) -> Mode:
    """What a pass may do: ``manage`` (apply the spec), ``observe`` (managementPolicy
    Observe: read and report), ``report`` (driftPolicy Report and this generation's
    spec already applied: read and report drift, correct nothing)."""
    spec = obj.spec
    if spec.get("managementPolicy") == "Observe":
        return "observe"
    applied = obj.status.get("appliedGeneration")
    if spec.get("driftPolicy") == "Report" and applied is not None and applied == obj.generation:
        return "report"
    return "manage"


@dataclass
class Preview:
    """What one dry pass found: the actuator's result (or error) and the writes it
    would have made."""

    result: Result | None
    error: ReconcileError | None
    actions: list[Action]
    findings: list[Change]
    events: list[tuple[str, str, str]]

    @property
    def drift(self) -> list[dict[str, str]]:
        return drift_entries(self.actions, self.findings)


@dataclass
class Backoff:
    """Per key: exponential backoff with jitter for transient errors; for terminal
    errors a *hold* on the object's generation, so that cloud-side triggers (drift)
    do not re-run a spec that cannot work until the spec changes or the hold ends.
    Both are reset on success."""

    base: float = 1.0
    cap: float = 120.0
    terminal_delay: float = 60.0
    failures: dict[Key, int] = field(default_factory=dict)
    holds: dict[Key, tuple[int | None, float]] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic

    def _doublings(self, key: Key) -> int:
        """Record one more failure of ``key``; return how many came before it since its
        last success — the exponent of the delay now due (transient and rechecked
        terminal errors share the count)."""
        n = min(self.failures.get(key, 0), MAX_BACKOFF_EXPONENT)
        self.failures[key] = n + 1
        return n

    def transient(self, key: Key, retry_after: float | None = None) -> float:
        n = self._doublings(key)
        delay = min(self.cap, self.base * 2**n) * random.uniform(0.8, 1.2)
        return max(delay, retry_after or 0.0)

    def terminal(self, key: Key, generation: int | None, recheck: float | None = None) -> float:
        """Hold ``key`` at ``generation`` for the terminal delay — or, for an error
        that may clear by itself, ``recheck`` seconds doubling per consecutive failure
        up to that delay (jittered) — and return the hold."""
        delay = self.terminal_delay
        if recheck is not None:
            n = self._doublings(key)
            delay = min(self.terminal_delay, recheck * 2**n * random.uniform(0.8, 1.2))
        self.holds[key] = (generation, self.clock() + delay)
        return delay

    def held(self, key: Key, generation: int | None) -> float | None:
        """Seconds left on the terminal hold of ``key`` at ``generation``, or None."""
        hold = self.holds.get(key)
        if hold is None:
            return None
        left = hold[1] - self.clock()
        if hold[0] != generation or left <= 0:
            del self.holds[key]
            return None
        return left

    def reset(self, key: Key) -> None:
        self.failures.pop(key, None)
        self.holds.pop(key, None)


def field_path(error: pydantic.ValidationError) -> str:
    """``spec.ports[0].port: Input should be ...`` for the first validation error."""
    first = error.errors()[0]
    path = "spec"
    for part in first["loc"]:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return f"{path}: {first['msg']}"


class Engine:
    def __init__(
        self,
        backoff: Backoff | None = None,
        dry_run: Callable[[Cloud], DryCloud] | None = None,
    ) -> None:
        self.backoff = backoff or Backoff()
        #: Wraps a cloud adapter so that writes are recorded (``actions``), not made.
        self.dry_run = dry_run

    async def preview(
        self, actuator: Actuator, ctx: Context, obj: Obj, spec: Any, observe: bool = False
    ) -> Preview:
        """Run one pass of ``actuator`` on a copy of ``obj`` as a dry run: reads are real,
        writes (cloud and Kubernetes) are recorded; events are not posted. Shared by
        Observe, Report and ``kumo plan``, so all three see what a pass would do."""
        if self.dry_run is None:
            raise RuntimeError("this engine was built without a dry-run cloud")
        cloud = self.dry_run(ctx.cloud)
        kube = RecordingKube(ctx.kube)
        events = MutedEvents()
        dry = dataclasses.replace(
            ctx, cloud=cloud, kube=kube, events=events, dry_run=True, observe=observe, findings=[]
        )
        scratch = Obj(obj.info, copy.deepcopy(obj.body))
        result: Result | None = None
        error: ReconcileError | None = None
        try:
            if scratch.deleting:
                result = await actuator.finalize(dry, scratch, spec)
            else:
                result = await actuator.reconcile(dry, scratch, spec)
        except ReconcileError as failed:
            error = failed
        return Preview(result, error, [*cloud.actions, *kube.actions], dry.findings, events.emitted)

    def held(self, obj: Obj) -> float | None:
        """Seconds left before ``obj``'s permanent error is worth retrying unchanged;
        None when it is not held (no terminal error, new generation, being deleted)."""
        if obj.deleting:
            return None
        return self.backoff.held(obj.key, obj.generation)

    async def run(self, actuator: Actuator, ctx: Context, obj: Obj) -> float | None:
        """Reconcile or finalize ``obj`` once; return the requeue delay.

        The pass is current (:mod:`kumo.engine.trace`) while it runs: its cloud calls
        carry one global request ID, and its log lines and events name it."""
        with trace.running(obj.info.kind, obj.namespace, obj.name, obj.uid) as opened:
            delay = await self._run(actuator, ctx, obj)
            if opened.requests:  # a pass that read only caches is not worth a line
                log.info(
                    "%s: pass %s made %d cloud request(s); next in %s",
                    obj.key,
                    opened.request_id,
                    opened.requests,
                    "-" if delay is None else f"{delay:.1f}s",
                )
            return delay

    async def _run(self, actuator: Actuator, ctx: Context, obj: Obj) -> float | None:
        spec: Any = None
        invalid: TerminalError | None = None
        try:
            spec = actuator.info.spec_model.model_validate(obj.spec)
        except pydantic.ValidationError as error:
            invalid = TerminalError("InvalidSpec", field_path(error))
        if pause.is_paused(obj):
            return await self._paused(actuator, ctx, obj, spec, invalid)
        if invalid is not None and not obj.deleting:
            return await self._report_error(ctx, obj, invalid)
        try:
            if obj.deleting:
                return await self._finalize(actuator, ctx, obj, spec)
            how = mode(obj)
            if how != "manage":  # no finalizer: deleting an observed object leaves all
                return await self._observe(actuator, ctx, obj, spec, how)
            if actuator.info.finalizer not in obj.finalizers:
                await failpoints.pause("before-finalizer")
                obj.body = await ctx.kube.set_finalizers(
                    obj, [*obj.finalizers, actuator.info.finalizer]
                )
                if obj.deleting:  # deleted since the cache read: the next pass finalizes
                    log.info("%s: deleted before its first pass; creating nothing", obj.key)
                    return None
            result = await actuator.reconcile(ctx, obj, spec)
            if obj.spec.get("driftPolicy") == "Report" and result.ready:
                result.status["appliedGeneration"] = obj.generation
        except ReconcileError as error:
            if _gone(error, obj):
                self.backoff.reset(obj.key)
                return None
            return await self._report_error(ctx, obj, error)
        except Exception as error:  # a bug or an unclassified failure: retry, say so
            log.exception("reconcile of %s failed unexpectedly", obj.key)
            wrapped = TransientError("InternalError", f"{type(error).__name__}: {error}")
            return await self._report_error(ctx, obj, wrapped)
        self.backoff.reset(obj.key)
        await self._write_status(ctx, obj, result)
        return result.requeue_after

    async def _observe(
        self, actuator: Actuator, ctx: Context, obj: Obj, spec: Any, how: Mode
    ) -> float | None:
        """A pass that changes nothing: the actuator runs dry, and what it would have
        written is reported as drift (Ready=False ``Drifted``, condition and event)."""
        preview = await self.preview(actuator, ctx, obj, spec, observe=how == "observe")
        if preview.error is not None:
            return await self._report_error(ctx, obj, preview.error)
        assert preview.result is not None
        drift = preview.drift
        missing = any(a.verb == "create" for a in preview.actions)
        status = {} if missing else dict(preview.result.status)
        status["appliedGeneration"] = obj.status.get("appliedGeneration")
        if missing:
            reason, text = "NotFound", "the resource does not exist; Kumo creates nothing"
        elif drift:
            fields = ", ".join(d["field"] for d in drift)
            reason, text = DRIFTED, f"differs from the spec: {fields}"
        else:
            reason, text = "InSync", "the cloud matches the spec"
        verb = "observing" if how == "observe" else "reporting drift (driftPolicy: Report)"
        result = Result(
            phase="Observed" if how == "observe" else preview.result.phase,
            ready=not drift,
            reason="Ready" if not drift else reason,
            message=f"{verb}: {text}",
            status=status,
            requeue_after=OBSERVE_SECONDS,
            drift=drift,
        )
        if drift and drift != obj.status.get("drift"):
            ctx.events.emit(obj, "Warning", DRIFTED, f"{verb}: {text}")
        self.backoff.reset(obj.key)
        await self._write_status(ctx, obj, result)
        return result.requeue_after

    async def _paused(
        self, actuator: Actuator, ctx: Context, obj: Obj, spec: Any, invalid: TerminalError | None
    ) -> float | None:
        """A pass of a paused object (:mod:`kumo.engine.pause`): the actuator runs dry, as
        for Observe, and only status is written; a deletion keeps the finalizer. The
        object is looked at again on its next change, cloud change or resync."""
        self.backoff.reset(obj.key)
        if obj.deleting and not obj.owned_finalizers():
            return None
        preview = None
        if not obj.deleting and invalid is None:
            observe = mode(obj) == "observe"
            preview = await self.preview(actuator, ctx, obj, spec, observe=observe)
        await self._write_status(ctx, obj, pause.held(obj, preview, invalid))
        return None

    async def _finalize(
        self, actuator: Actuator, ctx: Context, obj: Obj, spec: Any
    ) -> float | None:
        owned = obj.owned_finalizers()
        if not owned:
            return None
        policy = obj.spec.get("deletionPolicy", "Delete")
        if obj.spec.get("managementPolicy") == "Observe":
            ctx.events.emit(
                obj,
                "Normal",
                "Orphaned",
                "cloud resources left in place (managementPolicy: Observe)",
            )
        else:
            orphan = policy == "Orphan"
            go = actuator.release if orphan else actuator.finalize
            result = await go(ctx, obj, spec)
            if not result.done:  # the finalizer stays until all is deleted, or released
                await self._write_status(ctx, obj, result)
                return result.requeue_after or 2.0
            if orphan:
                message = "cloud resources left in place (deletionPolicy: Orphan)"
                ctx.events.emit(obj, "Normal", "Orphaned", message)
            else:
                ctx.events.emit(obj, "Normal", "Deleted", "cloud resources deleted")
        obj.body = await ctx.kube.set_finalizers(obj, [f for f in obj.finalizers if f not in owned])
        self.backoff.reset(obj.key)
        return None

    async def _report_error(self, ctx: Context, obj: Obj, error: ReconcileError) -> float:
        if isinstance(error, TerminalError):
            delay = self.backoff.terminal(obj.key, obj.generation, error.recheck)
            every = "in" if error.recheck is not None else "every"
            message = f"{error.message} (permanent: fix the spec or the cloud; retrying {every} {int(delay)}s)"
        else:
            retry_after = getattr(error, "retry_after", None)
            delay = self.backoff.transient(obj.key, retry_after)
            message = f"{error.message} (transient: retrying)"
        log.warning("%s: %s: %s", obj.key, error.reason, error.message)
        status = error.status if isinstance(error, TerminalError) else {}
        result = Result(
            phase="Error", ready=False, reason=error.reason, message=message, status=status
        )
        await self._write_status(ctx, obj, result, error=error)
        return delay

    async def _write_status(
        self, ctx: Context, obj: Obj, result: Result, error: ReconcileError | None = None
    ) -> None:
        """Write phase, conditions and the kind's status fields in one patch, if any
        changed. After an ``error`` the kind's last status fields are kept."""
        old = obj.status
        keep = error is not None or result.paused is not None
        new: dict[str, Any] = dict(old) if keep else {k: v for k, v in old.items() if k in ("id",)}
        new.update(result.status)
        new["phase"] = result.phase
        new["observedGeneration"] = obj.generation
        new[pause.HANDLED] = pause.requested(obj)
        if result.paused is not None:
            new["conditions"] = pause.set_conditions(
                list(old.get("conditions") or []), result.paused, obj.generation
            )
        else:
            new["conditions"] = pause.unpaused(new_conditions(old, obj, result, error))
        old_ready = conditions.get_condition(old.get("conditions") or [], conditions.READY)
        if result.drift is not None:
            new["drift"] = result.drift
            new["conditions"] = conditions.set_condition(
                new["conditions"],
                DRIFTED,
                bool(result.drift),
                DRIFTED if result.drift else "InSync",
                result.message if result.drift else "",
                generation=obj.generation,
            )
        elif error is None:
            new["conditions"] = [c for c in new["conditions"] if c.get("type") != DRIFTED]
        new_ready = conditions.get_condition(new["conditions"], conditions.READY)
        new = prune_none(new)
        if new == old:
            return
        # Fields that disappeared must be sent as null in a merge patch.
        patch = {**{k: None for k in old if k not in new}, **new}
        try:
            obj.body = await ctx.kube.patch_status(obj, patch)
        except ObjectGone as gone:
            if _gone(gone, obj):
                return  # deleted meanwhile: no status to write, no event to send
            raise
        paused = pause.transition(old.get("conditions") or [], new["conditions"])
        if paused is not None:
            ctx.events.emit(obj, "Normal", *paused)
        if result.paused is None and _transitioned(old_ready, new_ready):
            assert new_ready is not None
            kind = "Warning" if error is not None else "Normal"  # progress is not a warning
            ctx.events.emit(
                obj, kind, new_ready["reason"], new_ready["message"] or new_ready["reason"]
            )


def new_conditions(
    old: Body, obj: Obj, result: Result, error: ReconcileError | None
) -> list[conditions.Condition]:
    """``Ready``, ``Stalled`` and ``Reconciling`` of a pass (not paused), over ``old``'s."""
    new = conditions.set_condition(
        list(old.get("conditions") or []),
        conditions.READY,
        result.ready,
        "Ready" if result.ready else result.reason,
        result.message,
        generation=obj.generation,
    )
    new = conditions.set_condition(
        new, conditions.STALLED, *stalled(result, error), generation=obj.generation
    )
    return conditions.set_condition(
        new, conditions.RECONCILING, *reconciling(result, error), generation=obj.generation
    )


def _gone(error: ReconcileError, obj: Obj) -> bool:
    """True when ``error`` says ``obj`` itself is gone from the API server: the pass ends
    there, writing nothing (no status to write, nothing to create for it)."""
    if not isinstance(error, ObjectGone) or not error.names(obj.info.kind, obj.namespace, obj.name):
        return False
    log.info("%s: gone from the API server (404); the pass ends", obj.key)
    return True


def stalled(result: Result, error: ReconcileError | None) -> tuple[bool, str, str]:
    """Status, reason and message of the ``Stalled`` condition: True only after a
    permanent error (the user must change the spec, a referenced object or the cloud;
    Kumo re-checks slowly but will not get further alone); False while Kumo makes
    progress or retries a transient error on its own."""
    if isinstance(error, TerminalError):
        return True, error.reason, error.message
    if error is not None:
        return False, "Retrying", f"{error.reason}: Kumo retries on its own"
    if result.ready:
        return False, "Ready", ""
    return False, "Progressing", ""


def reconciling(result: Result, error: ReconcileError | None) -> tuple[bool, str, str]:
    """Status, reason and message of the ``Reconciling`` condition (kstatus'
    "work in progress"): True while the object is not Ready and Kumo gets further on
    its own (building, waiting on the cloud, retrying a transient error); False once it
    is Ready, or Stalled on something only its user can fix."""
    if isinstance(error, TerminalError):
        return False, "Stalled", ""
    if result.ready:
        return False, "Ready", ""
    return True, result.reason, result.message


def prune_none(value: Any) -> Any:
    """Drop ``None`` everywhere: absent and null mean the same in status, and the API
    server would reject a null where the schema says string."""
    if isinstance(value, dict):
        return {
            k: prune_none(v) if isinstance(v, dict | list) else v
            for k, v in value.items()
            if v is not None
        }
    if isinstance(value, list):  # (no call per scalar: a group's status lists every member)
        return [prune_none(v) if isinstance(v, dict | list) else v for v in value]
    return value


def _transitioned(old: dict[str, Any] | None, new: dict[str, Any] | None) -> bool:
    if new is None:
        return False
    if old is None:
        return True
    return (old.get("status"), old.get("reason")) != (new.get("status"), new.get("reason"))
