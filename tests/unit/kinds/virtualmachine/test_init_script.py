"""initScript from a Secret (like a ConfigMap, in the VM's own namespace), and the
user_data size limit checked on the script actually sent, whatever its source."""

from __future__ import annotations

import base64

import pytest

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.api.virtualmachine import INIT_SCRIPT_MAX_BYTES
from kumo.engine.errors import TerminalError
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from tests.unit.fakes import World

SPEC = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}
SCRIPT = "#!/bin/sh\necho s3cr3t-token > /etc/app\n"


def secret(name: str, namespace: str = "default", **data: str) -> dict:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return {"metadata": {"name": name, "namespace": namespace}, "data": encoded}


def reconcile(world: World, name: str = "vm") -> None:
    world.run(VirtualMachineActuator(), name)


def ready(world: World) -> dict:
    return world.obj(VIRTUAL_MACHINE, "vm").status["conditions"][0]


def with_secret_ref(name: str = "boot", key: str = "script") -> dict:
    return {**SPEC, "initScript": {"secretRef": {"name": name, "key": key}}}


def test_script_is_read_from_a_secret_in_the_vms_namespace() -> None:
    world = World()
    world.store.put("Secret", secret("boot", namespace="other", script="echo wrong"))
    world.add(VIRTUAL_MACHINE, "vm", with_secret_ref())
    reconcile(world)
    assert ready(world)["reason"] == "SecretNotFound"
    assert ready(world)["message"].startswith("spec.initScript.secretRef: Secret 'boot' not found")
    assert world.cloud.servers == {}

    world.store.put("Secret", secret("boot", script=SCRIPT))
    reconcile(world)
    (server,) = world.cloud.servers.values()
    assert server["attrs"]["user_data"] == SCRIPT
    assert world.kube.secret_reads == [("default", "boot"), ("default", "boot")]


def test_a_missing_key_is_reported_without_the_secrets_content() -> None:
    world = World()
    world.store.put("Secret", secret("boot", other=SCRIPT))
    world.add(VIRTUAL_MACHINE, "vm", with_secret_ref())
    reconcile(world)
    assert ready(world)["reason"] == "SecretKeyNotFound"
    assert "s3cr3t" not in str(world.obj(VIRTUAL_MACHINE, "vm").status)
    assert all("s3cr3t" not in event[3] for event in world.events.events)


def test_a_binary_secret_value_is_reported_not_crashed_on() -> None:
    world = World()
    body = secret("boot")
    body["data"] = {"script": base64.b64encode(b"\xff\xfe\x00").decode()}
    world.store.put("Secret", body)
    world.add(VIRTUAL_MACHINE, "vm", with_secret_ref())
    reconcile(world)
    assert ready(world)["reason"] == "SecretKeyNotText"


def test_a_changed_secret_replaces_the_server() -> None:
    world = World()
    world.store.put("Secret", secret("boot", script="echo one"))
    world.add(VIRTUAL_MACHINE, "vm", with_secret_ref())
    world.settle(VirtualMachineActuator(), "vm")
    world.store.put("Secret", secret("boot", script="echo two"))
    reconcile(world)  # the old server goes
    reconcile(world)  # the new one comes
    (server,) = world.cloud.live().values()
    assert server["attrs"]["user_data"] == "echo two"


@pytest.mark.parametrize("source", ["configMap", "secret"])
def test_user_data_over_novas_limit_is_refused_before_any_call(source: str) -> None:
    """The schema bounds initScript.value in characters; multi-byte text and scripts
    from a ConfigMap or Secret are checked on the bytes actually sent."""
    world = World()
    script = "é" * (INIT_SCRIPT_MAX_BYTES // 2 + 1)  # within maxLength, over in bytes
    if source == "secret":
        world.store.put("Secret", secret("boot", script=script))
        spec = with_secret_ref()
    else:
        world.store.put(
            "ConfigMap",
            {"metadata": {"name": "boot", "namespace": "default"}, "data": {"script": script}},
        )
        spec = {**SPEC, "initScript": {"configMapRef": {"name": "boot", "key": "script"}}}
    world.add(VIRTUAL_MACHINE, "vm", spec)
    reconcile(world)
    assert ready(world)["reason"] == "UserDataTooLong"
    assert "65535" in ready(world)["message"]
    assert world.cloud.servers == {}


def test_an_inline_script_at_the_limit_is_sent() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "initScript": {"value": "x" * INIT_SCRIPT_MAX_BYTES}})
    reconcile(world)
    assert len(world.cloud.servers) == 1


def test_a_namespace_that_has_not_opted_in_gets_the_command_to_do_so() -> None:
    world = World()

    async def forbidden(namespace: str, name: str) -> dict:
        raise TerminalError("KubernetesForbidden", 'secrets "boot" is forbidden')

    world.kube.get_secret = forbidden  # type: ignore[method-assign]
    world.add(VIRTUAL_MACHINE, "vm", with_secret_ref())
    reconcile(world)
    assert ready(world)["reason"] == "SecretForbidden"
    assert "--clusterrole=kumo-boot-secrets" in ready(world)["message"]
    assert world.cloud.servers == {}
