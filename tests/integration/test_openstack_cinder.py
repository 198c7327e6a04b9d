"""Smoke tests of the lab's Cinder (dev/openstack/services/cinder.sh), through openstacksdk's
block-storage proxy (Cinder v3).

Why: the Volume kind relies on Cinder behaving like a real cloud — the fake logging
backend takes volumes to `available`, Nova's fake hypervisor attaches them for real at
the API level (volume `in-use`, listed by the server's os-volume_attachments) and detaches
them (`available` again), volumes made from an image are bootable,
snapshots come and go, projects have the quotas the lab sets,
and a changed-since listing works (the watch's poll; microversion 3.60 `updated_at=gte:`,
Cinder has no `changes-since`). Every test polls with a timeout and deletes what it made.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from openstack import exceptions as os_exc

from tests.integration.helpers import cinder_pages
from tests.integration.polling import wait_until

pytestmark = pytest.mark.integration

MV = "3.60"  # updated_at/created_at time-comparison filters on volume lists
TIMEOUT = 120


def call(conn: Any, method: str, path: str, **kw: Any) -> Any:
    return getattr(conn.block_storage, method)(path, microversion=MV, **kw)


def volume(conn: Any, volume_id: str) -> dict[str, Any] | None:
    response = call(conn, "get", f"/volumes/{volume_id}")
    return None if response.status_code == 404 else response.json()["volume"]


def wait_status(conn: Any, volume_id: str, status: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        v = volume(conn, volume_id)
        assert v is not None and v["status"] != "error", v
        return v if v["status"] == status else None

    return wait_until(f"volume {status}", check, TIMEOUT, tolerate=())


@pytest.fixture
def demo_volume(demo_conn: Any) -> Iterator[dict[str, Any]]:
    t0 = time.monotonic()
    body = {"volume": {"name": f"kumo-labtest-{uuid.uuid4().hex[:8]}", "size": 1}}
    response = call(demo_conn, "post", "/volumes", json=body)
    assert response.status_code == 202, response.text
    created = response.json()["volume"]
    try:
        found = wait_status(demo_conn, created["id"], "available")
        print(f"volume → available in {time.monotonic() - t0:.1f}s")
        yield found
    finally:
        t0 = time.monotonic()
        call(demo_conn, "delete", f"/volumes/{created['id']}")
        wait_until("volume deleted", lambda: volume(demo_conn, created["id"]) is None, TIMEOUT)
        print(f"volume delete → 404 in {time.monotonic() - t0:.1f}s")


@pytest.fixture
def demo_server(demo_conn: Any) -> Iterator[Any]:
    image = demo_conn.image.find_image("centos79", ignore_missing=False)
    flavor = demo_conn.compute.find_flavor("m1.tiny", ignore_missing=False)
    network = demo_conn.network.find_network("kumo-demo-net", ignore_missing=False)
    server = demo_conn.compute.create_server(
        name=f"kumo-labtest-vm-{uuid.uuid4().hex[:8]}",
        image_id=image.id,
        flavor_id=flavor.id,
        networks=[{"uuid": network.id}],
    )
    try:
        yield demo_conn.compute.wait_for_server(
            server, status="ACTIVE", failures=["ERROR"], interval=1, wait=TIMEOUT
        )
    finally:
        with contextlib.suppress(os_exc.NotFoundException):
            demo_conn.compute.delete_server(server.id)
        wait_until(
            "server deleted",
            lambda: demo_conn.compute.find_server(server.id, ignore_missing=True) is None,
            TIMEOUT,
        )


def test_backend_and_quotas(admin_conn: Any, demo_conn: Any, other_conn: Any) -> None:
    pools = call(admin_conn, "get", "/scheduler-stats/get_pools").json()["pools"]
    assert [p["name"] for p in pools] == ["kumo-lab@fake#fake"]
    for conn, volumes in ((demo_conn, 1000), (other_conn, 20)):
        project = conn.current_project_id
        quota = call(conn, "get", f"/os-quota-sets/{project}").json()["quota_set"]
        assert quota["volumes"] == volumes
        assert quota["snapshots"] == volumes
    catalog = demo_conn.block_storage.get_endpoint()
    assert catalog.startswith("http://127.0.0.1:8776/v3/"), catalog


def test_attach_detach_with_the_fake_hypervisor(
    demo_conn: Any, demo_volume: dict[str, Any], demo_server: Any
) -> None:
    vid, sid = demo_volume["id"], demo_server.id
    t0 = time.monotonic()
    demo_conn.compute.create_volume_attachment(sid, volume_id=vid)
    in_use = wait_status(demo_conn, vid, "in-use")
    print(f"attach → in-use in {time.monotonic() - t0:.1f}s")
    assert [a["server_id"] for a in in_use["attachments"]] == [sid]
    listed = [a.volume_id for a in demo_conn.compute.volume_attachments(sid)]
    assert listed == [vid]

    t0 = time.monotonic()
    demo_conn.compute.delete_volume_attachment(sid, vid)
    detached = wait_status(demo_conn, vid, "available")
    print(f"detach → available in {time.monotonic() - t0:.1f}s")
    assert detached["attachments"] == []
    assert list(demo_conn.compute.volume_attachments(sid)) == []


def test_snapshot_create_delete(demo_conn: Any, demo_volume: dict[str, Any]) -> None:
    body = {"snapshot": {"volume_id": demo_volume["id"], "name": "kumo-labtest-snap"}}
    response = call(demo_conn, "post", "/snapshots", json=body)
    assert response.status_code == 202, response.text
    snap_id = response.json()["snapshot"]["id"]

    def snapshot() -> dict[str, Any] | None:
        r = call(demo_conn, "get", f"/snapshots/{snap_id}")
        return None if r.status_code == 404 else r.json()["snapshot"]

    try:
        wait_until(
            "snapshot available", lambda: (s := snapshot()) and s["status"] == "available", TIMEOUT
        )
    finally:
        call(demo_conn, "delete", f"/snapshots/{snap_id}")
        wait_until("snapshot deleted", lambda: snapshot() is None, TIMEOUT)


def test_volume_from_image_is_bootable(demo_conn: Any) -> None:
    """What VirtualMachine.spec.rootVolume needs: the lab's driver takes a volume made from
    a Glance image to `available`, bootable, with the image's metadata (the stock fake
    driver failed writing the image's bytes to a device it never made)."""
    image = demo_conn.image.find_image("centos79", ignore_missing=False)
    body = {"volume": {"name": f"kumo-labtest-{uuid.uuid4().hex[:8]}", "size": 1}}
    body["volume"]["imageRef"] = image.id
    response = call(demo_conn, "post", "/volumes", json=body)
    assert response.status_code == 202, response.text
    volume_id = response.json()["volume"]["id"]
    try:
        found = wait_status(demo_conn, volume_id, "available")
        assert found["bootable"] == "true"
        assert found["volume_image_metadata"]["image_id"] == image.id
    finally:
        call(demo_conn, "delete", f"/volumes/{volume_id}")
        wait_until("volume deleted", lambda: volume(demo_conn, volume_id) is None, TIMEOUT)


def test_updated_since_listing(
    demo_conn: Any, other_conn: Any, demo_volume: dict[str, Any]
) -> None:
    """What the Volume kind's watch can poll: `updated_at=gte:<time>` at 3.60."""
    updated = datetime.fromisoformat(demo_volume["updated_at"]).replace(tzinfo=UTC)
    before = (updated - timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%S")
    after = (updated + timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%S")

    def ids(conn: Any, since: str) -> list[str]:
        found = cinder_pages(conn, "/volumes/detail", "volumes", MV, {"updated_at": since})
        return [v["id"] for v in found]

    assert demo_volume["id"] in ids(demo_conn, f"gte:{before}")
    assert demo_volume["id"] not in ids(demo_conn, f"gte:{after}")
    # `changes-since` is no Cinder filter: 400 "Invalid filters changes-since …".
    r = demo_conn.block_storage.get(f"/volumes/detail?changes-since={after}", microversion=MV)
    assert r.status_code == 400 and "changes-since" in r.text, r.text
    # Projects are isolated.
    assert demo_volume["id"] not in ids(other_conn, f"gte:{before}")
