"""Batch membership and graceful drain on the real lab Octavia and Nova.

* Members land in one batch: a LoadBalancer created for a group of three Ready VMs fills
  its pool with ONE ``PUT .../members`` (counted in the lab's Octavia API log, by pool ID)
  and no single-member POST.
* Scale-in drains: a sampler reads the pool's members and the project's servers in a
  loop, stamping each sample; the samples must show, for each leaving VM, weight 0 first,
  the member removed no sooner than ``drainSeconds`` after the last sample that still saw
  it at full weight, and its server deleted only once the member was gone.

Sample times bracket the reads: ``before`` is taken before a sample's first call,
``after`` once its last call returned, so a change seen in a sample happened before
its ``after`` and one not yet seen happened after its ``before``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

from tests.integration.helpers import apply, lb_port, members_of, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import STATE, get_obj, wait_until

pytestmark = pytest.mark.integration

GROUP = "drain-group"
LB = "drain-lb"
DRAIN_SECONDS = 5
OCTAVIA_LOG = STATE / "logs" / "octavia-api.log"


@dataclass(frozen=True)
class Sample:
    before: float
    after: float
    weights: dict[str, int]
    """Member address → weight, as Octavia lists the pool."""
    servers: set[str]
    """IDs of the project's servers that exist and are not being deleted."""


class Sampler(threading.Thread):
    """Reads the pool, then the servers, until stopped (a read error is a missed sample)."""

    def __init__(self, conn: Any, pool_id: str) -> None:
        super().__init__(daemon=True)
        self.conn, self.pool_id = conn, pool_id
        self.samples: list[Sample] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            before = time.monotonic()
            try:
                members = self.conn.load_balancer.members(self.pool_id)
                weights = {m.address: m.weight for m in members}
                servers = {
                    s.id
                    for s in self.conn.compute.servers(tags="kumo")
                    if s.status != "DELETED" and s.task_state != "deleting"
                }
            except Exception:  # a read racing a deletion: the next sample will tell
                continue
            self.samples.append(Sample(before, time.monotonic(), weights, servers))
            self.stopped.wait(0.1)


def group(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachineGroup",
        "metadata": {"name": GROUP},
        "spec": {
            "replicas": replicas,
            "haPolicy": "none",
            "template": {"image": "centos79", "flavor": "n3-1vcpu-2gb"},
        },
    }


def load_balancer() -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "LoadBalancer",
        "metadata": {"name": LB},
        "spec": {
            "region": "tokyo1",
            "ports": [lb_port(GROUP, drainSeconds=DRAIN_SECONDS)],
        },
    }


def pool_addresses(conn: Any, pool_id: str) -> set[str]:
    return {m.address for m in conn.load_balancer.members(pool_id)}


def member_requests(pool_id: str, offset: int) -> list[str]:
    """Methods of the Octavia API requests to ``pool_id``'s members since ``offset``."""
    with OCTAVIA_LOG.open("rb") as log:
        log.seek(offset)
        text = log.read().decode(errors="replace")
    path = f"/lbaas/pools/{pool_id}/members"
    return [
        line.split("] ")[-1].split(" ", 1)[0]
        for line in text.splitlines()
        if path in line and " => " in line
    ]


