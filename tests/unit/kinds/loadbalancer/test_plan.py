"""LoadBalancer planning: members, the next step per port, status, drift — pure functions."""

from __future__ import annotations

import datetime
from dataclasses import replace

import pytest

from kumo.api.loadbalancer import LoadBalancerSpec
from kumo.cloud.model import (
    HealthMonitor,
    Listener,
    LoadBalancer,
    Member,
    Pool,
    marker_tags,
)
from kumo.engine.errors import TerminalError
from kumo.kinds.labels import GROUP_LABEL
from kumo.kinds.loadbalancer import decision, monitors, plan, steps
from kumo.kinds.loadbalancer.members import DrainClock, WantedMember
from kumo.kinds.loadbalancer.plan import Tree
from kumo.kinds.loadbalancer.wanted import referenced_groups, wanted_members

UID = "uid-web"
OURS = marker_tags(UID)
LB = LoadBalancer("lb-1", "default-web", "ACTIVE", "ONLINE", "10.9.0.5", OURS, "d")
T0 = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.UTC)
NOW = DrainClock(T0)


def port(number: int = 80, protocol: str = "http", monitors: list | None = None) -> dict:
    return {
        "port": number,
        "protocol": protocol,
        "realServers": {"protocol": protocol, "port": number, "virtualMachineGroupRef": "g"},
        "monitors": monitors
        if monitors is not None
        else [
            {"protocol": "http", "port": number, "endpoint": "/health/alive"},
            {"protocol": "https", "port": number, "endpoint": "/health/ready"},
        ],
    }


def spec(*ports: dict, description: str = "d") -> LoadBalancerSpec:
    return LoadBalancerSpec.model_validate(
        {"description": description, "ports": list(ports) or [port()]}
    )


def vm(name: str, ip: str | None = "10.0.0.1", ready: str = "True", **meta: object) -> dict:
    return {
        "metadata": {"name": name, "labels": {GROUP_LABEL: "g"}, **meta},
        "status": {"ip": ip, "conditions": [{"type": "Ready", "status": ready}]},
    }


LISTENER = Listener("lis-1", "default-web-80", "HTTP", 80, "pool-1", OURS)
POOL = Pool("pool-1", "default-web-80", "HTTP", "lis-1", "hm-1", [], OURS)
MONITOR = HealthMonitor("hm-1", "HTTP", "/health/alive", OURS)


def tree(*members: Member, pool: Pool = POOL, monitor: HealthMonitor | None = MONITOR) -> Tree:
    return Tree(
        LB,
        [LISTENER],
        [pool],
        {pool.id: list(members)},
        {monitor.id: monitor} if monitor else {},
    )


def step_of(
    t: Tree,
    s: LoadBalancerSpec | None = None,
    wanted: list | None = None,
    clock: DrainClock = NOW,
) -> steps.Step:
    s = s or spec()
    steps = plan.plan_steps(s, wanted or [[] for _ in s.ports], t, UID, "default-web", clock)
    return steps[0]


def test_monitor_labels_and_unapplied_monitors() -> None:
    p = spec().ports[0]
    assert monitors.unapplied_monitors(p) == ["https:80/health/ready"]
    assert monitors.monitor_label(p.monitors[0]) == "http:80/health/alive"
    assert monitors.unapplied_monitors(spec(port(monitors=[])).ports[0]) == []


def test_monitor_port_only_when_it_differs() -> None:
    assert monitors.monitor_port(spec().ports[0]) is None
    other = port(monitors=[{"protocol": "tcp", "port": 9000}])
    assert monitors.monitor_port(spec(other).ports[0]) == 9000


def test_members_are_ready_vms_of_the_group_with_an_ip() -> None:
    vms = [
        vm("b", "10.0.0.2"),
        vm("a", "10.0.0.1"),
        vm("gone", "10.0.0.3", deletionTimestamp="2026-11-22T00:00:00Z"),
        vm("sick", "10.0.0.4", ready="False"),
        vm("noip", None),
        {**vm("other", "10.0.0.5"), "metadata": {"name": "other", "labels": {GROUP_LABEL: "x"}}},
    ]
    assert wanted_members(vms, spec().ports[0]) == [
        WantedMember("a", "10.0.0.1", 80),
        WantedMember("b", "10.0.0.2", 80),
    ]


def test_steps_build_listener_then_pool_then_monitor() -> None:
    empty = Tree(LB)
    first = step_of(empty)
    assert isinstance(first, steps.CreateListener) and first.lb_id == "lb-1"
    assert (first.name, first.protocol, first.port, first.tags) == (
        "default-web-80",
        "http",
        80,
        OURS,
    )
    no_pool = Tree(LB, [replace(LISTENER, default_pool_id=None)])
    assert isinstance(step_of(no_pool), steps.CreatePool)
    bare = tree(pool=Pool("pool-1", "p", "HTTP", "lis-1", None, [], OURS), monitor=None)
    hm = step_of(bare)
    assert isinstance(hm, steps.CreateHealthMonitor)
    assert (hm.protocol, hm.url_path) == ("http", "/health/alive")


