"""A load balancer created at a VIP address asked for (LoadBalancer spec.vipAddress, a
KumoCluster's API): Octavia is given the address with the subnet of the VIP network that
holds it, found in Neutron. Given the network alone it looks for the subnet itself,
which its no-op network driver (the lab's) cannot: a subnet with no CIDR."""

from __future__ import annotations

from collections.abc import Awaitable

import pytest
import requests_mock as rm

from kumo.cloud import model
from kumo.cloud.adapter import OpenStackCloud
from tests.unit.cloud.rest import OCTAVIA
from tests.unit.cloud.test_adapter import fails, run

NEUTRON = "http://127.0.0.1:9696"
NETWORK = "5aa54315-8da7-488a-80a5-99721a9c663c"
V4 = "0f6e2b3e-6f4b-4a8e-9a55-1f5b6c7d8e9a"
V6 = "8d1c0b9a-2e3f-4a5b-8c7d-6e5f4a3b2c1d"
SUBNETS = [
    {"id": V6, "network_id": NETWORK, "cidr": "fd00:6::/64", "ip_version": 6},
    {"id": V4, "network_id": NETWORK, "cidr": "10.6.0.0/24", "ip_version": 4},
]
LB = {
    "id": "8c1e5f6a-2b3c-4d4e-9f5a-6b7c8d9e0f1a",
    "name": "capi-demo-api",
    "provisioning_status": "PENDING_CREATE",
    "operating_status": "OFFLINE",
    "vip_address": "10.6.0.254",
    "vip_network_id": NETWORK,
    "vip_subnet_id": V4,
    "tags": model.marker_tags("uid-lb"),
}


@pytest.fixture
def neutron(requests_mock: rm.Mocker) -> rm.Mocker:
    versions = {"versions": [{"id": "v2.0", "status": "CURRENT", "links": [
        {"rel": "self", "href": f"{NEUTRON}/v2.0/"}]}]}  # fmt: skip
    requests_mock.get(f"{NEUTRON}/", json=versions)
    requests_mock.get(f"{NEUTRON}/v2.0/subnets", json={"subnets": SUBNETS})
    return requests_mock


def creating(cloud: OpenStackCloud, address: str | None) -> Awaitable[model.LoadBalancer]:
    return cloud.create_load_balancer(
        name="capi-demo-api",
        vip_network_id=NETWORK,
        description=None,
        availability_zone=None,
        flavor_id=None,
        tags=model.marker_tags("uid-lb"),
        vip_address=address,
    )


def create(cloud: OpenStackCloud, address: str | None) -> model.LoadBalancer:
    return run(creating(cloud, address))


def test_the_address_goes_with_the_subnet_that_holds_it(
    cloud: OpenStackCloud, neutron: rm.Mocker
) -> None:
    created = neutron.post(f"{OCTAVIA}/lbaas/loadbalancers", status_code=201, json={
        "loadbalancer": LB})  # fmt: skip
    lb = create(cloud, "10.6.0.254")
    assert lb.vip_address == "10.6.0.254"
    sent = created.last_request.json()["loadbalancer"]
    assert (sent["vip_address"], sent["vip_subnet_id"], sent["vip_network_id"]) == (
        "10.6.0.254",
        V4,
        NETWORK,
    )
    asked = [r for r in neutron.request_history if r.path.endswith("/subnets")]
    assert asked[-1].qs == {"network_id": [NETWORK.lower()]}


def test_without_an_address_octavia_picks_and_neutron_is_not_asked(
    cloud: OpenStackCloud, neutron: rm.Mocker
) -> None:
    created = neutron.post(f"{OCTAVIA}/lbaas/loadbalancers", status_code=201, json={
        "loadbalancer": LB})  # fmt: skip
    create(cloud, None)
    sent = created.last_request.json()["loadbalancer"]
    assert "vip_address" not in sent and "vip_subnet_id" not in sent
    assert not [r for r in neutron.request_history if r.path.endswith("/subnets")]


def test_an_address_in_no_subnet_of_the_network_names_the_field(
    cloud: OpenStackCloud, neutron: rm.Mocker
) -> None:
    created = neutron.post(f"{OCTAVIA}/lbaas/loadbalancers", status_code=201, json={
        "loadbalancer": LB})  # fmt: skip
    error = fails(creating(cloud, "192.0.2.10"))
    assert (error.reason, error.field) == ("VipAddressNotInNetwork", "spec.vipAddress")
    assert created.call_count == 0, "nothing is created"
