"""The generic engine: finalizers, errors → conditions, status written once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.engine.errors import ObjectGone, TerminalError, TransientError
from kumo.engine.objects import Body, Context, Key, Obj, Store
from kumo.engine.reconciler import Backoff, Engine
from kumo.engine.result import Result
from tests.unit.fakes import World
from tests.unit.waiting import until

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}


class ScriptedActuator:
    """Returns or raises whatever the test queues up."""

    info = VIRTUAL_MACHINE

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.finalized = 0
        self.released = 0

    async def reconcile(self, ctx: Context, obj: Obj, spec: Any) -> Result:
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def finalize(self, ctx: Context, obj: Obj, spec: Any) -> Result:
        self.finalized += 1
        return self.outcomes.pop(0)

    async def release(self, ctx: Context, obj: Obj, spec: Any) -> Result:
        self.released += 1
        return self.outcomes.pop(0) if self.outcomes else Result(phase="Released")

    def dependents(self, kind: str, body: Body, store: Store) -> list[Key]:
        return []


def run(world: World, actuator: ScriptedActuator, name: str = "vm") -> float | None:
    obj = world.obj(VIRTUAL_MACHINE, name)
    return asyncio.run(Engine().run(actuator, world.ctx(), obj))


def ready(world: World, name: str = "vm") -> dict[str, Any]:
    return world.condition("VirtualMachine", name)


def test_adds_finalizer_and_writes_status_with_generation() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC, generation=3)
    run(world, ScriptedActuator(Result(phase="Running", ready=True, status={"id": "s1"})))
    obj = world.obj(VIRTUAL_MACHINE, "vm")
    assert "virtualmachine.kumo.dev/finalizer" in obj.finalizers
    assert obj.status["id"] == "s1"
    assert obj.status["phase"] == "Running"
    assert obj.status["observedGeneration"] == 3
    assert ready(world)["status"] == "True"
    assert world.events.reasons() == ["Ready"]


def test_unchanged_status_is_not_rewritten_and_transition_time_kept() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    result = Result(phase="Running", ready=True, status={"id": "s1"})
    run(world, ScriptedActuator(result))
    first = world.obj(VIRTUAL_MACHINE, "vm")
    run(world, ScriptedActuator(result))
    second = world.obj(VIRTUAL_MACHINE, "vm")
    assert second.meta["resourceVersion"] == first.meta["resourceVersion"]
    assert len(world.events.events) == 1


def test_invalid_spec_names_the_field_and_touches_nothing() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {"image": "centos79"})
    actuator = ScriptedActuator()
    delay = run(world, actuator)
    condition = ready(world)
    assert condition["status"] == "False"
    assert condition["reason"] == "InvalidSpec"
    assert condition["message"].startswith("spec.flavor: Field required")
    assert delay is not None and delay > 0
    assert actuator.outcomes == []  # reconcile never called


def test_terminal_error_keeps_recorded_id_and_says_permanent() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    run(world, ScriptedActuator(Result(phase="Building", status={"id": "s1"}, requeue_after=2)))
    error = TerminalError("ImageNotFound", "image 'x' not found", field="spec.image")
    run(world, ScriptedActuator(error))
    obj = world.obj(VIRTUAL_MACHINE, "vm")
    assert obj.status["id"] == "s1"
    assert obj.status["phase"] == "Error"
    assert ready(world)["reason"] == "ImageNotFound"
    assert "spec.image: image 'x' not found" in ready(world)["message"]
    assert "permanent" in ready(world)["message"]


def test_a_long_foreign_error_is_cut_in_the_middle_and_keeps_the_retry_hint() -> None:
    """The cloud's text is cut, never the engine's hint of what happens next; the same
    error again writes nothing (the gate is stable)."""
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    noise = "password=hunter2 " + "<p>trace line</p> " * 80
    error = TerminalError("CloudRejected", f"create server: HTTP 400: {noise}", field="spec")
    run(world, ScriptedActuator(error))
    message = ready(world)["message"]
    assert len(message) <= 300
    assert message.startswith("spec: create server: HTTP 400: password=[redacted]")
    assert message.endswith("… (permanent: fix the spec or the cloud; retrying every 60s)")
    assert "hunter2" not in message
    version = world.obj(VIRTUAL_MACHINE, "vm").meta["resourceVersion"]
    run(world, ScriptedActuator(error))
    assert world.obj(VIRTUAL_MACHINE, "vm").meta["resourceVersion"] == version


def test_terminal_error_writes_the_status_it_carries_with_the_error_at_once() -> None:
    """The pass's one status write holds both the kind's observation and the error."""
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    run(world, ScriptedActuator(Result(phase="Building", status={"id": "s1"}, requeue_after=2)))
    before = len(world.kube.patches)
    writes: list[Body] = []
    inner = world.kube.patch_status

    async def counting(obj: Obj, status: Body) -> Body:
        writes.append(status)
        return await inner(obj, status)

    world.kube.patch_status = counting  # type: ignore[method-assign]
    error = TerminalError("ShrinkRefused", "too small", field="spec.size", status={"size": 2})
    run(world, ScriptedActuator(error))
    obj = world.obj(VIRTUAL_MACHINE, "vm")
    assert len(writes) == 1 and len(world.kube.patches) == before
    assert obj.status["size"] == 2 and obj.status["id"] == "s1"
    assert ready(world)["reason"] == "ShrinkRefused"


def test_transient_errors_back_off_exponentially_and_honour_retry_after() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    engine = Engine()
    ctx = world.ctx()
    delays = []
    for _ in range(4):
        actuator = ScriptedActuator(TransientError("CloudUnavailable", "503"))
        delays.append(asyncio.run(engine.run(actuator, ctx, world.obj(VIRTUAL_MACHINE, "vm"))))
    assert delays[0] < delays[1] < delays[2] < delays[3]
    assert "transient" in ready(world)["message"]
    slow = ScriptedActuator(TransientError("CloudUnavailable", "429", retry_after=500))
    assert asyncio.run(engine.run(slow, ctx, world.obj(VIRTUAL_MACHINE, "vm"))) == 500


def test_deletion_finalizes_then_releases_kumo_and_legacy_finalizers() -> None:
    world = World()
    legacy = "virtualmachine.verda.linecorp.com/finalizer"
    world.add(
        VIRTUAL_MACHINE,
        "vm",
        SPEC,
        finalizers=[legacy, "virtualmachine.kumo.dev/finalizer", "someone.else/keep"],
        deletionTimestamp="2026-11-22T00:00:00Z",
    )
    actuator = ScriptedActuator(
        Result.waiting("Deleting", "Deleting", "going"), Result(phase="Deleted")
    )
    assert run(world, actuator) is not None
    assert world.obj(VIRTUAL_MACHINE, "vm").status["phase"] == "Deleting"
    assert run(world, actuator) is None
    assert world.obj(VIRTUAL_MACHINE, "vm").finalizers == ["someone.else/keep"]
    assert actuator.finalized == 2


def test_legacy_finalizer_alone_is_released_too() -> None:
    world = World()
    world.add(
        VIRTUAL_MACHINE,
        "vm",
        SPEC,
        finalizers=["virtualmachine.verda.linecorp.com/finalizer"],
        deletionTimestamp="2026-11-22T00:00:00Z",
    )
    run(world, ScriptedActuator(Result(phase="Deleted")))
    assert world.store.get("VirtualMachine", "default", "vm") is None


def test_orphan_policy_skips_cloud_deletion() -> None:
    world = World()
    world.add(
        VIRTUAL_MACHINE,
        "vm",
        {**SPEC, "deletionPolicy": "Orphan"},
        finalizers=["virtualmachine.kumo.dev/finalizer"],
        deletionTimestamp="2026-11-22T00:00:00Z",
    )
    actuator = ScriptedActuator()
    run(world, actuator)
    assert (actuator.finalized, actuator.released) == (0, 1)
    assert world.store.get("VirtualMachine", "default", "vm") is None
    assert "Orphaned" in world.events.reasons()


def test_an_orphan_release_not_done_keeps_the_finalizer_and_says_what_is_left() -> None:
    """All or nothing: while the kind's release is not done the finalizer stays, the
    object shows Releasing with what is left, and the pass comes back."""
    world = World()
    world.add(
        VIRTUAL_MACHINE,
        "vm",
        {**SPEC, "deletionPolicy": "Orphan"},
        finalizers=["virtualmachine.kumo.dev/finalizer"],
        deletionTimestamp="2026-11-22T00:00:00Z",
    )
    left = Result.waiting("Releasing", "Releasing", "server s1 is busy", after=3.0, id="s1")
    actuator = ScriptedActuator(left, Result(phase="Released"))
    assert run(world, actuator) == 3.0
    obj = world.obj(VIRTUAL_MACHINE, "vm")
    assert obj.finalizers == ["virtualmachine.kumo.dev/finalizer"], "kept until released"
    assert obj.status["phase"] == "Releasing"
    assert (ready(world)["reason"], ready(world)["message"]) == ("Releasing", "server s1 is busy")
    assert "Orphaned" not in world.events.reasons()
    assert run(world, actuator) is None
    assert world.store.get("VirtualMachine", "default", "vm") is None
    assert actuator.released == 2 and "Orphaned" in world.events.reasons()


def test_unexpected_exception_is_reported_as_transient() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    delay = run(world, ScriptedActuator(RuntimeError("boom")))
    assert delay is not None
    assert ready(world)["reason"] == "InternalError"
    assert "boom" in ready(world)["message"]


def test_backoff_survives_thousands_of_failures() -> None:
    backoff = Backoff()
    key = Key("VirtualMachine", "default", "vm")
    backoff.failures[key] = 5_000  # 2**5000 does not fit a float
    assert backoff.transient(key) <= backoff.cap * 1.2
    assert backoff.failures[key] <= 5_001


def test_status_still_written_after_a_very_long_failure_streak() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    engine = Engine()
    engine.backoff.failures[Key("VirtualMachine", "default", "vm")] = 2_000
    actuator = ScriptedActuator(TransientError("CloudUnavailable", "503"))
    delay = asyncio.run(engine.run(actuator, world.ctx(), world.obj(VIRTUAL_MACHINE, "vm")))
    assert delay is not None and delay <= engine.backoff.cap * 1.2
    assert ready(world)["reason"] == "CloudUnavailable"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_terminal_error_holds_until_generation_changes_or_backoff_elapses() -> None:
    clock = Clock()
    backoff = Backoff(clock=clock)
    key = Key("VirtualMachine", "default", "vm")
    assert backoff.held(key, generation=1) is None
    delay = backoff.terminal(key, generation=1)
    assert backoff.held(key, generation=1) == delay
    assert backoff.held(key, generation=2) is None, "a spec change releases the hold"
    clock.now += delay
    assert backoff.held(key, generation=1) is None, "the backoff elapsed"


def test_a_terminal_error_that_may_clear_by_itself_is_held_briefly_then_longer() -> None:
    """A quota freed by a deletion Nova is still finishing: rechecked after ~5 s, then
    ~10, ~20, ... up to the usual terminal hold, and back to ~5 s after a success."""
    clock = Clock()
    backoff = Backoff(clock=clock)
    key = Key("VirtualMachine", "default", "vm")
    holds = [backoff.terminal(key, generation=1, recheck=5.0) for _ in range(6)]
    for n, hold in enumerate(holds[:4]):
        assert 5.0 * 2**n * 0.8 <= hold <= 5.0 * 2**n * 1.2
    assert holds[-1] == backoff.terminal_delay, "capped at the usual hold"
    assert backoff.held(key, generation=1) == holds[-1]
    assert backoff.terminal(key, generation=1) == backoff.terminal_delay, "no recheck: 60 s"
    backoff.reset(key)
    assert backoff.terminal(key, generation=1, recheck=5.0) <= 6.0


def test_engine_says_when_a_quota_error_is_retried() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    engine = Engine()
    error = TerminalError("QuotaExceeded", "create server: Quota exceeded", recheck=5.0)
    asyncio.run(engine.run(ScriptedActuator(error), world.ctx(), world.obj(VIRTUAL_MACHINE, "vm")))
    held = engine.held(world.obj(VIRTUAL_MACHINE, "vm"))
    assert held is not None and held <= 6.0
    ready = world.condition("VirtualMachine", "vm")
    assert ready["reason"] == "QuotaExceeded"
    assert "retrying in " in ready["message"], ready["message"]


def test_engine_records_terminal_hold_and_success_releases_it() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    engine = Engine()
    ctx = world.ctx()
    error = TerminalError("ImageNotFound", "image 'x' not found", field="spec.image")
    asyncio.run(engine.run(ScriptedActuator(error), ctx, world.obj(VIRTUAL_MACHINE, "vm")))
    assert engine.held(world.obj(VIRTUAL_MACHINE, "vm")) is not None
    asyncio.run(
        engine.run(
            ScriptedActuator(Result(phase="Running", ready=True)),
            ctx,
            world.obj(VIRTUAL_MACHINE, "vm"),
        )
    )
    assert engine.held(world.obj(VIRTUAL_MACHINE, "vm")) is None


# -- Stalled: will Kumo get further on its own? -----------------------------------------


def stalled(world: World, name: str = "vm") -> dict[str, Any]:
    return world.condition("VirtualMachine", name, "Stalled")


def age_conditions(world: World, name: str = "vm") -> None:
    """Play time passing: every condition's lastTransitionTime goes back to 2020."""
    for condition in world.stored("VirtualMachine", name)["status"]["conditions"]:
        condition["lastTransitionTime"] = "2020-01-01T00:00:00Z"


