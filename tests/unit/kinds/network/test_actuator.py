"""Network: the engine drives the actuator against the in-memory Neutron; tests feed
objects and cloud state in and check cloud state and status out."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from typing import Any

from kumo.api.kinds import LOAD_BALANCER, NETWORK, VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.cloud.model import ORPHAN_PREFIX, marker_tags, owner_word
from kumo.engine.objects import Key
from kumo.kinds.network.actuator import NetworkActuator
from tests.unit.fakes import World
from tests.unit.fakes.networks import FakeNetworks

SPEC: dict[str, Any] = {
    "description": "app tier",
    "subnets": [{"cidr": "10.20.0.0/24", "dnsNameservers": ["192.0.2.53"]}],
    "router": {"externalNetwork": "public"},
}
WRITES = (
    "create_", "update_", "set_", "delete_", "add_router_interface", "remove_router_interface",
)  # fmt: skip


MARKER = owner_word("uid-app")
ORPHAN = f"{ORPHAN_PREFIX}uid-app"


def new_world(spec: dict[str, Any] | None = None) -> World:
    world = World(cloud=FakeNetworks())
    world.add(NETWORK, "app", spec or SPEC)
    return world


def neutron(world: World) -> FakeNetworks:
    return world.cloud_as(FakeNetworks)


def converge(world: World) -> dict:
    world.converge(NetworkActuator(), "app")
    return world.stored("Network", "app")


def ready(world: World) -> dict:
    return world.condition("Network", "app")


def writes(world: World) -> list[str]:
    return [c for c in neutron(world).calls if c.startswith(WRITES)]


def test_creates_the_network_its_subnet_and_a_router_with_an_interface() -> None:
    world = new_world()
    status = converge(world)["status"]
    network = neutron(world).only_network()
    (router,) = neutron(world).routers.values()
    (subnet,) = network.subnets
    assert network.tags == marker_tags("uid-app") and router.tags == marker_tags("uid-app")
    assert (network.name, network.description) == ("default-app", f"app tier {MARKER}")
    assert router.description == MARKER, "marked in the create call: a router has no text"
    assert (subnet.cidr, subnet.gateway, subnet.dns_nameservers) == (
        "10.20.0.0/24", "10.20.0.1", ("192.0.2.53",),
    )  # fmt: skip
    assert router.external_network_id == "ext-net-id" and router.interfaces == (subnet.id,)
    assert status["id"] == network.id and status["routerId"] == router.id
    assert status["subnets"] == [{"cidr": "10.20.0.0/24", "id": subnet.id, "gateway": "10.20.0.1"}]
    assert status["externalAddress"] == "203.0.113.10" and status["phase"] == "Active"
    assert ready(world)["status"] == "True"


def test_a_converged_network_costs_no_writes() -> None:
    world = new_world()
    converge(world)
    neutron(world).calls.clear()
    world.run(NetworkActuator(), "app")
    assert writes(world) == []
    assert "network_ports" not in neutron(world).calls, "ports are read only to delete"


def test_a_subnet_deleted_by_hand_comes_back_with_its_interface() -> None:
    world = new_world()
    converge(world)
    (old,) = neutron(world).only_network().subnets
    neutron(world).delete_subnet_out_of_band(old.id)
    converge(world)
    (new,) = neutron(world).only_network().subnets
    (router,) = neutron(world).routers.values()
    assert new.id != old.id and new.cidr == "10.20.0.0/24"
    assert router.interfaces == (new.id,)


def test_subnets_added_updated_and_removed_in_place() -> None:
    world = new_world()
    net_id = converge(world)["status"]["id"]
    body = world.stored("Network", "app")
    body["spec"]["subnets"] = [
        {"cidr": "10.20.0.0/24", "dnsNameservers": ["192.0.2.54"]},
        {"cidr": "10.21.0.0/24", "gateway": "none"},
    ]
    converge(world)
    network = neutron(world).only_network()
    assert network.id == net_id
    by_cidr = {s.cidr: s for s in network.subnets}
    assert by_cidr["10.20.0.0/24"].dns_nameservers == ("192.0.2.54",)
    assert by_cidr["10.21.0.0/24"].gateway is None
    (router,) = neutron(world).routers.values()
    assert router.interfaces == (by_cidr["10.20.0.0/24"].id,), "no way out without a gateway"

    world.stored("Network", "app")["spec"]["subnets"] = [
        {"cidr": "10.21.0.0/24", "gateway": "none"}
    ]
    converge(world)
    assert [s.cidr for s in neutron(world).only_network().subnets] == ["10.21.0.0/24"]
    assert (
        router.id in neutron(world).routers and neutron(world).routers[router.id].interfaces == ()
    )


def test_a_cidr_change_waits_while_ports_use_the_old_subnet() -> None:
    world = new_world()
    converge(world)
    (old,) = neutron(world).only_network().subnets
    port = neutron(world).add_port(old.network_id, old.id)
    body = world.stored("Network", "app")
    body["spec"]["subnets"] = [{"cidr": "10.20.0.0/23"}]
    world.run(NetworkActuator(), "app")
    assert [s.id for s in neutron(world).only_network().subnets] == [old.id]
    message = ready(world)["message"]
    assert "spec.subnets[].cidr" in message and "10.20.0.0/24" in message
    assert "10.20.0.0/23 overlaps" in message

    net_id = world.stored("Network", "app")["status"]["id"]
    del neutron(world).ports[port]
    converge(world)
    (new,) = neutron(world).only_network().subnets
    assert new.cidr == "10.20.0.0/23"
    assert neutron(world).only_network().id == net_id, "only the subnet changed"
    (router,) = neutron(world).routers.values()
    assert router.interfaces == (new.id,)


def test_removing_the_router_takes_it_apart() -> None:
    world = new_world()
    converge(world)
    body = world.stored("Network", "app")
    del body["spec"]["router"]
    status = converge(world)["status"]
    assert neutron(world).routers == {}
    assert status.get("routerId") is None and len(neutron(world).only_network().subnets) == 1


def test_network_attributes_are_changed_in_place() -> None:
    world = new_world()
    net_id = converge(world)["status"]["id"]
    body = world.stored("Network", "app")
    body["spec"].update(mtu=1400, portSecurity=False, description="moved")
    converge(world)
    network = neutron(world).only_network()
    assert (network.id, network.mtu, network.port_security, network.description) == (
        net_id, 1400, False, f"moved {MARKER}",
    )  # fmt: skip


def test_deletion_waits_for_objects_then_ports_then_takes_everything_apart() -> None:
    world = new_world()
    net_id = converge(world)["status"]["id"]
    (subnet,) = neutron(world).only_network().subnets
    world.add(VIRTUAL_MACHINE, "vm", {"image": "i", "flavor": "f", "networks": ["app"]})
    world.add(LOAD_BALANCER, "lb", {"vipNetwork": "app", "ports": []})
    world.delete("Network", "app", "2099-01-01T00:00:00Z")
    world.run(NetworkActuator(), "app")
    assert ready(world)["reason"] == "WaitingForUsers"
    assert "LoadBalancer(s) lb" in ready(world)["message"]
    assert "VirtualMachine(s) vm" in ready(world)["message"]
    vm = world.stored("VirtualMachine", "vm")
    assert NetworkActuator().dependents("VirtualMachine", vm, world.store) == [
        Key("Network", "default", "app")
    ]

    world.store.remove("VirtualMachine", "default", "vm")
    world.store.remove("LoadBalancer", "default", "lb")
    port = neutron(world).add_port(net_id, subnet.id)
    neutron(world).add_port(net_id, subnet.id, owner="network:dhcp")
    world.run(NetworkActuator(), "app")
    assert ready(world)["reason"] == "NetworkInUse" and "compute:nova" in ready(world)["message"]
    assert net_id in neutron(world).networks and neutron(world).routers

    del neutron(world).ports[port]
    world.run(NetworkActuator(), "app")
    world.run(NetworkActuator(), "app")
    assert neutron(world).routers == {} and neutron(world).networks == {}
    assert world.store.get("Network", "default", "app") is None


def test_orphan_releases_the_network_and_the_router() -> None:
    world = new_world()
    converge(world)
    body = world.stored("Network", "app")
    body["spec"]["deletionPolicy"] = "Orphan"
    body["metadata"]["deletionTimestamp"] = "2099-01-01T00:00:00Z"
    world.run(NetworkActuator(), "app")
    (router,) = neutron(world).routers.values()
    network = neutron(world).only_network()
    assert (network.tags, network.description) == ([ORPHAN], f"app tier {ORPHAN}")
    assert (router.tags, router.description) == ([ORPHAN], ORPHAN) and router.interfaces
    assert world.store.get("Network", "default", "app") is None


def test_import_tags_an_existing_network_and_adds_what_the_spec_wants() -> None:
    world = World(cloud=FakeNetworks())
    legacy = neutron(world).add_network("legacy", tags=["team-a"])
    world.add(NETWORK, "app", {"import": {"name": "legacy"}, "subnets": [{"cidr": "10.30.0.0/24"}]})
    status = converge(world)["status"]
    network = neutron(world).networks[legacy.id]
    assert status["id"] == legacy.id
    assert network.tags == ["team-a", *marker_tags("uid-app")]
    assert network.description == MARKER, "marked in the description as a create marks it"
    assert [s.cidr for s in network.subnets] == ["10.30.0.0/24"]
    assert neutron(world).routers == {}


def test_a_foreign_network_named_by_status_is_never_changed() -> None:
    world = World(cloud=FakeNetworks())
    foreign = neutron(world).add_network("theirs")
    world.add(NETWORK, "app", SPEC)
    world.stored("Network", "app")["status"] = {"id": foreign.id}
    world.run(NetworkActuator(), "app")
    assert ready(world)["reason"] == "NotOwned"
    assert neutron(world).networks[foreign.id] == foreign
    assert writes(world) == []


def test_a_vm_naming_a_network_waits_for_it_then_boots_on_its_id() -> None:
    from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
    from tests.unit.fakes import FakeServers

    world = World(cloud=FakeServers())
    world.add(NETWORK, "app", {"subnets": [{"cidr": "10.20.0.0/24"}]})
    world.add(
        VIRTUAL_MACHINE,
        "vm",
        {"image": "centos79", "flavor": "n3-1vcpu-2gb", "networks": ["app", "ext"]},
    )
    world.run(VirtualMachineActuator(), "vm")
    ready_vm = world.condition("VirtualMachine", "vm")
    assert ready_vm["reason"] == "WaitingForNetwork" and "spec.networks[0]" in ready_vm["message"]
    assert world.cloud.servers == {}

    net = world.stored("Network", "app")
    net["status"] = {"id": "net-id-1", "conditions": [{"type": "Ready", "status": "True"}]}
    assert VirtualMachineActuator().dependents("Network", net, world.store) == [
        Key("VirtualMachine", "default", "vm")
    ]
    world.run(VirtualMachineActuator(), "vm")
    (server,) = world.cloud.servers.values()
    assert server["attrs"]["network_ids"] == ["net-net-id-1", "net-ext"], "the cloud's by name"


def test_a_load_balancer_on_a_network_waits_for_it_then_takes_its_vip_there() -> None:
    from kumo.kinds.loadbalancer.actuator import LoadBalancerActuator
    from tests.unit.fakes.loadbalancing import FakeLoadBalancing
    from tests.unit.kinds.loadbalancer.test_actuator import seed_spec

    world = World(cloud=FakeLoadBalancing())
    world.add(VIRTUAL_MACHINE_GROUP, "virtualmachinegroup-sample", {"replicas": 0, "template": {}})
    world.add(NETWORK, "app", {"subnets": [{"cidr": "10.20.0.0/24"}]})
    world.add(LOAD_BALANCER, "web", {**seed_spec(), "vipNetwork": "app"})
    world.run(LoadBalancerActuator(), "web")
    cond = world.condition("LoadBalancer", "web")
    assert cond["reason"] == "WaitingForNetwork" and "spec.vipNetwork" in cond["message"]
    assert world.cloud.lbs == {}

    net = world.stored("Network", "app")
    net["status"] = {"id": "net-id-1", "conditions": [{"type": "Ready", "status": "True"}]}
    assert LoadBalancerActuator().dependents("Network", net, world.store) == [
        Key("LoadBalancer", "default", "web")
    ]
    world.run(LoadBalancerActuator(), "web")
    (lb,) = world.cloud.lbs.values()
    assert lb.lb.vip_network_id == "net-net-id-1"


def test_a_legacy_network_and_router_get_this_clusters_marker() -> None:
    """Made before markers named the cluster: the object with that UID keeps them and
    re-marks both at its next pass (the orphan sweep acts only on current markers)."""
    world = new_world()
    converge(world)
    cloud = neutron(world)
    legacy = ["kumo", "kumo-owner=uid-app"]
    network = cloud.only_network()
    (router,) = cloud.routers.values()
    cloud.networks[network.id] = replace(network, tags=list(legacy))
    cloud.routers[router.id] = replace(router, tags=list(legacy))
    converge(world)
    assert cloud.only_network().tags == marker_tags("uid-app")
    assert cloud.routers[router.id].tags == marker_tags("uid-app")
    assert world.events.reasons().count("Remarked") == 2
    assert cloud.only_network().id == network.id, "the same ones: nothing made again"


# -- marked at create: a lost answer or a crash between the POST and the tags -----------------


def test_a_lost_network_create_answer_is_adopted_by_its_description_not_made_again() -> None:
    world = new_world()
    neutron(world).lose_creates = 1
    world.run(NetworkActuator(), "app")  # the POST went through; its answer did not
    lost = neutron(world).only_network()
    assert (lost.tags, lost.description) == ([], f"app tier {MARKER}")
    status = converge(world)["status"]
    assert neutron(world).calls.count("create_network") == 1, "adopted, never made twice"
    network = neutron(world).only_network()
    assert network.id == lost.id == status["id"]
    assert network.tags == marker_tags("uid-app"), "its tags completed"
    assert "Adopted" in world.events.reasons()
    assert ready(world)["status"] == "True"


def test_a_lost_router_create_answer_is_adopted_by_its_description_not_made_again() -> None:
    world = new_world()
    world.run(NetworkActuator(), "app")  # the network
    neutron(world).lose_creates = 1
    converge(world)
    assert neutron(world).calls.count("create_router") == 1, "adopted, never made twice"
    (router,) = neutron(world).routers.values()
    assert router.tags == marker_tags("uid-app") and router.interfaces
    assert world.stored("Network", "app")["status"]["routerId"] == router.id


def test_a_network_and_router_left_untagged_by_a_crash_are_adopted() -> None:
    """Kumo killed between each POST and its tag call (the failpoints
    after-network-create and after-router-create): both carry the marker in their
    description only, status names neither."""
    world = new_world()
    network = neutron(world).add_network("default-app", description=f"app tier {MARKER}")
    router = neutron(world).add_router("default-app", description=MARKER)
    status = converge(world)["status"]
    assert (status["id"], status["routerId"]) == (network.id, router.id)
    assert "create_network" not in neutron(world).calls
    assert "create_router" not in neutron(world).calls
    assert neutron(world).networks[network.id].tags == marker_tags("uid-app")
    assert neutron(world).routers[router.id].tags == marker_tags("uid-app")


def test_a_marker_word_removed_by_hand_is_put_back_keeping_the_text() -> None:
    world = new_world()
    net_id = converge(world)["status"]["id"]
    networks = neutron(world).networks
    networks[net_id] = dataclasses.replace(networks[net_id], description="edited by hand")
    body = world.stored("Network", "app")
    del body["spec"]["description"]
    converge(world)
    assert neutron(world).networks[net_id].description == f"edited by hand {MARKER}"
