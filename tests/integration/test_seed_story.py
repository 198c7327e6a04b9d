"""Seed 000's story end to end on the real kube-apiserver and the real OpenStack:
create, scale with the load balancer following, heal drift, delete leaving nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.helpers import (
    apply,
    example,
    kumo_leftovers,
    members_of,
    owned_servers,
    pool_member_addresses,
    wait_gone,
    wait_ready,
)
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until

GROUP = "virtualmachinegroup-sample"
LB = "loadbalancer-sample"


def member_ips(namespace: str) -> set[str]:
    return {
        m["status"]["ip"] for m in members_of(namespace, GROUP) if (m.get("status") or {}).get("ip")
    }


def lb_follows_group(conn: Any, namespace: str, expected: int) -> bool:
    lb = get_obj("lb", LB, namespace)
    ips = member_ips(namespace)
    if not lb or len(ips) != expected or not (lb.get("status") or {}).get("id"):
        return False
    pools = pool_member_addresses(conn, lb["status"]["id"])
    return pools == {80: ips, 443: ips}


@pytest.fixture
def seed(namespace: str, kumo_operator: Any, demo_conn: Any) -> str:
    for name in ("virtualmachine.yaml", "virtualmachinegroup.yaml", "loadbalancer.yaml"):
        apply(namespace, example(name))
    return namespace


def test_seed_story(seed: str, demo_conn: Any) -> None:
    ns = seed
    vm = wait_ready("vm", "vm-sample", ns)
    assert vm["status"]["ip"] and vm["status"]["phase"] == "Running"
    server = demo_conn.compute.get_server(vm["status"]["id"])
    assert server.description == "generated operator"
    assert "kumo-owner=" + vm["metadata"]["uid"] in server.tags

    group = wait_ready("vmg", GROUP, ns)
    assert group["status"]["readyReplicas"] == 2
    sg = demo_conn.compute.get_server_group(group["status"]["serverGroupId"])
    assert sg.policy == "soft-anti-affinity"

    lb = wait_ready("lb", LB, ns, timeout=240)
    assert lb["status"]["vip"]
    ports = {p["port"]: p for p in lb["status"]["ports"]}
    assert ports[80]["unappliedMonitors"] == ["https:80/health/ready"]
    wait_until("LB members = the group's VMs", lambda: lb_follows_group(demo_conn, ns, 2), 120)

    # Scale out: a third VM appears, boots, and joins every pool.
    kubectl("scale", "vmg", GROUP, "-n", ns, "--replicas=3")
    wait_until("3 ready members", lambda: len(member_ips(ns)) == 3, 180)
    wait_until("LB follows scale-out", lambda: lb_follows_group(demo_conn, ns, 3), 180)
    every_member = {m["metadata"]["uid"] for m in members_of(ns, GROUP)}

    # Scale in: members leave the pools, then their servers go.
    kubectl("scale", "vmg", GROUP, "-n", ns, "--replicas=1")
    wait_until("LB follows scale-in", lambda: lb_follows_group(demo_conn, ns, 1), 180)
    # (By the members' UIDs, not by name: `make up`'s own seed group in namespace
    # default has the same name, and its servers are none of this test's business.)
    wait_until(
        "only one member server left",
        lambda: sum(len(owned_servers(demo_conn, uid)) for uid in every_member) == 1,
        180,
    )

    # Delete everything: nothing of Kumo's is left in the project.
    for kind, name in (("lb", LB), ("vmg", GROUP), ("vm", "vm-sample")):
        kubectl("delete", kind, name, "-n", ns, "--wait=false")
    for kind, name in (("lb", LB), ("vmg", GROUP), ("vm", "vm-sample")):
        wait_gone(kind, name, ns, timeout=240)
    wait_until(
        "no Kumo resources left", lambda: not any(kumo_leftovers(demo_conn, ns).values()), 120
    )


def test_out_of_band_changes_are_healed(seed: str, demo_conn: Any) -> None:
    ns = seed
    wait_ready("vmg", GROUP, ns)
    wait_ready("lb", LB, ns, timeout=240)
    wait_until("LB has both members", lambda: lb_follows_group(demo_conn, ns, 2), 120)

    # Someone deletes a member's server in the web UI: it comes back, the LB follows.
    victim = members_of(ns, GROUP)[0]
    old_id, old_ip = victim["status"]["id"], victim["status"]["ip"]
    demo_conn.compute.delete_server(old_id)

    def replaced() -> bool:
        vm = get_obj("vm", victim["metadata"]["name"], ns) or {}
        status = vm.get("status") or {}
        return status.get("id") not in (None, old_id) and status.get("phase") == "Running"

    wait_until("deleted server recreated", replaced, 120)
    wait_until("LB follows the new address", lambda: lb_follows_group(demo_conn, ns, 2), 120)
    # The pools hold the replacement's address, and the deleted server's left them (unless
    # Neutron gave the replacement the same address back).
    new_ip = (get_obj("vm", victim["metadata"]["name"], ns) or {})["status"]["ip"]
    lb_id = (get_obj("lb", LB, ns) or {})["status"]["id"]
    for port, held in pool_member_addresses(demo_conn, lb_id).items():
        assert new_ip in held, (port, held)
        assert old_ip == new_ip or old_ip not in held, (port, held)

    # Someone edits the standalone VM's server: description and tags are put back.
    vm = wait_ready("vm", "vm-sample", ns)
    server_id = vm["status"]["id"]
    demo_conn.compute.update_server(server_id, description="changed by hand")
    demo_conn.compute.get_server(server_id).remove_tag(demo_conn.compute, "kumo")

    def restored() -> bool:
        server = demo_conn.compute.get_server(server_id)
        return server.description == "generated operator" and "kumo" in server.tags

    wait_until("server put back to spec", restored, 60)
    assert (get_obj("vm", "vm-sample", ns) or {})["status"]["id"] == server_id, "healed in place"
