"""Pause (``kumo.dev/paused``) and reconcile-now (``kumo.dev/reconcile-requested-at``):
decided once in the engine, for every kind, the composite ones included."""

from __future__ import annotations

from typing import Any

import pytest

from kumo.api.kinds import VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.engine import conditions, pause
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Obj
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.kinds.virtualmachinegroup.actuator import VirtualMachineGroupActuator
from tests.unit.engine.test_reconciler import SPEC, ScriptedActuator
from tests.unit.fakes import World, make_body
from tests.unit.kinds.loadbalancer.test_actuator import cloud, converge, members, new_world, run

PAUSED = {"kumo.dev/paused": "true"}
FINALIZER = "virtualmachine.kumo.dev/finalizer"


def annotate(world: World, kind: str, name: str, **annotations: str | None) -> None:
    meta = world.stored(kind, name)["metadata"]
    current = dict(meta.get("annotations") or {})
    current.update(annotations)
    meta["annotations"] = {k: v for k, v in current.items() if v is not None}


def condition(world: World, type_: str, name: str = "vm") -> dict[str, Any]:
    return world.condition("VirtualMachine", name, type_)


def ready_vm(world: World) -> None:
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.settle(VirtualMachineActuator(), "vm")
    assert condition(world, "Ready")["status"] == "True"


@pytest.mark.parametrize(
    ("value", "paused"),
    [
        ("true", True),
        ("True", True),
        (" TRUE ", True),
        ("false", False),
        ("", False),
        (None, False),
    ],
)
def test_only_true_pauses(value: str | None, paused: bool) -> None:
    annotations = {} if value is None else {"kumo.dev/paused": value}
    body = make_body(VIRTUAL_MACHINE, "vm", SPEC, annotations=annotations)
    assert pause.is_paused(Obj(VIRTUAL_MACHINE, body)) is paused


def test_a_paused_vm_whose_server_went_stays_without_one_and_says_so() -> None:
    world = World()
    ready_vm(world)
    before = world.obj(VIRTUAL_MACHINE, "vm").status
    annotate(world, "VirtualMachine", "vm", **PAUSED)
    world.cloud.servers.clear()  # deleted by hand while paused
    for _ in range(3):
        assert world.run(VirtualMachineActuator(), "vm") is None
    assert world.cloud.servers == {}
    assert world.cloud.calls.count("create_server") == 1, "only the first create"
    status = world.obj(VIRTUAL_MACHINE, "vm").status
    assert status["phase"] == "Paused"
    assert {"field": "server", "desired": "present", "actual": "absent"} in status["drift"]
    assert status["id"] == before["id"], "the last truth, not a dry pass's invention"
    paused = condition(world, "Paused")
    assert (paused["status"], paused["reason"]) == ("True", "Paused")
    assert "would create server" in paused["message"]
    assert condition(world, "Ready") == conditions.get_condition(before["conditions"], "Ready")
    for type_ in ("Reconciling", "Stalled"):  # Ready when paused: kstatus reads Current
        assert (condition(world, type_)["status"], condition(world, type_)["reason"]) == (
            "False",
            "Paused",
        )
    assert status["observedGeneration"] == 1
    assert world.events.reasons().count("Paused") == 1

    annotate(world, "VirtualMachine", "vm", **{"kumo.dev/paused": None})
    world.run(VirtualMachineActuator(), "vm")
    assert len(world.cloud.servers) == 1, "unpaused: the server is made again"
    status = world.obj(VIRTUAL_MACHINE, "vm").status
    assert conditions.get_condition(status["conditions"], "Paused") is None
    assert "drift" not in status and status["phase"] != "Paused"
    assert "Resumed" in world.events.reasons()


def test_a_paused_new_object_gets_no_finalizer_and_no_server() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC, annotations=PAUSED)
    assert world.run(VirtualMachineActuator(), "vm") is None
    obj = world.obj(VIRTUAL_MACHINE, "vm")
    assert obj.finalizers == [] and world.cloud.servers == {}
    assert condition(world, "Ready")["status"] == "Unknown"
    assert condition(world, "Paused")["status"] == "True"
    stalled = condition(world, "Stalled")  # not Ready: kstatus reads Failed, not InProgress
    assert (stalled["status"], stalled["reason"]) == ("True", "Paused")
    assert "kumo.dev/paused" in stalled["message"]
    assert condition(world, "Reconciling")["status"] == "False"


def test_a_paused_object_that_was_stalled_stays_stalled_for_its_pause_then_for_its_error() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.run(ScriptedActuator(TerminalError("FlavorNotFound", "no such flavor")), "vm")
    assert condition(world, "Stalled")["reason"] == "FlavorNotFound"
    annotate(world, "VirtualMachine", "vm", **PAUSED)
    world.run(ScriptedActuator(TerminalError("FlavorNotFound", "no such flavor")), "vm")
    assert "a pass would fail: FlavorNotFound" in condition(world, "Paused")["message"]
    assert (condition(world, "Stalled")["status"], condition(world, "Stalled")["reason"]) == (
        "True",
        "Paused",
    )
    assert condition(world, "Ready")["reason"] == "FlavorNotFound", "Ready's last truth"
    annotate(world, "VirtualMachine", "vm", **{"kumo.dev/paused": None})
    world.run(ScriptedActuator(TerminalError("FlavorNotFound", "no such flavor")), "vm")
    assert condition(world, "Stalled")["reason"] == "FlavorNotFound"


