"""The startup barrier under a fleet: restarting Kumo never shrinks a pool.

A restarted operator that reconciled a LoadBalancer before it had listed the group's
VirtualMachines — or before its cloud caches held the pool's members — would compute an
empty or partial member list and remove members. Here Kumo is killed (-9) and started
again under a group (8 VMs in make test, 50 in make test-long) behind a load balancer while a thread samples Octavia's member
count every 0.2 s, on the real kube-apiserver and Octavia: the count never drops, and no
VM gets a second server.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from tests.integration.helpers import (
    apply,
    lb_port,
    members_of,
    owned_servers,
    pool_member_addresses,
    wait_gone,
    wait_ready,
)
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import KumoOperator, wait_until
from tests.integration.openstack_fixtures import lab_connect

#: The group's size in make test; the long variant (make test-long) restarts under 50.
REPLICAS = int(os.environ.get("KUMO_FLEET_RESTART_REPLICAS", "8"))


class MemberSampler(threading.Thread):
    """Counts the pool's members every 0.2 s until stopped (its own SDK connection)."""

    def __init__(self, conn: Any, pool_id: str) -> None:
        super().__init__(daemon=True)
        self.conn = conn
        self.pool_id = pool_id
        self.counts: list[int] = []
        self.errors: list[str] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            try:
                self.counts.append(len(list(self.conn.load_balancer.members(self.pool_id))))
            except Exception as error:  # a read that failed is not a count
                self.errors.append(repr(error))


@pytest.mark.parametrize("replicas", [REPLICAS, pytest.param(50, marks=pytest.mark.long)])
def test_a_restart_under_a_group_never_drops_a_pool_member(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any, openstack_lab: str, replicas: int
) -> None:
    kumo_operator.wait_role("leader", 60)
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachineGroup",
            "metadata": {"name": "fleet"},
            "spec": {
                "replicas": replicas,
                "haPolicy": "soft",
                "template": {"image": "centos79", "flavor": "m1.tiny"},
            },
        },
    )
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "LoadBalancer",
            "metadata": {"name": "front"},
            "spec": {"ports": [lb_port("fleet", member_port=8080)]},
        },
    )
    wait_ready("vmg", "fleet", namespace, timeout=600)
    lb = wait_until(
        f"the pool to hold {replicas} members",
        lambda: (
            (obj := wait_ready("lb", "front", namespace, timeout=60))
            and len(pool_member_addresses(demo_conn, obj["status"]["id"]).get(80, ())) == replicas
            and obj
        ),
        300,
        interval=1.0,
    )
    pool_id = lb["status"]["ports"][0]["poolId"]

    sampler = MemberSampler(lab_connect(openstack_lab, "kumo-demo"), pool_id)
    sampler.start()
    try:
        wait_until("the sampler's first count", lambda: sampler.counts, 30, interval=0.1)
        kumo_operator.kill()  # kill -9: nothing in memory survives
        kumo_operator.start()
        kumo_operator.wait_role("leader", 60)
        # Every object looked at once by the new process: 50 VMs, the group, the LB.
        wait_until(
            "the restarted operator's first full pass",
            lambda: kumo_operator.metric("kumo_reconciles_total") >= replicas + 2,
            240,
            interval=0.5,
        )
        wait_ready("lb", "front", namespace, timeout=120)
        samples_after = len(sampler.counts)
        wait_until(  # and a few more samples with the new process leading
            "samples after the full pass",
            lambda: len(sampler.counts) >= samples_after + 10,
            30,
            interval=0.2,
        )
    finally:
        sampler.done.set()
        sampler.join(10)

    assert len(sampler.counts) >= 20, f"too few samples: {sampler.counts} {sampler.errors}"
    assert min(sampler.counts) == replicas, (
        f"the pool dropped to {min(sampler.counts)} member(s) across the restart"
    )
    for vm in members_of(namespace, "fleet"):
        servers = owned_servers(demo_conn, vm["metadata"]["uid"])
        assert [s.id for s in servers] == [vm["status"]["id"]], vm["metadata"]["name"]

    kubectl("delete", "lb", "front", "-n", namespace, "--wait=false")
    kubectl("delete", "vmg", "fleet", "-n", namespace, "--wait=false")
    wait_gone("lb", "front", namespace, timeout=300)
    wait_gone("vmg", "fleet", namespace, timeout=600)
