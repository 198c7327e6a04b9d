"""KumoCluster: a Cluster API Cluster's infrastructure as Kumo objects, its machine sets'
server groups, the endpoint written once, the status CAPI reads (contract v1beta2 and
v1beta1's failure fields), CAPI's pause, NameTaken, and a deletion that leaves nothing."""

from __future__ import annotations

import asyncio

from kumo.api.kinds import KUMO_CLUSTER, KUMO_MACHINE, NETWORK
from kumo.engine.objects import Key
from kumo.kinds import capi
from kumo.kinds.kumocluster.actuator import KumoClusterActuator
from kumo.ports.model import text_owner
from tests.unit.fakes import World
from tests.unit.kinds.capi_world import (
    CLUSTER,
    INFRA,
    NS,
    PART_KINDS,
    add_cluster,
    add_kumo_cluster,
    add_machine,
    provisioned,
    ready,
    run_cluster,
    settle_parts,
)


def kcl(world: World) -> dict:
    return world.stored("KumoCluster", INFRA)


def parts(world: World) -> dict[str, dict]:
    return {
        f"{kind}/{b['metadata']['name']}": b
        for kind in PART_KINDS
        for b in world.store.list(kind, NS)
    }


def test_it_waits_for_cluster_api_to_set_its_owning_cluster() -> None:
    world = World()
    add_cluster(world)
    add_kumo_cluster(world, owned=False)
    assert run_cluster(world) == capi.OWNER_SECONDS
    assert ready(kcl(world))["reason"] == "WaitingForCluster"
    assert parts(world) == {}
    assert world.kube.external_reads == [], "no owner: nothing to read"


def test_its_parts_are_kumo_objects_it_owns_named_after_the_cluster() -> None:
    world = World()
    add_cluster(world)
    add_kumo_cluster(
        world, {"allowedCIDRs": ["198.51.100.0/24"], "network": {"cidr": "10.9.0.0/24"}}
    )
    run_cluster(world)
    made = parts(world)
    assert sorted(made) == [
        "LoadBalancer/prod-api",
        "Network/prod",
        "SecurityGroup/prod-api",
        "SecurityGroup/prod-node",
    ]
    for body in made.values():
        (ref,) = body["metadata"]["ownerReferences"]
        assert ref["kind"] == "KumoCluster" and ref["uid"] == f"uid-{INFRA}"
        assert ref["apiVersion"] == "infrastructure.kumo.dev/v1alpha1"
        assert ref["controller"] and ref["blockOwnerDeletion"]
        assert body["metadata"]["labels"] == {capi.CLUSTER_NAME_LABEL: CLUSTER}
    assert made["Network/prod"]["spec"]["subnets"] == [
        {"cidr": "10.9.0.0/24", "allocationPools": [{"start": "10.9.0.2", "end": "10.9.0.253"}]}
    ]
    (port,) = made["LoadBalancer/prod-api"]["spec"]["ports"]
    assert port["port"] == 6443
    assert port["realServers"] == {
        "protocol": "tcp",
        "port": 6443,
        "virtualMachineGroupRef": "prod-control-plane",
        "groupObject": False,
    }
    assert made["LoadBalancer/prod-api"]["spec"]["vipNetwork"] == "prod"
    api = made["SecurityGroup/prod-api"]["spec"]["rules"]
    assert [r["cidr"] for r in api] == ["198.51.100.0/24", "10.9.0.0/24"]
    node = made["SecurityGroup/prod-node"]["spec"]["rules"]
    etcd = {"direction": "ingress", "protocol": "tcp", "portRangeMin": 2379, "portRangeMax": 2380}
    assert {**etcd, "securityGroupRef": "prod-node"} in node
    assert ready(kcl(world))["reason"] == "WaitingForParts"
    assert kcl(world)["status"]["parts"] == "0/4"
    assert "initialization" not in kcl(world)["status"]
    assert kcl(world)["status"]["failureDomains"] == [], "no zone given: none made up"


