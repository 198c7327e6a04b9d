"""cloud/floatingips.py on REST responses in the shape the lab's Neutron (Zed) answers,
and the FloatingIPWatcher: one listing per interval whatever the number of floating IPs,
what it reports, and how the adapter reads from it."""

from __future__ import annotations

import asyncio

import pytest
import requests_mock as rm

from kumo.cloud import model
from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.services import WATCHERS
from kumo.cloud.services.networking.watch import FloatingIPWatcher
from kumo.cloud.watch import CloudWatch
from tests.unit.cloud.test_adapter import fails, run
from tests.unit.cloud.test_watch import Lists, Recorder, refresh
from tests.unit.fakes.floating_ips import FakeFloatingIPs

NEUTRON = "http://127.0.0.1:9696"
FIPS = f"{NEUTRON}/v2.0/floatingips"
FIP_ID = "2f245a7b-796b-4f26-9cf9-9e82d248fda7"
PORT_ID = "ce705c24-c1ef-408a-bda3-7bbd946164ab"
SERVER_ID = "3f6b1c2e-8a4d-4e5f-9b0c-1d2e3f4a5b6c"
PUBLIC = "87e6eed5-c9c7-4d2c-972a-95af4c46b33f"
PROJECT = "9f2c4e1a7b3d4f6e8a0c2b4d6f8e0a1c"  # the recorded token's project
UID = "uid-ip"
#: As Neutron (Zed, fip-port-details) answers for an associated floating IP.
FIP = {
    "id": FIP_ID,
    "tenant_id": PROJECT,
    "project_id": PROJECT,
    "floating_ip_address": "203.0.113.10",
    "floating_network_id": PUBLIC,
    "router_id": "d23abc8d-2991-4a55-ba98-2aaea84cc72f",
    "port_id": PORT_ID,
    "fixed_ip_address": "10.10.0.5",
    "status": "DOWN",
    "description": f"web kumo-owner={UID}",
    "tags": ["kumo", f"kumo-owner={UID}"],
    "port_details": {
        "name": "",
        "network_id": "5aa54315-8da7-488a-80a5-99721a9c663c",
        "mac_address": "fa:16:3e:58:42:ed",
        "admin_state_up": True,
        "status": "ACTIVE",
        "device_id": SERVER_ID,
        "device_owner": "compute:nova",
    },
    "port_forwardings": [],
    "revision_number": 3,
}
HELD = FIP | {"port_id": None, "fixed_ip_address": None, "port_details": None, "router_id": None}


@pytest.fixture
def neutron(requests_mock: rm.Mocker) -> rm.Mocker:
    versions = {"versions": [{"id": "v2.0", "status": "CURRENT", "links": [
        {"rel": "self", "href": f"{NEUTRON}/v2.0/"}]}]}  # fmt: skip
    requests_mock.get(f"{NEUTRON}/", json=versions)
    return requests_mock


def test_a_floating_ip_is_read_with_its_port_details(
    cloud: OpenStackCloud, neutron: rm.Mocker
) -> None:
    neutron.get(f"{FIPS}/{FIP_ID}", json={"floatingip": FIP})
    assert run(cloud.get_floating_ip(FIP_ID)) == model.FloatingIP(
        id=FIP_ID,
        address="203.0.113.10",
        network_id=PUBLIC,
        status="DOWN",
        port_id=PORT_ID,
        fixed_address="10.10.0.5",
        device_id=SERVER_ID,
        tags=["kumo", f"kumo-owner={UID}"],
        description=f"web kumo-owner={UID}",
    )
    neutron.get(f"{FIPS}/gone", status_code=404, json={"NeutronError": {
        "type": "FloatingIPNotFound", "message": "Floating IP gone could not be found",
        "detail": ""}})  # fmt: skip
    assert run(cloud.get_floating_ip("gone")) is None


def test_the_watch_listing_is_the_project_s_floating_ips(
    cloud: OpenStackCloud, neutron: rm.Mocker
) -> None:
    listing = neutron.get(FIPS, json={"floatingips": [FIP, HELD | {"id": "other"}]})
    found = run(cloud.fetch_floating_ips())
    assert [f.id for f in found] == [FIP_ID, "other"]
    assert found[1].device_id is None and found[1].port_id is None
    assert listing.last_request.qs == {"project_id": [PROJECT]}


