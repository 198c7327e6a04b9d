"""The adapter's listings of Cinder, Neutron and Manila on fake services that page (tests/
unit/cloud/paged.py) behind the real openstacksdk session: what lies past a page is seen
by the watch, by adoption and by name lookups, and below a page's size a listing still
costs the one call it always did (the idle cost)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests_mock as rm

from kumo.cloud import credentials, model
from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.services.blockstorage.calls import LIST_MICROVERSION, SNAPSHOT_MICROVERSION
from kumo.cloud.services.blockstorage.watch import VolumeWatcher
from tests.unit.cloud.paged import CountedListing, LinkedListing, volume
from tests.unit.cloud.rest import SOURCE, recorded, stub_discovery, stub_keystone
from tests.unit.cloud.test_adapter import run
from tests.unit.cloud.test_watch import refresh

PROJECT = "9f2c4e1a7b3d4f6e8a0c2b4d6f8e0a1c"  # the recorded token's
CINDER = f"http://127.0.0.1:8776/v3/{PROJECT}"
NEUTRON = "http://127.0.0.1:9696/v2.0"
MANILA = "http://127.0.0.1:8786/v2"


@pytest.fixture
def cloud(requests_mock: rm.Mocker) -> Iterator[OpenStackCloud]:
    """The recorded cloud, with Cinder in its catalog."""
    token = recorded("keystone_token.json")
    token["token"]["catalog"].append(
        {
            "endpoints": [
                {"id": "e-cinder", "interface": "public", "region_id": "tokyo1",
                 "region": "tokyo1", "url": CINDER},
            ],
            "id": "s-cinder",
            "type": "volumev3",
            "name": "cinderv3",
        }
    )  # fmt: skip
    stub_keystone(
        requests_mock, status_code=201, json=token, headers={"X-Subject-Token": "gAAAAAB-token"}
    )
    stub_discovery(requests_mock)
    requests_mock.get(
        "http://127.0.0.1:9696/",
        json={"versions": [{"id": "v2.0", "status": "CURRENT", "links": [
            {"rel": "self", "href": NEUTRON + "/"}]}]},
    )  # fmt: skip
    conn = credentials.connect(SOURCE)
    yield OpenStackCloud(conn, concurrency=2, rate=1000.0)
    conn.close()


def cinder_volumes(requests_mock: rm.Mocker, count: int, page: int) -> LinkedListing:
    listing = LinkedListing("volumes", [volume(n, f"uid-{n}") for n in range(count)], page)
    requests_mock.get(f"{CINDER}/volumes/detail", json=listing.callback)
    return listing


# -- Cinder -----------------------------------------------------------------------------------


def test_the_watch_sees_every_volume_past_cinders_page(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """12 volumes at ``osapi_max_limit`` 5: three calls per listing, and none of the
    seven past the first page is ever taken for gone, at the first listing or later."""
    listing = cinder_volumes(requests_mock, 12, page=5)
    seen = requests_mock.get(f"{CINDER}/volumes/detail", json=listing.callback)
    notified: list[set[str]] = []
    cloud.watch._notify = lambda owners, duplicated, woken: notified.append(owners)
    refresh(cloud.watch, "blockstorage", full=True)
    assert len(listing.asked) == 3
    refresh(cloud.watch, "blockstorage")
    assert len(listing.asked) == 6
    for n in range(12):
        assert isinstance(
            cloud.watch.of(VolumeWatcher).volumes.lookup(f"vol-{n:04d}"), model.Volume
        ), n
    assert notified == [{f"uid-{n}" for n in range(12)}], "the second listing changed nothing"
    versions = {r.headers.get("OpenStack-API-Version") for r in seen.request_history}
    assert versions == {f"volume {LIST_MICROVERSION}"}, "the count needs 3.45"


@pytest.mark.parametrize(
    ("count", "page", "calls"), [(0, 5, 1), (4, 5, 1), (5, 5, 1), (6, 5, 2), (10, 1000, 1)]
)
def test_below_a_page_a_listing_costs_one_call_as_before(
    cloud: OpenStackCloud, requests_mock: rm.Mocker, count: int, page: int, calls: int
) -> None:
    listing = cinder_volumes(requests_mock, count, page)
    refresh(cloud.watch, "blockstorage", full=True)
    assert len(listing.asked) == calls, "one call per page begun (Cinder's count)"
    assert len(cloud.watch.of(VolumeWatcher).volumes) == count
    assert json.loads(listing.asked[0]["metadata"]) == {"kumo": "managed"}
    assert listing.asked[0]["with_count"] == "true"


def test_adoption_finds_a_volume_past_the_first_page(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """Before the watch has listed, an object's volumes are listed by its marker; the
    filter is Cinder's, the page size too."""
    items = [volume(n, "uid-a") for n in range(7)]
    listing = LinkedListing("volumes", items, page=5)
    requests_mock.get(f"{CINDER}/volumes/detail", json=listing.callback)
    found = run(cloud.list_owned_volumes("uid-a"))
    assert [v.id for v in found] == [x["id"] for x in items]
    assert all(json.loads(q["metadata"]) == {"kumo-owner": "uid-a"} for q in listing.asked)