def test_provisioned_once_every_part_is_ready_and_the_endpoint_is_written_once() -> None:
    world = World()
    add_cluster(world)
    add_kumo_cluster(world, {"availabilityZones": ["az-1", "az-2"]})
    run_cluster(world)
    settle_parts(world, vip="10.6.0.10")
    assert run_cluster(world) is None
    body = kcl(world)
    assert body["spec"]["controlPlaneEndpoint"] == {"host": "10.6.0.10", "port": 6443}
    status = body["status"]
    assert status["initialization"] == {"provisioned": True} and status["ready"] is True
    assert status["failureDomains"] == [
        {"name": "az-1", "controlPlane": True},
        {"name": "az-2", "controlPlane": True},
    ]
    assert ready(body)["status"] == "True"
    assert "EndpointSet" in world.events.reasons()
    # The VIP moves (a new load balancer): the endpoint CAPI was given stays.
    settle_parts(world, vip="10.6.0.99")
    run_cluster(world)
    assert kcl(world)["spec"]["controlPlaneEndpoint"]["host"] == "10.6.0.10"
    # A part not Ready any more: not Ready, still provisioned (CAPI's initialization).
    world.stored("Network", CLUSTER)["status"]["conditions"] = [
        {"type": "Ready", "status": "False", "reason": "WaitingForRouter"}
    ]
    run_cluster(world)
    assert ready(kcl(world))["status"] == "False"
    assert "Network prod: WaitingForRouter" in ready(kcl(world))["message"]
    assert kcl(world)["status"]["initialization"] == {"provisioned": True}


def test_the_endpoint_is_the_dns_name_over_the_floating_ip_over_the_vip() -> None:
    world = World()
    add_cluster(world)
    add_kumo_cluster(
        world, {"floatingIP": True, "dns": {"zone": "example.org.", "name": "api.prod"}}
    )
    run_cluster(world)
    made = parts(world)
    assert made["FloatingIP/prod-api"]["spec"] == {"loadBalancerRef": "prod-api"}
    assert made["DNSRecord/prod-api"]["spec"] == {
        "zone": "example.org.",
        "name": "api.prod",
        "type": "A",
        "floatingIPRef": "prod-api",
    }
    settle_parts(world)
    run_cluster(world)
    assert kcl(world)["spec"]["controlPlaneEndpoint"] == {
        "host": "api.prod.example.org",
        "port": 6443,
    }
    assert kcl(world)["status"]["floatingIP"] == "203.0.113.7"


def test_an_endpoint_set_by_hand_is_left_alone() -> None:
    world = World()
    add_cluster(world)
    add_kumo_cluster(world, {"controlPlaneEndpoint": {"host": "api.example.org", "port": 443}})
    run_cluster(world)
    settle_parts(world)
    run_cluster(world)
    assert kcl(world)["spec"]["controlPlaneEndpoint"] == {"host": "api.example.org", "port": 443}
    assert world.kube.patches == [], "nothing patched on the KumoCluster"


def test_each_machine_set_gets_one_anti_affinity_server_group() -> None:
    world = provisioned(World())
    add_machine(world, "prod-cp-1", control_plane=True)
    add_machine(world, "prod-cp-2", control_plane=True)
    add_machine(world, "prod-md-0-a", deployment="prod-md-0")
    run_cluster(world)
    groups = sorted(world.cloud.groups.values(), key=lambda g: g.name)
    assert [g.name.split()[0] for g in groups] == [
        "default-prod-control-plane-anti-affinity",
        "default-prod-prod-md-0-anti-affinity",
    ]
    assert {g.policy for g in groups} == {"anti-affinity"}
    assert {text_owner(g.name) for g in groups} == {f"uid-{INFRA}"}, "its marker"
    listed = {g["name"]: g["id"] for g in kcl(world)["status"]["serverGroups"]}
    assert listed == {"control-plane": groups[0].id, "prod-md-0": groups[1].id}
    run_cluster(world)
    assert len(world.cloud.groups) == 2, "not made again"
    # The deployment's last machine goes: its server group with it.
    world.store.remove("KumoMachine", NS, "prod-md-0-a")
    run_cluster(world)
    assert [g.name.split()[0] for g in world.cloud.groups.values()] == [
        "default-prod-control-plane-anti-affinity"
    ]


def test_server_group_policy_none_makes_none() -> None:
    world = provisioned(World(), {"serverGroupPolicy": "none"})
    add_machine(world, "prod-cp-1", control_plane=True)
    run_cluster(world)
    assert world.cloud.groups == {}
    assert kcl(world)["status"]["serverGroups"] == []


