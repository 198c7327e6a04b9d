"""KumoMachine: one VirtualMachine per Machine, made once the cluster's infrastructure,
the bootstrap data and the set's server group are there; booted with the bootstrap
Secret's bytes; reported to CAPI (providerID, provisioned, addresses, failure domain);
a lost server fails the machine, never a second server; CAPI's pause; deletion."""

from __future__ import annotations

import asyncio

from kumo.api.kinds import KUMO_CLUSTER, KUMO_MACHINE, VIRTUAL_MACHINE
from kumo.engine.objects import Key
from kumo.kinds import capi
from kumo.kinds.kumomachine.actuator import KumoMachineActuator
from kumo.kinds.labels import GROUP_LABEL
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from tests.unit.fakes import World
from tests.unit.kinds.capi_world import (
    BOOTSTRAP,
    CLUSTER,
    INFRA,
    NS,
    add_cluster,
    add_kumo_cluster,
    add_machine,
    bootstrap,
    provisioned,
    ready,
    run_cluster,
    run_machine,
    settle_parts,
    settle_vm,
)

CP = "prod-cp-1"
WORKER = "prod-md-0-a"


def kma(world: World, name: str = CP) -> dict:
    return world.stored("KumoMachine", name)


def vm(world: World, name: str = CP) -> dict | None:
    return world.store.get("VirtualMachine", NS, name)


def test_it_waits_for_its_machine() -> None:
    world = World()
    add_cluster(world)
    world.add(KUMO_MACHINE, CP, {"image": "centos79", "flavor": "n3-1vcpu-2gb"})
    assert run_machine(world, CP) == capi.OWNER_SECONDS
    assert ready(kma(world))["reason"] == "WaitingForMachine"


def test_it_waits_for_the_infrastructure_then_the_bootstrap_data_then_the_server_group() -> None:
    world = World()
    add_cluster(world)
    add_kumo_cluster(world)
    add_machine(world, CP, control_plane=True)
    run_machine(world, CP)
    assert ready(kma(world))["reason"] == "WaitingForClusterInfrastructure"
    run_cluster(world)
    settle_parts(world)
    run_cluster(world)
    run_machine(world, CP)
    assert ready(kma(world))["reason"] == "WaitingForBootstrapData"
    bootstrap(world, CP)
    world.cloud.groups.clear()
    world.stored("KumoCluster", INFRA)["status"]["serverGroups"] = []
    run_machine(world, CP)
    assert ready(kma(world))["reason"] == "WaitingForServerGroup"
    assert vm(world) is None
    run_cluster(world)
    run_machine(world, CP)
    assert vm(world) is not None


def made(world: World, name: str = CP, **labels: object) -> World:
    """A provisioned cluster and a Machine with bootstrap data; its VM made."""
    provisioned(world)
    add_machine(world, name, failure_domain="az-1", **labels)  # type: ignore[arg-type]
    bootstrap(world, name)
    run_cluster(world)  # its set's server group
    run_machine(world, name)
    return world


def test_the_control_plane_vm() -> None:
    world = made(World(), control_plane=True)
    body = vm(world)
    assert body is not None
    group = next(g["id"] for g in world.stored("KumoCluster", INFRA)["status"]["serverGroups"])
    assert body["spec"] == {
        "image": "centos79",
        "flavor": "n3-1vcpu-2gb",
        "description": f"Cluster API Machine {NS}/{CP}",
        "networks": [CLUSTER],
        "securityGroups": ["prod-node", "prod-api"],
        "initScript": {"secretRef": {"name": CP, "key": "value"}},
        "replacementPolicy": "Never",
        "metadata": {"kumo.dev:boot-shim": "true"},
        "availabilityZone": "az-1",
        "serverGroup": group,
    }
    assert body["metadata"]["labels"] == {
        capi.CLUSTER_NAME_LABEL: CLUSTER,
        GROUP_LABEL: "prod-control-plane",
    }
    (ref,) = body["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["uid"], ref["blockOwnerDeletion"]) == (
        "KumoMachine",
        f"uid-{CP}",
        True,
    )
    assert kma(world)["status"]["virtualMachine"] == CP


def test_a_worker_vm_is_in_its_deployments_group_and_not_in_the_api_pool() -> None:
    world = made(World(), WORKER, deployment="prod-md-0")
    body = vm(world, WORKER)
    assert body is not None
    assert body["spec"]["securityGroups"] == ["prod-node"]
    assert GROUP_LABEL not in body["metadata"]["labels"]
    groups = world.stored("KumoCluster", INFRA)["status"]["serverGroups"]
    assert [g["name"] for g in groups] == ["prod-md-0"]
    assert body["spec"]["serverGroup"] == groups[0]["id"]


def test_the_server_boots_with_the_bootstrap_secrets_bytes() -> None:
    world = made(World(), control_plane=True)
    assert world.run(VirtualMachineActuator(), CP) == 2.0, world.stored("VirtualMachine", CP)
    (server,) = world.cloud.servers.values()
    assert server["attrs"]["user_data"] == BOOTSTRAP
    assert server["metadata"]["kumo.dev:boot-shim"] == "true", "the lab's boot shim takes it"
    assert server["attrs"]["server_group_id"] == vm(world)["spec"]["serverGroup"]  # type: ignore[index]