def test_create_writes_the_marker_in_the_description_then_the_tags(
    cloud: OpenStackCloud, neutron: rm.Mocker
) -> None:
    created = neutron.post(FIPS, status_code=201, json={"floatingip": HELD | {"tags": []}})
    tagged = neutron.put(f"{FIPS}/{FIP_ID}/tags", json={"tags": model.marker_tags(UID)})
    fip = run(
        cloud.create_floating_ip(
            network_id=PUBLIC,
            address=None,
            description=f"web kumo-owner={UID}",
            tags=model.marker_tags(UID),
        )
    )
    assert created.last_request.json() == {
        "floatingip": {"floating_network_id": PUBLIC, "description": f"web kumo-owner={UID}"}
    }
    marker = ["kumo", f"kumo-owner={UID}", f"kumo-cluster={model.cluster()}"]
    assert tagged.last_request.json() == {"tags": marker}
    assert (fip.id, fip.tags, fip.port_id) == (FIP_ID, model.marker_tags(UID), None)
    assert cloud.watch.of(FloatingIPWatcher).floating_ips.lookup(FIP_ID) == fip, (
        "Kumo's write is in the cache"
    )


def test_claiming_an_address_refused_by_policy_names_spec_address(
    cloud: OpenStackCloud, neutron: rm.Mocker
) -> None:
    neutron.post(FIPS, status_code=403, json={"NeutronError": {
        "type": "PolicyNotAuthorized",
        "message": "(rule:create_floatingip and rule:create_floatingip:floating_ip_address) "
        "is disallowed by policy", "detail": ""}})  # fmt: skip
    error = fails(
        cloud.create_floating_ip(
            network_id=PUBLIC, address="203.0.113.77", description="d", tags=[]
        )
    )
    assert (error.reason, error.field) == ("CloudForbidden", "spec.address")
    assert "disallowed by policy" in error.message


def test_associate_and_disassociate(cloud: OpenStackCloud, neutron: rm.Mocker) -> None:
    put = neutron.put(f"{FIPS}/{FIP_ID}", json={"floatingip": FIP})
    fip = run(cloud.associate_floating_ip(FIP_ID, PORT_ID, "10.10.0.5"))
    assert put.last_request.json() == {
        "floatingip": {"port_id": PORT_ID, "fixed_ip_address": "10.10.0.5"}
    }
    assert fip.device_id == SERVER_ID
    put = neutron.put(f"{FIPS}/{FIP_ID}", json={"floatingip": HELD})
    assert run(cloud.associate_floating_ip(FIP_ID, None, "ignored")).port_id is None
    assert put.last_request.json() == {"floatingip": {"port_id": None}}


def test_ports_of_a_server_and_the_external_network(
    cloud: OpenStackCloud, neutron: rm.Mocker
) -> None:
    port = {
        "id": PORT_ID,
        "network_id": "net-demo",
        "device_id": SERVER_ID,
        "device_owner": "compute:nova",
        "status": "ACTIVE",
        "fixed_ips": [{"subnet_id": "s", "ip_address": "10.10.0.5"}],
    }
    ports = neutron.get(f"{NEUTRON}/v2.0/ports", json={"ports": [port]})
    assert run(cloud.list_ports_of_device(SERVER_ID)) == [
        model.Port(PORT_ID, "net-demo", SERVER_ID, "compute:nova", ["10.10.0.5"], "ACTIVE", ("s",))
    ]
    assert ports.last_request.qs == {"device_id": [SERVER_ID.lower()]}

    networks = neutron.get(
        f"{NEUTRON}/v2.0/networks", json={"networks": [{"id": PUBLIC, "name": "public"}]}
    )
    assert run(cloud.floating_ip_network_id(None)) == PUBLIC
    assert run(cloud.floating_ip_network_id("public")) == PUBLIC
    assert networks.last_request.qs == {"router:external": ["true"]}
    assert networks.call_count == 2, "cached by name afterwards"
    run(cloud.floating_ip_network_id("public"))
    assert networks.call_count == 2


def test_delete_of_a_gone_floating_ip_is_fine(cloud: OpenStackCloud, neutron: rm.Mocker) -> None:
    neutron.delete(f"{FIPS}/{FIP_ID}", status_code=404, json={"NeutronError": {
        "type": "FloatingIPNotFound", "message": "not found", "detail": ""}})  # fmt: skip
    run(cloud.delete_floating_ip(FIP_ID))
    assert cloud.watch.of(FloatingIPWatcher).floating_ips.lookup(FIP_ID) is not None, "GONE"