def test_deleting_a_paused_object_keeps_its_finalizer_and_its_server() -> None:
    world = World()
    ready_vm(world)
    annotate(world, "VirtualMachine", "vm", **PAUSED)
    world.delete("VirtualMachine", "vm", "2026-11-22T01:00:00Z")
    assert world.run(VirtualMachineActuator(), "vm") is None
    assert FINALIZER in world.obj(VIRTUAL_MACHINE, "vm").finalizers
    assert len(world.cloud.servers) == 1
    assert "deletion waits" in condition(world, "Paused")["message"]
    assert world.cloud.calls.count("delete_server") == 0
    annotate(world, "VirtualMachine", "vm", **{"kumo.dev/paused": None})
    world.run(VirtualMachineActuator(), "vm")
    assert world.cloud.calls.count("delete_server") == 1, "unpaused: the deletion goes on"
    world.cloud.settle()
    world.run(VirtualMachineActuator(), "vm")
    assert world.store.get("VirtualMachine", "default", "vm") is None


def test_a_paused_object_with_an_invalid_spec_says_so_and_keeps_ready() -> None:
    world = World()
    ready_vm(world)
    annotate(world, "VirtualMachine", "vm", **PAUSED)
    del world.stored("VirtualMachine", "vm")["spec"]["flavor"]
    world.run(VirtualMachineActuator(), "vm")
    assert "spec is invalid (InvalidSpec: spec.flavor" in condition(world, "Paused")["message"]
    assert condition(world, "Ready")["status"] == "True"


def test_a_paused_group_creates_and_deletes_no_member() -> None:
    spec = {"replicas": 2, "haPolicy": "soft", "template": {"image": "c", "flavor": "f"}}
    world = World()
    world.add(VIRTUAL_MACHINE_GROUP, "g", spec)
    actuator = VirtualMachineGroupActuator()
    world.run(actuator, "g")
    assert len(world.store.list("VirtualMachine")) == 2
    annotate(world, "VirtualMachineGroup", "g", **PAUSED)
    world.stored("VirtualMachineGroup", "g")["spec"]["replicas"] = 3
    world.run(actuator, "g")
    assert len(world.store.list("VirtualMachine")) == 2
    status = world.obj(VIRTUAL_MACHINE_GROUP, "g").status
    assert any(d["field"] == "VirtualMachine" for d in status["drift"])
    world.stored("VirtualMachineGroup", "g")["spec"]["replicas"] = 1
    world.run(actuator, "g")
    assert not any(
        b["metadata"].get("deletionTimestamp") for b in world.store.list("VirtualMachine")
    )
    annotate(world, "VirtualMachineGroup", "g", **{"kumo.dev/paused": None})
    world.stored("VirtualMachineGroup", "g")["spec"]["replicas"] = 3
    world.run(actuator, "g")
    assert len(world.store.list("VirtualMachine")) == 3


def test_a_paused_load_balancer_keeps_its_members_as_they_are() -> None:
    world = new_world(vms=3)
    converge(world)
    cloud(world).calls.clear()
    annotate(world, "LoadBalancer", "web", **PAUSED)
    world.store.remove("VirtualMachine", "default", "vm-1")
    assert run(world) is None
    assert members(world, 80) == ["vm-0", "vm-1", "vm-2"]
    writes = [c for c in cloud(world).calls if not c.startswith(("fetch", "list", "get"))]
    assert writes == []
    annotate(world, "LoadBalancer", "web", **{"kumo.dev/paused": None})
    converge(world)
    assert members(world, 80) == ["vm-0", "vm-2"]


def test_a_reconcile_request_is_recorded_once_served_even_after_an_error() -> None:
    world = World()
    ready_vm(world)
    annotate(world, "VirtualMachine", "vm", **{"kumo.dev/reconcile-requested-at": "one"})
    world.run(VirtualMachineActuator(), "vm")
    assert world.obj(VIRTUAL_MACHINE, "vm").status["lastHandledReconcileAt"] == "one"
    annotate(world, "VirtualMachine", "vm", **{"kumo.dev/reconcile-requested-at": "two"})
    world.run(ScriptedActuator(TerminalError("ImageNotFound", "gone")), "vm")
    assert world.obj(VIRTUAL_MACHINE, "vm").status["lastHandledReconcileAt"] == "two"
    annotate(world, "VirtualMachine", "vm", **{"kumo.dev/reconcile-requested-at": "three"})
    annotate(world, "VirtualMachine", "vm", **PAUSED)
    world.run(VirtualMachineActuator(), "vm")
    assert world.obj(VIRTUAL_MACHINE, "vm").status["lastHandledReconcileAt"] == "three"
