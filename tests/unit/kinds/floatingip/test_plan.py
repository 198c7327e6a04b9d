"""FloatingIP decisions (plan.py): pure functions, state in, decision out."""

from __future__ import annotations

from typing import Any

import pytest

from kumo.api.floatingip import FloatingIPSpec
from kumo.cloud import model
from kumo.cloud.services.networking.floating_ips import pick_external_network
from kumo.engine.dryrun import Change
from kumo.engine.errors import TerminalError
from kumo.kinds.floatingip import plan
from kumo.runtime.store import MemoryStore

UID = "uid-fip"


def spec(**fields: Any) -> FloatingIPSpec:
    return FloatingIPSpec.model_validate(fields)


def fip(**fields: Any) -> model.FloatingIP:
    base: dict[str, Any] = {"id": "fip-1", "address": "203.0.113.5", "network_id": "net-public"}
    base["status"] = "DOWN"
    return model.FloatingIP(**(base | fields))


def store_with(kind: str, name: str, status: dict[str, Any] | None) -> MemoryStore:
    store = MemoryStore()
    body: dict[str, Any] = {"metadata": {"name": name, "namespace": "default"}, "spec": {}}
    if status is not None:
        body["status"] = status
    store.put(kind, body)
    return store


# -- target -------------------------------------------------------------------------------------


def test_no_target_holds_the_address() -> None:
    assert plan.target(spec()) is None
    assert plan.wanted(spec(), "default", MemoryStore()) is None


def test_both_targets_are_refused_naming_the_fields() -> None:
    with pytest.raises(TerminalError) as caught:
        plan.target(spec(virtualMachineRef="web", loadBalancerRef="front"))
    assert caught.value.reason == "InvalidSpec"
    assert "spec.virtualMachineRef, spec.loadBalancerRef" in caught.value.message


def test_a_vm_target_wants_its_server() -> None:
    store = store_with("VirtualMachine", "web", {"id": "srv-1", "ip": "10.10.0.5"})
    wanted = plan.wanted(spec(virtualMachineRef="web"), "default", store)
    assert wanted == plan.Wanted(
        plan.Target("spec.virtualMachineRef", "VirtualMachine", "web"),
        server_id="srv-1",
        primary_ip="10.10.0.5",
    )


def test_a_missing_target_is_terminal_and_names_the_field() -> None:
    with pytest.raises(TerminalError) as caught:
        plan.wanted(spec(loadBalancerRef="front"), "default", MemoryStore())
    assert (caught.value.reason, caught.value.field) == ("TargetNotFound", "spec.loadBalancerRef")


@pytest.mark.parametrize(("kind", "field"), [("VirtualMachine", "virtualMachineRef"),
                                             ("LoadBalancer", "loadBalancerRef")])  # fmt: skip
def test_a_target_without_its_resource_yet_is_a_wait(kind: str, field: str) -> None:
    store = store_with(kind, "t", None)
    with pytest.raises(plan.WaitingForTarget, match="has no"):
        plan.wanted(spec(**{field: "t"}), "default", store)


def test_a_lb_target_wants_its_load_balancer() -> None:
    store = store_with("LoadBalancer", "front", {"id": "lb-1", "vip": "10.10.0.9"})
    wanted = plan.wanted(spec(loadBalancerRef="front"), "default", store)
    assert wanted is not None and wanted.lb_id == "lb-1" and wanted.server_id is None


# -- which port -------------------------------------------------------------------------------


def port(pid: str, *addresses: str) -> model.Port:
    return model.Port(pid, "net-demo", "srv-1", "compute:nova", list(addresses))


def test_the_port_holding_the_primary_address_is_chosen() -> None:
    ports = [port("p-a", "10.20.0.4"), port("p-b", "10.10.0.5", "fd00::5")]
    assert plan.pick_port(ports, "10.10.0.5") == (ports[1], "10.10.0.5")


