"""The current pass (engine/trace.py): its global request ID, what it keeps of the
cloud's answers, the context variable, and what the engine and events make of it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.engine import trace
from kumo.engine.objects import Context, Obj
from kumo.engine.reconciler import Engine
from kumo.engine.result import Result
from tests.unit.engine.test_reconciler import SPEC, ScriptedActuator
from tests.unit.fakes import World


def test_a_global_request_id_is_what_oslo_middleware_accepts() -> None:
    ids = {trace.new_request_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(trace.GLOBAL_REQUEST_ID.match(i) for i in ids)


def test_a_pass_keeps_the_latest_ids_and_counts_every_request() -> None:
    opened = trace.Pass("VirtualMachine", "ns", "vm", "uid-1")
    for i in range(trace.MAX_REQUEST_IDS + 5):
        opened.saw(f"req-{i}")
    opened.saw(None)  # an answer without an ID still counts
    assert opened.requests == trace.MAX_REQUEST_IDS + 6
    assert opened.request_ids == [f"req-{i}" for i in range(5, trace.MAX_REQUEST_IDS + 5)]


def test_the_fields_name_the_object_the_pass_and_the_ids() -> None:
    opened = trace.Pass("VirtualMachine", "ns", "vm", "uid-1")
    opened.saw("req-local")
    assert opened.fields() == {
        "object": {"kind": "VirtualMachine", "namespace": "ns", "name": "vm", "uid": "uid-1"},
        "pass": opened.request_id,
        "request_ids": ["req-local"],
    }


def test_running_makes_a_pass_current_and_restores_the_one_before() -> None:
    assert trace.current() is None
    assert trace.event_tail() == ""
    with trace.running("VirtualMachine", "ns", "a", "u-a") as outer:
        assert trace.current() is outer
        assert trace.event_tail() == f" (request {outer.request_id})"
        with trace.running("VirtualMachine", "ns", "b", "u-b") as inner:
            assert trace.current() is inner
        assert trace.current() is outer
    assert trace.current() is None


def test_concurrent_tasks_each_see_their_own_pass() -> None:
    async def one(name: str) -> tuple[str, str]:
        with trace.running("VirtualMachine", "ns", name, name) as opened:
            await asyncio.sleep(0)
            seen = trace.current()
            assert seen is not None
            return opened.request_id, seen.request_id

    async def both() -> list[tuple[str, str]]:
        return list(await asyncio.gather(one("a"), one("b")))

    (a, seen_a), (b, seen_b) = asyncio.run(both())
    assert (seen_a, seen_b) == (a, b) and a != b


class Watching(ScriptedActuator):
    """Records the pass current while the actuator runs, and makes one 'request'."""

    seen: trace.Pass | None = None

    async def reconcile(self, ctx: Context, obj: Obj, spec: Any) -> Result:
        self.seen = trace.current()
        assert self.seen is not None
        self.seen.saw("req-from-nova")
        return await super().reconcile(ctx, obj, spec)


def test_the_engine_runs_each_pass_under_its_own_id_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    actuator = Watching(Result(phase="Running", ready=True), Result(phase="Running", ready=True))
    ids = []
    for _ in range(2):
        obj = world.obj(VIRTUAL_MACHINE, "vm")
        with caplog.at_level(logging.INFO, logger="kumo.engine"):
            asyncio.run(Engine().run(actuator, world.ctx(), obj))
        assert actuator.seen is not None
        assert (actuator.seen.kind, actuator.seen.name, actuator.seen.uid) == (
            "VirtualMachine",
            "vm",
            obj.uid,
        )
        ids.append(actuator.seen.request_id)
    assert ids[0] != ids[1], "one global request ID per pass"
    assert trace.current() is None
    lines = [r.getMessage() for r in caplog.records if "cloud request" in r.getMessage()]
    assert len(lines) == 2 and ids[0] in lines[0] and "1 cloud request(s)" in lines[0]
