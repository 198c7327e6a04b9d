"""spec.snapshotBeforeReplace on the real kube-apiserver and the lab's Nova and Cinder (its
fake volume driver takes snapshots for real at the API level): a flavor change replaces
each member of a stateful group only after a Cinder snapshot of its volume is
`available`; every member keeps its volume; a second rollout (back to the first flavor)
takes new snapshots and keeps one per volume; the group's deletion (whenDeleted: Delete)
deletes them before the volumes. A snapshot Cinder refuses (the project's snapshot quota
set by the admin to what is in use for the test, restored after) stops the rollout naming the field,
without replacing the server; once the quota is back, the rollout goes on. A kill -9 right
after the snapshot's create makes no second snapshot once Kumo is back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.helpers import (
    cinder_pages,
    condition,
    kumo_leftovers,
    wait_gone,
    wait_reason,
)
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import KumoOperator, get_obj, like, wait_until
from tests.integration.test_stateful_groups import group, member_with_volume, refused, volume_ids
from tests.integration.test_vm_volumes import volume_of

MV = "3.22"  # snapshot listings filter by metadata from 3.22


def snapshots_of(conn: Any, volume_id: str) -> list[dict[str, Any]]:
    """Cinder's snapshots of the volume (all of them: Kumo's or not), but those going."""
    found = cinder_pages(conn, "/snapshots/detail", "snapshots", MV, {"volume_id": volume_id})
    return [s for s in found if s["volume_id"] == volume_id and s["status"] != "deleting"]


def rolled_out(ns: str, name: str, replicas: int) -> dict[str, Any] | None:
    """The group's status once Ready for its latest generation, every member updated."""
    obj = get_obj("vmg", name, ns) or {}
    status = obj.get("status") or {}
    if (
        condition(obj).get("status") != "True"
        or status.get("observedGeneration") != obj["metadata"]["generation"]
        or status.get("updatedReplicas") != replicas
    ):
        return None
    return dict(status)


def set_flavor(ns: str, name: str, flavor: str) -> None:
    patch = {"spec": {"template": {"image": "centos79", "flavor": flavor}}}
    kubectl("patch", "vmg", name, "-n", ns, "--type=merge", "-p", json.dumps(patch))


def test_each_member_is_snapshotted_before_replacement_and_keep_prunes(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    ns = namespace
    spec = {"snapshotBeforeReplace": {"keep": 1}, "volumeRetention": {"whenDeleted": "Delete"}}
    kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(group("sn", 2, **spec)))
    ids = volume_ids(ns, "sn", 2)
    servers = {
        i: wait_until(
            f"sn-{i} has its volume",
            lambda i=i: member_with_volume(demo_conn, ns, f"sn-{i}", ids[i]),
            300,
        )
        for i in range(2)
    }
    assert all(snapshots_of(demo_conn, ids[i]) == [] for i in range(2)), "none while converged"

    set_flavor(ns, "sn", "m1.small")
    status = wait_until("rolled out to m1.small", lambda: rolled_out(ns, "sn", 2), 420)
    first = {}
    for i in range(2):
        new = wait_until(
            f"sn-{i} has its volume again",
            lambda i=i: member_with_volume(demo_conn, ns, f"sn-{i}", ids[i]),
            120,
        )
        assert new != servers[i], "replaced"
        assert get_obj("vol", f"sn-data-{i}", ns)["status"]["id"] == ids[i]  # type: ignore[index]
        (snapshot,) = snapshots_of(demo_conn, ids[i])
        volume_uid = get_obj("vol", f"sn-data-{i}", ns)["metadata"]["uid"]  # type: ignore[index]
        assert snapshot["status"] == "available"
        assert snapshot["metadata"]["kumo-owner"] == volume_uid
        assert snapshot["metadata"]["kumo-group"] == f"{ns}/sn"
        # Taken before the old server went: older than the member's new server.
        server = demo_conn.compute.get_server(new)
        assert snapshot["created_at"][:19] <= server.created_at[:19], (snapshot, server)
        first[i] = snapshot["id"]
    assert status["snapshotCount"] == 2

    set_flavor(ns, "sn", "m1.tiny")  # back: new members, so new snapshots
    status = wait_until("rolled out to m1.tiny", lambda: rolled_out(ns, "sn", 2), 420)
    for i in range(2):
        wait_until(
            f"sn-{i}: one snapshot kept",
            lambda i=i: (
                [s["id"] for s in snapshots_of(demo_conn, ids[i])] not in ([], [first[i]])
                and len(snapshots_of(demo_conn, ids[i])) == 1
            ),
            60,
        )
        assert get_obj("vol", f"sn-data-{i}", ns)["status"]["id"] == ids[i]  # type: ignore[index]
    assert status["snapshotCount"] == 2

    kubectl("delete", "vmg", "sn", "-n", ns, "--wait=false")
    wait_gone("vmg", "sn", ns, 300)
    for i in range(2):
        wait_until(
            f"sn-data-{i} and its snapshot gone from Cinder",
            lambda i=i: (
                volume_of(demo_conn, ids[i]) is None and snapshots_of(demo_conn, ids[i]) == []
            ),
            120,
        )
    wait_until(
        "no Kumo resources left", lambda: not any(kumo_leftovers(demo_conn, ns).values()), 60
    )