def test_else_the_first_port_with_an_ipv4_address_by_id() -> None:
    ports = [port("p-c", "10.20.0.4"), port("p-a", "fd00::1"), port("p-b", "10.10.0.7")]
    assert plan.pick_port(ports, None) == (ports[2], "10.10.0.7")
    assert plan.pick_port([port("p-a", "fd00::1")], None) is None
    assert plan.pick_port([], "10.10.0.5") is None


def test_points_at_the_server_is_read_from_port_details() -> None:
    assert plan.points_at_server(fip(port_id="p-1", device_id="srv-1"), "srv-1")
    assert not plan.points_at_server(fip(port_id="p-1", device_id="srv-old"), "srv-1")
    assert not plan.points_at_server(fip(), "srv-1")


def test_associated_compares_port_and_fixed_address() -> None:
    on = fip(port_id="p-1", fixed_address="10.0.0.1")
    assert plan.associated(on, "p-1", "10.0.0.1") and plan.associated(on, "p-1", None)
    assert not plan.associated(on, "p-1", "10.0.0.2") and not plan.associated(on, "p-2", None)


# -- import --------------------------------------------------------------------------------------


def test_import_checks_network_and_address() -> None:
    found = fip(address="203.0.113.5", network_id="net-public")
    assert plan.import_mismatches(found, "net-public", None) == []
    assert plan.import_mismatches(found, "net-public", "203.0.113.005") == [
        Change("spec.address", "203.0.113.5", "203.0.113.005")
    ], "not an address: compared as text"
    assert plan.import_mismatches(found, "net-other", "203.0.113.6") == [
        Change("spec.network", "net-public", "net-other"),
        Change("spec.address", "203.0.113.5", "203.0.113.6"),
    ]
    assert plan.unfit(found, "net-other", None) and not plan.unfit(found, "net-public", None)


def test_a_bad_address_is_refused_naming_the_field() -> None:
    plan.check_address(None)
    plan.check_address("203.0.113.5")
    with pytest.raises(TerminalError) as caught:
        plan.check_address("203.0.113.500")
    assert (caught.value.reason, caught.value.field) == ("InvalidAddress", "spec.address")


# -- status, references, the external network --------------------------------------------------


def test_status_names_the_port_only_while_associated() -> None:
    held = plan.status(fip(fixed_address="stale", device_id="stale"))
    assert held == {
        "id": "fip-1",
        "address": "203.0.113.5",
        "networkId": "net-public",
        "portId": None,
        "fixedAddress": None,
        "deviceId": None,
    }
    on = plan.status(fip(port_id="p-1", fixed_address="10.0.0.1", device_id="srv-1"))
    assert (on["portId"], on["fixedAddress"], on["deviceId"]) == ("p-1", "10.0.0.1", "srv-1")


def test_referenced_reads_a_raw_spec() -> None:
    assert plan.referenced({"virtualMachineRef": "web"}) == {"VirtualMachine": "web"}
    assert plan.referenced({"loadBalancerRef": "lb", "network": "public"}) == {"LoadBalancer": "lb"}
    assert plan.referenced({}) == {}


def test_the_external_network_defaults_to_the_only_one() -> None:
    one = [("net-1", "public")]
    assert pick_external_network(one, None, "spec.network") == "net-1"
    assert pick_external_network(one, "public", "spec.network") == "net-1"
    assert pick_external_network(one, "net-1", "spec.network") == "net-1"
    two = [("net-1", "public"), ("net-2", "public-v6")]
    with pytest.raises(TerminalError) as caught:
        pick_external_network(two, None, "spec.network")
    assert caught.value.reason == "InvalidSpec" and "public, public-v6" in caught.value.message
    with pytest.raises(TerminalError) as caught:
        pick_external_network(two, "private", "spec.network")
    assert (caught.value.reason, caught.value.field) == ("NetworkNotFound", "spec.network")
    with pytest.raises(TerminalError) as caught:
        pick_external_network([("a", "x"), ("b", "x")], "x", "spec.network")
    assert caught.value.reason == "AmbiguousName"
    with pytest.raises(TerminalError, match="no external network"):
        pick_external_network([], None, "spec.network")