def test_converged_tree_has_no_steps() -> None:
    member = Member("m1", "a", "10.0.0.1", 80, None, OURS)
    wanted = [[WantedMember("a", "10.0.0.1", 80)]]
    assert plan.plan_steps(spec(), wanted, tree(member), UID, "default-web", NOW) == []


def test_protocol_change_removes_pool_before_listener() -> None:
    tcp = spec(port(protocol="tcp", monitors=[]))
    assert isinstance(step_of(tree(), tcp), steps.DeletePool)
    no_pool = Tree(LB, [replace(LISTENER, default_pool_id=None)])
    assert isinstance(step_of(no_pool, tcp), steps.DeleteListener)


def test_our_changed_monitor_is_deleted_a_foreign_one_is_kept_and_reported() -> None:
    moved = spec(port(monitors=[{"protocol": "http", "port": 80, "endpoint": "/other"}]))
    assert isinstance(step_of(tree(), moved), steps.DeleteHealthMonitor)
    foreign = HealthMonitor("hm-1", "TCP", None, [])
    t = tree(monitor=foreign)
    assert plan.monitor_step(spec().ports[0], POOL, t, UID) is None
    assert decision.port_status(spec().ports[0], t, UID)["unappliedMonitors"] == [
        "http:80/health/alive",
        "https:80/health/ready",
    ]


def test_stale_listener_and_orphan_pool_are_removed() -> None:
    old = Listener("lis-9", "x", "HTTP", 8080, "pool-9", OURS)
    old_pool = Pool("pool-9", "x", "HTTP", "lis-9", None, [], OURS)
    orphan = Pool("pool-8", "x", "HTTP", None, None, [], OURS)
    t = Tree(LB, [LISTENER, old], [POOL, old_pool, orphan], {}, {MONITOR.id: MONITOR})
    found = plan.stale_steps(spec(), t, UID)
    assert [(type(s), s.pool_id) for s in found] == [
        (steps.DeletePool, "pool-9"),
        (steps.DeletePool, "pool-8"),
    ]


def test_children_kumo_did_not_create_are_reported_not_deleted() -> None:
    """Someone added a listener and a pool to Kumo's LB by hand: hands off."""
    theirs = Listener("lis-9", "x", "HTTP", 8080, "pool-9", [])
    their_pool = Pool("pool-9", "x", "HTTP", "lis-9", None, [], [])
    orphan = Pool("pool-8", "x", "HTTP", None, None, [], ["team-x"])
    t = Tree(LB, [LISTENER, theirs], [POOL, their_pool, orphan], {}, {MONITOR.id: MONITOR})
    assert plan.stale_steps(spec(), t, UID) == []
    assert plan.foreign_children(spec(), t, UID) == ["listener lis-9 (port 8080)", "pool pool-8"]


def test_a_foreign_listener_on_a_port_whose_protocol_changed_is_not_replaced() -> None:
    theirs = replace(LISTENER, protocol="TCP", tags=[])
    t = Tree(LB, [theirs], [POOL], {}, {MONITOR.id: MONITOR})
    with pytest.raises(TerminalError) as error:
        plan.port_steps(spec().ports[0], [], t, UID, "n", NOW)
    assert error.value.reason == "NotOwned" and "lis-1" in error.value.message


def test_description_drift_is_a_step() -> None:
    member = Member("m1", "a", "10.0.0.1", 80, None, OURS)
    wanted = [[WantedMember("a", "10.0.0.1", 80)]]
    found = plan.plan_steps(spec(description="new"), wanted, tree(member), UID, "n", NOW)
    assert [(type(s), s.description) for s in found] == [(steps.UpdateLoadBalancer, "new")]


def test_duplicate_ports_are_rejected_with_the_field() -> None:
    with pytest.raises(TerminalError) as error:
        plan.validate(spec(port(), port(443), port()))
    assert error.value.field == "spec.ports[2].port"


def test_referenced_groups_of_a_raw_spec() -> None:
    assert referenced_groups({"ports": [port(), {"realServers": {}}]}) == {"g"}
    assert referenced_groups({}) == set()


def test_monitor_warning_only_when_the_list_changes() -> None:
    ports = [{"port": 80, "unappliedMonitors": ["https:80/health/ready"]}]
    message = monitors.monitors_warning({}, ports)
    assert message is not None and "port 80: https:80/health/ready" in message
    assert monitors.monitors_warning({"ports": ports}, ports) is None
    assert (
        monitors.monitors_warning({"ports": ports}, [{"port": 80, "unappliedMonitors": []}]) is None
    )
