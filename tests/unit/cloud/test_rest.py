"""CloudBase._rest and _pages: the one REST request and the paged listing every service's
raw calls go through (Cinder, Manila, Neutron, Octavia's listings and member batches,
Nova's server actions), on recorded REST responses."""

from __future__ import annotations

import asyncio

import pytest
import requests_mock as rm
from openstack import exceptions as os_exc

from kumo.cloud.adapter import OpenStackCloud
from kumo.engine.errors import ReconcileError
from tests.unit.cloud.rest import NOVA, OCTAVIA, recorded

SERVER_ID = "3f6b1c2e-8a4d-4e5f-9b0c-1d2e3f4a5b6c"
ACTION = f"{NOVA}/servers/{SERVER_ID}/action"
MEMBERS = "/lbaas/pools/p-1/members"
IMMUTABLE = {"faultstring": "Load Balancer is immutable"}
NO_GROUP = {"itemNotFound": {"code": 404, "message": "Security group web not found."}}


def test_one_request_answers_its_json_body_or_none(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(f"{NOVA}/os-things", json={"things": [1]})
    requests_mock.post(f"{NOVA}/os-things", status_code=202)
    assert cloud._rest(cloud.conn.compute, "get", "/os-things") == {"things": [1]}
    assert cloud._rest(cloud.conn.compute, "post", "/os-things", json={"a": 1}) is None
    assert requests_mock.last_request.json() == {"a": 1}


def test_a_refused_request_raises_the_sdk_s_error_with_its_message(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """Raised as the SDK's HttpException, so ``_call`` classifies it like any other."""
    requests_mock.put(f"{OCTAVIA}{MEMBERS}", status_code=409, json=IMMUTABLE)
    with pytest.raises(os_exc.ConflictException) as caught:
        cloud._rest(cloud.conn.load_balancer, "put", MEMBERS, error_message="PUT members")
    assert "PUT members" in str(caught.value)
    assert "immutable" in str(caught.value.details)


def test_a_listing_reads_every_page_with_the_same_request_options(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    url = f"{OCTAVIA}/lbaas/listeners"
    next_link = [{"rel": "next", "href": f"{url}?marker=l-1&limit=1"}]
    requests_mock.get(
        url,
        [
            {"json": {"listeners": [{"id": "l-1"}], "listeners_links": next_link}},
            {"json": {"listeners": [{"id": "l-2"}], "listeners_links": []}},
        ],
    )
    listed = cloud._pages(cloud.conn.load_balancer, "/lbaas/listeners", "listeners", {"a": "b"})
    assert [x["id"] for x in listed] == ["l-1", "l-2"]
    assert [r.qs for r in requests_mock.request_history if r.path.endswith("listeners")] == [
        {"a": ["b"]},
        {"a": ["b"], "marker": ["l-1"], "limit": ["1"]},
    ]


def test_a_server_action_posts_it_then_reads_the_server_again(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    action = requests_mock.post(ACTION, status_code=202)
    server = recorded("nova_servers_detail_tags_kumo.json")["servers"][0]
    read = requests_mock.get(f"{NOVA}/servers/{SERVER_ID}", json={"server": server})
    asyncio.run(cloud.add_server_security_group(SERVER_ID, "web"))
    assert action.last_request.json() == {"addSecurityGroup": {"name": "web"}}
    assert read.called


def test_a_refused_server_action_names_the_security_groups_field(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(ACTION, status_code=404, json=NO_GROUP)
    with pytest.raises(ReconcileError) as caught:
        asyncio.run(cloud.remove_server_security_group(SERVER_ID, "web"))
    assert caught.value.field == "spec.securityGroups"
    assert "Security group web not found" in str(caught.value)
