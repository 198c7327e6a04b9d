"""DNSRecord planning: names, values from targets, update/replacement, drift — pure."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kumo.api.dnsrecord import DNSRecordSpec
from kumo.cloud.model import Recordset, owner_word
from kumo.engine.errors import TerminalError
from kumo.kinds.dnsrecord import plan
from kumo.kinds.labels import GROUP_LABEL
from kumo.runtime.store import MemoryStore

UID = "uid-api"
MARKER = owner_word(UID)
ZONE = "kumo-demo.test."
RS = Recordset("rs-1", "zone-1", f"api.{ZONE}", "A", ["192.0.2.10"], 300, MARKER, "ACTIVE")


def spec(**fields: Any) -> DNSRecordSpec:
    return DNSRecordSpec.model_validate({"zone": ZONE, "name": "api", **fields})


def body(kind: str, name: str, status: dict | None = None, **meta: Any) -> dict:
    return {
        "kind": kind,
        "metadata": {"name": name, "namespace": "default", **meta},
        "spec": {},
        "status": status or {},
    }


def vm(name: str, ip: str | None, ready: bool = True, **meta: Any) -> dict:
    addresses = [{"network": "n", "ip": ip, "version": 4}] if ip else []
    cond = [{"type": "Ready", "status": "True" if ready else "False"}]
    return body(
        "VirtualMachine", name, {"ip": ip, "addresses": addresses, "conditions": cond}, **meta
    )


def store(*bodies: dict) -> MemoryStore:
    s = MemoryStore()
    for b in bodies:
        s.put(b["kind"], b)
    return s


# -- names -----------------------------------------------------------------------------------


def test_fqdn() -> None:
    assert plan.fqdn("api", ZONE) == "api.kumo-demo.test."
    assert plan.fqdn("api", "kumo-demo.test") == "api.kumo-demo.test."
    assert plan.fqdn("a.b", ZONE) == "a.b.kumo-demo.test."
    assert plan.fqdn("@", ZONE) == ZONE
    assert plan.fqdn("API.Kumo-Demo.Test.", ZONE) == "API.Kumo-Demo.Test."
    assert plan.fqdn(ZONE, ZONE) == ZONE
    for outside in ("api.other.test.", "xkumo-demo.test."):
        with pytest.raises(TerminalError) as error:
            plan.fqdn(outside, ZONE)
        assert (error.value.reason, error.value.field) == ("NameOutsideZone", "spec.name")


def test_description_carries_the_marker_and_fits_designate() -> None:
    assert plan.description(None, UID) == MARKER
    assert plan.description("API", UID) == f"API {MARKER}"
    longest = "x" * (plan.DESCRIPTION_MAX - len(MARKER) - 1)
    assert len(plan.description(longest, UID)) == plan.DESCRIPTION_MAX
    with pytest.raises(TerminalError) as error:
        plan.description(longest + "x", UID)
    assert error.value.field == "spec.description"


def test_ownership_is_a_whole_word_of_the_description() -> None:
    assert plan.is_owned(RS, UID)
    assert plan.is_owned(replace(RS, description=f"API {MARKER}"), UID)
    assert not plan.is_owned(replace(RS, description=f"{MARKER}x"), UID)
    assert not plan.is_owned(replace(RS, description=None), UID)


# -- values ----------------------------------------------------------------------------------


def test_literal_values_are_checked_and_canonical() -> None:
    assert plan.desired_records(
        spec(values=["192.0.2.2", "192.0.2.1", "192.0.2.2"]), "default", store()
    ) == [
        "192.0.2.1",
        "192.0.2.2",
    ]
    aaaa = spec(type="AAAA", values=["2001:DB8:0::1"])
    assert plan.desired_records(aaaa, "default", store()) == ["2001:db8::1"]
    assert plan.literal_records("CNAME", ["www.example.test"]) == ["www.example.test."]
    assert plan.literal_records("TXT", ["a b", '"q d"', "plain"]) == ['"a b"', '"q d"', "plain"]
    assert plan.literal_records("TXT", ['say "hi" now']) == ['"say \\"hi\\" now"']


@pytest.mark.parametrize(
    ("fields", "reason", "field"),
    [
        ({"values": ["2001:db8::1"]}, "InvalidRecord", "spec.values[0]"),
        ({"type": "AAAA", "values": ["192.0.2.1"]}, "InvalidRecord", "spec.values[0]"),
        ({"type": "CNAME", "values": ["a.", "b."]}, "InvalidSpec", "spec.values"),
        ({"type": "CNAME", "loadBalancerRef": "web"}, "UnsupportedTarget", "spec.type"),
        ({"values": ["1.2.3.4"], "loadBalancerRef": "web"}, "InvalidSpec", "spec"),
        ({}, "InvalidSpec", "spec"),
        ({"loadBalancerRef": "web"}, "TargetNotFound", "spec.loadBalancerRef"),
        ({"virtualMachineRef": "vm"}, "TargetNotFound", "spec.virtualMachineRef"),
        ({"virtualMachineGroupRef": "g"}, "TargetNotFound", "spec.virtualMachineGroupRef"),
    ],
)
def test_bad_spec_is_terminal(fields: dict, reason: str, field: str) -> None:
    with pytest.raises(TerminalError) as error:
        plan.desired_records(spec(**fields), "default", store())
    assert (error.value.reason, error.value.field) == (reason, field)


def test_load_balancer_vip() -> None:
    lb = body("LoadBalancer", "web")
    with pytest.raises(plan.WaitingForTarget):
        plan.desired_records(spec(loadBalancerRef="web"), "default", store(lb))
    lb["status"] = {"vip": "10.9.0.5"}
    assert plan.desired_records(spec(loadBalancerRef="web"), "default", store(lb)) == ["10.9.0.5"]
    with pytest.raises(TerminalError) as error:
        plan.desired_records(spec(loadBalancerRef="web", type="AAAA"), "default", store(lb))
    assert (error.value.reason, error.value.field) == ("AddressFamilyMismatch", "spec.type")
    # Another namespace's LoadBalancer of the same name is not a target.
    with pytest.raises(TerminalError):
        plan.desired_records(spec(loadBalancerRef="web"), "team-b", store(lb))


def test_vm_addresses() -> None:
    two = vm("vm-1", "10.0.0.7")
    two["status"]["addresses"] += [
        {"network": "n6", "ip": "2001:db8::7", "version": 6},
        {"network": "n6", "ip": "2001:db8::8", "version": 6},
        {"network": "n2", "ip": "10.1.0.7", "version": 4},
    ]
    assert plan.vm_addresses(two, 4) == ["10.0.0.7"]  # the primary address only
    assert plan.vm_addresses(two, 6) == ["2001:db8::7", "2001:db8::8"]
    s = store(two)
    assert plan.desired_records(spec(virtualMachineRef="vm-1"), "default", s) == ["10.0.0.7"]
    aaaa = spec(virtualMachineRef="vm-1", type="AAAA")
    assert plan.desired_records(aaaa, "default", s) == ["2001:db8::7", "2001:db8::8"]
    with pytest.raises(plan.WaitingForTarget):
        plan.desired_records(spec(virtualMachineRef="b"), "default", store(vm("b", None)))


def test_group_members_ready_and_not_deleting() -> None:
    label = {GROUP_LABEL: "g"}
    s = store(
        body("VirtualMachineGroup", "g"),
        vm("g-b", "10.0.0.12", labels=label),
        vm("g-a", "10.0.0.11", labels=label),
        vm("g-c", "10.0.0.13", ready=False, labels=label),
        vm("g-d", "10.0.0.14", labels=label, deletionTimestamp="2026-11-22T00:00:00Z"),
        vm("g-e", None, labels=label),
        vm("other", "10.0.0.99", labels={GROUP_LABEL: "h"}),
        vm("loner", "10.0.0.98"),
    )
    got = plan.desired_records(spec(virtualMachineGroupRef="g"), "default", s)
    assert got == ["10.0.0.11", "10.0.0.12"]
    with pytest.raises(plan.WaitingForTarget):
        plan.desired_records(
            spec(virtualMachineGroupRef="g"), "default", store(body("VirtualMachineGroup", "g"))
        )


def test_referenced() -> None:
    assert plan.referenced({"loadBalancerRef": "web"}) == {"LoadBalancer": "web"}
    assert plan.referenced({"virtualMachineGroupRef": "g"}) == {"VirtualMachineGroup": "g"}
    assert plan.referenced({"values": ["1.2.3.4"]}) == {}


# -- observed recordset ----------------------------------------------------------------------


def test_needs_update() -> None:
    assert not plan.needs_update(["192.0.2.10"], 300, MARKER, RS)
    assert plan.needs_update(["192.0.2.11"], 300, MARKER, RS)
    assert plan.needs_update(["192.0.2.10", "192.0.2.11"], 300, MARKER, RS)
    assert plan.needs_update(["192.0.2.10"], 60, MARKER, RS)
    assert plan.needs_update(["192.0.2.10"], 300, f"new {MARKER}", RS)
    # Designate's own spelling of the same values is not a change.
    v6 = replace(RS, type="AAAA", records=["2001:0db8::1"])
    assert not plan.needs_update(["2001:db8::1"], 300, MARKER, v6)


def test_needs_replacement() -> None:
    assert not plan.needs_replacement(RS, "zone-1", f"API.{ZONE}", "A")
    assert plan.needs_replacement(RS, "zone-2", f"api.{ZONE}", "A")
    assert plan.needs_replacement(RS, "zone-1", f"www.{ZONE}", "A")
    assert plan.needs_replacement(RS, "zone-1", f"api.{ZONE}", "AAAA")


def test_conflicting_ignores_ours_and_other_names_and_compatible_types() -> None:
    name = f"api.{ZONE}"
    foreign = replace(RS, id="rs-f", description="by hand")
    assert plan.conflicting([RS], name, "A", UID) is None  # ours
    assert plan.conflicting([foreign], name, "A", UID) == foreign
    assert plan.conflicting([foreign], f"www.{ZONE}", "A", UID) is None
    assert plan.conflicting([foreign], name, "TXT", UID) is None
    assert plan.conflicting([foreign], name, "CNAME", UID) == foreign
    cname = replace(foreign, type="CNAME")
    assert plan.conflicting([cname], name, "TXT", UID) == cname


def test_a_group_record_parses_each_address_once_over_many_passes(monkeypatch: Any) -> None:
    """A group's record is recomputed on every member event: parsing every address
    three times per pass was most of the DNSRecord's CPU at 300 members."""
    group = body("VirtualMachineGroup", "g")
    members = [
        vm(f"g-{i}", f"10.99.{i // 200}.{i % 200}", labels={GROUP_LABEL: "g"}) for i in range(300)
    ]
    s = store(group, *members)
    parses = []
    real = plan.ipaddress.ip_address
    monkeypatch.setattr(plan.ipaddress, "ip_address", lambda v: parses.append(v) or real(v))
    first = plan.desired_records(spec(virtualMachineGroupRef="g"), "default", s)
    assert len(first) == 300
    parsed = len(parses)
    again = plan.desired_records(spec(virtualMachineGroupRef="g"), "default", s)
    assert again == first
    assert len(parses) == parsed, "a second pass parses no address again"


