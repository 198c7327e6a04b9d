"""How the fleet benchmark lays out its N VMs: groups, their LBs and DNS records."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from bench.contenders import (
    KumoRun,
    dns_body,
    lb_body,
    list_servers,
    repair_slot,
    split,
    topology,
    vmg_body,
)
from bench.lab import PREFIX, ZONE


def test_split_is_even_and_sums_to_n() -> None:
    assert split(1000, 10) == [100] * 10
    assert split(25, 10) == [3, 3, 3, 3, 3, 2, 2, 2, 2, 2]
    assert split(7, 1) == [7]
    assert split(3, 3) == [1, 1, 1]
    for n in (10, 11, 99, 1000, 1001):
        for g in (1, 3, 7, 10):
            sizes = split(n, g)
            assert sum(sizes) == n and len(sizes) == g and max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize(("n", "groups"), [(5, 0), (3, 4), (0, 1)])
def test_split_refuses_empty_groups(n: int, groups: int) -> None:
    with pytest.raises(ValueError):
        split(n, groups)


def test_one_group_keeps_the_stack_benchmark_names() -> None:
    (group,) = topology(20, 1)
    assert (group.name, group.lb, group.replicas) == (PREFIX, f"{PREFIX}-lb", 20)
    assert vmg_body(group)["metadata"]["name"] == PREFIX
    assert vmg_body(group)["spec"]["replicas"] == 20
    real = lb_body(group)["spec"]["ports"][0]["realServers"]
    assert real["virtualMachineGroupRef"] == PREFIX


def test_ten_groups_each_with_its_lb_and_dns_record() -> None:
    groups = topology(25, 10)
    names = [g.name for g in groups]
    assert names == sorted(names) and len(set(names)) == 10
    assert all(g.name.startswith(PREFIX) and g.lb.startswith(PREFIX) for g in groups)
    assert [g.replicas for g in groups] == split(25, 10)
    assert [
        lb_body(g)["spec"]["ports"][0]["realServers"]["virtualMachineGroupRef"] for g in groups
    ] == names
    record = dns_body(groups[3], f"{PREFIX}-ns-{groups[3].name}")
    assert record["spec"] == {
        "zone": ZONE,
        "name": f"{PREFIX}-ns-{groups[3].name}",
        "type": "A",
        "loadBalancerRef": groups[3].lb,
    }
    assert topology(1000, 12)[0].name == f"{PREFIX}-00"  # zero-padded: name order holds


def test_repairs_go_round_robin_over_the_groups() -> None:
    slots = [repair_slot(i * 7, 10) for i in range(10)]  # what the harness asks for
    assert sorted(g for g, _ in slots) == list(range(10))
    assert [repair_slot(i * 7, 1) for i in range(3)] == [(0, 0), (0, 7), (0, 14)]


def test_restart_counts_every_object() -> None:
    none: Any = None  # no lab: only the count is looked at
    assert KumoRun(1000, none, none, 10.0, groups=10, dns=True).objects == 1030
    assert KumoRun(1000, none, none, 10.0, groups=10).objects == 1020
    assert KumoRun(20, none, none, 10.0).objects == 22  # the stack benchmark: N + group + LB


class _Response:
    def __init__(self, body: dict[str, object]) -> None:
        self.status_code = 200
        self.text = ""
        self._body = body

    def json(self) -> dict[str, object]:
        return self._body


def test_the_scripts_server_poll_reads_every_page_as_json() -> None:
    """The direct script's poll follows Nova's next links and keeps what it needs."""
    pages = {
        "/servers/detail": {
            "servers": [
                {
                    "id": "a",
                    "name": "kbench-direct-0001",
                    "status": "ACTIVE",
                    "addresses": {"n": []},
                }
            ],
            "servers_links": [{"rel": "next", "href": "http://nova/servers/detail?marker=a"}],
        },
        "http://nova/servers/detail?marker=a": {
            "servers": [{"id": "b", "name": "kbench-direct-0002", "status": "BUILD"}],
        },
    }
    calls: list[tuple[str, object]] = []

    def get(url: str, params: object = None) -> _Response:
        calls.append((url, params))
        return _Response(pages[url])

    conn = SimpleNamespace(compute=SimpleNamespace(get=get))
    found = list_servers(conn, "^kbench-direct-")
    assert [(s.id, s.status, s.addresses) for s in found] == [
        ("a", "ACTIVE", {"n": []}),
        ("b", "BUILD", {}),
    ]
    assert calls == [
        ("/servers/detail", {"name": "^kbench-direct-"}),
        ("http://nova/servers/detail?marker=a", None),
    ]
