"""Network on the real kube-apiserver and the lab's Neutron and Nova: a network with a
subnet and a router to the outside, a VM on it with an address from that CIDR; an
interface removed by hand comes back; subnets are added and removed in place (the
network and the VM stay), a subnet a port uses stays until it is free; the network's
deletion waits for the VM naming it, then leaves nothing; Orphan leaves it released and
``spec.import`` takes it over again; bad input is refused naming the field."""

from __future__ import annotations

import ipaddress
from typing import Any

import yaml

from tests.integration.helpers import (
    allow_unmarked_imports,
    apply,
    cluster_id,
    condition,
    kumo_leftovers,
    wait_gone,
    wait_ready,
    wait_reason,
)
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until

TEMPLATE = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}
FIRST, SECOND = "10.77.0.0/24", "10.78.0.0/24"


def net_manifest(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "Network",
        "metadata": {"name": name},
        "spec": spec,
    }


def neutron_get(conn: Any, path: str, **params: Any) -> Any:
    response = conn.network.get(path, params=params)
    return None if response.status_code == 404 else response.json()


def subnets_of(conn: Any, network_id: str) -> dict[str, dict[str, Any]]:
    found = neutron_get(conn, "/subnets", network_id=network_id)["subnets"]
    return {s["cidr"]: s for s in found}


def interfaces_of(conn: Any, router_id: str) -> set[str]:
    ports = neutron_get(
        conn, "/ports", device_id=router_id, device_owner="network:router_interface"
    )["ports"]
    return {ip["subnet_id"] for p in ports for ip in p["fixed_ips"]}