def test_stalled_is_false_when_ready_and_while_progressing() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC, generation=2)
    run(world, ScriptedActuator(Result.waiting("Building", "Building", "server is building")))
    assert stalled(world)["status"] == "False"
    assert stalled(world)["reason"] == "Progressing"
    assert stalled(world)["observedGeneration"] == 2
    run(world, ScriptedActuator(Result(phase="Running", ready=True)))
    assert stalled(world)["status"] == "False"
    assert stalled(world)["reason"] == "Ready"
    types = [c["type"] for c in world.obj(VIRTUAL_MACHINE, "vm").status["conditions"]]
    assert types == ["Ready", "Stalled", "Reconciling"]


# -- Reconciling: kstatus' "work in progress" -----------------------------------------


def reconciling(world: World, name: str = "vm") -> dict[str, Any]:
    return world.condition("VirtualMachine", name, "Reconciling")


def test_reconciling_is_true_only_while_kumo_gets_further_on_its_own() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC, generation=3)
    run(world, ScriptedActuator(Result.waiting("Building", "Building", "server is building")))
    assert (reconciling(world)["status"], reconciling(world)["reason"]) == ("True", "Building")
    assert reconciling(world)["message"] == "server is building"
    assert reconciling(world)["observedGeneration"] == 3
    run(world, ScriptedActuator(TransientError("CloudUnavailable", "503 from Nova")))
    assert reconciling(world)["status"] == "True"
    run(world, ScriptedActuator(Result(phase="Running", ready=True)))
    assert (reconciling(world)["status"], reconciling(world)["reason"]) == ("False", "Ready")
    world.add(VIRTUAL_MACHINE, "bad", SPEC)
    run(world, ScriptedActuator(TerminalError("FlavorNotFound", "no such flavor")), name="bad")
    assert (reconciling(world, "bad")["status"], reconciling(world, "bad")["reason"]) == (
        "False",
        "Stalled",
    )
    assert stalled(world, "bad")["status"] == "True"


