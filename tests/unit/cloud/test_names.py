"""Name → ID caches expire, and forget an ID the cloud says is gone."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from openstack import exceptions as os_exc

from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.errors import missing_ids
from kumo.cloud.names import NAME_CACHE_TTL, NameCache
from kumo.engine.errors import TerminalError, TransientError


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_entries_expire_after_the_ttl() -> None:
    clock = Clock()
    cache: NameCache = NameCache(clock=clock)
    cache.put(("image", "centos79"), "img-1")
    clock.now += NAME_CACHE_TTL - 1
    assert cache.get(("image", "centos79")) == "img-1"
    clock.now += 2
    assert cache.get(("image", "centos79")) is None


def test_forget_drops_every_name_resolving_to_a_gone_id() -> None:
    cache: NameCache = NameCache()
    cache.put(("image", "centos79"), "img-1")
    cache.put(("image", "img-1"), "img-1")
    cache.put(("flavor", "small"), "flv-1")
    cache.put(("zone", "z.test."), ("zone-1", "z.test."))
    assert sorted(cache.forget_ids(["img-1", "zone-1"])) == ["img-1", "zone-1"]
    assert cache.get(("image", "centos79")) is None
    assert cache.get(("zone", "z.test.")) is None
    assert cache.get(("flavor", "small")) == "flv-1"
    assert cache.forget_ids(["img-1"]) == []


class FakeGlanceNova:
    """Just enough of an openstacksdk Connection: the image is rotated under the name."""

    def __init__(self) -> None:
        self.images = {"centos79": "img-1"}
        self.gone: set[str] = set()
        self.lookups = 0
        self.config = SimpleNamespace(get_region_name=lambda: "tokyo1")
        self.image = SimpleNamespace(find_image=self.find_image)
        self.compute = SimpleNamespace(
            find_flavor=lambda ref, ignore_missing: SimpleNamespace(id="flv-1"),
            create_server=self.create_server,
        )
        self.network = SimpleNamespace(
            find_network=lambda ref, ignore_missing: SimpleNamespace(id="net-1")
        )

    def find_image(self, ref: str, ignore_missing: bool) -> Any:
        self.lookups += 1
        return SimpleNamespace(id=self.images[ref]) if ref in self.images else None

    def create_server(self, **attrs: Any) -> Any:
        if attrs["image_id"] in self.gone:
            raise os_exc.BadRequestException(
                message=f"Image {attrs['image_id']} could not be found.", http_status=400
            )
        return SimpleNamespace(
            id="srv-1",
            name=attrs["name"],
            status="BUILD",
            tags=attrs["tags"],
            metadata=attrs["metadata"],
            description=None,
            addresses={},
            host_id=None,
            fault=None,
        )


async def create(cloud: OpenStackCloud) -> str:
    image_id = await cloud.image_id("centos79")
    server = await cloud.create_server(
        name="vm",
        image_id=image_id,
        flavor_id=await cloud.flavor_id("small"),
        network_ids=[await cloud.network_id("net")],
        user_data=None,
        description=None,
        metadata={},
        tags=["kumo"],
        availability_zone=None,
        key_name=None,
        security_groups=[],
        server_group_id=None,
    )
    return server.id


def test_a_rotated_image_is_looked_up_again_after_a_failed_create() -> None:
    conn = FakeGlanceNova()
    cloud = OpenStackCloud(conn)  # type: ignore[arg-type]
    assert asyncio.run(create(cloud)) == "srv-1"
    conn.gone.add("img-1")  # the image is deleted; a new one takes the name
    conn.images["centos79"] = "img-2"
    with pytest.raises(TransientError) as caught:
        asyncio.run(create(cloud))
    assert caught.value.reason == "StaleReference"
    assert "img-1" in caught.value.message
    assert asyncio.run(create(cloud)) == "srv-1"
    assert conn.lookups == 2


def test_a_create_failing_for_another_reason_keeps_the_cache() -> None:
    conn = FakeGlanceNova()
    cloud = OpenStackCloud(conn)  # type: ignore[arg-type]
    asyncio.run(cloud.image_id("centos79"))

    def reject(**attrs: Any) -> Any:
        raise os_exc.BadRequestException(message="Invalid key_name provided.", http_status=400)

    conn.compute.create_server = reject
    with pytest.raises(TerminalError):
        asyncio.run(create(cloud))
    asyncio.run(cloud.image_id("centos79"))
    assert conn.lookups == 1


class FakeDns:
    """A zone deleted and re-created under the same name gets a new ID."""

    def __init__(self) -> None:
        self.zone_id = "zone-1"
        self.lookups = 0
        self.config = SimpleNamespace(get_region_name=lambda: "tokyo1")
        self.dns = SimpleNamespace(
            find_zone=self.find_zone,
            recordsets=self.recordsets,
            create_recordset=self.create_recordset,
        )

    def find_zone(self, ref: str, ignore_missing: bool) -> Any:
        self.lookups += 1
        return SimpleNamespace(id=self.zone_id, name="z.test.")

    def _check(self, zone_id: str) -> None:
        if zone_id != self.zone_id:
            raise os_exc.NotFoundException(message="Could not find Zone", http_status=404)

    def recordsets(self, zone_id: str) -> list[Any]:
        self._check(zone_id)
        return []

    def create_recordset(self, zone_id: str, **attrs: Any) -> Any:
        self._check(zone_id)
        return SimpleNamespace(id="rs-1", zone_id=zone_id, status="PENDING", **attrs)


def test_a_recreated_zone_is_looked_up_again() -> None:
    conn = FakeDns()
    cloud = OpenStackCloud(conn)  # type: ignore[arg-type]
    old_id, _ = asyncio.run(cloud.zone("z.test."))
    conn.zone_id = "zone-2"
    with pytest.raises(TransientError) as caught:
        asyncio.run(
            cloud.create_recordset(
                old_id, name="a.z.test.", type="A", records=["10.0.0.1"], ttl=60, description=""
            )
        )
    assert caught.value.reason == "StaleReference"
    assert asyncio.run(cloud.zone("z.test.")) == ("zone-2", "z.test.")
    conn.zone_id = "zone-3"
    with pytest.raises(TerminalError):
        asyncio.run(cloud.list_zone_recordsets("zone-2"))
    assert asyncio.run(cloud.zone("z.test.")) == ("zone-3", "z.test.")
    assert conn.lookups == 3


@pytest.mark.parametrize(
    ("error", "gone"),
    [
        (
            os_exc.BadRequestException(message="Image img-1 could not be found.", http_status=400),
            ["img-1"],
        ),
        (
            os_exc.BadRequestException(message="Flavor flv-1 could not be found.", http_status=400),
            ["flv-1"],
        ),
        (os_exc.BadRequestException(message="Security group web not found.", http_status=400), []),
        (
            os_exc.NotFoundException(message="Could not find Zone", http_status=404),
            ["img-1", "flv-1"],
        ),
        (os_exc.HttpException(message="img-1 could not be found", http_status=500), []),
        (None, []),
    ],
)
def test_missing_ids(error: Exception | None, gone: list[str]) -> None:
    assert missing_ids(error, ["img-1", "flv-1"]) == gone


def test_a_flavors_id_and_name_are_looked_up_once_and_apart_from_its_id() -> None:
    """An observed VM checks its flavor on every pass: one lookup per TTL, not per pass
    (cached under its own key: ``flavor_id`` caches the bare ID of the same lookup)."""
    conn = FakeGlanceNova()
    finds: list[str] = []

    def find_flavor(ref: str, ignore_missing: bool) -> Any:
        finds.append(ref)
        return SimpleNamespace(id="flv-1", name="m1.tiny")

    conn.compute.find_flavor = find_flavor
    cloud = OpenStackCloud(conn)  # type: ignore[arg-type]
    for _ in range(3):
        assert asyncio.run(cloud.flavor_ids("m1.tiny")) == ("flv-1", "m1.tiny")
        assert asyncio.run(cloud.flavor_id("m1.tiny")) == "flv-1"
    assert finds == ["m1.tiny", "m1.tiny"]


def test_a_name_many_reconciles_need_at_once_is_looked_up_once() -> None:
    """A group's VMs start together and all resolve the same network: one lookup, not
    one per VM (15 of them, each a 404 by ID and a listing by name, at N = 100)."""
    conn = FakeGlanceNova()
    finds: list[str] = []

    def find_network(ref: str, ignore_missing: bool) -> Any:
        finds.append(ref)
        return SimpleNamespace(id="net-1")

    conn.network.find_network = find_network
    cloud = OpenStackCloud(conn)  # type: ignore[arg-type]

    async def many() -> list[str]:
        return await asyncio.gather(*(cloud.network_id("bench") for _ in range(20)))

    assert asyncio.run(many()) == ["net-1"] * 20
    assert finds == ["bench"]
    assert asyncio.run(cloud.network_id("bench")) == "net-1"  # cached after
    assert finds == ["bench"]


def test_a_failed_shared_lookup_fails_every_caller_with_its_own_field_and_caches_nothing() -> None:
    conn = FakeGlanceNova()
    conn.images = {}
    cloud = OpenStackCloud(conn)  # type: ignore[arg-type]

    async def many() -> list[BaseException | str]:
        return await asyncio.gather(
            cloud.image_id("centos79"),
            cloud.image_id("centos79"),
            cloud.image_id("centos79", field="spec.template.spec.image"),
            return_exceptions=True,
        )

    errors = asyncio.run(many())
    assert all(isinstance(e, TerminalError) for e in errors)
    fields = [e.field for e in errors if isinstance(e, TerminalError)]
    assert fields == ["spec.image", "spec.image", "spec.template.spec.image"]
    assert conn.lookups == 2  # one per field, not one per caller
    conn.images["centos79"] = "img-1"  # the image appears: nothing negative was cached
    assert asyncio.run(cloud.image_id("centos79")) == "img-1"
    assert conn.lookups == 3


def test_a_cancelled_caller_does_not_cancel_the_lookup_others_wait_for() -> None:
    cache: NameCache = NameCache()
    loads = 0

    async def scenario() -> str:
        asked, answer = asyncio.Event(), asyncio.Event()

        async def load() -> str:
            nonlocal loads
            loads += 1
            asked.set()
            await answer.wait()  # the lookup is in flight until the cloud answers
            return "net-1"

        first = asyncio.ensure_future(cache.resolve(("network", "bench"), load))
        second = asyncio.ensure_future(cache.resolve(("network", "bench"), load))
        # The load runs only once a caller started it; both callers were scheduled
        # before it, so both now wait for it.
        await asyncio.wait_for(asked.wait(), 5.0)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert not second.done(), "the second caller still waits for the load"
        answer.set()
        return await asyncio.wait_for(second, 5.0)

    assert asyncio.run(scenario()) == "net-1"
    assert loads == 1
    assert cache.get(("network", "bench")) == "net-1"
