"""Volume on the real kube-apiserver and the lab's Cinder (fake driver): create, extend in
place, refuse a shrink (at admission), delete; a volume deleted out of band made again
(drift); a foreign volume with the very name Kumo would give never adopted, changed or
deleted; deleting everything leaves nothing of Kumo's in Cinder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.helpers import apply, cinder_pages, cluster_id, wait_gone, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import get_obj, wait_until

MV = "3.0"


def cinder(conn: Any, method: str, path: str, **kw: Any) -> Any:
    return getattr(conn.block_storage, method)(path, microversion=MV, **kw)


def volume_of(conn: Any, volume_id: str) -> dict[str, Any] | None:
    response = cinder(conn, "get", f"/volumes/{volume_id}")
    return None if response.status_code == 404 else response.json()["volume"]


def owned_by(conn: Any, uid: str) -> list[dict[str, Any]]:
    params = {"metadata": json.dumps({"kumo-owner": uid})}
    return cinder_pages(conn, "/volumes/detail", "volumes", MV, params)


def volume_manifest(name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "Volume",
        "metadata": {"name": name},
        "spec": {"size": size, "description": "kumo test"},
    }


def test_volume_create_extend_refuse_shrink_delete(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    ns = namespace
    apply(ns, volume_manifest("data", 1))
    obj = wait_ready("vol", "data", ns, timeout=120)
    volume = volume_of(demo_conn, obj["status"]["id"])
    assert volume is not None
    assert (volume["size"], volume["status"], volume["name"]) == (1, "available", f"{ns}-data")
    marker = {"kumo": "managed", "kumo-owner": obj["metadata"]["uid"], "kumo-cluster": cluster_id()}
    assert volume["metadata"] == marker
    assert obj["status"]["size"] == 1 and obj["status"]["attachments"] == []
    # Grow in place: the same volume, extended.
    kubectl("patch", "vol", "data", "-n", ns, "--type=merge", "-p", '{"spec":{"size":2}}')
    wait_until(
        "volume extended to 2 GiB",
        lambda: (
            (volume_of(demo_conn, volume["id"]) or {}).get("size") == 2
            and (get_obj("vol", "data", ns) or {}).get("status", {}).get("size") == 2
        ),
        120,
    )
    assert wait_ready("vol", "data", ns)["status"]["id"] == volume["id"], "never replaced"
    refused = kubectl(
        "patch", "vol", "data", "-n", ns, "--type=merge", "-p", '{"spec":{"size":1}}',
        check=False,
    )  # fmt: skip
    assert refused.returncode != 0 and "spec.size cannot shrink" in refused.stderr, refused
    assert (volume_of(demo_conn, volume["id"]) or {})["size"] == 2
    kubectl("delete", "vol", "data", "-n", ns, "--wait=false")
    wait_gone("vol", "data", ns, 120)
    wait_until("volume gone from Cinder", lambda: volume_of(demo_conn, volume["id"]) is None, 60)
    assert owned_by(demo_conn, obj["metadata"]["uid"]) == [], "nothing of Kumo's left"


def test_a_volume_deleted_out_of_band_is_made_again(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    ns = namespace
    apply(ns, volume_manifest("drifty", 1))
    obj = wait_ready("vol", "drifty", ns, timeout=120)
    old = obj["status"]["id"]
    assert cinder(demo_conn, "delete", f"/volumes/{old}").status_code == 202

    def remade() -> str | None:
        status = (get_obj("vol", "drifty", ns) or {}).get("status") or {}
        new = status.get("id")
        ready = any(
            c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", [])
        )
        return new if new and new != old and ready else None

    new = wait_until("a new volume in place of the deleted one", remade, 120)
    assert (volume_of(demo_conn, new) or {}).get("status") == "available"
    kubectl("delete", "vol", "drifty", "-n", ns, "--wait=false")
    wait_gone("vol", "drifty", ns, 120)
    assert owned_by(demo_conn, obj["metadata"]["uid"]) == []


@pytest.fixture
def foreign(namespace: str, demo_conn: Any) -> Iterator[dict[str, Any]]:
    """A volume someone else made, named as Kumo would name the Volume `data`."""
    body = {"volume": {"name": f"{namespace}-data", "size": 1, "metadata": {"team": "db"}}}
    created = cinder(demo_conn, "post", "/volumes", json=body)
    assert created.status_code == 202, created.text
    volume = created.json()["volume"]
    yield volume
    wait_until(
        "foreign volume deletable",
        lambda: (volume_of(demo_conn, volume["id"]) or {}).get("status") != "creating",
        60,
    )
    cinder(demo_conn, "delete", f"/volumes/{volume['id']}")
    wait_until("foreign volume gone", lambda: volume_of(demo_conn, volume["id"]) is None, 60)


def test_a_foreign_volume_is_never_touched(
    namespace: str, kumo_operator: Any, demo_conn: Any, foreign: dict[str, Any]
) -> None:
    ns = namespace
    apply(ns, volume_manifest("data", 1))
    obj = wait_ready("vol", "data", ns, timeout=120)
    assert obj["status"]["id"] != foreign["id"], "not adopted: it carries no marker"
    kubectl("delete", "vol", "data", "-n", ns, "--wait=false")
    wait_gone("vol", "data", ns, 120)
    theirs = volume_of(demo_conn, foreign["id"])
    assert theirs is not None, "the foreign volume stays"
    assert theirs["metadata"] == {"team": "db"}, "and is not marked"
    assert owned_by(demo_conn, obj["metadata"]["uid"]) == []
