"""The composite lifecycle: anchor → observe → decide → apply → report, in that order,
once each; an anchor's Wait ends the pass before anything is read or written."""

from __future__ import annotations

import asyncio

from kumo.engine import composite
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
