"""Network decisions: validation of the spec, subnets in place, CIDR replacement,
router interfaces and the deletion order."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from pydantic import ValidationError

from kumo.api.network import NetworkSpec
from kumo.cloud import model
from kumo.kinds.network.plan import (
    ObservedNetwork,
    ObservedPort,
    ObservedSubnet,
    deletion_steps,
    deletion_wait,
    network_updates,
    plan_interfaces,
    plan_subnets,
    subnets_in_use,
)

UID = "uid-net"


def spec(*subnets: dict[str, Any], **extra: Any) -> NetworkSpec:
    return NetworkSpec.model_validate({"subnets": list(subnets), **extra})


def sub(id: str, cidr: str, used: bool = False, gateway: str | None = "auto") -> ObservedSubnet:
    gw = str(next(ipaddress.ip_network(cidr).hosts())) if gateway == "auto" else gateway
    return ObservedSubnet(id=id, cidr=cidr, gateway=gw, used=used)


@pytest.mark.parametrize(
    ("subnets", "field"),
    [
        ([{"cidr": "10.0.0.1/24"}], "cidr"),  # host bits set
        ([{"cidr": "10.0.0.0/33"}], "cidr"),
        ([{"cidr": "10.0.0.0/24", "gateway": "10.0.1.1"}], "gateway"),
        ([{"cidr": "10.0.0.0/24", "gateway": "nonsense"}], "gateway"),
        ([{"cidr": "10.0.0.0/24", "ipVersion": 6}], "cidr"),
        ([{"cidr": "10.0.0.0/24", "dnsNameservers": ["dns.example"]}], "dnsNameservers"),
        (
            [
                {
                    "cidr": "10.0.0.0/24",
                    "allocationPools": [{"start": "10.0.0.10", "end": "10.0.1.5"}],
                }
            ],
            "allocationPools",
        ),
        (
            [
                {
                    "cidr": "10.0.0.0/24",
                    "allocationPools": [{"start": "10.0.0.90", "end": "10.0.0.5"}],
                }
            ],
            "allocationPools",
        ),
        ([{"cidr": "10.0.0.0/24"}, {"cidr": "10.0.0.128/25"}], "overlaps"),
    ],
)
def test_bad_input_is_refused_naming_the_field(subnets: list[dict[str, Any]], field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        spec(*subnets)


def test_good_input_is_taken() -> None:
    s = spec(
        {"cidr": "10.0.0.0/24", "gateway": "10.0.0.1", "dnsNameservers": ["1.1.1.1"]},
        {"cidr": "fd00::/64", "ipVersion": 6},
        {"cidr": "10.0.1.0/24", "gateway": "none", "enableDhcp": False},
        router={"externalNetwork": "public"},
    )
    assert [x.cidr for x in s.subnets] == ["10.0.0.0/24", "fd00::/64", "10.0.1.0/24"]
    assert s.router is not None and s.router.enable_snat


def test_unchanged_network_plans_nothing() -> None:
    s = spec({"cidr": "10.0.0.0/24"})
    p = plan_subnets(s, [sub("a", "10.0.0.0/24")])
    assert p.empty and not p.blocked
    marked = ObservedNetwork("n", 1500, True, model.owner_word(UID))
    assert network_updates(s, marked, UID) == {}


def test_subnet_added_and_removed_in_place() -> None:
    s = spec({"cidr": "10.0.0.0/24"}, {"cidr": "10.0.2.0/24"})
    p = plan_subnets(s, [sub("a", "10.0.0.0/24"), sub("b", "10.0.1.0/24")])
    assert [x.cidr for x in p.create] == ["10.0.2.0/24"]
    assert [x.id for x in p.delete] == ["b"]
    assert not p.update and not p.blocked


def test_subnet_attributes_updated_in_place() -> None:
    s = spec({"cidr": "10.0.0.0/24", "gateway": "10.0.0.254", "enableDhcp": False})
    p = plan_subnets(s, [sub("a", "10.0.0.0/24")])
    assert p.update == [("a", {"gateway_ip": "10.0.0.254", "enable_dhcp": False})]
    assert not p.create and not p.delete


def test_cidr_change_replaces_an_unused_subnet() -> None:
    s = spec({"cidr": "10.0.0.0/23"})
    p = plan_subnets(s, [sub("a", "10.0.0.0/24")])
    assert [x.id for x in p.delete] == ["a"]
    assert [x.cidr for x in p.create] == ["10.0.0.0/23"]


def test_cidr_change_of_a_used_subnet_waits_and_says_why() -> None:
    s = spec({"cidr": "10.0.0.0/23"})
    p = plan_subnets(s, [sub("a", "10.0.0.0/24", used=True)])
    assert p.empty
    assert len(p.blocked) == 2
    assert all(m.startswith("spec.subnets[].cidr") for m in p.blocked)
    assert "ports use it" in p.blocked[0]


def test_a_new_cidr_not_overlapping_a_used_one_is_created_at_once() -> None:
    s = spec({"cidr": "10.0.5.0/24"})
    p = plan_subnets(s, [sub("a", "10.0.0.0/24", used=True)])
    assert [x.cidr for x in p.create] == ["10.0.5.0/24"]
    assert not p.delete and len(p.blocked) == 1


def test_network_attributes() -> None:
    s = spec(mtu=1400, portSecurity=False)
    assert network_updates(s, ObservedNetwork("n", 1500, True, model.owner_word(UID)), UID) == {
        "mtu": 1400,
        "port_security_enabled": False,
    }


def test_the_description_is_the_user_s_text_with_the_marker_word() -> None:
    marker = model.owner_word(UID)
    old = ObservedNetwork("n", 1500, True, f"old {marker}")
    assert network_updates(spec(description="new"), old, UID) == {"description": f"new {marker}"}
    assert network_updates(spec(), old, UID) == {}, "unset: the text it has stays"
    bare = ObservedNetwork("n", 1500, True, "marker removed by hand")
    assert network_updates(spec(), bare, UID) == {"description": f"marker removed by hand {marker}"}


def test_router_interfaces_follow_the_subnets() -> None:
    observed = [sub("a", "10.0.0.0/24"), sub("b", "10.0.1.0/24", gateway=None)]
    s = spec({"cidr": "10.0.0.0/24"}, {"cidr": "10.0.1.0/24", "gateway": "none"}, router={})
    p = plan_interfaces(s, observed, {"b", "old"})
    assert p.add == ["a"]
    assert p.remove == ["b", "old"]
    no_router = plan_interfaces(spec({"cidr": "10.0.0.0/24"}), observed, {"a"})
    assert no_router.remove == ["a"] and not no_router.add


def test_deletion_takes_apart_in_order() -> None:
    steps = deletion_steps("r", {"a"}, [sub("a", "10.0.0.0/24")], "n")
    assert steps == [
        ("remove_interface", "a"),
        ("delete_router", "r"),
        ("delete_subnet", "a"),
        ("delete_network", "n"),
    ]
    assert deletion_steps(None, set(), [], None) == []


def test_only_users_ports_keep_subnets_and_the_network() -> None:
    ports = [
        ObservedPort("r", "network:router_interface", ("a",)),
        ObservedPort("d", "network:dhcp", ("a", "b")),
        ObservedPort("vm", "compute:nova", ("b",)),
    ]
    assert subnets_in_use(ports) == {"b"}
    message = deletion_wait(ports)
    assert message is not None and "1 port(s)" in message and "compute:nova" in message
    assert deletion_wait(ports[:2]) is None
