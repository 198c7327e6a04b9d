"""SecurityGroup decisions: wanted rules from the spec and the objects it names, the
diff with Neutron's rules, and status — plain values in, plain values out."""

from __future__ import annotations

from typing import Any

import pytest

from kumo.api.kinds import LOAD_BALANCER, SECURITY_GROUP, VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.api.securitygroup import SecurityGroupSpec
from kumo.cloud.model import SecurityGroupRule
from kumo.engine.errors import TerminalError
from kumo.kinds.labels import GROUP_LABEL
from kumo.kinds.securitygroup import plan
from kumo.runtime.store import MemoryStore
from tests.unit.fakes import make_body


def store_with(**objects: Any) -> MemoryStore:
    store = MemoryStore()
    store.put("VirtualMachineGroup", make_body(VIRTUAL_MACHINE_GROUP, "web", {}))
    for i, ip in enumerate(("10.0.1.1", "10.0.1.2")):
        vm = make_body(VIRTUAL_MACHINE, f"web-{i}", {}, labels={GROUP_LABEL: "web"})
        vm["status"] = {"ip": ip, "conditions": [{"type": "Ready", "status": "True"}]}
        store.put("VirtualMachine", vm)
    building = make_body(VIRTUAL_MACHINE, "web-2", {}, labels={GROUP_LABEL: "web"})
    building["status"] = {"ip": "10.0.1.3", "conditions": [{"type": "Ready", "status": "False"}]}
    store.put("VirtualMachine", building)
    lb = make_body(LOAD_BALANCER, "front", {})
    lb["status"] = {"vip": "10.0.0.50"}
    store.put("LoadBalancer", lb)
    other = make_body(SECURITY_GROUP, "db", {})
    other["status"] = {"id": "sg-db"}
    store.put("SecurityGroup", other)
    return store


def wanted(rules: list[dict[str, Any]], store: MemoryStore | None = None) -> plan.Wanted:
    spec = SecurityGroupSpec.model_validate({"rules": rules})
    return plan.wanted_rules(spec, "default", "web", "sg-web", store or store_with())


def labels(w: plan.Wanted) -> list[str]:
    return sorted(r.label for r in w.rules)


def test_each_source_becomes_rules() -> None:
    w = wanted(
        [
            {"protocol": "tcp", "port": 22, "cidr": "192.0.2.0/24"},
            {
                "protocol": "tcp",
                "portRangeMin": 8000,
                "portRangeMax": 8080,
                "securityGroupRef": "db",
            },
            {"protocol": "tcp", "port": 5432, "virtualMachineGroupRef": "web"},
            {"protocol": "icmp", "loadBalancerRef": "front"},
            {"direction": "egress", "cidr": "::/0"},
            {"protocol": "udp", "securityGroupRef": "web"},  # its own group
        ]
    )
    assert labels(w) == sorted(
        [
            "ingress IPv4 tcp 22 from 192.0.2.0/24",
            "ingress IPv4 tcp 8000-8080 from group sg-db",
            "ingress IPv4 tcp 5432 from 10.0.1.1/32",
            "ingress IPv4 tcp 5432 from 10.0.1.2/32",
            "ingress IPv4 icmp from 10.0.0.50/32",
            "egress IPv6 any to ::/0",
            "ingress IPv4 udp from group sg-web",
        ]
    )
    assert {r.vm for r in w.rules if r.vm} == {"web-0", "web-1"}, "Ready members only"
    assert w.waiting == []


def test_a_dangling_reference_raises_naming_the_field() -> None:
    for rule, reason, field in [
        ({"securityGroupRef": "nope"}, "SecurityGroupNotFound", "securityGroupRef"),
        ({"virtualMachineGroupRef": "nope"}, "GroupNotFound", "virtualMachineGroupRef"),
        ({"loadBalancerRef": "nope"}, "LoadBalancerNotFound", "loadBalancerRef"),
    ]:
        with pytest.raises(TerminalError) as caught:
            wanted([{"cidr": "10.0.0.0/8"}, rule])
        assert (caught.value.reason, caught.value.field) == (reason, f"spec.rules[1].{field}")


