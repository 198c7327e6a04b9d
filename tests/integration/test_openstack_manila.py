"""Smoke tests of the lab's Manila (dev/openstack/services/manila.sh), through
openstacksdk's shared-file-system proxy at microversion 2.45 (what Kumo uses).

Why: the Share kind relies on Manila behaving like a real cloud — the DummyDriver
backend takes NFS shares to `available` with export locations, `ip` access rules go
active and can carry metadata, shares extend in place, and projects are isolated with
the quotas the lab sets. Every test polls with a timeout and deletes what it created.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.polling import wait_until

pytestmark = pytest.mark.integration

MV = "2.45"


def call(conn: Any, method: str, path: str, **kw: Any) -> Any:
    return getattr(conn.shared_file_system, method)(path, microversion=MV, **kw)


def share(conn: Any, share_id: str) -> dict[str, Any] | None:
    response = call(conn, "get", f"/shares/{share_id}")
    return None if response.status_code == 404 else response.json()["share"]


@pytest.fixture
def nfs_share(demo_conn: Any) -> Iterator[dict[str, Any]]:
    t0 = time.monotonic()
    body = {
        "share": {"name": f"kumo-labtest-{uuid.uuid4().hex[:8]}", "size": 1, "share_proto": "NFS"}
    }
    response = call(demo_conn, "post", "/shares", json=body)
    assert response.status_code == 200, response.text
    created = response.json()["share"]
    try:
        found = wait_until(
            "share available",
            lambda: (s := share(demo_conn, created["id"])) and s["status"] == "available" and s,
            60,
        )
        print(f"share → available in {time.monotonic() - t0:.1f}s")
        yield found
    finally:
        t0 = time.monotonic()
        call(demo_conn, "delete", f"/shares/{created['id']}")
        wait_until("share deleted", lambda: share(demo_conn, created["id"]) is None, 60)
        print(f"share delete → 404 in {time.monotonic() - t0:.1f}s")


def test_default_share_type_and_quotas(admin_conn: Any, demo_conn: Any, other_conn: Any) -> None:
    types = call(demo_conn, "get", "/types").json()["share_types"]
    default = [t for t in types if t["name"] == "default"]
    assert default and default[0]["extra_specs"]["driver_handles_share_servers"] == "False"
    pools = call(admin_conn, "get", "/scheduler-stats/pools").json()["pools"]
    assert [p["name"] for p in pools] == ["kumo-lab@dummy#fake_pool_for_dummy"]
    for conn, shares in ((demo_conn, 100), (other_conn, 50)):
        project = conn.current_project_id
        quota = call(conn, "get", f"/quota-sets/{project}").json()["quota_set"]
        assert quota["shares"] == shares


def test_nfs_share_rules_extend(demo_conn: Any, other_conn: Any, nfs_share: dict[str, Any]) -> None:
    share_id = nfs_share["id"]
    assert nfs_share["share_type_name"] == "default"
    exports = call(demo_conn, "get", f"/shares/{share_id}/export_locations").json()
    assert any(x["preferred"] for x in exports["export_locations"])

    t0 = time.monotonic()
    allow = {
        "access_type": "ip",
        "access_to": "10.10.0.5",
        "access_level": "rw",
        "metadata": {"kumo-owner": "x"},
    }
    rule = call(
        demo_conn, "post", f"/shares/{share_id}/action", json={"allow_access": allow}
    ).json()["access"]

    def rules() -> list[dict[str, Any]]:
        return list(
            call(demo_conn, "get", "/share-access-rules", params={"share_id": share_id}).json()[
                "access_list"
            ]
        )

    wait_until("rule active", lambda: [r for r in rules() if r["state"] == "active"], 60)
    print(f"ip rule → active in {time.monotonic() - t0:.1f}s")
    assert rules()[0]["metadata"] == {"kumo-owner": "x"}
    duplicate = call(demo_conn, "post", f"/shares/{share_id}/action", json={"allow_access": allow})
    assert duplicate.status_code == 400 and "exists" in duplicate.text

    t0 = time.monotonic()
    call(demo_conn, "post", f"/shares/{share_id}/action", json={"extend": {"new_size": 2}})
    wait_until(
        "extended",
        lambda: (s := share(demo_conn, share_id)) and s["status"] == "available" and s["size"] == 2,
        60,
    )
    print(f"extend → available in {time.monotonic() - t0:.1f}s")

    t0 = time.monotonic()
    call(
        demo_conn,
        "post",
        f"/shares/{share_id}/action",
        json={"deny_access": {"access_id": rule["id"]}},
    )
    wait_until("rule gone", lambda: rules() == [], 60)
    print(f"deny → rule gone in {time.monotonic() - t0:.1f}s")

    assert share(other_conn, share_id) is None, "kumo-other cannot see kumo-demo's share"