def test_owned_floating_ips_come_from_the_watch_once_it_listed(
    cloud: OpenStackCloud, neutron: rm.Mocker
) -> None:
    untagged = HELD | {"id": "untagged", "tags": [], "description": f"kumo-owner={UID}"}
    theirs = HELD | {"id": "theirs", "tags": [], "description": "by hand"}
    listing = neutron.get(FIPS, json={"floatingips": [FIP, untagged, theirs]})
    before = run(cloud.list_owned_floating_ips(UID))  # not synced yet: asks the API
    assert {f.id for f in before} == {FIP_ID, "untagged"}
    asyncio.run(cloud.watch.sync())
    calls = listing.call_count
    assert {f.id for f in run(cloud.list_owned_floating_ips(UID))} == {FIP_ID, "untagged"}
    assert run(cloud.get_floating_ip("theirs")) is not None
    assert listing.call_count == calls, "answered from the cache"


# -- the watcher ----------------------------------------------------------------------------------


def watch_of(fake: FakeFloatingIPs) -> tuple[CloudWatch, Recorder]:
    watch = CloudWatch(Lists(fake), watchers=WATCHERS)  # type: ignore[arg-type]
    asyncio.run(watch.sync())
    seen = Recorder()
    watch._notify = seen
    return watch, seen


def fleet(n: int) -> FakeFloatingIPs:
    fake = FakeFloatingIPs()
    for i in range(n):
        fake.add_fip(f"203.0.113.{i + 1}", model.marker_tags(f"uid-{i}"))
    return fake


@pytest.mark.parametrize("n", [10, 100])
def test_idle_costs_one_listing_per_interval_whatever_the_number(n: int) -> None:
    fake = fleet(n)
    watch, seen = watch_of(fake)
    fake.calls.clear()
    for _ in range(5):
        refresh(watch, FloatingIPWatcher.service)
    assert fake.calls == ["fetch_floating_ips"] * 5
    assert seen.owners == [], "nothing changed: nothing reported"
    assert not watch._services[FloatingIPWatcher.service].watcher.transitional()


def test_an_out_of_band_disassociation_or_deletion_reports_its_owner() -> None:
    fake = fleet(3)
    port = fake.add_port("srv-1", "10.10.0.5")
    fips = list(fake.fips.values())
    asyncio.run(fake.associate_floating_ip(fips[0].id, port, None))
    watch, seen = watch_of(fake)

    fake.disassociate_out_of_band(fips[0].id)
    refresh(watch, FloatingIPWatcher.service)
    assert seen.owners == [{"uid-0"}]

    fake.delete_out_of_band(fips[1].id)
    refresh(watch, FloatingIPWatcher.service)
    assert seen.owners[-1] == {"uid-1"}
    assert watch.of(FloatingIPWatcher).floating_ips.lookup(fips[1].id) is not None and fips[
        1
    ].id not in {f.id for f in watch.of(FloatingIPWatcher).floating_ips.items()}, (
        "GONE: the listing is the whole project's"
    )


def test_a_server_deleted_with_its_port_reports_the_owner() -> None:
    fake = fleet(1)
    (fip,) = fake.fips.values()
    port = fake.add_port("srv-1", "10.10.0.5")
    asyncio.run(fake.associate_floating_ip(fip.id, port, None))
    watch, seen = watch_of(fake)
    fake.drop_device("srv-1")
    refresh(watch, FloatingIPWatcher.service)
    assert seen.owners == [{"uid-0"}]


def test_a_foreign_floating_ip_reports_nobody_and_is_never_marked() -> None:
    fake = fleet(1)
    theirs = fake.add_fip("203.0.113.99", ["team-a"], "by hand")
    watch, seen = watch_of(fake)
    fake.delete_out_of_band(theirs.id)
    refresh(watch, FloatingIPWatcher.service)
    assert seen.owners == []
    assert [m.owner for m in watch.marked()] == ["uid-0"]


def test_two_floating_ips_of_one_owner_are_duplicates() -> None:
    fake = fleet(1)
    watch, seen = watch_of(fake)
    fake.add_fip("203.0.113.50", [], description="kumo-owner=uid-0")  # a retried create
    refresh(watch, FloatingIPWatcher.service)
    assert seen.duplicated == {"uid-0"}
