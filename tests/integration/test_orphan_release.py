"""deletionPolicy: Orphan is all or nothing, on the real kube-apiserver and the lab's
OpenStack: the finalizer goes only once every resource reads back released.

* A LoadBalancer deleted while Octavia is busy with it (a pool member change that
  octavia-worker, stopped, does not finish): Kumo shows ``Releasing`` (the 409 is waited
  for, not taken for done) and keeps its finalizer and marker; once the worker resumes it
  lets the object go; the LB stays, its marker gone.
* A stateful VirtualMachineGroup switched to Orphan together with a change its pass
  cannot get through (haPolicy soft while Nova's server group quota is used up) and
  deleted at once: the garbage collector deletes members and Volume objects after the
  group, and their servers and volumes stay, released.
* A DNSRecord (Orphan) whose operator was killed between Designate's create and the ID's
  record, deleted while no operator runs: the restarted Kumo releases the recordset in
  the spec's zone (status names no zone).

What the tests keep (released, as asked) they delete through openstacksdk at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from openstack import exceptions as os_exc

from kumo.ports.markers import Marker, marker_of, metadata_marker, text_marker, unreleased
from tests.chaos.outage import recorded_pid
from tests.integration.helpers import VM_SPEC, apply, cluster_id, lb_port, wait_gone, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import KumoOperator, get_obj, like, wait_until
from tests.integration.test_openstack_lbaas_dns import delete_lb_tree, lb_status
from tests.integration.test_stateful_groups import group, member_with_volume, volume_ids
from tests.integration.test_vm_volumes import volume_of

API = "kumo.dev/v1alpha1"
ZONE = "kumo-demo.test."


def events(namespace: str, name: str, reason: str) -> list[str]:
    out = kubectl(
        "get", "events", "-n", namespace,
        "--field-selector", f"involvedObject.name={name},reason={reason}", "-o", "json",
    )  # fmt: skip
    return [e["message"] for e in json.loads(out.stdout)["items"]]


def phase(kind: str, name: str, namespace: str) -> str | None:
    return ((get_obj(kind, name, namespace) or {}).get("status") or {}).get("phase")


# -- LoadBalancer: a busy Octavia is waited for ------------------------------------------------


@contextlib.contextmanager
def octavia_held_busy() -> Iterator[None]:
    """octavia-worker stopped (SIGSTOP to its process group) for the block: a change the
    API takes meanwhile leaves the load balancer PENDING_UPDATE, and Octavia answers 409
    to any other, for exactly as long as the block lasts. SIGCONT on the way out."""
    pid = recorded_pid("octavia-worker")
    assert pid is not None, "the lab's octavia-worker is running"
    os.killpg(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.killpg(pid, signal.SIGCONT)


def test_a_load_balancer_orphan_waits_for_a_busy_octavia_and_is_released(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    ns = namespace
    apply(ns, {
        "apiVersion": API, "kind": "VirtualMachineGroup", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "haPolicy": "none", "template": dict(VM_SPEC)},
    })  # fmt: skip
    apply(ns, {
        "apiVersion": API, "kind": "LoadBalancer", "metadata": {"name": "lb"},
        "spec": {
            "region": "tokyo1",
            "deletionPolicy": "Orphan",
            "ports": [lb_port("web")],
        },
    })  # fmt: skip
    ready = wait_ready("lb", "lb", ns, timeout=300)
    lb_id, uid = ready["status"]["id"], ready["metadata"]["uid"]
    try:
        marked = demo_conn.load_balancer.get_load_balancer(lb_id).tags
        assert marker_of(marked) == Marker(uid, cluster_id()), marked
        (listener,) = demo_conn.load_balancer.listeners(load_balancer_id=lb_id)
        pool_id = listener.default_pool_id
        with octavia_held_busy():
            # A pool member change the stopped worker never finishes: the LB stays
            # PENDING_UPDATE, and Kumo's release (a tag write) gets 409s.
            # (A 409 here means a change of Kumo's own holds it so already.)
            with contextlib.suppress(os_exc.ConflictException):
                demo_conn.load_balancer.create_member(
                    pool_id, address="192.0.2.77", protocol_port=80
                )
            assert lb_status(demo_conn, lb_id) == "PENDING_UPDATE"
            kubectl("delete", "lb", "lb", "-n", ns, "--wait=false")
            wait_until(
                "the LoadBalancer waits for Octavia (Releasing, the 409 in its event)",
                lambda: (
                    phase("lb", "lb", ns) == "Releasing"
                    and any("busy in the cloud (409)" in m for m in events(ns, "lb", "Releasing"))
                ),
                90,
            )
            held = get_obj("lb", "lb", ns)
            assert held is not None and held["metadata"].get("finalizers"), "finalizer kept"
            still = demo_conn.load_balancer.get_load_balancer(lb_id).tags
            assert marker_of(still) == Marker(uid, cluster_id()), f"marker kept: {still}"
        # Octavia finishes the change; the release goes through and the object goes.
        wait_gone("lb", "lb", ns, 180)
        waited = events(ns, "lb", "Releasing")
        assert any(f"load balancer {lb_id} is busy in the cloud (409)" in m for m in waited), waited

        kept = demo_conn.load_balancer.get_load_balancer(lb_id)
        assert kept.provisioning_status not in ("PENDING_DELETE", "DELETED"), "the LB is kept"
        assert marker_of(kept.tags) is None, f"Kumo's marker is gone: {kept.tags}"
        assert unreleased(kept.tags) != kept.tags, f"it carries the orphan mark: {kept.tags}"
    finally:
        with contextlib.suppress(Exception):  # not under Kumo's feet, if it can be helped
            wait_gone("lb", "lb", ns, 120)
        if lb_status(demo_conn, lb_id) not in ("GONE", "DELETED"):
            delete_lb_tree(demo_conn, lb_id)


# -- VirtualMachineGroup: members and volumes kept when its pass cannot get through ------------


@pytest.fixture
def server_group_quota(admin_conn: Any, demo_conn: Any) -> Iterator[Any]:
    """A setter of kumo-demo's server group quota; the quota is set back at the end."""
    path = f"/os-quota-sets/{demo_conn.current_project_id}"
    before = admin_conn.compute.get(f"{path}/detail").json()["quota_set"]["server_groups"]

    def set_to_usage() -> None:
        in_use = admin_conn.compute.get(f"{path}/detail").json()["quota_set"]["server_groups"]
        put = admin_conn.compute.put(path, json={"quota_set": {"server_groups": in_use["in_use"]}})
        assert put.status_code == 200, put.text

    try:
        yield set_to_usage
    finally:
        put = admin_conn.compute.put(path, json={"quota_set": {"server_groups": before["limit"]}})
        assert put.status_code == 200, put.text


