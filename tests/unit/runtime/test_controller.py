"""The controller loop: events → cache → queue, dependents, no ghosts after deletion."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from kumo.api.kinds import VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.engine.objects import Key
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.kinds.virtualmachinegroup.actuator import VirtualMachineGroupActuator
from kumo.runtime.controller import Controller
from tests.unit.fakes import FakeKube, FakeNova, make_body

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}


class OneCloud:
    def __init__(self) -> None:
        self.cloud = FakeNova()

    async def for_namespace(self, namespace: str) -> Any:
        return self.cloud


def controller() -> Controller:
    ctl = Controller([VirtualMachineActuator(), VirtualMachineGroupActuator()], None, OneCloud())
    ctl.kube = FakeKube(ctl.store)
    ctl.events.emit = lambda *args: None  # type: ignore[method-assign]
    return ctl


def test_event_enqueues_object_and_its_owner() -> None:
    ctl = controller()
    group = make_body(VIRTUAL_MACHINE_GROUP, "g", {"template": SPEC})
    ctl.observe("VirtualMachineGroup", "ADDED", group)
    member = make_body(
        VIRTUAL_MACHINE,
        "g-1",
        SPEC,
        ownerReferences=[{"kind": "VirtualMachineGroup", "name": "g", "uid": "uid-g"}],
    )
    ctl.observe("VirtualMachine", "ADDED", member)
    assert len(ctl.queue) == 2


def test_status_only_echo_does_not_requeue_the_object() -> None:
    ctl = controller()
    body = make_body(VIRTUAL_MACHINE, "vm", SPEC)
    ctl.observe("VirtualMachine", "ADDED", body)
    key = asyncio.run(ctl.queue.get())
    ctl.queue.done(key)
    echoed = copy.deepcopy(body)
    echoed["metadata"]["resourceVersion"] = "5"
    echoed["status"] = {"phase": "Building"}
    ctl.observe("VirtualMachine", "MODIFIED", echoed)
    assert len(ctl.queue) == 0
    changed = copy.deepcopy(echoed)
    changed["spec"] = {**SPEC, "description": "new"}
    changed["metadata"]["resourceVersion"] = "6"
    ctl.observe("VirtualMachine", "MODIFIED", changed)
    assert len(ctl.queue) == 1


def test_finalized_object_does_not_linger_in_the_cache() -> None:
    ctl = controller()
    body = make_body(
        VIRTUAL_MACHINE,
        "vm",
        SPEC,
        finalizers=["virtualmachine.kumo.dev/finalizer"],
        deletionTimestamp="2026-11-22T00:00:00Z",
    )
    ctl.observe("VirtualMachine", "MODIFIED", body)
    asyncio.run(ctl.process(Key("VirtualMachine", "default", "vm")))
    assert ctl.store.get("VirtualMachine", "default", "vm") is None


class ListingKube:
    """An API server that only lists and gets (what the startup barrier uses)."""

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.objects = {(b["kind"], b["metadata"]["name"]): b for b in bodies}
        self.gets = 0

    async def list(self, info: Any, namespace: str | None = None) -> list[dict[str, Any]]:
        return [copy.deepcopy(b) for (kind, _), b in self.objects.items() if kind == info.kind]

    async def get(self, info: Any, namespace: str, name: str) -> dict[str, Any] | None:
        self.gets += 1
        body = self.objects.get((info.kind, name))
        return copy.deepcopy(body) if body else None


def test_prime_fills_the_cache_with_every_kind_before_work_starts() -> None:
    ctl = controller()
    group = make_body(VIRTUAL_MACHINE_GROUP, "g", {"template": SPEC, "replicas": 2})
    members = [make_body(VIRTUAL_MACHINE, f"g-{i}", SPEC) for i in range(2)]
    ctl.kube = ListingKube(group, *members)
    asyncio.run(ctl.prime())
    assert len(ctl.store.list("VirtualMachine")) == 2
    assert ctl.store.get("VirtualMachineGroup", "default", "g") is not None
    assert len(ctl.queue) == 0, "priming enqueues nothing: only the leader works"


def test_an_object_deleted_after_the_listing_is_not_reconciled_as_a_ghost() -> None:
    ctl = controller()
    vm = make_body(VIRTUAL_MACHINE, "gone", SPEC)
    api = ListingKube(vm)
    ctl.kube = api
    asyncio.run(ctl.prime())
    del api.objects[("VirtualMachine", "gone")]  # deleted before the watch started
    asyncio.run(ctl.process(Key("VirtualMachine", "default", "gone")))
    assert ctl.store.get("VirtualMachine", "default", "gone") is None
    assert ctl.clouds.cloud.servers == {}, "nothing was created for it"


def test_an_object_seen_by_the_watch_needs_no_extra_get() -> None:
    ctl = controller()
    vm = make_body(VIRTUAL_MACHINE, "vm", SPEC)
    api = ListingKube(vm)
    ctl.kube = api
    asyncio.run(ctl.prime())
    ctl.observe("VirtualMachine", None, vm)  # kopf's own listing confirms it
    ctl.kube = FakeKube(ctl.store)
    asyncio.run(ctl.process(Key("VirtualMachine", "default", "vm")))
    assert api.gets == 0


def test_stop_lets_a_reconcile_in_flight_finish() -> None:
    async def scenario() -> list[str]:
        ctl = controller()
        steps: list[str] = []
        started = asyncio.Event()

        async def slow_process(key: Key) -> None:
            started.set()
            await asyncio.sleep(0.2)
            steps.append(f"finished {key.name}")

        ctl.process = slow_process  # type: ignore[method-assign]
        ctl.drift_seconds = 3600
        ctl.queue.add(Key("VirtualMachine", "default", "a"))
        ctl.start()
        await started.wait()
        await ctl.stop(grace=5)
        steps.append("stopped")
        ctl.queue.add(Key("VirtualMachine", "default", "b"))
        await asyncio.sleep(0.05)
        return steps

    assert asyncio.run(scenario()) == ["finished a", "stopped"]
