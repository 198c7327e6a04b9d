"""OpenStackCloud through its public async methods, on recorded REST responses: what
comes back as values, what comes back as None, and which failures Kumo retries."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable
from typing import Any, TypeVar

import pytest
import requests
import requests_mock as rm

from kumo.cloud import credentials, model
from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.base import WATCH_SLOTS
from kumo.cloud.services.compute.watch import ServerWatcher
from kumo.cloud.services.loadbalancing.watch import LoadBalancerWatcher
from kumo.cloud.watch import WATCH_LANE
from kumo.engine.errors import ReconcileError, TerminalError, TransientError
from tests.unit.cloud.rest import (
    DESIGNATE,
    NOVA,
    OCTAVIA,
    SOURCE,
    recorded,
    stub_discovery,
    stub_keystone,
)
from tests.unit.waiting import until

T = TypeVar("T")

SERVER_ID = "3f6b1c2e-8a4d-4e5f-9b0c-1d2e3f4a5b6c"
GONE_ID = "6c9e4f5b-1d70-4b82-8e3f-4a5b6c7d8e9f"
LB_ID = "8c1e5f6a-2b3c-4d4e-9f5a-6b7c8d9e0f1a"
IMAGE_ID = "7e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"
ZONE_ID = "a86dba58-0043-4cc6-a1bb-69d5e86f3ca3"


def run(coro: Awaitable[T]) -> T:
    async def wrapped() -> T:
        return await coro

    return asyncio.run(wrapped())


def fails(coro: Awaitable[Any]) -> ReconcileError:
    with pytest.raises(ReconcileError) as caught:
        run(coro)
    return caught.value


def create_server(cloud: OpenStackCloud) -> Awaitable[model.Server]:
    return cloud.create_server(
        name="web-1",
        image_id=IMAGE_ID,
        flavor_id="flv-1",
        network_ids=["net-1"],
        user_data=None,
        description=None,
        metadata={},
        tags=model.marker_tags("uid-web-1"),
        availability_zone=None,
        key_name=None,
        security_groups=[],
        server_group_id=None,
    )


# -- values --------------------------------------------------------------------------


def test_managed_servers_are_listed_by_tag_as_plain_values(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(f"{NOVA}/servers/detail", json=recorded("nova_servers_detail_tags_kumo.json"))
    (web1, web2), _date = run(cloud.list_servers_since(None))
    assert requests_mock.last_request.qs == {"tags": ["kumo"]}
    assert web1 == model.Server(
        id=SERVER_ID,
        name="web-1",
        status="ACTIVE",
        tags=["kumo", "kumo-owner=uid-web-1"],
        metadata={"kumo:object": "default/web-1", "kumo:spec-hash": "0d1e2f3a4b5c"},
        description="web server",
        addresses=[("kumo-demo-net", "10.0.0.12", 4), ("kumo-demo-net", "fd00::12", 6)],
        host_id="b8f4c1d2e3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6",
        fault=None,
        updated="2026-11-22T00:00:30Z",
        image_id=IMAGE_ID,
        flavor="n3-1vcpu-2gb",  # Nova >= 2.47 embeds the flavor's original name, not its ID
        security_groups=("default",),
    )
    assert (web2.status, web2.addresses) == ("ERROR", [])
    assert web2.fault == "No valid host was found. There are not enough hosts available."
    assert model.owner_of(web2.tags) == "uid-web-2"


def test_servers_in_build_are_listed_by_kumos_tag_and_status(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """The watch's check on queued servers missing from changes-since: one listing."""
    requests_mock.get(f"{NOVA}/servers/detail", json=recorded("nova_servers_detail_tags_kumo.json"))
    listed = run(cloud.list_building_servers())
    assert requests_mock.last_request.qs == {"tags": ["kumo"], "status": ["build"]}
    assert [s.name for s in listed] == ["web-1", "web-2"]