def test_a_group_set_to_orphan_with_a_failing_change_and_deleted_keeps_servers_and_volumes(
    namespace: str, kumo_operator: Any, demo_conn: Any, server_group_quota: Any
) -> None:
    ns = namespace
    apply(ns, group("og", 2, volumeRetention={"whenDeleted": "Delete"}))
    ids = volume_ids(ns, "og", 2)
    servers = {
        i: wait_until(
            f"og-{i} has its volume",
            lambda i=i: member_with_volume(demo_conn, ns, f"og-{i}", ids[i]),
            300,
        )
        for i in range(2)
    }
    try:
        # Orphan, together with a change the group's pass cannot get through (a server
        # group Nova refuses: quota), then deleted at once: no pass gives the members and
        # Volume objects the new policy; the group's release must.
        server_group_quota()
        patch = {"spec": {"deletionPolicy": "Orphan", "haPolicy": "soft"}}
        kubectl("patch", "vmg", "og", "-n", ns, "--type=merge", "-p", json.dumps(patch))
        kubectl("delete", "vmg", "og", "-n", ns, "--wait=false")
        wait_gone("vmg", "og", ns, 180)
        for i in range(2):  # the garbage collector deletes them, Kumo releases
            wait_gone("vm", f"og-{i}", ns, 180)
            wait_gone("vol", f"og-data-{i}", ns, 180)

        for i in range(2):
            server = demo_conn.compute.get_server(servers[i])
            assert server.status == "ACTIVE" and server.task_state != "deleting", "kept"
            assert marker_of(server.tags) is None, f"released: {server.tags}"
            volume = volume_of(demo_conn, ids[i])
            assert volume is not None and volume["status"] != "deleting", "kept"
            assert metadata_marker(volume["metadata"]) is None, f"released: {volume['metadata']}"
            assert [a["server_id"] for a in volume["attachments"]] == [servers[i]]
    finally:
        _delete_kept(demo_conn, list(servers.values()), list(ids.values()))