def test_bad_cidrs_and_ports_are_refused() -> None:
    with pytest.raises(TerminalError, match="not an address") as caught:
        wanted([{"cidr": "10.0.0.1/8"}])
    assert caught.value.field == "spec.rules[0].cidr"
    with pytest.raises(TerminalError, match="is not IPv6"):
        wanted([{"cidr": "10.0.0.0/8", "ethertype": "IPv6"}])
    with pytest.raises(TerminalError, match="no ports"):
        wanted([{"protocol": "icmp", "port": 8, "cidr": "10.0.0.0/8"}])


def test_targets_without_an_address_or_id_wait_and_keep_remote_group_rules() -> None:
    store = store_with()
    store.get("LoadBalancer", "default", "front")["status"] = {}  # type: ignore[index]
    store.put("SecurityGroup", make_body(SECURITY_GROUP, "cache", {}))
    w = wanted([{"loadBalancerRef": "front"}, {"securityGroupRef": "cache"}], store)
    assert w.rules == [] and len(w.waiting) == 2 and w.unsure_remote_groups
    old = SecurityGroupRule("r-1", "ingress", "IPv4", remote_group_id="sg-cache")
    stray = SecurityGroupRule("r-2", "ingress", "IPv4", remote_ip_prefix="10.9.9.9/32")
    assert plan.plan_rules(w, [old, stray]).remove == [stray]


def test_the_diff_removes_what_the_spec_lacks_and_adds_what_neutron_lacks() -> None:
    w = wanted(
        [
            {"protocol": "tcp", "port": 22, "cidr": "10.0.0.5"},
            {"direction": "egress", "cidr": "0.0.0.0/0"},
        ]
    )
    default_v4 = SecurityGroupRule("r-1", "egress", "IPv4")  # Neutron's: no prefix = any
    default_v6 = SecurityGroupRule("r-2", "egress", "IPv6")
    by_number = SecurityGroupRule("r-3", "ingress", "IPv4", "6", 22, 22, "10.0.0.5/32")
    changes = plan.plan_rules(w, [default_v4, default_v6, by_number])
    assert changes.add == [] and changes.remove == [default_v6]
    changes = plan.plan_rules(w, [default_v6])
    assert [a.label for a in changes.add] == [
        "egress IPv4 any to 0.0.0.0/0",
        "ingress IPv4 tcp 22 from 10.0.0.5/32",
    ]


def test_status_names_rules_and_their_vms() -> None:
    w = wanted([{"protocol": "tcp", "port": 80, "virtualMachineGroupRef": "web"}])
    rules = [plan.as_rule(r, f"r-{i}") for i, r in enumerate(w.rules)]
    assert plan.rules_summary(rules[:1], w) == "1/2"
    assert plan.applied_rules(rules, w) == [
        {"rule": "ingress IPv4 tcp 80 from 10.0.1.1/32", "id": "r-0", "virtualMachine": "web-0"},
        {"rule": "ingress IPv4 tcp 80 from 10.0.1.2/32", "id": "r-1", "virtualMachine": "web-1"},
    ]
    vm = make_body(VIRTUAL_MACHINE, "app", {"securityGroups": ["default-web", "other"]})
    assert plan.users([vm], {"web", "default-web"}) == ["app"]


def test_one_port_from_a_cidr_and_from_a_remote_group_sorts() -> None:
    """The same port opened from a CIDR and from a group (a KumoCluster's API rules):
    the rules differ first where one has no prefix and the other no remote group, which
    the dataclass's own order cannot compare (it raised TypeError)."""
    found = wanted(
        [
            {"protocol": "tcp", "port": 6443, "cidr": "10.6.0.0/24"},
            {"protocol": "tcp", "port": 6443, "securityGroupRef": "db"},
            {"protocol": "tcp", "port": 6443, "cidr": "0.0.0.0/0"},
            {"protocol": "tcp", "securityGroupRef": "db"},
        ]
    )
    assert [(r.port_range_min, r.remote_ip_prefix, r.remote_group_id) for r in found.rules] == [
        (None, None, "sg-db"),
        (6443, None, "sg-db"),
        (6443, "0.0.0.0/0", None),
        (6443, "10.6.0.0/24", None),
    ]