def test_a_server_without_kumos_marker_is_read_once_then_from_the_cache(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """What an import or an Observe names: the watch keeps it fresh once cached, so an
    observed server costs one GET, not one per pass (issue 24, item 8)."""
    foreign = {**recorded("nova_servers_detail_tags_kumo.json")["servers"][0], "tags": []}
    reads = requests_mock.get(f"{NOVA}/servers/{SERVER_ID}", json={"server": foreign})
    gone = requests_mock.get(
        f"{NOVA}/servers/{GONE_ID}", status_code=404, json=recorded("nova_server_not_found.json")
    )
    cloud.watch.of(ServerWatcher).servers.synced = True  # the watch has listed Nova
    for _ in range(3):
        server = run(cloud.get_server(SERVER_ID))
        assert server is not None and server.name == "web-1"
        assert run(cloud.get_server(GONE_ID)) is None
    assert (reads.call_count, gone.call_count) == (1, 1)


def test_before_the_watch_listed_nova_a_read_is_not_cached(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """Nothing would keep it fresh yet (the watch's first listing decides the cache)."""
    foreign = {**recorded("nova_servers_detail_tags_kumo.json")["servers"][0], "tags": []}
    reads = requests_mock.get(f"{NOVA}/servers/{SERVER_ID}", json={"server": foreign})
    run(cloud.get_server(SERVER_ID))
    run(cloud.get_server(SERVER_ID))
    assert reads.call_count == 2


def test_get_server_of_a_missing_server_is_none(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(
        f"{NOVA}/servers/{GONE_ID}", status_code=404, json=recorded("nova_server_not_found.json")
    )
    assert run(cloud.get_server(GONE_ID)) is None


def test_get_server_of_a_deleted_server_is_none(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """Nova may still show a server it is deleting (status DELETED) for a moment."""
    body = recorded("nova_server_deleted.json")
    requests_mock.get(f"{NOVA}/servers/{body['server']['id']}", json=body)
    assert run(cloud.get_server(body["server"]["id"])) is None


def test_deleting_a_missing_server_succeeds(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.delete(
        f"{NOVA}/servers/{GONE_ID}", status_code=404, json=recorded("nova_server_not_found.json")
    )
    run(cloud.delete_server(GONE_ID))
    assert requests_mock.last_request.method == "DELETE"


def test_get_load_balancer_of_a_missing_one_is_none(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(
        f"{OCTAVIA}/lbaas/loadbalancers/{LB_ID}",
        status_code=404,
        json=recorded("octavia_lb_not_found.json"),
    )
    assert run(cloud.get_load_balancer(LB_ID)) is None


def test_a_load_balancer_without_kumos_marker_is_read_once_then_watched(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """What an import or an Observe names (issue 24, item 8): one GET, then the cache;
    its listeners are read from the API until the watch has listed them."""
    body = {
        "id": LB_ID,
        "name": "legacy",
        "provisioning_status": "ACTIVE",
        "operating_status": "ONLINE",
        "vip_address": "10.0.0.9",
        "tags": ["team-a"],
    }
    reads = requests_mock.get(f"{OCTAVIA}/lbaas/loadbalancers/{LB_ID}", json={"loadbalancer": body})
    listeners = requests_mock.get(f"{OCTAVIA}/lbaas/listeners", json={"listeners": []})
    cloud.watch.of(LoadBalancerWatcher).load_balancers.synced = cloud.watch.of(
        LoadBalancerWatcher
    ).listeners.synced = True
    for _ in range(3):
        lb = run(cloud.get_load_balancer(LB_ID))
        assert lb is not None and lb.name == "legacy"
        assert run(cloud.list_listeners(LB_ID)) == []
    assert (reads.call_count, listeners.call_count) == (1, 1)
    assert cloud.watch.of(LoadBalancerWatcher).foreign() == {LB_ID}


def test_get_recordset_of_a_missing_one_is_none(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(
        f"{DESIGNATE}/v2/zones/{ZONE_ID}/recordsets/rs-1",
        status_code=404,
        json=recorded("designate_recordset_not_found.json"),
    )
    assert run(cloud.get_recordset(ZONE_ID, "rs-1")) is None


# -- failures: transient (Kumo retries) or terminal (the user must act) ----------------


def test_octavia_409_pending_update_is_busy_and_retried_soon(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.put(
        f"{OCTAVIA}/lbaas/loadbalancers/{LB_ID}",
        status_code=409,
        json=recorded("octavia_pending_update_409.json"),
    )
    error = fails(cloud.update_load_balancer(LB_ID, description="new"))
    assert isinstance(error, TransientError)
    assert error.reason == "CloudBusy"
    assert "PENDING_UPDATE" in error.message
    assert error.retry_after == 2.0


@pytest.mark.parametrize(
    ("status", "body", "retry_after"),
    [(429, "nova_over_limit_429.json", 7.0), (413, "nova_over_limit_413.json", 3.0)],
)
def test_rate_limits_are_transient_and_honour_retry_after(
    cloud: OpenStackCloud,
    requests_mock: rm.Mocker,
    status: int,
    body: str,
    retry_after: float,
) -> None:
    requests_mock.get(
        f"{NOVA}/servers/detail",
        status_code=status,
        json=recorded(body),
        headers={"Retry-After": str(int(retry_after))},
    )
    error = fails(cloud.list_servers_since(None))
    assert isinstance(error, TransientError)
    assert error.reason == "CloudUnavailable"
    assert error.retry_after == retry_after


@pytest.mark.parametrize("retry_after", [None, "30"])
def test_503_is_transient(
    cloud: OpenStackCloud, requests_mock: rm.Mocker, retry_after: str | None
) -> None:
    requests_mock.get(
        f"{OCTAVIA}/lbaas/loadbalancers/{LB_ID}",
        status_code=503,
        text=recorded("service_unavailable.html"),
        headers={
            "Content-Type": "text/html",
            **({"Retry-After": retry_after} if retry_after else {}),
        },
    )
    error = fails(cloud.get_load_balancer(LB_ID))
    assert isinstance(error, TransientError)
    assert error.reason == "CloudUnavailable"
    assert error.retry_after == (float(retry_after) if retry_after else None)


def test_quota_is_terminal(cloud: OpenStackCloud, requests_mock: rm.Mocker) -> None:
    requests_mock.post(
        f"{NOVA}/servers", status_code=403, json=recorded("nova_quota_exceeded.json")
    )
    error = fails(create_server(cloud))
    assert isinstance(error, TerminalError)
    assert error.reason == "QuotaExceeded"
    assert "Quota exceeded for instances" in error.message


def test_quota_413_is_terminal_too(cloud: OpenStackCloud, requests_mock: rm.Mocker) -> None:
    """Older Nova answered an exceeded quota with 413 (OverQuota), without Retry-After."""
    body = {"overLimit": {"code": 413, "message": "Quota exceeded for resources: ['cores']"}}
    requests_mock.post(f"{NOVA}/servers", status_code=413, json=body)
    error = fails(create_server(cloud))
    assert (type(error), error.reason) == (TerminalError, "QuotaExceeded")


def test_403_without_quota_is_forbidden(cloud: OpenStackCloud, requests_mock: rm.Mocker) -> None:
    body = {"forbidden": {"code": 403, "message": "Policy doesn't allow os_compute_api:servers"}}
    requests_mock.get(f"{NOVA}/servers/detail", status_code=403, json=body)
    error = fails(cloud.list_servers_since(None))
    assert (type(error), error.reason) == (TerminalError, "CloudForbidden")


def test_400_is_rejected_and_names_nothing_cached_as_stale(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(
        f"{NOVA}/servers", status_code=400, json=recorded("nova_image_not_found_400.json")
    )
    error = fails(create_server(cloud))
    assert (type(error), error.reason) == (TerminalError, "CloudRejected")
    assert f"Image {IMAGE_ID} could not be found" in error.message


def test_400_naming_a_cached_id_forgets_it_and_retries_soon(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """An image rotated under its name: the cached ID is dropped, not kept until the TTL."""
    cloud._names.put(("image", "centos79"), IMAGE_ID)
    requests_mock.post(
        f"{NOVA}/servers", status_code=400, json=recorded("nova_image_not_found_400.json")
    )
    error = fails(create_server(cloud))
    assert (type(error), error.reason) == (TransientError, "StaleReference")
    assert cloud._names.get(("image", "centos79")) is None


def test_missing_zone_on_listing_forgets_the_zone(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    cloud._names.put(("zone", "example.test."), (ZONE_ID, "example.test."))
    requests_mock.get(
        f"{DESIGNATE}/v2/zones/{ZONE_ID}/recordsets",
        status_code=404,
        json=recorded("designate_zone_not_found.json"),
    )
    error = fails(cloud.list_zone_recordsets(ZONE_ID))
    assert (type(error), error.reason) == (TerminalError, "NotFound")
    assert cloud._names.get(("zone", "example.test.")) is None


@pytest.mark.parametrize(
    "raised", [requests.exceptions.ConnectionError, requests.exceptions.ConnectTimeout]
)
def test_no_answer_is_transient(
    cloud: OpenStackCloud, requests_mock: rm.Mocker, raised: type[Exception]
) -> None:
    requests_mock.get(f"{NOVA}/servers/detail", exc=raised)
    error = fails(cloud.list_servers_since(None))
    assert (type(error), error.reason) == (TransientError, "CloudUnreachable")


def test_the_region_comes_from_clouds_yaml(cloud: OpenStackCloud) -> None:
    assert cloud.region == "tokyo1"


# -- batch member update: one change per pool, foreign members sent back as they are ----

POOL_ID = "5d1c3b2a-9f8e-4d7c-a6b5-4c3d2e1f0a9b"


def octavia_member(address: str, tags: list[str], **fields: Any) -> dict[str, Any]:
    return {
        "id": f"mem-{address}",
        "name": "",
        "address": address,
        "protocol_port": 80,
        "weight": 1,
        "admin_state_up": True,
        "backup": False,
        "subnet_id": None,
        "monitor_address": None,
        "monitor_port": None,
        "tags": tags,
        "provisioning_status": "ACTIVE",
        "operating_status": "ONLINE",
        "project_id": "p",
        **fields,
    }


def test_replace_owned_members_reads_the_pool_and_sends_foreign_members_back_as_they_are(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    by_hand = octavia_member(
        "192.168.1.5",
        ["team-x"],
        name="by-hand",
        weight=7,
        admin_state_up=False,
        backup=True,
        subnet_id="0b9d8c7e-6f5a-4b3c-9d2e-1f0a9b8c7d6e",
        monitor_address="192.168.1.6",
        monitor_port=9000,
    )
    other_lb = octavia_member("10.0.0.20", model.marker_tags("uid-other"), name="x", weight=0)
    mine_leaving = octavia_member("10.0.0.11", model.marker_tags("uid-web"), name="old")
    requests_mock.get(
        f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members",
        json={"members": [by_hand, other_lb, mine_leaving], "members_links": []},
    )
    put = requests_mock.put(f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members", status_code=202)
    ours = model.marker_tags("uid-web")
    run(
        cloud.replace_owned_members(
            POOL_ID,
            "uid-web",
            [
                model.MemberSpec("vm-a", "10.0.0.10", 80, None, 1, ours),
                model.MemberSpec("vm-b", "10.0.0.12", 80, 8080, 0, ours),
                model.MemberSpec("vm-c", "192.168.1.5", 80, None, 1, ours),  # held by hand
            ],
        )
    )
    assert put.call_count == 1
    assert put.last_request.json() == {
        "members": [
            {
                "name": "by-hand",
                "address": "192.168.1.5",
                "protocol_port": 80,
                "weight": 7,
                "admin_state_up": False,
                "backup": True,
                "subnet_id": "0b9d8c7e-6f5a-4b3c-9d2e-1f0a9b8c7d6e",
                "monitor_address": "192.168.1.6",
                "monitor_port": 9000,
                "tags": ["team-x"],
            },
            {
                "name": "x",
                "address": "10.0.0.20",
                "protocol_port": 80,
                "weight": 0,
                "admin_state_up": True,
                "backup": False,
                "tags": model.marker_tags("uid-other"),
            },
            {
                "name": "vm-a",
                "address": "10.0.0.10",
                "protocol_port": 80,
                "weight": 1,
                "tags": ours,
            },
            {
                "name": "vm-b",
                "address": "10.0.0.12",
                "protocol_port": 80,
                "weight": 0,
                "tags": ours,
                "monitor_port": 8080,
            },
        ]
    }
    # The read came right before the write: nothing else happened in between.
    assert [r.method for r in requests_mock.request_history[-2:]] == ["GET", "PUT"]


def test_add_members_sends_the_additions_alone_without_reading_the_pool(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """A pool being filled: Octavia's additive batch with the new members only, no read
    of the pool first; an address + port the last listing shows held (by anyone) is
    left out, since Octavia would update that member. The pool is read again after."""
    tags = model.marker_tags("uid-web")
    by_hand = octavia_member("192.168.1.5", ["team-x"], name="by-hand")
    mine = octavia_member("10.0.0.10", tags, name="a")
    url = f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members"
    cloud.watch.of(LoadBalancerWatcher).pools.put(
        model.Pool(POOL_ID, "p", "HTTP", None, None, [by_hand["id"], mine["id"]])
    )
    listing = requests_mock.get(url, json={"members": [by_hand, mine], "members_links": []})
    put = requests_mock.put(url, status_code=202)
    run(cloud.list_members(POOL_ID))
    assert listing.call_count == 1
    run(
        cloud.add_members(
            POOL_ID,
            [
                model.MemberSpec("b", "10.0.0.11", 80, None, 1, tags),
                model.MemberSpec("c", "192.168.1.5", 80, None, 1, tags),  # held by hand
                model.MemberSpec("a", "10.0.0.10", 80, None, 1, tags),  # already there
            ],
        )
    )
    assert listing.call_count == 1, "no read before the write"
    assert put.call_count == 1
    assert put.last_request.qs == {"additive_only": ["true"]}
    assert put.last_request.json() == {
        "members": [
            {"name": "b", "address": "10.0.0.11", "protocol_port": 80, "weight": 1, "tags": tags}
        ]
    }
    run(cloud.list_members(POOL_ID))
    assert listing.call_count == 2, "the pool changed: read again when next asked"


def test_add_members_to_a_pool_never_read_reads_it_once_and_skips_nothing_new(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    tags = model.marker_tags("uid-web")
    url = f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members"
    held = octavia_member("10.0.0.10", ["team-x"])
    listing = requests_mock.get(url, json={"members": [held], "members_links": []})
    put = requests_mock.put(url, status_code=202)
    run(cloud.add_members(POOL_ID, [model.MemberSpec("a", "10.0.0.10", 80, None, 1, tags)]))
    assert (listing.call_count, put.call_count) == (1, 0), "all held: nothing to send"


def test_replace_owned_members_while_the_load_balancer_is_busy_is_a_wait(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members", json={"members": []})
    requests_mock.put(
        f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members",
        status_code=409,
        json=recorded("octavia_pending_update_409.json"),
    )
    error = fails(cloud.replace_owned_members(POOL_ID, "uid-web", []))
    assert (type(error), error.reason) == (TransientError, "CloudBusy")
    assert "PENDING_UPDATE" in error.message


def test_single_member_writes_read_the_member_first_and_leave_a_foreign_one_alone(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """The status or cache may say a member is Kumo's; the GET right before the write
    decides. A member without this object's marker is NotOwned: no PUT, no DELETE."""
    url = f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members/mem-1"
    requests_mock.get(url, json={"member": octavia_member("10.0.0.10", ["team-x"], id="mem-1")})
    put = requests_mock.put(url, json={"member": {}})
    delete = requests_mock.delete(url, status_code=204)
    ours = model.MemberSpec("vm-a", "10.0.0.10", 80, None, 0, model.marker_tags("uid-web"))
    for call in (
        cloud.update_owned_member(POOL_ID, "mem-1", "uid-web", ours),
        cloud.delete_owned_member(POOL_ID, "mem-1", "uid-web"),
    ):
        error = fails(call)
        assert (type(error), error.reason) == (TransientError, "NotOwned")
    assert put.call_count == delete.call_count == 0


def test_single_member_writes_to_kumos_member(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    url = f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members"
    mine = octavia_member("10.0.0.10", model.marker_tags("uid-web"), id="mem-1")
    requests_mock.get(f"{url}/mem-1", json={"member": mine})
    put = requests_mock.put(f"{url}/mem-1", json={"member": mine})
    delete = requests_mock.delete(f"{url}/mem-1", status_code=204)
    post = requests_mock.post(url, status_code=201, json={"member": mine})
    tags = model.marker_tags("uid-web")
    run(
        cloud.update_owned_member(
            POOL_ID, "mem-1", "uid-web", model.MemberSpec("vm-a", "10.0.0.10", 80, None, 0, tags)
        )
    )
    assert put.last_request.json() == {"member": {"name": "vm-a", "weight": 0}}
    run(cloud.delete_owned_member(POOL_ID, "mem-1", "uid-web"))
    assert delete.call_count == 1
    run(cloud.create_member(POOL_ID, model.MemberSpec("vm-b", "10.0.0.11", 80, 8080, 1, tags)))
    assert post.last_request.json() == {
        "member": {
            "name": "vm-b",
            "address": "10.0.0.11",
            "protocol_port": 80,
            "weight": 1,
            "tags": tags,
            "monitor_port": 8080,
        }
    }
    # A member already gone is done: no DELETE is sent for it.
    requests_mock.get(f"{url}/mem-1", status_code=404, json={"faultstring": "not found"})
    run(cloud.delete_owned_member(POOL_ID, "mem-1", "uid-web"))
    assert delete.call_count == 1


def test_list_members_reports_the_weight(cloud: OpenStackCloud, requests_mock: rm.Mocker) -> None:
    requests_mock.get(
        f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members",
        json={"members": [octavia_member("10.0.0.10", ["kumo"], weight=0, name="a")]},
    )
    (member,) = run(cloud.list_members(POOL_ID))
    assert (member.name, member.address, member.port, member.weight) == ("a", "10.0.0.10", 80, 0)


def test_list_members_follows_every_page(cloud: OpenStackCloud, requests_mock: rm.Mocker) -> None:
    """Members are read as Octavia's JSON (not the SDK's resources), so the adapter
    follows the ``members_links`` itself."""
    url = f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members"
    # Octavia's link repeats the request's query (the sort) with its limit and marker.
    following = f"{url}?sort=created_at:asc,id:asc&limit=1&marker=mem-10.0.0.10"
    requests_mock.get(
        url,
        json={
            "members": [octavia_member("10.0.0.10", ["kumo"])],
            "members_links": [{"rel": "next", "href": following}],
        },
    )
    requests_mock.get(
        following,
        complete_qs=True,
        json={
            "members": [octavia_member("10.0.0.11", ["kumo"], monitor_port=8080)],
            "members_links": [{"rel": "previous", "href": f"{url}?limit=1&page_reverse=1"}],
        },
    )
    members = run(cloud.list_members(POOL_ID))
    assert [(m.address, m.monitor_port) for m in members] == [
        ("10.0.0.10", None),
        ("10.0.0.11", 8080),
    ]


def test_while_kumos_member_change_is_pending_the_old_members_are_shown_not_read_again(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """A pool's members are read once per change of Kumo's, not on every pass while
    Octavia applies it: at 100 members one read costs Octavia 0.5 s."""
    old = octavia_member("10.0.0.10", model.marker_tags("uid-web"), name="a")
    cloud.watch.of(LoadBalancerWatcher).pools.put(
        model.Pool(POOL_ID, "p", "HTTP", None, None, [old["id"]])
    )
    listing = requests_mock.get(
        f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members", json={"members": [old], "members_links": []}
    )
    requests_mock.put(f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members", status_code=202)
    run(cloud.list_members(POOL_ID))
    run(cloud.list_members(POOL_ID))
    assert listing.call_count == 1, "the pool lists the same member IDs: cached"
    spec = model.MemberSpec("b", "10.0.0.11", 80, None, 1, model.marker_tags("uid-web"))
    run(cloud.replace_owned_members(POOL_ID, "uid-web", [spec]))
    reads = listing.call_count  # the batch update reads the pool first
    (shown,) = run(cloud.list_known_members(POOL_ID))
    assert shown.name == "a" and listing.call_count == reads, "pending: shown as last read"
    run(cloud.list_members(POOL_ID))
    assert listing.call_count == reads + 1, "once asked for what is there: read again"


def _pool_lists(cloud: OpenStackCloud, *members: dict[str, Any]) -> None:
    """The watch's tree listing shows the pool with these member IDs."""
    cloud.watch.of(LoadBalancerWatcher).pools.put(
        model.Pool(POOL_ID, "p", "HTTP", None, None, [m["id"] for m in members])
    )


def test_a_pool_that_only_gained_members_reads_only_those_past_its_newest(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """A pool being filled gains a few members per batch: after the first whole read
    (oldest first), each read asks Octavia only for the members past the newest one
    read, instead of the whole pool (O(pool size) of Octavia's API each time)."""
    tags = model.marker_tags("uid-web")
    a, b, c, d, e = (octavia_member(f"10.0.0.{i}", tags, id=f"mem-{i}") for i in range(1, 6))
    url = f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members"
    _pool_lists(cloud, a, b)
    whole = requests_mock.get(url, json={"members": [a, b], "members_links": []})
    past_b = requests_mock.get(f"{url}?marker=mem-2", json={"members": [c, d]})
    past_d = requests_mock.get(f"{url}?marker=mem-4", json={"members": [e]})
    run(cloud.list_members(POOL_ID))
    assert whole.last_request.qs == {"sort": ["created_at:asc,id:asc"]}
    _pool_lists(cloud, a, b, c, d)
    members = run(cloud.list_members(POOL_ID))
    assert [m.id for m in members] == ["mem-1", "mem-2", "mem-3", "mem-4"]
    assert (whole.call_count, past_b.call_count) == (1, 1)
    assert past_b.last_request.qs == {"sort": ["created_at:asc,id:asc"], "marker": ["mem-2"]}
    _pool_lists(cloud, a, b, c, d, e)
    members = run(cloud.list_members(POOL_ID))
    assert [m.id for m in members] == ["mem-1", "mem-2", "mem-3", "mem-4", "mem-5"]
    assert (whole.call_count, past_d.call_count) == (1, 1), "the marker moved to the newest"
    run(cloud.list_members(POOL_ID))
    assert whole.call_count + past_b.call_count + past_d.call_count == 3, "the same IDs: cached"


def test_a_pool_that_lost_a_member_or_gained_one_out_of_order_is_read_whole(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """Only additions past the newest member read are read alone. A pool that lost a
    member, or where the read past the newest does not give the IDs the pool lists (a
    member created in the same second with a lower ID), is read whole; so is one whose
    marker Octavia refuses."""
    tags = model.marker_tags("uid-web")
    a, b, c, d = (octavia_member(f"10.0.0.{i}", tags, id=f"mem-{i}") for i in range(1, 5))
    url = f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members"
    pool = [a, b]
    requests_mock.get(url, json=lambda request, context: {"members": pool, "members_links": []})
    requests_mock.get(f"{url}?marker=mem-2", json={"members": [d]})
    requests_mock.get(
        f"{url}?marker=mem-4", status_code=400, json={"faultstring": "Invalid marker"}
    )

    def reads() -> list[str | None]:
        """The marker of each member read so far (None: the whole pool)."""
        return [
            (r.qs.get("marker") or [None])[0]
            for r in requests_mock.request_history
            if r.path.endswith(f"/lbaas/pools/{POOL_ID}/members".lower())
        ]

    _pool_lists(cloud, *pool)
    run(cloud.list_members(POOL_ID))
    pool = [a, b, c, d]  # c sorts before b's marker: the read past b misses c
    _pool_lists(cloud, *pool)
    assert [m.id for m in run(cloud.list_members(POOL_ID))] == [x["id"] for x in pool]
    assert reads() == [None, "mem-2", None], "the read past the marker missed c: whole"
    pool = [a, c, d]  # b left
    _pool_lists(cloud, *pool)
    assert [m.id for m in run(cloud.list_members(POOL_ID))] == [x["id"] for x in pool]
    assert reads()[3:] == [None], "a member left: one whole read"
    pool = [a, c, d, b]  # past d, Octavia refuses the marker
    _pool_lists(cloud, *pool)
    assert [m.id for m in run(cloud.list_members(POOL_ID))] == [x["id"] for x in pool]
    assert reads()[4:] == ["mem-4", None], "a refused marker: read whole"


def test_after_a_change_to_existing_members_the_pool_is_read_whole(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """A replace (a drain's weight 0) changes members the pool keeps, under the same IDs:
    a read of the members past the newest would find nothing new and keep the old
    weights, and the drain would be sent again and again. Only additions (add_members)
    leave the cached members right; after anything else the pool is read whole."""
    tags = model.marker_tags("uid-web")
    a, b = (octavia_member(f"10.0.0.{i}", tags, id=f"mem-{i}", name=f"vm-{i}") for i in (1, 2))
    url = f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members"
    pool = [a, b]
    requests_mock.get(url, json=lambda request, context: {"members": pool, "members_links": []})
    past_b = requests_mock.get(f"{url}?marker=mem-2", json={"members": []})
    requests_mock.put(url, status_code=202)
    _pool_lists(cloud, a, b)
    run(cloud.list_members(POOL_ID))
    drained = [model.MemberSpec(f"vm-{i}", f"10.0.0.{i}", 80, None, 0, tags) for i in (1, 2)]
    run(cloud.replace_owned_members(POOL_ID, "uid-web", drained))
    pool = [{**a, "weight": 0}, {**b, "weight": 0}]
    assert [m.weight for m in run(cloud.list_members(POOL_ID))] == [0, 0]
    assert past_b.call_count == 0
    # A whole read gives the marker back: additions alone are read alone again.
    c = octavia_member("10.0.0.3", tags, id="mem-3")
    run(cloud.add_members(POOL_ID, [model.MemberSpec("vm-3", "10.0.0.3", 80, None, 1, tags)]))
    pool = [*pool, c]
    _pool_lists(cloud, *pool)
    requests_mock.get(f"{url}?marker=mem-2", json={"members": [c]})
    assert [m.weight for m in run(cloud.list_members(POOL_ID))] == [0, 0, 1]
    assert requests_mock.last_request.qs.get("marker") == ["mem-2"]


def test_a_single_member_write_is_applied_to_the_cached_pool_not_read_back(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """A pool that follows a group changes one member at a time: each successful single
    write updates the cached members (and the pool's member IDs), so the next pass reads
    nothing — but a write after a batch update (answered without members) still reads."""
    tags = model.marker_tags("uid-web")
    old = octavia_member("10.0.0.10", tags, name="a")
    url = f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members"
    cloud.watch.of(LoadBalancerWatcher).pools.put(
        model.Pool(POOL_ID, "p", "HTTP", None, None, [old["id"]])
    )
    listing = requests_mock.get(url, json={"members": [old], "members_links": []})
    new = octavia_member("10.0.0.11", tags, name="b", id="mem-new")
    requests_mock.post(url, status_code=201, json={"member": new})
    requests_mock.get(f"{url}/{old['id']}", json={"member": old})
    requests_mock.delete(f"{url}/{old['id']}", status_code=204)
    run(cloud.list_members(POOL_ID))
    assert listing.call_count == 1
    run(cloud.create_member(POOL_ID, model.MemberSpec("b", "10.0.0.11", 80, None, 1, tags)))
    members = run(cloud.list_members(POOL_ID))
    assert listing.call_count == 1, "the create's answer is applied: no read"
    assert sorted((m.id, m.name, m.address) for m in members) == [
        (old["id"], "a", "10.0.0.10"),
        ("mem-new", "b", "10.0.0.11"),
    ]
    run(cloud.delete_owned_member(POOL_ID, old["id"], "uid-web"))
    (left,) = run(cloud.list_members(POOL_ID))
    assert left.id == "mem-new" and listing.call_count == 1, "the delete is applied too"
    requests_mock.put(url, status_code=202)
    run(cloud.replace_owned_members(POOL_ID, "uid-web", []))
    reads = listing.call_count
    run(cloud.create_member(POOL_ID, model.MemberSpec("b", "10.0.0.11", 80, None, 1, tags)))
    run(cloud.list_members(POOL_ID))
    assert listing.call_count == reads + 1, "stale since the batch: read again"


def test_a_failed_single_member_write_reads_the_pool_again(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    tags = model.marker_tags("uid-web")
    old = octavia_member("10.0.0.10", tags, name="a")
    url = f"{OCTAVIA}/lbaas/pools/{POOL_ID}/members"
    cloud.watch.of(LoadBalancerWatcher).pools.put(
        model.Pool(POOL_ID, "p", "HTTP", None, None, [old["id"]])
    )
    listing = requests_mock.get(url, json={"members": [old], "members_links": []})
    requests_mock.post(url, status_code=500, json={"faultstring": "boom"})
    run(cloud.list_members(POOL_ID))
    with pytest.raises(ReconcileError):
        run(cloud.create_member(POOL_ID, model.MemberSpec("b", "10.0.0.11", 80, None, 1, tags)))
    run(cloud.list_members(POOL_ID))
    assert listing.call_count == 2, "a write whose outcome is unknown: read again"


# -- a create whose answer is lost --------------------------------------------------


def _one_owned_server() -> dict[str, Any]:
    listing = recorded("nova_servers_detail_tags_kumo.json")
    return {"servers": listing["servers"][:1]}  # web-1, owned by uid-web-1


def test_a_create_whose_answer_was_lost_is_found_by_listing_the_api_not_the_cache(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    cloud.watch.of(ServerWatcher).servers.replace(
        cloud.watch.of(ServerWatcher).servers.begin(), []
    )  # synced: Kumo owns nothing
    requests_mock.post(f"{NOVA}/servers", exc=requests.exceptions.ConnectionError)
    assert fails(create_server(cloud)).reason == "CloudUnreachable"
    # Nova may have carried it out: the next adopt-before-create asks Nova by tag...
    listing = requests_mock.get(f"{NOVA}/servers/detail", json=_one_owned_server())
    assert [s.id for s in run(cloud.list_owned_servers("uid-web-1"))] == [SERVER_ID]
    assert listing.last_request.qs == {"tags": ["kumo-owner=uid-web-1"]}
    # ...once: that listing settled the doubt, and what it found is in the cache now.
    assert [s.id for s in run(cloud.list_owned_servers("uid-web-1"))] == [SERVER_ID]
    assert listing.call_count == 1


def test_a_server_nova_is_deleting_stays_in_the_finalizers_view(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """Once Nova accepted the DELETE the server is on its way out: reconcile no longer
    counts it, but the finalizer does (``going``) until Nova has no server left, so a
    delete Nova then fails is asked again instead of leaking the server."""
    body = {"server": _one_owned_server()["servers"][0]}
    requests_mock.get(f"{NOVA}/servers/{SERVER_ID}", json=body)
    fresh = run(cloud.fetch_server(SERVER_ID))
    assert fresh is not None
    cloud.watch.of(ServerWatcher).servers.replace(
        cloud.watch.of(ServerWatcher).servers.begin(), [fresh]
    )  # the watch's view
    assert [s.id for s in run(cloud.list_owned_servers("uid-web-1"))] == [SERVER_ID]
    requests_mock.delete(f"{NOVA}/servers/{SERVER_ID}", status_code=204)
    run(cloud.delete_server(SERVER_ID))
    assert run(cloud.list_owned_servers("uid-web-1")) == []
    going = run(cloud.list_owned_servers("uid-web-1", going=True))
    assert [(s.id, s.status) for s in going] == [(SERVER_ID, "DELETING")]


def test_a_create_the_cloud_refused_leaves_the_cache_trusted(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    cloud.watch.of(ServerWatcher).servers.replace(cloud.watch.of(ServerWatcher).servers.begin(), [])
    requests_mock.post(
        f"{NOVA}/servers", status_code=403, json=recorded("nova_quota_exceeded.json")
    )
    fails(create_server(cloud))
    listing = requests_mock.get(f"{NOVA}/servers/detail", json=_one_owned_server())
    assert run(cloud.list_owned_servers("uid-web-1")) == []
    assert listing.call_count == 0, "a 4xx is a refusal: nothing was created"


def test_live_server_addresses_come_from_the_watch_and_leave_out_servers_going(
    cloud: OpenStackCloud,
) -> None:
    assert cloud.list_live_server_addresses() is None, "unknown before the first listing"

    def server(sid: str, status: str, *ips: str) -> model.Server:
        addresses = [("net", ip, 4) for ip in ips]
        return model.Server(sid, sid, status, ["kumo"], addresses=addresses)

    cloud.watch.of(ServerWatcher).servers.replace(
        cloud.watch.of(ServerWatcher).servers.begin(),
        [
            server("a", "ACTIVE", "10.0.0.1", "10.0.1.1"),
            server("b", "DELETING", "10.0.0.2"),
            server("c", "ERROR", "10.0.0.3"),
        ],
    )
    live = cloud.list_live_server_addresses()
    assert live == {"10.0.0.1", "10.0.1.1", "10.0.0.3"}
    assert cloud.list_live_server_addresses() is live, "derived again only after a change"
    cloud.watch.of(ServerWatcher).servers.put(server("d", "BUILD", "10.0.0.4"))
    assert cloud.list_live_server_addresses() == live | {"10.0.0.4"}
    cloud.watch.of(ServerWatcher).servers.replace(
        cloud.watch.of(ServerWatcher).servers.begin(), [server("a", "ACTIVE", "10.0.0.1")]
    )
    assert cloud.list_live_server_addresses() == {"10.0.0.1"}


def test_the_watch_lists_while_every_call_slot_is_taken_by_slow_writes(
    cloud: OpenStackCloud,
) -> None:
    """Under load a Nova create takes seconds; creates filling every slot must not hold
    up the watch's listings (which notice servers going ACTIVE, or deleted)."""
    release = threading.Event()

    async def scenario() -> list[str]:
        writes = [asyncio.create_task(cloud._call("create server", release.wait)) for _ in range(2)]
        await until(cloud._slots.locked, "both writes hold their slots")
        order = []

        async def listing() -> None:
            token = WATCH_LANE.set(True)
            try:
                await cloud._call("list servers", lambda: None)
            finally:
                WATCH_LANE.reset(token)
            order.append("watch listed")

        await asyncio.wait_for(listing(), timeout=5)
        order.append("writes still in flight" if not any(w.done() for w in writes) else "?")
        release.set()
        await asyncio.gather(*writes)
        return order

    assert asyncio.run(scenario()) == ["watch listed", "writes still in flight"]


def test_each_endpoint_keeps_a_connection_per_call_in_flight(requests_mock: rm.Mocker) -> None:
    """requests keeps 10 connections per host: more threads than that reopened them."""
    stub_keystone(requests_mock)
    stub_discovery(requests_mock)
    conn = credentials.connect(SOURCE)
    try:
        OpenStackCloud(conn, concurrency=16, rate=1000.0)
        adapters = conn.session.session.adapters
        assert {a._pool_maxsize for a in adapters.values()} == {16 + WATCH_SLOTS}
        assert all(type(a).__name__ == "TCPKeepAliveAdapter" for a in adapters.values())
    finally:
        conn.close()


def test_a_servers_attached_volumes_come_with_the_listing_and_follow_attach_and_detach(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    listing = recorded("nova_servers_detail_tags_kumo.json")
    listing["servers"][0]["os-extended-volumes:volumes_attached"] = [
        {"id": "vol-b"},
        {"id": "vol-a"},
    ]
    requests_mock.get(f"{NOVA}/servers/detail", json=listing)
    (web1, web2), _date = run(cloud.list_servers_since(None))
    assert (web1.volumes, web2.volumes) == (("vol-a", "vol-b"), ())
    # Nova does not move a server's updated_at for an attachment: the cache follows
    # Kumo's own attach and detach, so the next pass sees them without a GET.
    cloud.watch.of(ServerWatcher).servers.put(web1)
    attachments = f"{NOVA}/servers/{SERVER_ID}/os-volume_attachments"
    requests_mock.post(attachments, json={"volumeAttachment": {"volumeId": "vol-c"}})
    run(cloud.attach_volume(SERVER_ID, "vol-c", "/dev/vdc"))
    assert requests_mock.last_request.json() == {
        "volumeAttachment": {"volumeId": "vol-c", "device": "/dev/vdc"}
    }
    requests_mock.delete(f"{attachments}/vol-a", status_code=202)
    run(cloud.detach_volume(SERVER_ID, "vol-a"))
    cached = cloud.watch.of(ServerWatcher).servers.lookup(SERVER_ID)
    assert isinstance(cached, model.Server)
    assert cached.volumes == ("vol-b", "vol-c")


def test_a_root_volume_boots_the_server_from_a_new_volume_of_its_image(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    body = {"server": _one_owned_server()["servers"][0]}
    created = requests_mock.post(f"{NOVA}/servers", status_code=202, json=body)
    coro = cloud.create_server(
        name="web-1",
        image_id=IMAGE_ID,
        flavor_id="flv-1",
        network_ids=["net-1"],
        user_data=None,
        description=None,
        metadata={},
        tags=model.marker_tags("uid-web-1"),
        availability_zone=None,
        key_name=None,
        security_groups=[],
        server_group_id=None,
        root_volume=(10, "lvmdriver-1"),
    )
    run(coro)
    sent = created.last_request.json()["server"]
    assert sent["block_device_mapping_v2"] == [
        {
            "boot_index": 0,
            "uuid": IMAGE_ID,
            "source_type": "image",
            "destination_type": "volume",
            "volume_size": 10,
            "delete_on_termination": True,
            "volume_type": "lvmdriver-1",
        }
    ]
    assert not sent.get("imageRef"), "the image is the volume's source, not the server's"


def test_the_load_balancer_tree_is_read_as_json_like_the_sdks_resources(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """The watch lists the tree every second or two while a fleet's LBs change: read as
    Octavia's JSON (every page), it must give what the SDK's resources gave."""
    from unittest import mock

    from openstack import resource
    from openstack.load_balancer.v2 import health_monitor, listener, load_balancer, pool

    from kumo.cloud.services.loadbalancing import calls as octavia

    lb = {
        "id": LB_ID,
        "name": "kumo-web",
        "provisioning_status": "ACTIVE",
        "operating_status": "ONLINE",
        "vip_address": "10.0.0.9",
        "vip_network_id": "net-1",
        "vip_port_id": "port-1",
        "availability_zone": "",
        "flavor_id": None,
        "tags": ["kumo", "kumo-owner=uid-web"],
    }
    gone = {**lb, "id": "lb-gone", "provisioning_status": "DELETED"}
    lis = {
        "id": "lis-1",
        "name": "kumo-web-80",
        "protocol": "HTTP",
        "protocol_port": 80,
        "default_pool_id": POOL_ID,
        "loadbalancers": [{"id": LB_ID}],
        "tags": [],
    }
    pools = [
        {
            "id": POOL_ID,
            "name": "kumo-web-80",
            "protocol": "HTTP",
            "listeners": [{"id": "lis-1"}],
            "loadbalancers": [{"id": LB_ID}],
            "healthmonitor_id": "hm-1",
            "members": [{"id": "m-1"}, {"id": "m-2"}],
            "tags": [],
        },
        {
            "id": "pool-2",
            "name": "other",
            "protocol": "TCP",
            "listeners": [],
            "loadbalancers": [{"id": "lb-other"}],
            "healthmonitor_id": None,
            "members": [],
            "tags": ["team-a"],
        },
    ]
    hm = {
        "id": "hm-1",
        "type": "HTTP",
        "url_path": "/health",
        "pools": [{"id": POOL_ID}],
        "tags": [],
    }
    lbs = requests_mock.get(
        f"{OCTAVIA}/lbaas/loadbalancers", json={"loadbalancers": [lb, gone], "links": []}
    )
    requests_mock.get(f"{OCTAVIA}/lbaas/listeners", json={"listeners": [lis]})
    url = f"{OCTAVIA}/lbaas/pools"
    requests_mock.get(
        url,
        json={
            "pools": pools[:1],
            "pools_links": [{"rel": "next", "href": f"{url}?limit=1&marker={POOL_ID}"}],
        },
    )
    requests_mock.get(
        f"{url}?limit=1&marker={POOL_ID}", complete_qs=True, json={"pools": pools[1:]}
    )
    requests_mock.get(f"{OCTAVIA}/lbaas/healthmonitors", json={"healthmonitors": [hm]})
    built = AssertionError("an SDK resource was built")
    with mock.patch.object(resource.Resource, "existing", side_effect=built):
        got_lbs, got_listeners, got_pools, got_monitors = run(cloud.fetch_load_balancer_tree())
    assert lbs.last_request.qs == {"tags": ["kumo"]}, "Kumo's load balancers only"
    assert got_lbs == [octavia._lb(load_balancer.LoadBalancer.existing(**lb))]
    assert got_listeners == [octavia._listener(listener.Listener.existing(**lis))]
    assert got_pools == [octavia._pool(pool.Pool.existing(**p)) for p in pools]
    assert got_monitors == [octavia._monitor(health_monitor.HealthMonitor.existing(**hm))]
    (first, second) = got_pools
    assert (first.lb_id, first.listener_id, first.health_monitor_id) == (LB_ID, "lis-1", "hm-1")
    assert first.member_ids == ["m-1", "m-2"] and second.lb_id == "lb-other"
    assert got_listeners[0].port == 80 and got_listeners[0].lb_id == LB_ID
    assert got_lbs[0].availability_zone is None and got_lbs[0].vip_port_id == "port-1"
    assert got_monitors[0].pool_id == POOL_ID
