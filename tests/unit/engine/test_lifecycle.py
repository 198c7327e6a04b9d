"""The owned-resource lifecycle: one order, merged waits, status written once (plus
the named ID records right after a create or a delete), hands off what lacks the
marker."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from kumo.api.kinds import DNS_RECORD
from kumo.engine import lifecycle, ownership
from kumo.engine.errors import TerminalError
from kumo.engine.objects import Body, Obj
from kumo.engine.result import Result
from tests.unit.fakes import World


@dataclasses.dataclass
class Thing:
    id: str
    owner: str | None
    size: int = 1


class Cloud:
    """Things by ID, and a log of every step the lifecycle took, in order."""

    def __init__(self) -> None:
        self.things: dict[str, Thing] = {}
        self.log: list[str] = []
        self.created = 0

    def owned(self, uid: str) -> ownership.Owned[Thing]:
        async def get_by_id(thing_id: str) -> Thing | None:
            return self.things.get(thing_id)

        async def list_owned() -> list[Thing]:
            return [t for t in self.things.values() if t.owner == uid]

        async def delete(thing: Thing) -> None:
            self.log.append(f"delete {thing.id}")
            self.things.pop(thing.id, None)

        return ownership.Owned(
            noun="thing",
            id_of=lambda t: t.id,
            owner_of=lambda t: t.owner,
            get_by_id=get_by_id,
            list_owned=list_owned,
            delete=delete,
        )


def steps(world: World, cloud: Cloud, obj: Obj, **overrides: Any) -> lifecycle.Lifecycle[Thing]:
    async def create() -> Thing:
        cloud.log.append("create")
        cloud.created += 1
        thing = Thing(f"n{cloud.created}", obj.uid)
        cloud.things[thing.id] = thing
        return thing

    async def report(thing: Thing) -> Result:
        cloud.log.append("report")
        return Result(phase="Active", ready=True, reason="Ready", status={"size": thing.size})

    fields: dict[str, Any] = dict(
        owned=cloud.owned(obj.uid),
        create=create,
        created=lambda t: lifecycle.Wait(f"{t.id} is being created", after=1.0),
        report=report,
        failpoint="after-thing-create",
        status=lambda t: {"size": t.size},
    )
    fields.update(overrides)
    return lifecycle.Lifecycle(**fields)


def updater(cloud: Cloud, name: str, wait: lifecycle.Wait | None = None, stop: bool = False):
    async def update(thing: Thing) -> lifecycle.Step[Thing]:
        cloud.log.append(name)
        return lifecycle.Step(thing, wait, stop)

    return update


class CountingKube:
    """Counts status writes made during the pass."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.status_writes: list[Body] = []

    async def patch_status(self, obj: Obj, status: Body) -> Body:
        self.status_writes.append(status)
        return await self.inner.patch_status(obj, status)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def setup(status: Body | None = None, owner: str | None = "uid-r") -> tuple[World, Cloud, Obj]:
    """A DNSRecord ``r``; with ``status``, the thing it names exists (with ``owner``'s
    marker)."""
    world = World()
    world.add(DNS_RECORD, "r", {"zone": "z", "name": "n", "type": "A", "records": ["1.2.3.4"]})
    cloud = Cloud()
    if status:
        world.stored("DNSRecord", "r")["status"] = status
        cloud.things[status["id"]] = Thing(status["id"], owner)
    return world, cloud, world.obj(DNS_RECORD, "r")


def run(world: World, obj: Obj, kind: lifecycle.Lifecycle[Thing], dry: bool = False):
    kube = CountingKube(world.kube)
    ctx = dataclasses.replace(world.ctx(), kube=kube, dry_run=dry)
    return asyncio.run(lifecycle.reconcile_owned(ctx, obj, kind)), kube.status_writes


def test_creates_records_the_id_at_once_and_ends_the_pass() -> None:
    world, cloud, obj = setup()
    result, writes = run(world, obj, steps(world, cloud, obj, updaters=[updater(cloud, "u")]))
    assert cloud.log == ["create"]  # no update, no report: the cloud just started on it
    assert writes == [{"id": "n1"}]  # the named ID record, the only write mid-pass
    assert world.stored("DNSRecord", "r")["status"]["id"] == "n1"
    assert result.requeue_after == 1.0 and result.message == "n1 is being created"


def test_new_id_is_recorded_before_anything_after_the_create_can_fail() -> None:
    world, cloud, obj = setup()

    def broken(_: Thing) -> lifecycle.Wait:
        raise RuntimeError("after create")

    with pytest.raises(RuntimeError):
        run(world, obj, steps(world, cloud, obj, created=broken))
    assert world.stored("DNSRecord", "r")["status"]["id"] == "n1"
    # The next pass finds it by its ID: no second create.
    obj = world.obj(DNS_RECORD, "r")
    run(world, obj, steps(world, cloud, obj))
    assert cloud.log == ["create", "report"]


def test_waits_merge_into_one_result_and_status_is_not_written_mid_pass() -> None:
    world, cloud, obj = setup({"id": "t1"})
    kind = steps(
        world,
        cloud,
        obj,
        updaters=[
            updater(cloud, "resize", lifecycle.Wait("resizing", reason="Resizing", after=5.0)),
            updater(cloud, "rules", lifecycle.Wait("granting", after=1.0)),
        ],
    )
    result, writes = run(world, obj, kind)
    assert cloud.log == ["resize", "rules"]  # in order; no report while waiting
    assert writes == []  # the engine writes status once, after the pass
    assert result.message == "resizing; granting"
    assert result.requeue_after == 1.0  # the shortest
    assert result.reason == "Resizing" and not result.ready and not result.done
    assert result.status == {"size": 1}


