"""A second volume carrying a Volume's marker (issue 38, finding 5): a restore or a
clone is reported (Warning DuplicateFound naming both) and kept, by an audited pass, an
adoption and the object's deletion alike; only a duplicate Kumo made itself in its own
create's in-doubt window, never attached, is deleted. A server (no data) is still
deleted as before (tests/unit/kinds/virtualmachine/test_actuator.py)."""

from __future__ import annotations

import asyncio
import dataclasses

from kumo.api.kinds import VOLUME
from kumo.cloud import model
from kumo.engine.reconciler import Engine
from kumo.kinds.volume.actuator import VolumeActuator
from tests.unit.fakes import World
from tests.unit.kinds.volume.test_actuator import cinder, converge, delete, new_world

UID = "uid-data"
NAME = "default-data"


def audited(world: World) -> None:
    """The pass the cloud watch asks for when it lists two volumes of one owner."""
    ctx = dataclasses.replace(world.ctx(), audit=True)
    asyncio.run(Engine().run(VolumeActuator(), ctx, world.obj(VOLUME, "data")))


def warnings(world: World) -> list[str]:
    return [m for _, t, r, m in world.events.events if (t, r) == ("Warning", "DuplicateFound")]


def test_a_clone_carrying_the_marker_is_reported_naming_both_and_kept() -> None:
    world = new_world()
    original = converge(world)["status"]["id"]
    source = cinder(world).volumes[original]
    clone = cinder(world).add_volume(
        "copy-of-data", metadata=dict(source.metadata), source_volid=original
    )
    audited(world)
    assert set(cinder(world).volumes) == {original, clone.id}
    assert "delete_volume" not in cinder(world).calls
    (message,) = warnings(world)
    assert clone.id in message and original in message
    assert world.stored("Volume", "data")["status"]["id"] == original, "the original is kept"


def test_a_restored_volume_with_the_same_name_is_not_proof_either() -> None:
    """Cinder copies the metadata to a volume restored from a backup: same marker, even
    the same name, no source volume — but no create of Kumo's was in doubt then."""
    world = new_world()
    original = converge(world)["status"]["id"]
    restored = cinder(world).add_volume(NAME, metadata=model.marker_metadata(UID))
    audited(world)
    assert {original, restored.id} <= set(cinder(world).volumes)
    assert "DuplicateFound" in world.events.reasons()


def test_two_marked_volumes_and_no_status_adopt_one_and_delete_none() -> None:
    """Status lost (an etcd restore) and a restored copy beside the original."""
    world = new_world()
    first = cinder(world).add_volume(NAME, size=2, metadata=model.marker_metadata(UID))
    second = cinder(world).add_volume(NAME, size=2, metadata=model.marker_metadata(UID))
    status = converge(world)["status"]
    assert status["id"] == first.id and set(cinder(world).volumes) == {first.id, second.id}
    assert "create_volume" not in cinder(world).calls
    assert any(second.id in m for m in warnings(world))


def test_deleting_the_object_deletes_its_volume_and_releases_the_copy() -> None:
    world = new_world()
    original = converge(world)["status"]["id"]
    clone = cinder(world).add_volume("copy", metadata=model.marker_metadata(UID))
    delete(world)
    world.converge(VolumeActuator(), "data")
    assert set(cinder(world).volumes) == {clone.id}, "the copy is data: it stays"
    kept = cinder(world).volumes[clone.id]
    assert model.metadata_owner(kept.metadata) is None, "released: no sweep takes it"
    assert kept.metadata[model.SHARE_ORPHAN_KEY] == UID
    assert any(clone.id in m and original in m for m in warnings(world))


def test_a_duplicate_kumo_made_in_its_own_create_in_doubt_is_deleted() -> None:
    """The create's answer was lost and Cinder's listing did not show the volume yet, so
    the next pass created again: the first is Kumo's, empty, never attached."""
    world = new_world()
    cinder(world).lose_creates = 1
    world.run(VolumeActuator(), "data")
    (lost,) = cinder(world).volumes.values()
    hidden = cinder(world).hide(lost.id)  # not in the listing yet
    recorded = converge(world)["status"]["id"]
    assert recorded != lost.id
    cinder(world).show(hidden)
    audited(world)
    assert [v.id for v in asyncio.run(cinder(world).list_owned_volumes(UID))] == [recorded]
    assert "DuplicateDeleted" in world.events.reasons() and not warnings(world)


def test_a_duplicate_from_kumo_s_window_that_was_attached_is_kept() -> None:
    world = new_world()
    cinder(world).lose_creates = 1
    world.run(VolumeActuator(), "data")
    (lost,) = cinder(world).volumes.values()
    hidden = cinder(world).hide(lost.id)
    converge(world)
    cinder(world).show(dataclasses.replace(hidden, status="in-use", attachments=("server-1",)))
    audited(world)
    assert lost.id in cinder(world).volumes and "DuplicateFound" in world.events.reasons()