def test_members_land_in_one_batch_and_leave_after_draining(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    ns = namespace
    apply(ns, group(3))
    wait_until(
        "3 Ready VMs",
        lambda: (obj := get_obj("vmg", GROUP, ns)) and obj["status"].get("readyReplicas") == 3,
        240,
    )
    vms = {vm["status"]["ip"]: vm["status"]["id"] for vm in members_of(ns, GROUP)}
    assert len(vms) == 3

    # -- one batch for the whole pool ----------------------------------------------------
    offset = OCTAVIA_LOG.stat().st_size
    apply(ns, load_balancer())
    lb = wait_ready("lb", LB, ns, timeout=240)
    pool_id = lb["status"]["ports"][0]["poolId"]
    wait_until("3 members", lambda: pool_addresses(demo_conn, pool_id) == set(vms), 60)
    calls = wait_until("the member update logged", lambda: member_requests(pool_id, offset), 30)
    writes = [c for c in calls if c != "GET"]
    assert writes == ["PUT"], f"one batch update, no single-member calls: {calls}"

    # -- scale in: weight 0, drainSeconds, removal, then the server ------------------------
    sampler = Sampler(demo_conn, pool_id)
    sampler.start()
    try:
        wait_until("the sampler's first sample", lambda: sampler.samples, 30)
        kubectl("scale", "vmg", GROUP, "-n", ns, "--replicas=1")
        wait_until(
            "one member and one server left",
            lambda: (
                len(sampler.samples[-1].weights) == 1
                and len(set(vms.values()) & sampler.samples[-1].servers) == 1
            ),
            240,
        )
    finally:
        sampler.stopped.set()
        sampler.join(timeout=30)
    samples = sampler.samples
    (kept,) = sampler.samples[-1].weights
    leaving = {ip: sid for ip, sid in vms.items() if ip != kept}
    assert len(leaving) == 2

    for ip, server_id in leaving.items():
        full = [s for s in samples if s.weights.get(ip) == 1]
        zero = [s for s in samples if s.weights.get(ip) == 0]
        gone = [s for s in samples if ip not in s.weights]
        assert full and zero and gone, f"{ip}: weight 1, then 0, then gone"
        assert full[-1].before < zero[0].before < gone[0].before, f"{ip}: drained before removal"
        assert not [s for s in samples if s.before > zero[0].after and s.weights.get(ip) == 1]
        # The drain began after the last read at full weight and the removal before the
        # first read without the member: at least drainSeconds lie between.
        drained = gone[0].after - full[-1].before
        assert drained >= DRAIN_SECONDS, f"{ip}: removed after {drained:.2f}s"
        assert drained < DRAIN_SECONDS + 60, f"{ip}: drained for {drained:.2f}s"
        # Never the server gone while the member is still in the pool (whether a sample
        # catches the moment between the two depends on timing, so it is not asserted).
        assert not [s for s in samples if ip in s.weights and server_id not in s.servers]
        assert [s for s in samples if server_id not in s.servers], f"{ip}: server deleted"


def member_writes(pool_id: str, offset: int) -> list[str]:
    """Octavia API writes to ``pool_id``'s members since ``offset``: ``PUT batch`` for a
    batch update, ``POST``/``PUT``/``DELETE`` for single-member calls."""
    with OCTAVIA_LOG.open("rb") as log:
        log.seek(offset)
        text = log.read().decode(errors="replace")
    batch = f"/lbaas/pools/{pool_id}/members "
    single = f"/lbaas/pools/{pool_id}/members"
    found = []
    for line in text.splitlines():
        if single not in line or " => " not in line:
            continue
        method = line.split("] ")[-1].split(" ", 1)[0]
        if method != "GET":
            found.append("PUT batch" if method == "PUT" and batch in line else method)
    return found


def test_a_repair_in_a_big_pool_uses_single_member_calls_and_spares_foreign_members(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    """With 50 members in the pool a batch update would lock the LB for the whole pool's
    worth of work: replacing one server is a create and a delete of one member each, and
    the 48 members someone added by hand keep their IDs, names and weights. (50, not 40:
    the dead member goes first, and the pool must still hold 40 for the create.)"""
    ns = namespace
    apply(ns, group(2))
    apply(ns, load_balancer())
    lb = wait_ready("lb", LB, ns, timeout=300)
    pool_id = lb["status"]["ports"][0]["poolId"]
    lb_id = lb["status"]["id"]
    wait_until("2 members", lambda: len(pool_addresses(demo_conn, pool_id)) == 2, 120)

    def lb_active() -> bool:
        return demo_conn.load_balancer.get_load_balancer(lb_id).provisioning_status == "ACTIVE"

    wait_until("the LB ACTIVE after Kumo's batch", lb_active, 120)

    # 48 foreign members, added in one batch that sends Kumo's two back as they are.
    kumos = list(demo_conn.load_balancer.members(pool_id))
    body = [
        {"name": m.name, "address": m.address, "protocol_port": m.protocol_port, "tags": m.tags}
        for m in kumos
    ]
    body += [
        {"name": f"by-hand-{i}", "address": f"192.168.7.{i + 10}", "protocol_port": 80, "weight": 3}
        for i in range(48)
    ]
    response = demo_conn.load_balancer.put(
        f"/lbaas/pools/{pool_id}/members", json={"members": body}
    )
    assert response.status_code == 202, response.text
    wait_until("the LB ACTIVE after the foreign batch", lb_active, 120)
    foreign = {
        m.id: (m.name, m.address, m.weight)
        for m in demo_conn.load_balancer.members(pool_id)
        if "kumo" not in (m.tags or [])
    }
    assert len(foreign) == 48

    # Replace one of Kumo's servers out of band.
    vm = members_of(ns, GROUP)[0]
    name, old_id, old_ip = vm["metadata"]["name"], vm["status"]["id"], vm["status"]["ip"]
    offset = OCTAVIA_LOG.stat().st_size
    demo_conn.compute.delete_server(old_id)

    def repaired() -> str | None:
        status = get_obj("vm", name, ns)["status"]
        new_ip = status.get("ip")
        if status.get("id") == old_id or not new_ip or new_ip == old_ip:
            return None
        addresses = pool_addresses(demo_conn, pool_id)
        return new_ip if new_ip in addresses and old_ip not in addresses else None

    wait_until("the pool follows the new server", repaired, 300)
    wait_until("the LB ACTIVE", lb_active, 120)
    writes = wait_until("the member writes logged", lambda: member_writes(pool_id, offset), 30)
    assert "PUT batch" not in writes, f"no batch update for one server: {writes}"
    assert "POST" in writes and "DELETE" in writes, writes
    after = {
        m.id: (m.name, m.address, m.weight)
        for m in demo_conn.load_balancer.members(pool_id)
        if "kumo" not in (m.tags or [])
    }
    assert after == foreign, "the hand-made members are untouched"