def test_terminal_error_stalls_with_its_reason_and_the_field_at_fault() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    error = TerminalError("ImageNotFound", "image 'x' not found", field="spec.image")
    run(world, ScriptedActuator(error))
    condition = stalled(world)
    assert condition["status"] == "True"
    assert condition["reason"] == "ImageNotFound"
    assert condition["message"] == "spec.image: image 'x' not found"
    assert ready(world)["status"] == "False"


def test_not_owned_stalls() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    error = TerminalError("NotOwned", "load balancer lb-1 lacks the marker", field="status.id")
    run(world, ScriptedActuator(error))
    assert (stalled(world)["status"], stalled(world)["reason"]) == ("True", "NotOwned")


def test_invalid_spec_stalls() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {"image": "centos79"})
    run(world, ScriptedActuator())
    assert stalled(world)["status"] == "True"
    assert stalled(world)["reason"] == "InvalidSpec"
    assert stalled(world)["message"].startswith("spec.flavor")


def test_transient_error_does_not_stall() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    run(world, ScriptedActuator(TransientError("CloudUnavailable", "503")))
    condition = stalled(world)
    assert condition["status"] == "False"
    assert condition["reason"] == "Retrying"
    assert "CloudUnavailable" in condition["message"]


def test_stalled_transition_time_moves_only_when_its_status_changes() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    run(world, ScriptedActuator(TransientError("CloudUnavailable", "503")))
    age_conditions(world)
    run(world, ScriptedActuator(Result.waiting("Building", "Building", "building")))
    assert stalled(world)["reason"] == "Progressing"
    assert stalled(world)["lastTransitionTime"] == "2020-01-01T00:00:00Z", "False → False"

    run(world, ScriptedActuator(TerminalError("ImageNotFound", "no image", field="spec.image")))
    assert stalled(world)["status"] == "True"
    assert stalled(world)["lastTransitionTime"] != "2020-01-01T00:00:00Z", "False → True"

    age_conditions(world)
    run(world, ScriptedActuator(TerminalError("FlavorNotFound", "no flavor", field="spec.flavor")))
    assert stalled(world)["reason"] == "FlavorNotFound"
    assert stalled(world)["lastTransitionTime"] == "2020-01-01T00:00:00Z", "True → True"

    run(world, ScriptedActuator(Result(phase="Running", ready=True)))
    assert stalled(world)["status"] == "False"
    assert stalled(world)["lastTransitionTime"] != "2020-01-01T00:00:00Z", "True → False"


