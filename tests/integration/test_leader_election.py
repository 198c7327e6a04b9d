"""Two Kumo processes against one API server: one leads, the other waits as standby.

Without leader election both reconciled the same objects and created duplicates (two
servers for one VirtualMachine). These tests run a second real `kumo run` beside the
suite's operator and check, on the real kube-apiserver and Nova, that the standby
writes nothing (no write in the API server's audit log carries its identity), takes
over when the leader is killed (within 15 s) or stopped (within 5 s), and that a
kill -9 of the leader in the middle of a scale-out of 20 leaves exactly one server
per VirtualMachine.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.integration.apiserver_audit import writes_since
from tests.integration.helpers import apply, members_of, owned_servers, wait_gone, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import KumoOperator, lease_holder, like, wait_until

VM_SPEC = {"image": "centos79", "flavor": "m1.tiny"}


@pytest.fixture
def standby(kumo_operator: KumoOperator) -> Iterator[KumoOperator]:
    """A second operator beside the session's leader, stopped (and the leader restored) after."""
    kumo_operator.wait_role("leader", 60)
    second = like(kumo_operator, "operator-standby.log")
    second.start()
    yield second
    if kumo_operator.proc is None:  # a test stopped or killed the session's operator
        kumo_operator.start()
    second.stop()  # graceful: hands the lease back to the session's operator
    kumo_operator.wait_role("leader", 60)


def test_second_instance_waits_as_standby_and_writes_nothing(
    namespace: str, kumo_operator: KumoOperator, standby: KumoOperator, demo_conn: Any
) -> None:
    """Checked where it counts, in the API server's audit log (apiserver_audit.py): no
    write carries the standby's identity in its User-Agent, while the leader's do."""
    since = datetime.now(UTC)
    health = standby.wait_role("standby", 90)
    assert health["synced"] is True and health["ok"] is True, "a healthy, ready standby"
    leader, second = kumo_operator.health()["identity"], health["identity"]
    assert lease_holder() == leader != second

    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": {"name": "single"},
            "spec": VM_SPEC,
        },
    )
    ready = wait_ready("vm", "single", namespace)
    assert [s.id for s in owned_servers(demo_conn, ready["metadata"]["uid"])] == [
        ready["status"]["id"]
    ]
    assert standby.metric("kumo_reconciles_total") == 0, "the standby reconciled nothing"
    assert standby.health()["role"] == "standby"

    # The leader's writes of this test are in the log (so the log is read, and names who
    # wrote); the standby has none since it started - had it led for a moment, its
    # Lease writes would be there too.
    wait_until(
        "the leader's status write of VirtualMachine single in the audit log",
        lambda: [
            w
            for w in writes_since(since, containing=leader)
            if w.by(leader)
            and (w.resource, w.namespace, w.name) == ("virtualmachines/status", namespace, "single")
        ],
        30,
    )
    by_standby = [w for w in writes_since(standby.started_at, containing=second) if w.by(second)]
    assert by_standby == [], f"the standby wrote to the API server: {by_standby[:5]}"


def test_sigterm_releases_the_lease_and_the_standby_takes_over_in_5s(
    namespace: str, kumo_operator: KumoOperator, standby: KumoOperator
) -> None:
    standby.wait_role("standby", 90)
    stopped = time.monotonic()
    kumo_operator.terminate()  # SIGTERM: finish in-flight work, release the lease
    standby.wait_role("leader", 15)
    took = time.monotonic() - stopped
    kumo_operator.stop()  # reap it
    assert took < 5, f"standby took over {took:.1f}s after the leader's SIGTERM"
    assert lease_holder() == standby.health()["identity"]

    apply(  # the new leader reconciles
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": {"name": "after-handover"},
            "spec": VM_SPEC,
        },
    )
    wait_ready("vm", "after-handover", namespace)
    assert standby.metric("kumo_reconciles_total") > 0


@pytest.mark.long  # make test-long; make test's chaos run kills a leader under a group too
def test_kill_leader_during_scale_out_leaves_one_server_per_vm(
    namespace: str, kumo_operator: KumoOperator, standby: KumoOperator, demo_conn: Any
) -> None:
    standby.wait_role("standby", 90)
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachineGroup",
            "metadata": {"name": "fleet"},
            "spec": {"replicas": 20, "haPolicy": "soft", "template": VM_SPEC},
        },
    )
    # Kill the leader in the middle of the scale-out: some servers exist, not all.
    wait_until(
        "the scale-out to be under way",
        lambda: (
            sum(1 for vm in members_of(namespace, "fleet") if (vm.get("status") or {}).get("id"))
            >= 4
        ),
        180,
        interval=0.2,
    )
    killed = time.monotonic()
    kumo_operator.kill()
    standby.wait_role("leader", 30)
    took = time.monotonic() - killed
    assert took <= 15, f"standby took over {took:.1f}s after kill -9 of the leader"

    group = wait_ready("vmg", "fleet", namespace, timeout=420)
    assert group["status"]["readyReplicas"] == 20
    members = members_of(namespace, "fleet")
    assert len(members) == 20
    for vm in members:
        servers = owned_servers(demo_conn, vm["metadata"]["uid"])
        assert [s.id for s in servers] == [vm["status"]["id"]], (
            f"{vm['metadata']['name']}: exactly one server, the one in status"
        )
    kubectl("delete", "vmg", "fleet", "-n", namespace, "--wait=false")
    wait_gone("vmg", "fleet", namespace, timeout=300)
    for vm in members:
        assert owned_servers(demo_conn, vm["metadata"]["uid"]) == []
