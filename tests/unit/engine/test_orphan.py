"""The one Orphan step (engine/orphan.py): written, read back, all or nothing; a busy
cloud waited for; a kind's own check reported; status fields kept while it waits."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace

import pytest

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.engine import orphan, ownership
from kumo.engine.errors import TransientError
from kumo.engine.objects import Obj
from kumo.engine.result import Result
from kumo.ports.model import marker_tags, owner_of, released_tags
from tests.unit.fakes import World, make_body

UID = "uid-vm"


@dataclass(frozen=True)
class Thing:
    id: str
    tags: list[str]


@dataclass
class Cloud:
    """Things by ID; ``cached`` is what a watch's cache would answer (it may lag)."""

    things: dict[str, Thing] = field(default_factory=dict)
    busy: set[str] = field(default_factory=set)  # writes answer 409
    ignored: set[str] = field(default_factory=set)  # writes accepted, not applied
    writes: list[str] = field(default_factory=list)

    def add(self, tags: list[str]) -> Thing:
        thing = Thing(f"t-{len(self.things) + 1}", list(tags))
        self.things[thing.id] = thing
        return thing

    async def get(self, thing_id: str) -> Thing | None:
        return self.things.get(thing_id)

    async def listed(self) -> list[Thing]:
        return [t for t in self.things.values() if owner_of(t.tags) == UID]

    async def set_tags(self, thing: Thing) -> None:
        self.writes.append(thing.id)
        if thing.id in self.busy:
            raise TransientError("CloudBusy", f"thing {thing.id} is PENDING_UPDATE")
        if thing.id not in self.ignored:
            self.things[thing.id] = replace(thing, tags=released_tags(thing.tags, UID))

    def owned(self) -> ownership.Owned[Thing]:
        return ownership.Owned(
            noun="thing",
            id_of=lambda t: t.id,
            owner_of=lambda t: owner_of(t.tags),
            get_by_id=self.get,
            list_owned=self.listed,
            delete=self.set_tags,
            release=self.set_tags,
            fetch=lambda t: self.get(t.id),
        )


def setup(**status: object) -> tuple[World, Obj, Cloud]:
    world = World()
    body = make_body(VIRTUAL_MACHINE, "vm", {"deletionPolicy": "Orphan"}, uid=UID)
    body["status"] = {"phase": "Running", "conditions": [], **status}
    world.store.put("VirtualMachine", body)
    return world, world.obj(VIRTUAL_MACHINE, "vm"), Cloud()


def release(world: World, obj: Obj, *parts: orphan.Part) -> Result:
    return asyncio.run(orphan.release_owned(world.ctx(), obj, *parts))


def test_every_resource_is_released_and_read_back_then_it_is_done() -> None:
    world, obj, cloud = setup()
    first, second = cloud.add(marker_tags(UID)), cloud.add(marker_tags(UID))
    foreign = cloud.add(marker_tags("uid-other"))

    result = release(world, obj, cloud.owned())

    assert result.done and result.phase == "Released"
    for thing in (first, second):
        assert owner_of(cloud.things[thing.id].tags) is None
        assert cloud.things[thing.id].tags == released_tags(thing.tags, UID)
    assert cloud.things[foreign.id] == foreign, "another object's is never touched"
    assert world.events.reasons() == ["Released", "Released"]


def test_what_reads_back_released_already_is_not_written_again() -> None:
    world, obj, cloud = setup()
    thing = cloud.add(marker_tags(UID))
    release(world, obj, cloud.owned())
    cloud.writes.clear()
    assert release(world, obj, cloud.owned()).done
    assert cloud.writes == []
    # The watch's cache still lists it marked: what the API says decides.
    stale = cloud.owned()
    cached = replace(stale, list_owned=lambda: _as_listed([thing]))
    assert release(world, obj, cached).done
    assert cloud.writes == []


async def _as_listed(things: list[Thing]) -> list[Thing]:
    return things


def test_a_busy_cloud_is_waited_for_never_swallowed() -> None:
    world, obj, cloud = setup(id="t-1", zoneId="z-1")
    thing = cloud.add(marker_tags(UID))
    cloud.busy.add(thing.id)

    result = release(world, obj, cloud.owned())

    assert not result.done
    assert (result.phase, result.reason) == ("Releasing", "Releasing")
    assert f"thing {thing.id} is busy" in result.message
    assert result.requeue_after == orphan.RELEASE_SECONDS
    assert result.status == {"id": "t-1", "zoneId": "z-1"}, "the kind's status stays"
    assert owner_of(cloud.things[thing.id].tags) == UID
    assert "Released" not in world.events.reasons()

    cloud.busy.clear()
    assert release(world, obj, cloud.owned()).done
    assert owner_of(cloud.things[thing.id].tags) is None


def test_a_write_that_does_not_read_back_released_is_not_done() -> None:
    world, obj, cloud = setup()
    thing = cloud.add(marker_tags(UID))
    cloud.ignored.add(thing.id)

    result = release(world, obj, cloud.owned())

    assert not result.done
    assert f"thing {thing.id} still carries Kumo's marker when read back" in result.message


def test_another_cloud_error_ends_the_pass() -> None:
    world, obj, cloud = setup()
    cloud.add(marker_tags(UID))

    async def refused(thing: Thing) -> None:
        raise TransientError("CloudUnavailable", "503")

    with pytest.raises(TransientError, match="503"):
        release(world, obj, replace(cloud.owned(), release=refused))


def test_a_kinds_check_is_reported_with_the_resources_left() -> None:
    world, obj, cloud = setup()
    thing = cloud.add(marker_tags(UID))
    cloud.busy.add(thing.id)

    async def members() -> list[str]:
        return ["VirtualMachine g-0 does not say deletionPolicy Orphan"]

    result = release(world, obj, members, cloud.owned())
    assert not result.done
    assert "VirtualMachine g-0 does not say deletionPolicy Orphan" in result.message
    assert f"thing {thing.id} is busy" in result.message