def test_a_part_name_another_object_holds_is_reported_and_left_alone() -> None:
    world = World()
    add_cluster(world)
    add_kumo_cluster(world)
    theirs = world.add(NETWORK, CLUSTER, {"description": "someone else's"})
    run_cluster(world)
    status = kcl(world)["status"]
    assert ready(kcl(world))["reason"] == "NameTaken"
    assert "Network prod" in ready(kcl(world))["message"]
    assert status["failureReason"] == "InvalidConfiguration"
    assert status["failureMessage"].startswith("NameTaken: Network prod")
    assert world.stored("Network", CLUSTER)["spec"] == theirs["spec"], "not changed"
    assert "LoadBalancer/prod-api" in parts(world), "the other parts are made"
    # Its deletion leaves the foreign Network alone too.
    asyncio.run(world.kube.delete(KUMO_CLUSTER, NS, INFRA))
    world.stored("KumoCluster", INFRA)["metadata"]["finalizers"] = [KUMO_CLUSTER.finalizer]
    run_cluster(world)
    assert "deletionTimestamp" not in world.stored("Network", CLUSTER)["metadata"]


def test_nothing_is_written_while_cluster_api_pauses_it() -> None:
    world = World()
    add_cluster(world, paused=True)
    add_kumo_cluster(world)
    assert run_cluster(world) == capi.POLL_SECONDS
    assert parts(world) == {}
    paused = next(c for c in kcl(world)["status"]["conditions"] if c["type"] == "Paused")
    assert paused["status"] == "True" and "spec.paused" in paused["message"]
    world.stored("Cluster", CLUSTER)["spec"]["paused"] = False
    kcl(world)["metadata"]["annotations"] = {capi.PAUSED_ANNOTATION: ""}
    run_cluster(world)
    assert parts(world) == {}, "the annotation pauses it too"
    del kcl(world)["metadata"]["annotations"]
    run_cluster(world)
    assert len(parts(world)) == 4


def test_deletion_waits_for_the_machines_then_deletes_the_parts_and_server_groups() -> None:
    world = provisioned(World(), {"floatingIP": True})
    add_machine(world, "prod-cp-1", control_plane=True)
    run_cluster(world)
    assert len(world.cloud.groups) == 1
    asyncio.run(world.kube.delete(KUMO_CLUSTER, NS, INFRA))
    run_cluster(world)
    assert ready(kcl(world))["reason"] == "WaitingForMachines"
    assert not any(b["metadata"].get("deletionTimestamp") for b in parts(world).values())
    world.store.remove("KumoMachine", NS, "prod-cp-1")
    run_cluster(world)
    assert all(b["metadata"].get("deletionTimestamp") for b in parts(world).values())
    assert ready(kcl(world))["reason"] == "DeletingParts"
    assert len(world.cloud.groups) == 1, "the server groups go last"
    for key in list(parts(world)):  # the parts' controllers delete their resources
        kind, name = key.split("/")
        world.store.remove(kind, NS, name)
    run_cluster(world)
    assert world.cloud.groups == {}
    assert world.store.get("KumoCluster", NS, INFRA) is None, "finalizer released"


def test_a_machine_of_its_cluster_and_its_parts_wake_it() -> None:
    world = World()
    add_cluster(world)
    add_kumo_cluster(world)
    run_cluster(world)
    add_machine(world, "prod-cp-1", control_plane=True)
    actuator = KumoClusterActuator()
    machine = world.stored("KumoMachine", "prod-cp-1")
    assert actuator.dependents(KUMO_MACHINE.kind, machine, world.store) == [
        Key("KumoCluster", NS, INFRA)
    ]
    lb = world.stored("LoadBalancer", "prod-api")
    assert actuator.dependents("LoadBalancer", lb, world.store) == [Key("KumoCluster", NS, INFRA)]
    foreign = world.add(NETWORK, "other", {})
    assert actuator.dependents("Network", foreign, world.store) == []


def test_the_api_has_its_own_vip_kept_out_of_the_nodes_addresses() -> None:
    """The VIP is named (the lab's Octavia places none of its own, and each cluster's API
    needs its own address): the subnet's last address but one, outside the nodes' pool."""
    world = World()
    add_cluster(world)
    add_kumo_cluster(world, {"network": {"cidr": "10.7.0.0/24"}})
    run_cluster(world)
    made = parts(world)
    assert made["LoadBalancer/prod-api"]["spec"]["vipAddress"] == "10.7.0.254"
    (subnet,) = made["Network/prod"]["spec"]["subnets"]
    assert subnet["allocationPools"] == [{"start": "10.7.0.2", "end": "10.7.0.253"}]


def test_a_nodes_subnet_too_small_for_a_vip_is_refused_naming_the_field() -> None:
    world = World()
    add_cluster(world)
    add_kumo_cluster(world, {"network": {"cidr": "10.7.0.0/30"}})
    run_cluster(world)
    assert ready(kcl(world))["reason"] == "InvalidSpec"
    assert "spec.network.cidr" in ready(kcl(world))["message"]
    assert parts(world) == {}