def test_provisioned_with_the_provider_id_once_the_server_is_active() -> None:
    world = made(World(), control_plane=True)
    run_machine(world, CP)
    assert ready(kma(world))["status"] == "False"
    assert "providerID" not in kma(world)["spec"]
    settle_vm(world, CP, server="srv-7", ip="10.6.0.21")
    assert run_machine(world, CP) is None
    body = kma(world)
    assert body["spec"]["providerID"] == "openstack:///srv-7"
    status = body["status"]
    assert status["initialization"] == {"provisioned": True} and status["ready"] is True
    assert status["addresses"] == [
        {"type": "InternalIP", "address": "10.6.0.21"},
        {"type": "Hostname", "address": CP},
    ]
    assert status["failureDomain"] == "az-1"
    assert status["id"] == "srv-7"
    assert ready(body)["status"] == "True"
    run_machine(world, CP)
    assert [p for p in world.kube.patches if p[0] == CP] == [
        (CP, {"spec": {"providerID": "openstack:///srv-7"}})
    ], "written once"


def test_a_server_lost_for_good_fails_the_machine_with_the_v1beta1_fields() -> None:
    world = made(World(), control_plane=True)
    settle_vm(world, CP)
    run_machine(world, CP)
    world.stored("VirtualMachine", CP)["status"]["conditions"] = [
        {
            "type": "Ready",
            "status": "False",
            "reason": "ServerLost",
            "message": "spec.replacementPolicy: server srv-1 is gone; replacementPolicy is Never",
        }
    ]
    run_machine(world, CP)
    status = kma(world)["status"]
    assert ready(kma(world))["reason"] == "ServerLost"
    assert status["failureReason"] == "UpdateError"
    assert status["failureMessage"].startswith("ServerLost: VirtualMachine prod-cp-1: ")
    assert status["initialization"] == {"provisioned": True}, "CAPI's initialization stays"
    stalled = next(c for c in status["conditions"] if c["type"] == "Stalled")
    assert stalled["status"] == "True"


def test_a_vm_deleted_after_its_server_existed_is_not_made_again() -> None:
    world = made(World(), control_plane=True)
    settle_vm(world, CP)
    run_machine(world, CP)
    world.store.remove("VirtualMachine", NS, CP)
    run_machine(world, CP)
    assert vm(world) is None
    assert ready(kma(world))["reason"] == "ServerLost"
    assert kma(world)["status"]["failureReason"] == "UpdateError"


def test_a_written_provider_id_alone_is_enough_to_never_make_a_second_server() -> None:
    """A crash after the providerID's write and before the status write: the machine
    had a server all the same."""
    world = made(World(), control_plane=True)
    world.store.remove("VirtualMachine", NS, CP)
    kma(world)["spec"]["providerID"] = "openstack:///srv-1"
    run_machine(world, CP)
    assert vm(world) is None
    assert ready(kma(world))["reason"] == "ServerLost"


def test_bad_input_on_the_vm_names_the_field() -> None:
    world = made(World(), control_plane=True)
    world.stored("VirtualMachine", CP)["status"] = {
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "ImageNotFound",
                "message": "spec.image: image 'nope' not found",
            }
        ]
    }
    run_machine(world, CP)
    assert ready(kma(world))["reason"] == "ImageNotFound"
    assert "spec.image" in ready(kma(world))["message"]


def test_nothing_is_made_while_cluster_api_pauses_it() -> None:
    world = provisioned(World())
    add_machine(world, CP, control_plane=True)
    bootstrap(world, CP)
    run_cluster(world)
    world.stored("Cluster", CLUSTER)["spec"]["paused"] = True
    assert run_machine(world, CP) == capi.POLL_SECONDS
    assert vm(world) is None
    paused = next(c for c in kma(world)["status"]["conditions"] if c["type"] == "Paused")
    assert paused["status"] == "True"


def test_deletion_deletes_the_vm_and_waits_until_it_is_gone() -> None:
    world = made(World(), control_plane=True)
    world.stored("VirtualMachine", CP)["metadata"]["finalizers"] = [VIRTUAL_MACHINE.finalizer]
    asyncio.run(world.kube.delete(KUMO_MACHINE, NS, CP))
    run_machine(world, CP)
    assert vm(world)["metadata"].get("deletionTimestamp")  # type: ignore[index]
    assert ready(kma(world))["reason"] == "DeletingServer"
    world.store.remove("VirtualMachine", NS, CP)
    run_machine(world, CP)
    assert world.store.get("KumoMachine", NS, CP) is None


def test_its_vm_and_its_cluster_wake_it() -> None:
    world = made(World(), control_plane=True)
    add_machine(world, "prod-cp-2", control_plane=True)
    actuator = KumoMachineActuator()
    assert actuator.dependents(VIRTUAL_MACHINE.kind, vm(world) or {}, world.store) == [
        Key("KumoMachine", NS, CP)
    ]
    cluster = world.stored("KumoCluster", INFRA)
    assert actuator.dependents(KUMO_CLUSTER.kind, cluster, world.store) == [
        Key("KumoMachine", NS, "prod-cp-2")
    ], "only the machines still without their VM"