def test_a_network_with_a_router_carries_a_vm_and_follows_its_spec(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    ns = namespace
    vm = {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachine",
        "metadata": {"name": "app-0"},
        "spec": {**TEMPLATE, "networks": ["app"]},  # the Network object of that name
    }
    apply(ns, vm)  # before its network: it waits for it
    apply(ns, net_manifest("app", subnets=[{"cidr": FIRST}], router={}))
    obj = wait_ready("net", "app", ns, timeout=60)
    status, uid = obj["status"], obj["metadata"]["uid"]
    network = neutron_get(demo_conn, f"/networks/{status['id']}")["network"]
    assert network["name"] == f"{ns}-app"
    assert sorted(network["tags"]) == sorted(
        ["kumo", f"kumo-owner={uid}", f"kumo-cluster={cluster_id()}"]
    )
    subnet = subnets_of(demo_conn, status["id"])[FIRST]
    assert status["subnets"] == [{"cidr": FIRST, "id": subnet["id"], "gateway": "10.77.0.1"}]
    router = neutron_get(demo_conn, f"/routers/{status['routerId']}")["router"]
    assert router["external_gateway_info"]["network_id"]
    assert status["externalAddress"] in {
        ip["ip_address"] for ip in router["external_gateway_info"]["external_fixed_ips"]
    }
    assert interfaces_of(demo_conn, router["id"]) == {subnet["id"]}

    vm_status = wait_ready("vm", "app-0", ns, timeout=240)["status"]
    assert ipaddress.ip_address(vm_status["ip"]) in ipaddress.ip_network(FIRST)
    server_id = vm_status["id"]

    # An interface removed by hand comes back within an interval.
    demo_conn.network.put(
        f"/routers/{router['id']}/remove_router_interface", json={"subnet_id": subnet["id"]}
    )
    wait_until(
        "interface removed by hand restored",
        lambda: interfaces_of(demo_conn, router["id"]) == {subnet["id"]},
        30,
    )

    # A second subnet is added in place: same network, same server, a second interface.
    apply(ns, net_manifest("app", subnets=[{"cidr": FIRST}, {"cidr": SECOND}], router={}))
    wait_until(
        "second subnet with an interface",
        lambda: (
            SECOND in subnets_of(demo_conn, status["id"])
            and len(interfaces_of(demo_conn, router["id"])) == 2
        ),
        60,
    )
    # The first subnet leaves the spec while the VM's port is on it: it stays, said why.
    apply(ns, net_manifest("app", subnets=[{"cidr": SECOND}], router={}))
    wait_until(
        "the used subnet is kept, naming the field",
        lambda: (
            "spec.subnets[].cidr: subnet 10.77.0.0/24 is no longer in the spec"
            in condition(get_obj("net", "app", ns)).get("message", "")
        ),
        60,
    )
    assert FIRST in subnets_of(demo_conn, status["id"])
    assert (get_obj("vm", "app-0", ns) or {})["status"]["id"] == server_id

    # Deleting the network waits for the VM naming it; then nothing is left.
    kubectl("delete", "net", "app", "-n", ns, "--wait=false")
    wait_reason("net", "app", ns, "WaitingForUsers", 30)
    assert neutron_get(demo_conn, f"/networks/{status['id']}") is not None
    kubectl("delete", "vm", "app-0", "-n", ns, "--wait=false")
    wait_gone("net", "app", ns, 240)
    assert neutron_get(demo_conn, f"/networks/{status['id']}") is None
    assert neutron_get(demo_conn, f"/routers/{router['id']}") is None
    assert neutron_get(demo_conn, "/subnets", network_id=status["id"])["subnets"] == []
    wait_until(
        "no Kumo resources left", lambda: not any(kumo_leftovers(demo_conn, ns).values()), 120
    )


def test_orphan_leaves_the_network_released_and_import_takes_it_over(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    allow_unmarked_imports(namespace)
    ns = namespace
    apply(ns, net_manifest("kept", subnets=[{"cidr": "10.79.0.0/24"}], deletionPolicy="Orphan"))
    kept = wait_ready("net", "kept", ns, timeout=60)
    network_id, uid = kept["status"]["id"], kept["metadata"]["uid"]
    try:
        kubectl("delete", "net", "kept", "-n", ns, "--wait=false")
        wait_gone("net", "kept", ns, 60)
        network = neutron_get(demo_conn, f"/networks/{network_id}")["network"]
        assert network["tags"] == [f"kumo-orphan={uid}"]
        assert "10.79.0.0/24" in subnets_of(demo_conn, network_id)

        apply(
            ns,
            net_manifest(
                "again", subnets=[{"cidr": "10.79.0.0/24"}], **{"import": {"id": network_id}}
            ),
        )
        again = wait_ready("net", "again", ns, timeout=60)
        assert again["status"]["id"] == network_id
        tags = neutron_get(demo_conn, f"/networks/{network_id}")["network"]["tags"]
        assert f"kumo-owner={again['metadata']['uid']}" in tags
        kubectl("delete", "net", "again", "-n", ns, "--wait=false")
        wait_gone("net", "again", ns, 60)
        assert neutron_get(demo_conn, f"/networks/{network_id}") is None
    finally:
        if neutron_get(demo_conn, f"/networks/{network_id}") is not None:
            demo_conn.network.delete(f"/networks/{network_id}")


def test_bad_subnets_are_refused_naming_the_field(namespace: str, kumo_operator: Any) -> None:
    ns = namespace
    twice = net_manifest("twice", subnets=[{"cidr": FIRST}, {"cidr": FIRST}])
    proc = kubectl(
        "apply", "--validate=false", "-n", ns, "-f", "-",
        input=yaml.safe_dump(twice), check=False,
    )  # fmt: skip
    assert proc.returncode != 0 and "spec.subnets[].cidr must be unique" in proc.stderr, proc

    apply(ns, net_manifest("overlap", subnets=[{"cidr": "10.80.0.0/16"}, {"cidr": "10.80.1.0/24"}]))
    cond = wait_reason("net", "overlap", ns, "InvalidSpec", 60)
    assert "spec.subnets[].cidr 10.80.0.0/16 overlaps 10.80.1.0/24" in cond["message"]
    outside = net_manifest("outside", subnets=[{"cidr": "10.81.0.0/24", "gateway": "10.82.0.1"}])
    apply(ns, outside)
    cond = wait_reason("net", "outside", ns, "InvalidSpec", 60)
    assert "spec.subnets[].gateway 10.82.0.1 is outside cidr 10.81.0.0/24" in cond["message"]
