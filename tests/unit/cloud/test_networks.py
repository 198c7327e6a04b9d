"""cloud/networks.py on recorded REST responses: a network's and a router's create write
the marker into the description, reach their failpoint between the POST and the tag
call, and the listings (the project's, not filtered by tag) keep what is marked either
way — so a create whose answer was lost is found by the next adopt-before-create."""

from __future__ import annotations

import pytest
import requests_mock as rm

from kumo.cloud import model
from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.services.networking.watch import NetworkWatcher
from tests.unit.cloud.test_adapter import fails, run
from tests.unit.cloud.test_security_groups import (  # noqa: F401 (neutron_discovery: a fixture)
    NEUTRON,
    PROJECT,
    crash_at,
    neutron_discovery,
    query,
)

UID = "uid-app"
MARKER = model.owner_word(UID)
NETWORK = {
    "id": "net-1",
    "name": "default-app",
    "status": "ACTIVE",
    "mtu": 1450,
    "port_security_enabled": True,
    "description": f"app tier {MARKER}",
    "tags": [],
}
ROUTER = {
    "id": "router-1",
    "name": "default-app",
    "status": "ACTIVE",
    "description": MARKER,
    "tags": [],
    "external_gateway_info": {"network_id": "ext-net", "external_fixed_ips": []},
}


@pytest.fixture(autouse=True)
def children(requests_mock: rm.Mocker) -> None:
    """Networks without subnets, routers without interfaces."""
    requests_mock.get(f"{NEUTRON}/subnets", json={"subnets": []})
    requests_mock.get(f"{NEUTRON}/ports", json={"ports": []})


def create_network(cloud: OpenStackCloud) -> object:
    return cloud.create_network(
        name="default-app",
        description=f"app tier {MARKER}",
        mtu=None,
        port_security=True,
        tags=model.marker_tags(UID),
    )


def test_a_network_create_writes_the_marker_in_the_description_then_the_tags(
    cloud: OpenStackCloud, requests_mock: rm.Mocker, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = requests_mock.post(f"{NEUTRON}/networks", status_code=201, json={"network": NETWORK})
    tags = requests_mock.put(f"{NEUTRON}/networks/net-1/tags", json={"tags": []})
    crashed = crash_at(monkeypatch, "kumo.cloud.services.networking.networks", requests_mock)
    network = run(create_network(cloud))
    assert created.last_request.json()["network"]["description"] == f"app tier {MARKER}"
    assert crashed == {"after-network-create": ["POST /networks"]}, "between the POST and tags"
    assert tags.last_request.json() == {"tags": model.marker_tags(UID)}
    assert cloud.watch.of(NetworkWatcher).networks.lookup("net-1") == network
    assert isinstance(network, model.Network) and network.tags == model.marker_tags(UID)


def test_a_router_create_writes_the_marker_in_the_description_then_the_tags(
    cloud: OpenStackCloud, requests_mock: rm.Mocker, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = requests_mock.post(f"{NEUTRON}/routers", status_code=201, json={"router": ROUTER})
    tags = requests_mock.put(f"{NEUTRON}/routers/router-1/tags", json={"tags": []})
    crashed = crash_at(monkeypatch, "kumo.cloud.services.networking.networks", requests_mock)
    router = run(
        cloud.create_router(
            name="default-app",
            description=MARKER,
            external_network_id="ext-net",
            enable_snat=True,
            tags=model.marker_tags(UID),
        )
    )
    assert created.last_request.json() == {
        "router": {
            "name": "default-app",
            "description": MARKER,
            "external_gateway_info": {"network_id": "ext-net"},
        }
    }
    assert crashed == {"after-router-create": ["POST /routers"]}, "between the POST and tags"
    assert tags.last_request.json() == {"tags": model.marker_tags(UID)}
    assert (router.description, router.tags) == (MARKER, model.marker_tags(UID))


def test_the_watch_lists_the_project_s_networks_and_keeps_kumo_s(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    tagged = NETWORK | {"id": "net-tagged", "tags": model.marker_tags("uid-other")}
    foreign = NETWORK | {"id": "net-theirs", "description": "made by hand"}
    networks = requests_mock.get(
        f"{NEUTRON}/networks", json={"networks": [NETWORK, tagged, foreign]}
    )
    subnets = requests_mock.get(f"{NEUTRON}/subnets", json={"subnets": []})
    found = run(cloud.fetch_networks())
    assert [n.id for n in found] == ["net-1", "net-tagged"], "untagged but described: Kumo's"
    sent = query(networks.last_request)
    assert sent["project_id"] == [PROJECT] and "tags" not in sent
    assert query(subnets.last_request)["network_id"] == ["net-1", "net-tagged"]
    requests_mock.get(f"{NEUTRON}/routers", json={"routers": [ROUTER, ROUTER | {"id": "x"}]})
    routers = run(cloud.fetch_routers())
    assert [r.id for r in routers] == ["router-1", "x"]
    assert model.described_owner(routers[0]) == UID


def test_a_lost_create_answer_is_found_by_the_next_listing_of_its_owner(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """The POST went through but its answer is a 502 (what the fault proxy's lose_first
    does): the owner's scope is in doubt, so its next adopt-before-create lists the API
    and finds the network by its description, though it has no tag."""
    cloud.watch.of(NetworkWatcher).networks.replace(
        cloud.watch.of(NetworkWatcher).networks.begin(), []
    )  # synced, empty
    assert run(cloud.list_owned_networks(UID)) == []
    requests_mock.post(f"{NEUTRON}/networks", status_code=502, text="Bad Gateway")
    error = fails(create_network(cloud))
    assert error.reason == "CloudUnavailable"
    listing = requests_mock.get(f"{NEUTRON}/networks", json={"networks": [NETWORK]})
    (adopted,) = run(cloud.list_owned_networks(UID))
    assert (adopted.id, adopted.tags) == ("net-1", []) and listing.called
    assert query(listing.last_request)["project_id"] == [PROJECT]