def test_stop_ends_the_updaters_in_real_and_dry_passes_alike() -> None:
    """A dry pass (kumo plan, Observe, Report) must show what a real pass would do."""
    for dry in (False, True):
        world, cloud, obj = setup({"id": "t1"})
        first = updater(cloud, "a", lifecycle.Wait("a"), stop=True)
        run(world, obj, steps(world, cloud, obj, updaters=[first, updater(cloud, "b")]), dry)
        assert cloud.log == ["a"]


def test_busy_waits_before_any_update() -> None:
    async def busy(_: Thing) -> lifecycle.Wait:
        return lifecycle.Wait("busy")

    world, cloud, obj = setup({"id": "t1"})
    kind = steps(world, cloud, obj, busy=busy, updaters=[updater(cloud, "u")])
    result, _ = run(world, obj, kind)
    assert cloud.log == [] and result.message == "busy"


def replacing(why: str, wait: lifecycle.Wait | None = None, only: str | None = None) -> Any:
    """A ``replace`` hook: replace ``only`` that one (every one when None)."""

    async def replace(thing: Thing) -> lifecycle.Replacement | None:
        if only is not None and thing.id != only:
            return None
        return lifecycle.Replacement(why, wait=wait)

    return replace


def test_replace_deletes_forgets_the_id_then_creates() -> None:
    world, cloud, obj = setup({"id": "t1"})
    kind = steps(world, cloud, obj, replace=replacing("size changed", only="t1"))
    _, writes = run(world, obj, kind)
    assert cloud.log == ["delete t1", "create"]
    assert writes == [{"id": None}, {"id": "n1"}]
    assert world.events.reasons() == ["Replacing", "Created"]
    # Waiting for the old one to go instead: no create in this pass.
    world2, cloud2, obj2 = setup({"id": "t1"})
    kind2 = steps(world2, cloud2, obj2, replace=replacing("x", lifecycle.Wait("going")))
    result2, _ = run(world2, obj2, kind2)
    assert cloud2.log == ["delete t1"] and result2.message == "going"


def test_a_resource_without_the_marker_is_never_touched() -> None:
    world, cloud, obj = setup({"id": "t9"}, owner=None)
    kind = steps(world, cloud, obj, replace=replacing("x"), updaters=[updater(cloud, "u")])
    with pytest.raises(ownership.NotOwned):
        run(world, obj, kind)
    assert cloud.log == [] and "t9" in cloud.things


def test_adopts_by_marker_instead_of_creating() -> None:
    world, cloud, obj = setup()
    cloud.things["t5"] = Thing("t5", obj.uid)  # a crash lost the ID of this create
    result, _ = run(world, obj, steps(world, cloud, obj))
    assert cloud.log == ["report"] and result.ready
    assert world.stored("DNSRecord", "r")["status"]["id"] == "t5"


def test_a_replacement_records_its_fields_with_the_forgotten_id_and_reports_them() -> None:
    world, cloud, obj = setup({"id": "t1"})

    async def replace(thing: Thing) -> lifecycle.Replacement:
        return lifecycle.Replacement(
            "broken",
            wait=lifecycle.Wait("old one going", reason="Replacing", after=3.0),
            record={"replacingId": thing.id, "replacements": 1},
            event=("Warning", "ThingBroken", f"thing {thing.id} broke; replacing it"),
        )

    result, writes = run(world, obj, steps(world, cloud, obj, replace=replace))
    assert cloud.log == ["delete t1"]  # the pass ends: the new one is made later
    assert writes == [{"id": None, "replacingId": "t1", "replacements": 1}]
    assert world.events.reasons() == ["ThingBroken"]
    assert world.events.events[-1][1] == "Warning"
    assert result.status == {"replacingId": "t1", "replacements": 1}
    assert (result.reason, result.message, result.requeue_after) == (
        "Replacing",
        "old one going",
        3.0,
    )


def test_replace_may_refuse_before_anything_is_deleted() -> None:
    """Bad input found while deciding (references of the new one) deletes nothing."""
    world, cloud, obj = setup({"id": "t1"})

    async def replace(_: Thing) -> lifecycle.Replacement:
        raise TerminalError("ImageNotFound", "no such image", field="spec.image")

    with pytest.raises(TerminalError):
        run(world, obj, steps(world, cloud, obj, replace=replace))
    assert cloud.log == [] and "t1" in cloud.things
    assert world.stored("DNSRecord", "r")["status"]["id"] == "t1"


def test_before_create_may_wait_instead_of_creating() -> None:
    world, cloud, obj = setup()

    async def not_yet() -> lifecycle.Wait:
        cloud.log.append("check")
        return lifecycle.Wait("not your turn", reason="WaitingToBuild", after=60.0, status={"x": 1})

    result, writes = run(world, obj, steps(world, cloud, obj, before_create=not_yet))
    assert cloud.log == ["check"] and cloud.things == {}
    assert writes == []
    assert (result.reason, result.message, result.requeue_after) == (
        "WaitingToBuild",
        "not your turn",
        60.0,
    )
    assert result.status == {"x": 1} and not result.done


def test_merge_reports_each_waits_status_fields_over_the_resources() -> None:
    result = lifecycle.merge(
        [lifecycle.Wait("a", status={"x": 1}), lifecycle.Wait("b", status={"y": 2})],
        {"x": 0, "z": 3},
    )
    assert result.status == {"x": 1, "y": 2, "z": 3}
    assert result.message == "a; b"
