"""VirtualMachine.spec.keyName: the KeyPair object of that name in the VM's namespace, once
Ready (its Nova name), else the cloud's keypair of that name, as before."""

from __future__ import annotations

from typing import Any

from kumo.api.kinds import KEY_PAIR, VIRTUAL_MACHINE
from kumo.engine.objects import Key
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from tests.unit.fakes import World

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb", "keyName": "deploy"}


def reconcile(world: World, name: str = "vm") -> float | None:
    return world.run(VirtualMachineActuator(), name)


def ready(world: World, name: str = "vm") -> dict[str, Any]:
    return world.obj(VIRTUAL_MACHINE, name).status["conditions"][0]


def key_pair(world: World, ready: bool, key_name: str = "team-a-deploy", **meta: Any) -> None:
    body = world.add(KEY_PAIR, "deploy", {"publicKey": "ssh-ed25519 AAAA"}, **meta)
    body["status"] = {
        "id": key_name,
        "keyName": key_name,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }


def created_with(world: World) -> str | None:
    (server,) = world.cloud.servers.values()
    key: str | None = server["attrs"]["key_name"]
    return key


def test_without_a_key_pair_object_the_clouds_keypair_of_that_name_is_used() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    assert created_with(world) == "deploy"


def test_a_key_pair_object_is_waited_for_then_its_nova_name_is_used() -> None:
    world = World()
    key_pair(world, ready=False)
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    assert reconcile(world) == 30.0
    assert (ready(world)["reason"], world.obj(VIRTUAL_MACHINE, "vm").status["phase"]) == (
        "WaitingForKeyPair",
        "Pending",
    )
    assert ready(world)["message"] == "spec.keyName: KeyPair 'deploy' is not Ready yet"
    assert world.cloud.servers == {}

    world.stored("KeyPair", "deploy")["status"]["conditions"][0]["status"] = "True"
    reconcile(world)
    assert created_with(world) == "team-a-deploy"


def test_a_key_pair_being_deleted_is_waited_for() -> None:
    world = World()
    key_pair(world, ready=True, deletionTimestamp="2026-11-22T00:00:00Z")
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    assert ready(world)["message"] == "spec.keyName: KeyPair 'deploy' is being deleted"
    assert world.cloud.servers == {}


def test_a_key_pair_only_in_another_namespace_is_not_used() -> None:
    world = World()
    key_pair(world, ready=False, namespace="elsewhere")
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    assert created_with(world) == "deploy"


def test_a_key_pairs_change_wakes_the_vms_without_a_server_that_name_it() -> None:
    world = World()
    key_pair(world, ready=True)
    world.add(VIRTUAL_MACHINE, "waiting", SPEC)
    world.add(VIRTUAL_MACHINE, "built", SPEC)["status"] = {"id": "srv-1"}
    world.add(VIRTUAL_MACHINE, "other", {**SPEC, "keyName": "x"})
    body = world.stored("KeyPair", "deploy")
    assert VirtualMachineActuator().dependents("KeyPair", body, world.store) == [
        Key("VirtualMachine", "default", "waiting")
    ]


def test_the_server_is_not_replaced_when_the_key_pairs_key_changes() -> None:
    """Nova injects the key at boot: a server keeps the key it was built with (the
    spec hash holds the name the spec gives, not the keypair's key)."""
    world = World()
    key_pair(world, ready=True)
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.settle(VirtualMachineActuator(), "vm")
    world.stored("KeyPair", "deploy")["status"]["fingerprint"] = "aa:bb"
    reconcile(world)
    assert world.cloud.calls.count("create_server") == 1
    assert ready(world)["status"] == "True"