def _delete_kept(conn: Any, servers: list[str], volumes: list[str]) -> None:
    """What the test released: the servers, then (detached by then) their volumes."""
    for server_id in servers:
        with contextlib.suppress(os_exc.NotFoundException):
            conn.compute.delete_server(server_id)
    for server_id in servers:
        wait_until(
            f"server {server_id} gone",
            lambda s=server_id: conn.compute.find_server(s, ignore_missing=True) is None,
            180,
        )
    for volume_id in volumes:
        wait_until(
            f"volume {volume_id} detached",
            lambda v=volume_id: (
                (volume_of(conn, v) or {}).get("status", "available") in ("available", "error")
            ),
            120,
        )
        with contextlib.suppress(os_exc.NotFoundException):
            conn.block_storage.delete(f"/volumes/{volume_id}", microversion="3.0")
    for volume_id in volumes:
        wait_until(f"volume {volume_id} gone", lambda v=volume_id: volume_of(conn, v) is None, 120)


# -- DNSRecord: released where finalize looks, after a crash in the create window --------------


def test_a_dns_record_orphaned_after_a_crash_in_the_create_window_is_released(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    ns = namespace
    record = f"orphan-{uuid.uuid4().hex[:8]}"
    zone = demo_conn.dns.find_zone(ZONE)
    manifest = {
        "apiVersion": API, "kind": "DNSRecord", "metadata": {"name": "crashy"},
        "spec": {
            "zone": ZONE, "name": record, "type": "A", "ttl": 60, "values": ["192.0.2.55"],
            "deletionPolicy": "Orphan",
        },
    }  # fmt: skip

    def made() -> list[Any]:
        return [rs for rs in demo_conn.dns.recordsets(zone) if rs.name == f"{record}.{ZONE}"]

    kumo_operator.stop()
    crashing = like(kumo_operator, "operator-crash-orphan-dns.log")
    crashing.start(env={"KUMO_FAILPOINTS": "after-recordset-create"})
    try:
        apply(ns, manifest)
        uid = wait_until(
            "DNSRecord has a uid", lambda: get_obj("dns", "crashy", ns)["metadata"]["uid"]
        )
        wait_until("operator died at the failpoint", lambda: crashing.proc.poll() is not None, 120)
        assert crashing.proc.returncode == -9
        (rs,) = made()
        assert text_marker(rs.description) == Marker(uid, cluster_id()), "created, marked"
        status = get_obj("dns", "crashy", ns).get("status") or {}  # type: ignore[union-attr]
        assert not status.get("id") and not status.get("zoneId"), "crashed before the record"
        # Deleted while no operator runs: the restarted Kumo's first pass is the release.
        kubectl("delete", "dns", "crashy", "-n", ns, "--wait=false")
    finally:
        crashing.kill()
        kumo_operator.start()
    try:
        wait_gone("dns", "crashy", ns, 180)
        (kept,) = made()
        assert kept.id == rs.id and sorted(kept.records) == ["192.0.2.55"], "the record stays"
        assert text_marker(kept.description) is None, kept.description
    finally:
        for leftover in made():
            with contextlib.suppress(os_exc.NotFoundException):
                demo_conn.dns.delete_recordset(leftover, zone)
