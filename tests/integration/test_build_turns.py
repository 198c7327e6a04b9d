"""Turns to build on the real Nova: ``kumo run --max-queued-builds 1`` and a group of five.

A thread lists the group's servers every 0.2 s with its own SDK connection: never more
than one of them is queued in Nova (``BUILD`` without a ``hostId``), the VMs that wait
say so in their condition, and all five end Ready — each woken by the listing that saw
the queued one reach a host, well before the 60 s fallback would have asked again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.helpers import apply, condition, members_of, wait_ready
from tests.integration.kumo_fixtures import KumoOperator, like, wait_until

pytestmark = pytest.mark.integration

GROUP = "turns"
REPLICAS = 5
MAX_QUEUED = 1


class BuildSampler(threading.Thread):
    """How many of the group's servers Nova holds queued (BUILD, no host yet), every
    0.2 s until stopped."""

    def __init__(self, conn: Any) -> None:
        super().__init__(daemon=True)
        self.conn = conn
        self.queued: list[int] = []
        self.errors: list[str] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            try:
                servers = self.conn.compute.servers(details=True, name=f"^{GROUP}-")
                self.queued.append(sum(1 for s in servers if s.status == "BUILD" and not s.host_id))
            except Exception as error:  # a listing that failed is not a sample
                self.errors.append(repr(error))


@pytest.fixture
def one_at_a_time(kumo_operator: KumoOperator) -> Iterator[KumoOperator]:
    """Kumo leading with ``--max-queued-builds 1`` instead of the session's operator."""
    kumo_operator.stop()
    operator = like(kumo_operator, "operator-build-turns.log")
    operator.start("--max-queued-builds", str(MAX_QUEUED))
    try:
        operator.wait_role("leader", 90)
        yield operator
    finally:
        operator.stop()
        kumo_operator.start()


def test_never_more_than_max_queued_builds_servers_wait_for_a_host(
    namespace: str, one_at_a_time: KumoOperator, demo_conn: Any
) -> None:
    sampler = BuildSampler(demo_conn)
    sampler.start()
    try:
        apply(
            namespace,
            {
                "apiVersion": "kumo.dev/v1alpha1",
                "kind": "VirtualMachineGroup",
                "metadata": {"name": GROUP},
                "spec": {
                    "replicas": REPLICAS,
                    "template": {"image": "centos79", "flavor": "m1.tiny"},
                },
            },
        )
        waiting = wait_until(
            "a VM waiting for its turn",
            lambda: [
                vm
                for vm in members_of(namespace, GROUP)
                if condition(vm).get("reason") == "WaitingToBuild"
            ],
            60,
            interval=0.2,
        )
        assert "1 of this cloud's servers are queued in Nova" in condition(waiting[0])["message"]
        wait_ready("VirtualMachineGroup", GROUP, namespace, timeout=120)
    finally:
        sampler.done.set()
        sampler.join(30)  # a listing has its own timeout; never hang the suite here
    vms = members_of(namespace, GROUP)
    assert len(vms) == REPLICAS
    assert all(condition(vm).get("status") == "True" for vm in vms)
    assert len(sampler.queued) > 20, sampler.errors
    assert max(sampler.queued) <= MAX_QUEUED, sampler.queued
