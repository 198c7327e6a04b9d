"""cloud/services/networking/ports.py on REST responses in the shape the lab's Neutron
(Zed) answers, and the PortWatcher: one listing of Kumo's ports per interval, and none
at all while the project has no Port — not at the start, not at the relist — until a
Port's call asks."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import pytest
import requests_mock as rm

from kumo.cloud import model
from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.services import WATCHERS
from kumo.cloud.services.networking.watch import PortWatcher
from kumo.cloud.watch import CloudWatch
from tests.unit.cloud.test_adapter import fails, run
from tests.unit.cloud.test_security_groups import (  # noqa: F401 (neutron_discovery: a fixture)
    NEUTRON,
    PROJECT,
    crash_at,
    neutron_discovery,
    query,
)
from tests.unit.cloud.test_watch import Lists, Recorder, refresh
from tests.unit.fakes.ports import FakePorts

UID = "uid-vip"
PORT_ID = "5e1c9a3b-44d0-4b7e-9f0e-2a6c1d8e7f10"
SERVER_ID = "3f6b1c2e-8a4d-4e5f-9b0c-1d2e3f4a5b6c"
NETWORK_ID = "5aa54315-8da7-488a-80a5-99721a9c663c"


def answer(**changes: object) -> dict[str, object]:
    """A port as Neutron (Zed) answers its create or a read."""
    port: dict[str, object] = {
        "id": PORT_ID,
        "name": "default-vip",
        "network_id": NETWORK_ID,
        "tenant_id": PROJECT,
        "project_id": PROJECT,
        "mac_address": "fa:16:3e:11:22:33",
        "admin_state_up": True,
        "status": "DOWN",
        "device_id": "",
        "device_owner": "",
        "fixed_ips": [{"subnet_id": "subnet-1", "ip_address": "10.0.0.100"}],
        "allowed_address_pairs": [],
        "security_groups": ["sg-default"],
        "description": f"the VIP {model.owner_word(UID)}",
        "tags": model.marker_tags(UID),
        "port_security_enabled": True,
        "revision_number": 1,
    }
    return port | changes


def creating(cloud: OpenStackCloud, **changes: Any) -> Coroutine[Any, Any, model.Port]:
    args: dict[str, Any] = {
        "name": "default-vip",
        "network_id": NETWORK_ID,
        "address": "10.0.0.100",
        "description": f"the VIP {model.owner_word(UID)}",
        "security_groups": None,
        "allowed_address_pairs": [],
        "tags": model.marker_tags(UID),
    }
    return cloud.create_port(**(args | changes))


def create(cloud: OpenStackCloud, **changes: Any) -> model.Port:
    return run(creating(cloud, **changes))


def test_one_bulk_post_carries_the_tags_and_the_marker(
    cloud: OpenStackCloud, requests_mock: rm.Mocker, monkeypatch: pytest.MonkeyPatch
) -> None:
    posted = requests_mock.post(f"{NEUTRON}/ports", status_code=201, json={"ports": [answer()]})
    crashed = crash_at(monkeypatch, "kumo.cloud.services.networking.ports", requests_mock)
    port = create(cloud)
    assert posted.last_request.json() == {
        "ports": [
            {
                "name": "default-vip",
                "network_id": NETWORK_ID,
                "description": f"the VIP {model.owner_word(UID)}",
                "tags": model.marker_tags(UID),
                "fixed_ips": [{"ip_address": "10.0.0.100"}],
            }
        ]
    }
    writes = [r for r in requests_mock.request_history if r.method != "GET"]
    assert [r.method for r in writes if r.url.startswith(NEUTRON)] == ["POST"], "no tag call"
    assert crashed == {}
    assert (port.id, port.fixed_addresses, port.tags) == (
        PORT_ID,
        ["10.0.0.100"],
        model.marker_tags(UID),
    )
    assert port.mac_address == "fa:16:3e:11:22:33" and port.security_groups == ("sg-default",)
    assert cloud.watch.of(PortWatcher).ports.lookup(PORT_ID) == port, "Kumo's write is cached"


def test_a_tag_call_follows_only_when_the_answer_lacks_the_tags(
    cloud: OpenStackCloud, requests_mock: rm.Mocker, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests_mock.post(f"{NEUTRON}/ports", status_code=201, json={"ports": [answer(tags=[])]})
    tagged = requests_mock.put(f"{NEUTRON}/ports/{PORT_ID}/tags", json={"tags": []})
    crashed = crash_at(monkeypatch, "kumo.cloud.services.networking.ports", requests_mock)
    port = create(cloud, security_groups=["sg-web"], allowed_address_pairs=[
        model.AddressPair("10.0.0.200"), model.AddressPair("10.0.1.0/24", "fa:16:3e:00:00:09")
    ])  # fmt: skip
    assert crashed == {"after-port-create": ["POST /ports"]}, "marked by its description"
    assert tagged.last_request.json() == {"tags": model.marker_tags(UID)}
    assert port.tags == model.marker_tags(UID)
    body = requests_mock.request_history[-2].json()["ports"][0]
    assert body["security_groups"] == ["sg-web"]
    assert body["allowed_address_pairs"] == [
        {"ip_address": "10.0.0.200"},
        {"ip_address": "10.0.1.0/24", "mac_address": "fa:16:3e:00:00:09"},
    ]


def test_a_taken_address_names_spec_address(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(f"{NEUTRON}/ports", status_code=409, json={"NeutronError": {
        "type": "IpAddressAlreadyAllocated", "detail": "",
        "message": "IP address 10.0.0.100 already allocated in subnet subnet-1"}})  # fmt: skip
    error = fails(creating(cloud))
    assert error.field == "spec.address"
    assert "already allocated" in error.message


def test_the_listing_is_kumo_s_ports_of_the_project(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    listing = requests_mock.get(f"{NEUTRON}/ports", json={"ports": [answer()]})
    (port,) = run(cloud.fetch_ports())
    assert port.id == PORT_ID and model.described_owner(port) == UID
    assert query(listing.last_request) == {"tags": ["kumo"], "project_id": [PROJECT]}


def test_an_update_sends_only_what_is_given(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    pairs = [{"ip_address": "10.0.0.200", "mac_address": "fa:16:3e:11:22:33"}]
    put = requests_mock.put(
        f"{NEUTRON}/ports/{PORT_ID}", json={"port": answer(allowed_address_pairs=pairs)}
    )
    port = run(cloud.update_port(PORT_ID, allowed_address_pairs=[model.AddressPair("10.0.0.200")]))
    assert put.last_request.json() == {"port": {"allowed_address_pairs": [
        {"ip_address": "10.0.0.200"}]}}  # fmt: skip
    assert port.allowed_address_pairs == (model.AddressPair("10.0.0.200", "fa:16:3e:11:22:33"),)
    assert cloud.watch.of(PortWatcher).ports.lookup(PORT_ID) == port, "Kumo's port: cached"

    own = answer(id="own", tags=[], description="", device_id=SERVER_ID)
    requests_mock.put(f"{NEUTRON}/ports/own", json={"port": own})
    run(cloud.update_port("own", description="x", security_groups=[]))
    assert requests_mock.last_request.json() == {
        "port": {"description": "x", "security_groups": []}
    }
    assert cloud.watch.of(PortWatcher).ports.lookup("own") is None, "a server's own: not watched"


def test_a_gone_port_reads_as_none_and_deletes_fine(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    gone = {"NeutronError": {"type": "PortNotFound", "message": "Port x could not be found",
                             "detail": ""}}  # fmt: skip
    requests_mock.get(f"{NEUTRON}/ports/x", status_code=404, json=gone)
    requests_mock.delete(f"{NEUTRON}/ports/x", status_code=404, json=gone)
    assert run(cloud.get_port("x")) is None
    run(cloud.delete_port("x"))


def test_a_port_s_call_turns_the_listing_on(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    listing = requests_mock.get(f"{NEUTRON}/ports", json={"ports": [answer()]})
    asyncio.run(cloud.watch.sync())
    assert not listing.called, "no Port yet: the startup listing skips the ports"
    watcher = cloud.watch.of(PortWatcher)
    (owned,) = run(cloud.list_owned_ports(UID))  # the cache cannot answer: the API
    assert owned.id == PORT_ID and listing.call_count == 1
    assert watcher.listing, "a Port asked: listed from now on"
    refresh(cloud.watch, PortWatcher.service)
    assert listing.call_count == 2
    assert [p.id for p in run(cloud.list_owned_ports(UID))] == [PORT_ID]
    assert listing.call_count == 2, "answered from the cache"


# -- the watcher ----------------------------------------------------------------------------------


def watch_of(fake: FakePorts) -> tuple[CloudWatch, Recorder]:
    watch = CloudWatch(Lists(fake), watchers=WATCHERS)  # type: ignore[arg-type]
    asyncio.run(watch.sync())
    seen = Recorder()
    watch._notify = seen
    return watch, seen


def fleet(n: int) -> FakePorts:
    fake = FakePorts()
    for i in range(n):
        fake.add_port(f"ns-p{i}", tags=model.marker_tags(f"uid-{i}"))
    return fake


def test_no_port_object_no_listing_at_all() -> None:
    fake = fleet(3)  # leaked, say: still no listing until a Port asks
    watch, _ = watch_of(fake)
    for full in (False, True, False):  # the interval, the relist
        refresh(watch, PortWatcher.service, full=full)
    assert "fetch_ports" not in fake.calls
    assert watch.of(PortWatcher).marked() == []


@pytest.mark.parametrize("n", [10, 100])
def test_idle_costs_one_listing_per_interval_whatever_the_number(n: int) -> None:
    fake = fleet(n)
    watch, seen = watch_of(fake)
    watch.of(PortWatcher).want()
    for _ in range(5):
        refresh(watch, PortWatcher.service)
    assert fake.calls == ["fetch_ports"] * 5
    assert len(seen.owners) == 0 or seen.owners[0] == {f"uid-{i}" for i in range(n)}
    assert seen.owners[1:] == [], "nothing changed: nothing reported"


def test_the_listing_stops_once_kumo_has_no_port_and_no_port_asked() -> None:
    fake = FakePorts()
    port = fake.add_port("ns-vip", tags=model.marker_tags(UID))
    watch, seen = watch_of(fake)
    watcher = watch.of(PortWatcher)
    watcher.want()
    refresh(watch, PortWatcher.service)
    fake.ports.clear()  # the Port's finalizer deleted it (its call asked once more)
    watcher.want()
    refresh(watch, PortWatcher.service)
    assert seen.owners[-1] == {UID}
    assert watcher.listing, "a Port asked since the listing before: once more"
    refresh(watch, PortWatcher.service)
    assert not watcher.listing and not watcher.ports.synced
    calls = fake.calls.count("fetch_ports")
    refresh(watch, PortWatcher.service, full=True)
    assert fake.calls.count("fetch_ports") == calls, "off: not even the relist"
    assert watcher.ports.lookup(port.id) is not None, "GONE stays known"


def test_a_bound_port_is_in_use_and_never_swept() -> None:
    fake = FakePorts()
    free = fake.add_port("ns-free", tags=model.marker_tags("uid-a"))
    bound = fake.add_port("ns-bound", tags=model.marker_tags("uid-b"), device_id=SERVER_ID)
    fake.add_port("theirs", tags=["kumo", "kumo-owner=uid-c", "kumo-cluster=0123456789ab"])
    watch, _ = watch_of(fake)
    watch.of(PortWatcher).want()
    refresh(watch, PortWatcher.service)
    marked = {m.id: m for m in watch.marked() if m.kind == "port"}
    assert set(marked) == {free.id, bound.id}, "another cluster's is never marked"
    assert (marked[free.id].in_use, marked[bound.id].in_use) == (False, True)
    fake.bind(free.id, "srv-late")  # bound since the sweep looked
    with pytest.raises(Exception, match="bound to server srv-late"):
        asyncio.run(watch.delete_marked(marked[free.id]))
    assert free.id in fake.ports and fake.torn == []
