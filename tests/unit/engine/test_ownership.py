"""engine/ownership.py's import gate: a resource without any Kumo marker is imported or
observed only where ``Context.import_gate`` allows it (the shared default cloud asks the
namespace's permission, runtime/imports.py); refused, nothing is changed or read further.
(End to end through the engine with the VirtualMachine kind on the in-memory Nova.)"""

from __future__ import annotations

import copy
from typing import Any

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.cloud.model import marker_tags
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from tests.unit.fakes import World

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb", "description": "web"}
WHY = "namespace default may not (kubectl label namespace default kumo.dev/import-unmarked=true)"


class Gate:
    """An import gate that refuses (``why``) or allows (None), counting the questions."""

    def __init__(self, why: str | None = WHY) -> None:
        self.why = why
        self.asked = 0

    async def __call__(self) -> str | None:
        self.asked += 1
        return self.why


def world_with(gate: Gate) -> tuple[World, str]:
    world = World()
    world.import_gate = gate
    server = world.cloud.add_server("legacy-web", tags=["team-a"], description="old")
    world.cloud.settle()
    return world, server.id


def ready(world: World, name: str = "vm") -> dict[str, Any]:
    return world.condition("VirtualMachine", name)


def test_a_refused_import_changes_nothing_and_says_how_to_allow_it() -> None:
    gate = Gate()
    world, sid = world_with(gate)
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": sid}})
    before = copy.deepcopy(world.cloud.servers)
    world.run(VirtualMachineActuator(), "vm")
    condition = ready(world)
    assert (condition["status"], condition["reason"]) == ("False", "ImportNotAllowed")
    assert condition["message"].startswith(f"spec.import: server {sid} carries no Kumo marker")
    assert "kubectl label namespace default kumo.dev/import-unmarked=true" in condition["message"]
    assert world.cloud.servers == before, "not marked, not changed"
    assert world.cloud.calls.count("create_server") == 0, "nothing built in its stead"
    assert "id" not in world.obj(VIRTUAL_MACHINE, "vm").status
    assert gate.asked == 1


def test_a_refused_observe_reports_no_drift_of_the_resource() -> None:
    world, sid = world_with(Gate())
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": sid}, "managementPolicy": "Observe"})
    world.run(VirtualMachineActuator(), "vm")
    status = world.obj(VIRTUAL_MACHINE, "vm").status
    assert ready(world)["reason"] == "ImportNotAllowed"
    assert "drift" not in status and "id" not in status, "nothing of the server was reported"


def test_an_allowed_import_goes_through() -> None:
    gate = Gate(None)
    world, sid = world_with(gate)
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": sid}})
    world.run(VirtualMachineActuator(), "vm")
    assert world.obj(VIRTUAL_MACHINE, "vm").status["id"] == sid
    assert set(marker_tags("uid-vm")) <= set(world.cloud.servers[sid]["tags"])
    assert gate.asked == 1


def test_once_imported_the_object_s_own_resource_needs_no_permission() -> None:
    """Permission withdrawn after the import: the server carries the object's marker
    now, it is the object's own."""
    gate = Gate(None)
    world, sid = world_with(gate)
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": sid}})
    world.run(VirtualMachineActuator(), "vm")
    gate.why = WHY
    world.run(VirtualMachineActuator(), "vm")
    assert ready(world)["reason"] != "ImportNotAllowed"
    assert gate.asked == 1, "not asked again"


def test_observing_asks_on_every_pass_so_a_withdrawn_permission_stops_it() -> None:
    gate = Gate(None)
    world, sid = world_with(gate)
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": sid}, "managementPolicy": "Observe"})
    world.run(VirtualMachineActuator(), "vm")
    assert world.obj(VIRTUAL_MACHINE, "vm").status["phase"] == "Observed"
    gate.why = WHY
    world.run(VirtualMachineActuator(), "vm")
    assert ready(world)["reason"] == "ImportNotAllowed"
    assert world.cloud.servers[sid]["tags"] == ["team-a"], "never marked"


def test_another_object_s_resource_is_already_owned_whatever_the_gate_says() -> None:
    gate = Gate()
    world, sid = world_with(gate)
    world.cloud.servers[sid]["tags"] = marker_tags("uid-other")
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": sid}})
    world.run(VirtualMachineActuator(), "vm")
    assert ready(world)["reason"] == "AlreadyOwned"
    assert gate.asked == 0


def test_a_released_resource_counts_as_unmarked() -> None:
    """The orphan mark belongs to no object: importing a released server on the shared
    default cloud needs the permission too (else any namespace could take it)."""
    gate = Gate()
    world, sid = world_with(gate)
    world.cloud.servers[sid]["tags"] = ["kumo-orphan=uid-gone"]
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "import": {"id": sid}})
    world.run(VirtualMachineActuator(), "vm")
    assert ready(world)["reason"] == "ImportNotAllowed"
    assert world.cloud.servers[sid]["tags"] == ["kumo-orphan=uid-gone"]


def test_without_import_the_gate_is_never_asked() -> None:
    gate = Gate()
    world, _ = world_with(gate)
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.run(VirtualMachineActuator(), "vm")
    assert world.cloud.calls.count("create_server") == 1
    assert gate.asked == 0