def test_unchanged_stalled_object_is_not_rewritten() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    error = TerminalError("ImageNotFound", "image 'x' not found", field="spec.image")
    run(world, ScriptedActuator(error))
    first = world.obj(VIRTUAL_MACHINE, "vm").meta["resourceVersion"]
    run(world, ScriptedActuator(error))
    assert world.obj(VIRTUAL_MACHINE, "vm").meta["resourceVersion"] == first


def test_deletion_waiting_does_not_stall_but_a_permanent_error_does() -> None:
    world = World()
    world.add(
        VIRTUAL_MACHINE,
        "vm",
        SPEC,
        finalizers=["virtualmachine.kumo.dev/finalizer"],
        deletionTimestamp="2026-11-22T00:00:00Z",
    )
    run(world, ScriptedActuator(Result.waiting("Deleting", "Deleting", "going")))
    assert (stalled(world)["status"], stalled(world)["reason"]) == ("False", "Progressing")

    class Refusing(ScriptedActuator):
        async def finalize(self, ctx: Context, obj: Obj, spec: Any) -> Result:
            raise TerminalError("CredentialsInvalid", "Secret ns/creds: no key 'clouds.yaml'")

    run(world, Refusing())
    assert (stalled(world)["status"], stalled(world)["reason"]) == ("True", "CredentialsInvalid")


