"""Volume: the engine drives the actuator against the in-memory Cinder (and Nova, for
attached servers); tests feed objects and cloud state in and check cloud state and
status out."""

from __future__ import annotations

from typing import Any

from kumo.api.kinds import VOLUME
from kumo.cloud import model
from kumo.kinds.volume.actuator import VolumeActuator
from tests.unit.fakes import FakeServers, World
from tests.unit.fakes.blockstorage import FakeBlockStorage

SPEC = {"size": 2, "volumeType": "lvmdriver-1", "description": "data"}


class NovaAndCinder(FakeServers, FakeBlockStorage):
    """One project's cloud: servers and volumes side by side."""

    def __init__(self) -> None:
        FakeServers.__init__(self)
        FakeBlockStorage.__init__(self)


def new_world(**spec: Any) -> World:
    world = World(cloud=NovaAndCinder())
    world.add(VOLUME, "data", {**SPEC, **spec})
    return world


def cinder(world: World) -> NovaAndCinder:
    return world.cloud_as(NovaAndCinder)


def converge(world: World) -> dict:
    world.converge(VolumeActuator(), "data")
    return world.stored("Volume", "data")


def ready(world: World) -> dict:
    return world.condition("Volume", "data")


def delete(world: World) -> None:
    world.delete("Volume", "data")


def test_creates_the_volume_marked_and_reports_it() -> None:
    world = new_world()
    body = converge(world)
    volume = cinder(world).only_volume()
    assert volume.metadata == {
        "kumo": "managed",
        "kumo-owner": "uid-data",
        "kumo-cluster": model.cluster(),
    }
    assert (volume.name, volume.size, volume.volume_type, volume.description) == (
        "default-data",
        2,
        "lvmdriver-1",
        "data",
    )
    status = body["status"]
    assert (status["id"], status["size"], status["volumeStatus"]) == (volume.id, 2, "available")
    assert status["attachments"] == []
    assert ready(world)["status"] == "True"


def test_a_lost_status_write_adopts_the_volume_instead_of_a_second_one() -> None:
    world = new_world()
    converge(world)
    first = cinder(world).only_volume().id
    world.stored("Volume", "data")["status"] = {}  # crash between create and status write
    body = converge(world)
    assert [v.id for v in cinder(world).volumes.values()] == [first]
    assert body["status"]["id"] == first


def test_grows_in_place_and_refuses_to_shrink() -> None:
    world = new_world()
    volume_id = converge(world)["status"]["id"]
    world.stored("Volume", "data")["spec"]["size"] = 5
    body = converge(world)
    assert cinder(world).volumes[volume_id].size == 5, "extended in place"
    assert body["status"]["size"] == 5
    assert [v.id for v in cinder(world).volumes.values()] == [volume_id], "never replaced"

    world.stored("Volume", "data")["spec"]["size"] = 3
    world.run(VolumeActuator(), "data")
    condition = ready(world)
    assert (condition["status"], condition["reason"]) == ("False", "ShrinkRefused")
    assert condition["message"].startswith("spec.size")
    assert cinder(world).volumes[volume_id].size == 5
    assert world.obj(VOLUME, "data").status["unappliedChanges"] == ["spec.size"]


def test_a_volume_deleted_out_of_band_is_made_again() -> None:
    world = new_world()
    old = converge(world)["status"]["id"]
    cinder(world).delete_volume_out_of_band(old)
    body = converge(world)
    new = cinder(world).only_volume()
    assert new.id != old and body["status"]["id"] == new.id
    assert model.metadata_owner(new.metadata) == "uid-data"


def test_deletion_detaches_from_kumos_server_then_deletes() -> None:
    world = new_world()
    volume_id = converge(world)["status"]["id"]
    server = cinder(world).add_server("vm", tags=["kumo", "kumo-owner=uid-vm"])
    cinder(world).volumes[volume_id] = (
        cinder(world)
        .volumes[volume_id]
        .__class__(**{**cinder(world).volumes[volume_id].__dict__, "attachments": (server.id,)})
    )
    delete(world)
    for _ in range(6):
        world.run(VolumeActuator(), "data")
        if world.store.get("Volume", "default", "data") is None:
            break
    assert cinder(world).calls.index("detach_volume") < cinder(world).calls.index("delete_volume")
    assert cinder(world).volumes == {}
    assert world.store.get("Volume", "default", "data") is None, "finalizer released"
    assert server.id in cinder(world).servers, "the server stays"


def test_a_volume_on_a_foreign_server_is_never_detached_nor_deleted() -> None:
    world = new_world()
    volume_id = converge(world)["status"]["id"]
    foreign = cinder(world).add_server("theirs", tags=[])
    volume = cinder(world).volumes[volume_id]
    cinder(world).volumes[volume_id] = volume.__class__(
        **{**volume.__dict__, "attachments": (foreign.id,), "status": "in-use"}
    )
    delete(world)
    for _ in range(3):
        world.run(VolumeActuator(), "data")
    condition = ready(world)
    assert (condition["status"], condition["reason"]) == ("False", "AttachedToForeignServer")
    assert foreign.id in condition["message"]
    assert "detach_volume" not in cinder(world).calls
    assert "delete_volume" not in cinder(world).calls
    assert volume_id in cinder(world).volumes
    assert world.stored("Volume", "data")["metadata"]["finalizers"], "held"


def test_orphan_releases_the_marker_and_keeps_the_volume() -> None:
    world = new_world(deletionPolicy="Orphan")
    volume_id = converge(world)["status"]["id"]
    delete(world)
    world.run(VolumeActuator(), "data")
    kept = cinder(world).volumes[volume_id]
    assert kept.metadata == {"kumo-orphan": "uid-data"}
    assert "delete_volume" not in cinder(world).calls
    assert world.store.get("Volume", "default", "data") is None


def test_import_by_name_marks_and_extends_an_existing_volume() -> None:
    world = World(cloud=NovaAndCinder())
    theirs = cinder(world).add_volume("legacy", size=1, metadata={"team": "db"})
    world.add(VOLUME, "data", {"size": 3, "import": {"name": "legacy"}})
    body = converge(world)
    volume = cinder(world).volumes[theirs.id]
    assert body["status"]["id"] == theirs.id
    assert volume.metadata == {
        "team": "db",
        "kumo": "managed",
        "kumo-owner": "uid-data",
        "kumo-cluster": model.cluster(),
    }
    assert volume.size == 3
    assert "create_volume" not in cinder(world).calls


def test_an_import_bigger_than_the_spec_is_a_mismatch() -> None:
    world = World(cloud=NovaAndCinder())
    theirs = cinder(world).add_volume("legacy", size=10)
    world.add(VOLUME, "data", {"size": 3, "import": {"id": theirs.id}})
    world.run(VolumeActuator(), "data")
    condition = ready(world)
    assert (condition["status"], condition["reason"]) == ("False", "ImportMismatch")
    assert "spec.size" in condition["message"]
    assert cinder(world).volumes[theirs.id].metadata == {}, "never marked"


def test_an_unknown_volume_type_names_the_field() -> None:
    world = new_world(volumeType="gold")
    world.run(VolumeActuator(), "data")
    condition = ready(world)
    assert condition["reason"] == "VolumeTypeNotFound"
    assert condition["message"].startswith("spec.volumeType")
    assert cinder(world).volumes == {}
