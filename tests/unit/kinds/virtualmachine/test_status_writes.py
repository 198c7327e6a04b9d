"""A VirtualMachine pass writes status once, at its end (the engine); before that only
the ID record right after a create or a delete (crash safety), nothing else."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.engine.objects import Body, Obj
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from tests.unit.fakes import World

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb", "initScript": {"value": "ls"}}
ENGINE_KEYS = {"phase", "conditions", "observedGeneration"}


def recording(world: World) -> list[Body]:
    """Every status patch from now on, in order."""
    writes: list[Body] = []
    patch = world.kube.patch_status

    async def recorded(obj: Obj, status: Body) -> Body:
        writes.append(dict(status))
        return await patch(obj, status)

    world.kube.patch_status = recorded  # type: ignore[method-assign]
    return writes


def reconcile(world: World) -> None:
    world.run(VirtualMachineActuator(), "vm")


def status(world: World) -> dict[str, Any]:
    return world.obj(VIRTUAL_MACHINE, "vm").status


def running(spec: Body | None = None) -> World:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", spec or SPEC)
    world.settle(VirtualMachineActuator(), "vm")
    return world


def the_engines(write: Body) -> bool:
    return set(write) >= ENGINE_KEYS


def test_create_records_the_id_then_the_engine_writes_the_rest() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    writes = recording(world)
    reconcile(world)
    record, final = writes
    assert record == {"id": status(world)["id"]}
    assert the_engines(final)


def test_a_pass_on_a_building_or_running_server_writes_once() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    writes = recording(world)
    reconcile(world)  # still building: nothing new to say
    world.cloud.settle()
    reconcile(world)  # running
    server = world.cloud.servers[status(world)["id"]]
    server["description"] = "changed in the web UI"
    reconcile(world)  # corrected in place: the status does not change
    assert len(writes) == 1 and the_engines(writes[0])


def test_a_spec_replacement_forgets_the_id_with_replacing_id_then_the_engine_writes() -> None:
    world = running()
    old = status(world)["id"]
    world.stored("VirtualMachine", "vm")["spec"] = {**SPEC, "initScript": {"value": "new"}}
    writes = recording(world)
    reconcile(world)
    record, final = writes
    assert record == {"id": None, "replacingId": old}
    assert the_engines(final) and final["replacingId"] == old
    assert status(world)["phase"] == "Replacing"


def test_a_server_deleted_behind_kumos_back_forgets_the_id_only() -> None:
    world = running()
    old = status(world)["id"]
    asyncio.run(world.cloud.delete_server(old))
    writes = recording(world)
    reconcile(world)
    record, final = writes
    assert record == {"id": None}
    assert the_engines(final) and "replacingId" not in final


def ago(seconds: float) -> str:
    then = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds)
    return then.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("grace_over", [False, True])
def test_an_error_server_is_reported_then_replaced_with_its_counters_recorded(
    grace_over: bool,
) -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    world.cloud.settle("ERROR")
    reconcile(world)  # reported: the grace period starts
    old = status(world)["id"]
    if grace_over:
        ready = world.stored("VirtualMachine", "vm")["status"]["conditions"][0]
        ready["lastTransitionTime"] = ago(61)
    writes = recording(world)
    reconcile(world)
    if not grace_over:
        assert writes == [] and old in world.cloud.live()
        return
    record, final = writes
    assert record["id"] is None and record["replacingId"] == old
    assert record["errorReplacements"] == 1 and record["lastErrorReplacement"]
    assert the_engines(final) and final["errorReplacements"] == 1
