"""A copy of a Kumo-made volume that carries its marker is reported, never deleted (issue
38, finding 5), on the real kube-apiserver and the lab's Cinder.

The copy is a Cinder clone made through openstacksdk (``source_volid``). Cinder copies
a volume's metadata to a volume restored from a backup, not to a clone, so the clone is
given the original's metadata, as a person copying a volume with its properties does:
either way a second live volume carries the Volume object's marker. Then:

* the watch lists two volumes of one owner and asks for an audited pass, which emits the
  Warning ``DuplicateFound`` naming both IDs and deletes neither;
* three times, the original's description is changed out of band and Kumo puts it back:
  each round is a watch listing that saw both volumes and an audited pass of the owner,
  and the clone is still there after each;
* deleting the Volume object deletes the original and leaves the clone, released (the
  orphan mark instead of the marker), which the test then deletes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.helpers import apply, events_of, wait_gone, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import wait_until
from tests.integration.test_volumes import volume_manifest, volume_of

pytestmark = pytest.mark.integration

TIMEOUT = 120


@pytest.fixture
def clones(demo_conn: Any) -> Iterator[list[str]]:
    """IDs of the clones a test makes; deleted at the end whatever happened."""
    made: list[str] = []
    yield made
    for volume_id in made:

        def state(volume_id: str = volume_id) -> str | None:
            return (volume_of(demo_conn, volume_id) or {}).get("status")

        wait_until(f"clone {volume_id} settled", lambda: state() != "creating", TIMEOUT)
        if state() not in (None, "deleting"):
            demo_conn.block_storage.delete_volume(volume_id)
        wait_until(f"clone {volume_id} gone", lambda: state() is None, TIMEOUT)


def test_a_clone_carrying_the_marker_is_reported_and_never_deleted(
    namespace: str, kumo_operator: Any, demo_conn: Any, clones: list[str]
) -> None:
    ns = namespace
    apply(ns, volume_manifest("data", 1))
    obj = wait_ready("vol", "data", ns, timeout=TIMEOUT)
    uid, original = obj["metadata"]["uid"], obj["status"]["id"]
    source = volume_of(demo_conn, original)
    assert source is not None and source["metadata"]["kumo-owner"] == uid

    clone = demo_conn.block_storage.create_volume(
        name=f"{ns}-data-copy",
        size=1,
        source_volume_id=original,
        metadata=dict(source["metadata"]),
    )
    clones.append(clone.id)
    wait_until(
        "the clone available",
        lambda: (volume_of(demo_conn, clone.id) or {}).get("status") == "available",
        TIMEOUT,
    )
    copied = volume_of(demo_conn, clone.id) or {}
    assert copied.get("source_volid") == original and copied["metadata"]["kumo-owner"] == uid

    found = wait_until(
        "a DuplicateFound warning naming both volumes",
        lambda: [m for m in events_of(ns, "data", "DuplicateFound") if clone.id in m],
        TIMEOUT,
    )
    assert original in found[0]
    assert not events_of(ns, "data", "DuplicateDeleted")

    for round_ in range(3):
        drift = f"changed by hand {round_}"
        demo_conn.block_storage.update_volume(original, description=drift)
        wait_until(
            f"round {round_}: the watch saw the change and Kumo put the description back",
            lambda: (volume_of(demo_conn, original) or {}).get("description") == "kumo test",
            TIMEOUT,
        )
        assert volume_of(demo_conn, clone.id) is not None, f"the clone is gone (round {round_})"
        assert volume_of(demo_conn, original) is not None
    assert not events_of(ns, "data", "DuplicateDeleted")
    assert wait_ready("vol", "data", ns)["status"]["id"] == original, "the original is kept"

    kubectl("delete", "vol", "data", "-n", ns, "--wait=false")
    wait_gone("vol", "data", ns, TIMEOUT)
    wait_until("the original deleted", lambda: volume_of(demo_conn, original) is None, TIMEOUT)
    left = volume_of(demo_conn, clone.id)
    assert left is not None, "the clone stays when its Volume object goes"
    assert "kumo-owner" not in left["metadata"], "released: no sweep takes it for a leak"
    assert left["metadata"].get("kumo-orphan") == uid