def test_a_group_record_parses_only_the_members_that_changed_and_agrees_from_scratch() -> None:
    """With a scope (the record's UID), what each VM publishes is derived once per body:
    after one member's change the next pass parses that member only, and the values are
    those computed without any cache (after a restart)."""
    g = {"labels": {GROUP_LABEL: "web"}}
    members = [vm(f"web-{i}", f"10.0.0.{i + 1}", **g) for i in range(30)]
    s = store(
        *members,
        vm("other", "10.9.9.9", labels={GROUP_LABEL: "db"}),
        body("VirtualMachineGroup", "web"),
    )
    record = spec(type="A", virtualMachineGroupRef="web")
    first = plan.desired_records(record, "default", s, "uid-r")
    derived = plan.MEMBERS.derived
    assert first == [f"10.0.0.{i + 1}" for i in sorted(range(30), key=lambda i: f"10.0.0.{i + 1}")]
    s.put("VirtualMachine", vm("web-4", "10.0.0.5", ready=False, **g))  # a watch event
    again = plan.desired_records(record, "default", s, "uid-r")
    assert plan.MEMBERS.derived - derived == 1
    assert "10.0.0.5" not in again and len(again) == 29
    assert again == plan.desired_records(record, "default", s)  # no cache at all
    plan.MEMBERS.forget("uid-r")  # a restart: nothing cached
    assert plan.desired_records(record, "default", s, "uid-r") == again


def test_moves_records_reads_the_published_set_once_per_status() -> None:
    record = body("DNSRecord", "r", {"records": [f"10.0.0.{i}" for i in range(1, 200)]})
    record["spec"] = {"type": "A", "virtualMachineGroupRef": "web"}
    derived = plan.PUBLISHED.derived
    for i in range(1, 50):
        assert not plan.moves_records(record, vm(f"web-{i}", f"10.0.0.{i}"))
    assert plan.moves_records(record, vm("web-new", "10.0.1.1"))
    assert plan.PUBLISHED.derived - derived == 1
    record = {**record, "status": {"records": ["10.0.1.1"]}}  # a new status: read again
    assert not plan.moves_records(record, vm("web-new", "10.0.1.1"))
    assert plan.PUBLISHED.derived - derived == 2