def test_a_finalizer_patch_from_a_stale_cache_is_retried_not_stalled() -> None:
    """The cache lags the API server: the finalizer patch conflicts (409) and the next
    pass, with the newer object, adds it."""
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    stale = world.obj(VIRTUAL_MACHINE, "vm")
    asyncio.run(
        world.kube.patch(VIRTUAL_MACHINE, "default", "vm", {"metadata": {"labels": {"a": "b"}}})
    )
    engine = Engine()
    delay = asyncio.run(engine.run(ScriptedActuator(), world.ctx(), stale))
    assert delay is not None
    assert ready(world)["reason"] == "KubernetesConflict"
    assert stalled(world)["status"] == "False"
    assert world.obj(VIRTUAL_MACHINE, "vm").finalizers == []

    ok = ScriptedActuator(Result(phase="Running", ready=True))
    asyncio.run(engine.run(ok, world.ctx(), world.obj(VIRTUAL_MACHINE, "vm")))
    assert world.obj(VIRTUAL_MACHINE, "vm").finalizers == ["virtualmachine.kumo.dev/finalizer"]
    assert ready(world)["status"] == "True"


class Counting(ScriptedActuator):
    def __init__(self, *outcomes: Any) -> None:
        super().__init__(*outcomes)
        self.reconciled = 0

    async def reconcile(self, ctx: Context, obj: Obj, spec: Any) -> Result:
        self.reconciled += 1
        return await super().reconcile(ctx, obj, spec)