@pytest.fixture
def snapshot_quota(admin_conn: Any, demo_conn: Any) -> Iterator[int]:
    """kumo-demo's snapshot quota, set back to it when the test ends (whatever the test
    set it to)."""
    path = f"/os-quota-sets/{demo_conn.current_project_id}"
    before = admin_conn.block_storage.get(path, microversion="3.0").json()["quota_set"]
    try:
        yield int(before["snapshots"])
    finally:
        response = admin_conn.block_storage.put(
            path, json={"quota_set": {"snapshots": before["snapshots"]}}, microversion="3.0"
        )
        assert response.status_code == 200, response.text


def set_snapshot_quota(admin_conn: Any, demo_conn: Any, snapshots: int) -> None:
    path = f"/os-quota-sets/{demo_conn.current_project_id}"
    response = admin_conn.block_storage.put(
        path, json={"quota_set": {"snapshots": snapshots}}, microversion="3.0"
    )
    assert response.status_code == 200, response.text


def test_a_refused_snapshot_stops_the_rollout(
    namespace: str, kumo_operator: Any, demo_conn: Any, admin_conn: Any, snapshot_quota: int
) -> None:
    ns = namespace
    spec = {"snapshotBeforeReplace": {"keep": 1}, "volumeRetention": {"whenDeleted": "Delete"}}
    kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(group("sq", 1, **spec)))
    (volume,) = volume_ids(ns, "sq", 1).values()
    server = wait_until(
        "sq-0 has its volume", lambda: member_with_volume(demo_conn, ns, "sq-0", volume), 300
    )

    # Cinder refuses a limit below what is in use: the limit is the usage, so the next
    # snapshot is over it (413 "Maximum number of snapshots allowed (N) exceeded").
    path = f"/os-quota-sets/{demo_conn.current_project_id}?usage=True"
    usage = admin_conn.block_storage.get(path, microversion="3.0").json()["quota_set"]
    set_snapshot_quota(admin_conn, demo_conn, int(usage["snapshots"]["in_use"]))
    set_flavor(ns, "sq", "m1.small")
    cond = wait_reason("vmg", "sq", ns, "QuotaExceeded", 120)
    assert cond["message"].startswith("spec.snapshotBeforeReplace: snapshot of volume"), cond
    assert "member sq-0 is not replaced" in cond["message"]
    assert get_obj("vm", "sq-0", ns)["status"]["id"] == server  # type: ignore[index]
    assert not get_obj("vm", "sq-0", ns)["metadata"].get("deletionTimestamp")  # type: ignore[index]
    assert snapshots_of(demo_conn, volume) == []

    set_snapshot_quota(admin_conn, demo_conn, snapshot_quota)  # raised again: the rollout goes on
    wait_until("rolled out once the quota allows", lambda: rolled_out(ns, "sq", 1), 420)
    (snapshot,) = snapshots_of(demo_conn, volume)
    assert snapshot["status"] == "available"
    new = wait_until(
        "sq-0 has its volume", lambda: member_with_volume(demo_conn, ns, "sq-0", volume), 120
    )
    assert new != server

    kubectl("delete", "vmg", "sq", "-n", ns, "--wait=false")
    wait_gone("vmg", "sq", ns, 300)
    wait_until(
        "no Kumo resources left", lambda: not any(kumo_leftovers(demo_conn, ns).values()), 120
    )


def test_a_kill_after_the_snapshot_create_takes_no_second_one(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    ns = namespace
    spec = {"snapshotBeforeReplace": {"keep": 1}, "volumeRetention": {"whenDeleted": "Delete"}}
    kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(group("sc", 1, **spec)))
    (volume,) = volume_ids(ns, "sc", 1).values()
    server = wait_until(
        "sc-0 has its volume", lambda: member_with_volume(demo_conn, ns, "sc-0", volume), 300
    )
    kumo_operator.stop()
    crashing = like(kumo_operator, "operator-crash-snapshot.log")
    crashing.start(env={"KUMO_FAILPOINTS": "after-snapshot-create"})
    try:
        set_flavor(ns, "sc", "m1.small")
        wait_until("operator died at the failpoint", lambda: crashing.proc.poll() is not None, 120)
        assert crashing.proc.returncode == -9
        (taken,) = snapshots_of(demo_conn, volume)  # the create went out
        member = get_obj("vm", "sc-0", ns) or {}
        assert member["status"]["id"] == server and not member["metadata"].get("deletionTimestamp")
    finally:
        crashing.kill()
        kumo_operator.start()  # the restart
    wait_until("rolled out after the restart", lambda: rolled_out(ns, "sc", 1), 420)
    assert [s["id"] for s in snapshots_of(demo_conn, volume)] == [taken["id"]], (
        "adopted, not remade"
    )
    assert (
        wait_until(
            "sc-0 has its volume", lambda: member_with_volume(demo_conn, ns, "sc-0", volume), 120
        )
        != server
    )
    kubectl("delete", "vmg", "sc", "-n", ns, "--wait=false")
    wait_gone("vmg", "sc", ns, 300)
    wait_until(
        "no Kumo resources left", lambda: not any(kumo_leftovers(demo_conn, ns).values()), 120
    )


def test_admission_refuses_snapshots_without_volume_templates_and_keep_0(
    namespace: str, kumo_operator: Any
) -> None:
    bare = group("b", 0, volumeTemplates=[], snapshotBeforeReplace={"keep": 1})
    assert "spec.snapshotBeforeReplace: requires spec.volumeTemplates" in refused(namespace, bare)
    none_kept = group("k", 0, snapshotBeforeReplace={"keep": 0})
    assert "spec.snapshotBeforeReplace.keep" in refused(namespace, none_kept)
