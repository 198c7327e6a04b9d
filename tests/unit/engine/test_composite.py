"""The composite lifecycle: anchor → observe → decide → apply → report, in that order,
once each; an anchor's Wait ends the pass before anything is read or written; a busy
cloud's refusal in apply is the kind's Wait."""

from __future__ import annotations

import asyncio

import pytest

from kumo.engine import composite
from kumo.engine.errors import TransientError
from kumo.engine.lifecycle import Wait
from kumo.engine.result import Result


def kind(log: list[str], anchor: str | Wait) -> composite.Composite[str, list[str], list[str]]:
    async def make_anchor() -> str | Wait:
        log.append("anchor")
        return anchor

    async def observe(found: str) -> list[str]:
        log.append(f"observe {found}")
        return ["a", "b"]

    def decide(seen: list[str]) -> list[str]:
        log.append("decide")
        return [f"write {x}" for x in seen]

    async def apply(seen: list[str], writes: list[str]) -> list[str]:
        log.extend(writes)
        return [*seen, "c"]

    def report(after: list[str], writes: list[str]) -> Result:
        log.append("report")
        return Result(phase="Ready", ready=True, status={"parts": after, "writes": len(writes)})

    return composite.Composite(make_anchor, observe, decide, apply, report)


def test_one_pass_runs_the_steps_in_order_and_reports_what_apply_left() -> None:
    log: list[str] = []
    result = asyncio.run(composite.reconcile_composite(kind(log, "sg-1")))
    assert log == ["anchor", "observe sg-1", "decide", "write a", "write b", "report"]
    assert result.ready and result.status == {"parts": ["a", "b", "c"], "writes": 2}


def test_an_anchor_that_waits_ends_the_pass_before_any_read_or_write() -> None:
    log: list[str] = []
    wait = Wait("load balancer is being created", after=1.0, status={"id": "lb-1"})
    result = asyncio.run(composite.reconcile_composite(kind(log, wait)))
    assert log == ["anchor"]
    assert not result.done and result.requeue_after == 1.0
    assert result.message == "load balancer is being created"


def busy_kind(
    log: list[str], refusal: Exception, busy: bool = True
) -> composite.Composite[str, list[str], list[str]]:
    """A kind whose apply the cloud refuses with ``refusal``."""
    base = kind(log, "lb-1")

    async def apply(seen: list[str], writes: list[str]) -> list[str]:
        log.append("apply")
        raise refusal

    def waiting(seen: list[str], writes: list[str]) -> Wait:
        log.append("busy")
        return Wait("load balancer busy, will retry", after=1.0, status={"parts": seen})

    base.apply = apply
    base.busy = waiting if busy else None
    return base


def test_a_busy_cloud_in_apply_is_the_kinds_wait_not_an_error() -> None:
    """Octavia's 409 while PENDING_*: the engine turns it into the kind's Wait."""
    log: list[str] = []
    refusal = TransientError("CloudBusy", "load balancer lb-1 is PENDING_UPDATE")
    result = asyncio.run(composite.reconcile_composite(busy_kind(log, refusal)))
    assert log == ["anchor", "observe lb-1", "decide", "apply", "busy"]
    assert not result.done and result.requeue_after == 1.0
    assert (result.message, result.status) == (
        "load balancer busy, will retry",
        {"parts": ["a", "b"]},
    )


def test_other_errors_and_a_kind_without_busy_stay_errors() -> None:
    busy = TransientError("CloudBusy", "409")
    for refusal, has_busy in ((TransientError("CloudUnavailable", "503"), True), (busy, False)):
        log: list[str] = []
        with pytest.raises(TransientError) as raised:
            asyncio.run(composite.reconcile_composite(busy_kind(log, refusal, has_busy)))
        assert raised.value is refusal and "busy" not in log
