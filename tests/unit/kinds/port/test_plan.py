"""Port decisions, pure: the security groups a spec asks for, what an import must match,
the allowed address pairs compared as Neutron holds them, and the status."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kumo.api.kinds import SECURITY_GROUP
from kumo.api.port import PortSpec
from kumo.kinds import address_pairs
from kumo.kinds.port import plan
from kumo.ports.model import AddressPair, Port
from kumo.runtime.store import MemoryStore
from tests.unit.fakes import make_body

SG_ID = "7bfbec21-e375-499f-ac8b-a6794518ee7b"


def port(**changes: object) -> Port:
    base = Port("p-1", "net-1", "", fixed_addresses=["10.0.0.5"], mac_address="fa:16:3e:aa:bb:cc")
    return Port(**{**base.__dict__, **changes})  # type: ignore[arg-type]


def test_groups_unset_is_left_alone_and_objects_resolve_to_their_ids() -> None:
    store = MemoryStore()
    assert plan.groups(PortSpec(), "ns", store) == plan.Groups(managed=False)
    assert plan.groups(PortSpec(securityGroups=[]), "ns", store) == plan.Groups(managed=True)
    body = make_body(SECURITY_GROUP, "app", {}, namespace="ns")
    store.put("SecurityGroup", body)
    spec = PortSpec(securityGroups=["app", "web", SG_ID])
    assert plan.groups(spec, "ns", store) == plan.Groups(True, (SG_ID,), ("web",), ("app",))
    body["status"] = {"id": "sg-app", "conditions": [{"type": "Ready", "status": "True"}]}
    assert plan.groups(spec, "ns", store).ids == ("sg-app", SG_ID)
    body["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    assert plan.groups(spec, "ns", store).waiting == ("app",)


def test_group_changes_ignore_order() -> None:
    assert plan.group_changes(["b", "a"], port(security_groups=("a", "b"))) is None
    assert plan.group_changes(["a"], port(security_groups=("a", "b"))) == ["a"]
    assert plan.group_changes([], port(security_groups=("a",))) == []


def test_import_checks_the_network_and_the_address() -> None:
    assert plan.import_mismatches(port(), "net-1", "10.0.0.5") == []
    assert plan.import_mismatches(port(), "net-1", None) == []
    found = plan.import_mismatches(port(), "net-2", "10.0.0.6")
    assert [(c.field, c.old, c.new) for c in found] == [
        ("spec.network", "net-1", "net-2"),
        ("spec.address", "10.0.0.5", "10.0.0.6"),
    ]


def test_pairs_are_compared_as_neutron_holds_them() -> None:
    held = port(allowed_address_pairs=(AddressPair("10.0.0.100/32", "FA:16:3E:AA:BB:CC"),))
    assert address_pairs.same(held, [AddressPair("10.0.0.100")])
    assert not address_pairs.same(held, [AddressPair("10.0.0.100", "fa:16:3e:00:00:01")])
    assert not address_pairs.same(held, [])
    assert address_pairs.same(port(), [])
    prefix = port(allowed_address_pairs=(AddressPair("10.0.1.0/24"),))
    assert address_pairs.same(prefix, [AddressPair("10.0.1.7/24")]), "the prefix it is in"


def test_status_and_phase() -> None:
    bound = port(
        device_id="srv-1",
        security_groups=("sg-1",),
        allowed_address_pairs=(AddressPair("10.0.0.100"), AddressPair("10.0.1.0/24", "m")),
    )
    assert plan.phase(bound) == "InUse" and plan.phase(port()) == "Available"
    assert plan.status(bound) == {
        "id": "p-1",
        "name": None,
        "networkId": "net-1",
        "address": "10.0.0.5",
        "addresses": ["10.0.0.5"],
        "macAddress": "fa:16:3e:aa:bb:cc",
        "deviceId": "srv-1",
        "securityGroups": ["sg-1"],
        "allowedAddressPairs": [
            {"ipAddress": "10.0.0.100"},
            {"ipAddress": "10.0.1.0/24", "macAddress": "m"},
        ],
    }


def test_the_api_refuses_what_is_no_address() -> None:
    with pytest.raises(ValidationError, match="not an address or prefix"):
        PortSpec(allowedAddressPairs=[{"ipAddress": "10.0.0.300"}])
    assert plan.port_name("team-a", "vip") == "team-a-vip"
