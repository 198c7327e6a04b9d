"""The controller loop: events → cache → queue, dependents, no ghosts after deletion."""

from __future__ import annotations

import asyncio
import copy
import time
from typing import Any

from kumo.api.kinds import VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.engine.objects import Key
from kumo.engine.queue import WorkQueue
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


def _config_map(data: dict[str, str] | None) -> dict[str, Any]:
    return {"metadata": {"name": "boot", "namespace": "default"}, "data": data or {}}


def test_drift_does_not_defeat_the_terminal_backoff() -> None:
    """A VM stuck in a permanent error is not reconciled against the cloud at every
    drift pass; a spec change (new generation) or the elapsed backoff lets it through."""
    ctl = controller()
    key = Key("VirtualMachine", "default", "vm")
    spec = {**SPEC, "initScript": {"configMapRef": {"name": "boot", "key": "s"}}}
    ctl.store.put("ConfigMap", _config_map({"s": "echo hi"}))
    ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "vm", spec))
    asyncio.run(ctl.process(key))
    ctl.clouds.cloud.settle()
    asyncio.run(ctl.process(key))
    assert ctl.store.get("VirtualMachine", "default", "vm")["status"]["phase"] == "Running"

    ctl.store.remove("ConfigMap", "default", "boot")  # permanent: ConfigMapNotFound
    ctl.queue = WorkQueue()  # forget the earlier passes' requeues
    asyncio.run(ctl.process(key))
    body = ctl.store.get("VirtualMachine", "default", "vm")
    assert body["status"]["conditions"][0]["reason"] == "ConfigMapNotFound"
    # The server is ACTIVE but the object says Error: drift flags it every pass.
    assert asyncio.run(ctl.detect_drift()) == []
    assert ctl.queue._due[key] > time.monotonic() + 30, "drift moved the retry earlier"

    body["metadata"]["generation"] = 2  # the user changed the spec
    assert asyncio.run(ctl.detect_drift()) == [key]


def test_terminal_hold_ends_when_its_backoff_elapses() -> None:
    ctl = controller()
    now = [1_000.0]
    ctl.engine.backoff.clock = lambda: now[0]
    key = Key("VirtualMachine", "default", "vm")
    spec = {**SPEC, "initScript": {"configMapRef": {"name": "boot", "key": "s"}}}
    ctl.store.put("ConfigMap", _config_map({"s": "echo hi"}))
    ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "vm", spec))
    asyncio.run(ctl.process(key))
    ctl.clouds.cloud.settle()
    asyncio.run(ctl.process(key))
    ctl.store.remove("ConfigMap", "default", "boot")
    asyncio.run(ctl.process(key))
    assert asyncio.run(ctl.detect_drift()) == []
    now[0] += ctl.engine.backoff.terminal_delay + 1
    assert asyncio.run(ctl.detect_drift()) == [key]