def test_an_object_gone_before_its_finalizer_write_ends_the_pass_and_creates_nothing() -> None:
    """The leak of issue 21: the VM was deleted after the cache read, the finalizer patch
    answered 404, and the pass used to go on and create a server nobody deletes."""
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    cached = world.obj(VIRTUAL_MACHINE, "vm")
    world.store.remove(VIRTUAL_MACHINE.kind, "default", "vm")  # deleted, no finalizer: gone
    actuator = Counting(Result(phase="Running", ready=True, status={"id": "s1"}))
    delay = asyncio.run(Engine().run(actuator, world.ctx(), cached))
    assert delay is None
    assert actuator.reconciled == 0
    assert world.events.events == []


def test_an_object_being_deleted_when_its_finalizer_lands_is_not_reconciled() -> None:
    """Deleted (another finalizer holds it) after the cache read: the patch's answer says
    so, and the pass ends; the next one, from the watch event, finalizes."""
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC, finalizers=["example.com/hold"])
    cached = world.obj(VIRTUAL_MACHINE, "vm")
    asyncio.run(world.kube.delete(VIRTUAL_MACHINE, "default", "vm"))
    cached.meta.pop("resourceVersion", None)  # no optimistic lock: the patch lands
    actuator = Counting(Result(phase="Running", ready=True, status={"id": "s1"}))
    assert asyncio.run(Engine().run(actuator, world.ctx(), cached)) is None
    assert actuator.reconciled == 0
    assert world.obj(VIRTUAL_MACHINE, "vm").deleting


def test_an_object_deleted_during_its_pass_gets_no_status_write_and_no_error() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)

    class DeletedMeanwhile(ScriptedActuator):
        async def reconcile(self, ctx: Context, obj: Obj, spec: Any) -> Result:
            world.store.remove(VIRTUAL_MACHINE.kind, "default", "vm")
            return Result(phase="Running", ready=True, status={"id": "s1"})

    delay = run(world, DeletedMeanwhile())
    assert delay is None or delay >= 0
    assert world.store.get(VIRTUAL_MACHINE.kind, "default", "vm") is None
    assert world.events.events == []


def test_a_write_to_another_gone_object_is_transient_for_this_one() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    run(world, ScriptedActuator(ObjectGone("VirtualMachine", "default", "other")))
    assert ready(world)["reason"] == "ObjectGone"
    assert stalled(world)["status"] == "False"


def test_the_before_finalizer_failpoint_holds_the_first_pass(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The real-server leak test deletes the object inside this hold."""
    monkeypatch.setenv("KUMO_FAILPOINTS", "before-finalizer=0.2")
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    actuator = Counting()

    async def scenario() -> float | None:
        cached = world.obj(VIRTUAL_MACHINE, "vm")
        task = asyncio.create_task(Engine().run(actuator, world.ctx(), cached))
        await until(lambda: "failpoint before-finalizer" in caplog.text, "the pass is held")
        assert not task.done() and not world.obj(VIRTUAL_MACHINE, "vm").finalizers
        world.store.remove(VIRTUAL_MACHINE.kind, "default", "vm")
        return await asyncio.wait_for(task, 5)

    assert asyncio.run(scenario()) is None
    assert actuator.reconciled == 0, "deleted inside the hold: nothing was reconciled"