def test_a_volume_type_on_the_second_page_is_found(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    types = [{"id": f"type-{n}", "name": f"tier-{n}"} for n in range(7)]
    listing = LinkedListing("volume_types", types, page=5, links="volume_type_links")
    requests_mock.get(f"{CINDER}/types", json=listing.callback)
    assert run(cloud.volume_type_name("type-6")) == "tier-6"
    assert len(listing.asked) == 2


def test_every_page_of_a_snapshot_listing_goes_at_the_snapshots_microversion(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    marker = {"kumo": "managed", "kumo-owner": "uid-a"}
    snaps = [
        {"id": f"snap-{n}", "volume_id": "vol-1", "status": "available", "metadata": marker}
        for n in range(6)
    ]
    listing = LinkedListing("snapshots", snaps, page=5)
    seen = requests_mock.get(f"{CINDER}/snapshots/detail", json=listing.callback)
    found = run(cloud.list_snapshots(marker))
    assert [s.id for s in found] == [f"snap-{n}" for n in range(6)]
    versions = {r.headers.get("OpenStack-API-Version") for r in seen.request_history}
    assert versions == {f"volume {SNAPSHOT_MICROVERSION}"}


# -- Neutron (pagination_max_limit) ------------------------------------------------------------


def test_the_security_group_probe_follows_neutrons_pages(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    groups = [
        {"id": f"sg-{n}", "name": f"g{n}", "tags": model.marker_tags(f"uid-{n}"),
         "revision_number": 1}
        for n in range(7)
    ]  # fmt: skip
    listing = LinkedListing("security_groups", groups, page=5)
    requests_mock.get(f"{NEUTRON}/security-groups", json=listing.callback)
    found = run(cloud.security_group_versions())
    assert [g.id for g in found] == [f"sg-{n}" for n in range(7)]
    first, second = listing.asked
    assert second["project_id"] == first["project_id"] == PROJECT
    assert second["fields"] == first["fields"], "the next page asks for the same fields"
    assert second["marker"] == "sg-4"


def test_floating_ips_past_neutrons_page_are_seen(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    fips = [
        {"id": f"fip-{n}", "floating_ip_address": f"203.0.113.{n}", "status": "DOWN",
         "description": "", "tags": []}
        for n in range(11)
    ]  # fmt: skip
    listing = LinkedListing("floatingips", fips, page=5)
    requests_mock.get(f"{NEUTRON}/floatingips", json=listing.callback)
    found = run(cloud.fetch_floating_ips())
    assert [f.id for f in found] == [f"fip-{n}" for n in range(11)]
    assert len(listing.asked) == 3


# -- Manila -----------------------------------------------------------------------------------


def manila_shares(count: int) -> list[dict[str, Any]]:
    return [
        {"id": f"share-{n:04d}", "name": f"s{n}", "status": "available", "size": 1,
         "share_proto": "NFS", "metadata": {"kumo": "managed", "kumo-owner": f"uid-{n}"}}
        for n in range(count)
    ]  # fmt: skip


def test_shares_past_an_older_manilas_cut_are_seen(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    listing = CountedListing("shares", manila_shares(12), cap=5)
    requests_mock.get(f"{MANILA}/shares/detail", json=listing.callback)
    found = run(cloud.list_managed_shares())
    assert sorted(s.id for s in found) == [f"share-{n:04d}" for n in range(12)]
    assert len(listing.asked) == 3


def test_manila_zed_still_costs_one_call(cloud: OpenStackCloud, requests_mock: rm.Mocker) -> None:
    listing = CountedListing("shares", manila_shares(12))
    requests_mock.get(f"{MANILA}/shares/detail", json=listing.callback)
    found = run(cloud.list_owned_shares("uid-3"))
    assert [s.id for s in found] == ["share-0003"]
    (asked,) = listing.asked
    assert json.loads(asked["metadata"]) == {"kumo-owner": "uid-3"}
