"""Crash safety and ownership: a kill -9 right after a create call leaks nothing, a
foreign server with the same name is never touched, two LBs follow one group."""

from __future__ import annotations

from typing import Any

from tests.integration.helpers import (
    VM_SPEC,
    apply,
    lb_port,
    owned_servers,
    pool_member_addresses,
    vm,
    wait_gone,
    wait_ready,
)
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import KumoOperator, get_obj, like, wait_until


def test_kill_after_create_then_restart_adopts(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    """SIGKILL right after Nova accepted the create, before the ID reached status."""
    kumo_operator.stop()
    crashing = like(kumo_operator, "operator-crash.log")
    crashing.start(env={"KUMO_FAILPOINTS": "after-server-create"})
    try:
        apply(namespace, vm("crashy"))
        uid = wait_until(
            "VM has a uid", lambda: get_obj("vm", "crashy", namespace)["metadata"]["uid"]
        )
        wait_until("operator died at the failpoint", lambda: crashing.proc.poll() is not None, 120)
        assert crashing.proc.returncode == -9
        assert len(owned_servers(demo_conn, uid)) == 1, "the create call went out"
        status = get_obj("vm", "crashy", namespace).get("status") or {}
        assert not status.get("id"), "crashed before recording the id"
    finally:
        crashing.kill()
        kumo_operator.start()  # the restart
    ready = wait_ready("vm", "crashy", namespace)
    servers = owned_servers(demo_conn, uid)
    assert [s.id for s in servers] == [ready["status"]["id"]], "exactly one server, adopted"
    kubectl("delete", "vm", "crashy", "-n", namespace, "--wait=false")
    wait_gone("vm", "crashy", namespace)
    assert owned_servers(demo_conn, uid) == []


def test_foreign_server_with_same_name_is_untouched(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    image = demo_conn.image.find_image("centos79")
    flavor = demo_conn.compute.find_flavor("m1.tiny")
    network = demo_conn.network.find_network("kumo-demo-net")
    foreign = demo_conn.compute.create_server(
        name="twin",
        image_id=image.id,
        flavor_id=flavor.id,
        networks=[{"uuid": network.id}],
        description="not kumo's",
    )
    try:
        apply(namespace, vm("twin"))
        ready = wait_ready("vm", "twin", namespace)
        assert ready["status"]["id"] != foreign.id
        kubectl("delete", "vm", "twin", "-n", namespace, "--wait=false")
        wait_gone("vm", "twin", namespace)
        survivor = demo_conn.compute.get_server(foreign.id)
        assert survivor.description == "not kumo's" and survivor.status != "DELETED"
        assert "kumo" not in (survivor.tags or [])
    finally:
        demo_conn.compute.delete_server(foreign.id, ignore_missing=True)


def test_two_load_balancers_follow_one_group(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachineGroup",
            "metadata": {"name": "web"},
            "spec": {"replicas": 2, "haPolicy": "soft", "template": VM_SPEC},
        },
    )
    for name in ("front-a", "front-b"):
        apply(
            namespace,
            {
                "apiVersion": "kumo.dev/v1alpha1",
                "kind": "LoadBalancer",
                "metadata": {"name": name},
                "spec": {
                    "ports": [
                        {
                            **lb_port("web", 8080, "tcp"),
                            "monitors": [{"protocol": "tcp", "port": 8080}],
                        }
                    ]
                },
            },
        )

    def both_follow(count: int) -> bool:
        out = kubectl(
            "get",
            "vm",
            "-n",
            namespace,
            "-l",
            "kumo.dev/group=web",
            "-o",
            "jsonpath={.items[*].status.ip}",
        ).stdout
        ips = set(out.split())
        if len(ips) != count:
            return False
        for name in ("front-a", "front-b"):
            lb = get_obj("lb", name, namespace) or {}
            lb_id = (lb.get("status") or {}).get("id")
            if not lb_id or pool_member_addresses(demo_conn, lb_id) != {8080: ips}:
                return False
        return True

    wait_until("both LBs have the 2 members", lambda: both_follow(2), 240)
    kubectl("scale", "vmg", "web", "-n", namespace, "--replicas=3")
    wait_until("both LBs have the 3 members", lambda: both_follow(3), 240)
