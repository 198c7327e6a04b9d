"""LoadBalancer: the engine drives the actuator against the in-memory Octavia; tests
feed objects and cloud state in and check cloud state and status out."""

from __future__ import annotations

import asyncio
import copy
import datetime
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from kumo.api.kinds import LOAD_BALANCER, VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.cloud.model import marker_tags
from kumo.engine.errors import TransientError
from kumo.engine.objects import Key
from kumo.engine.reconciler import Engine
from kumo.kinds.labels import GROUP_LABEL
from kumo.kinds.loadbalancer import members as lb_members
from kumo.kinds.loadbalancer.actuator import LoadBalancerActuator
from kumo.ports.model import owner_of, released_tags
from tests.unit.fakes import World, make_body
from tests.unit.fakes.loadbalancing import FakeLoadBalancing

#: The fake Octavia's calls that change a pool's members.
MEMBER_OPS = frozenset(
    {
        "replace_owned_members",
        "add_members",
        "create_member",
        "update_owned_member",
        "delete_owned_member",
    }
)
EXAMPLE = Path(__file__).parents[4] / "examples" / "loadbalancer.yaml"
GROUP = "virtualmachinegroup-sample"


def seed_spec() -> dict:
    return yaml.safe_load(EXAMPLE.read_text())["spec"]


def add_vm(
    world: World, name: str, ip: str, ready: bool = True, phase: str | None = None, **meta: Any
) -> dict:
    body = make_body(VIRTUAL_MACHINE, name, {}, labels={GROUP_LABEL: GROUP}, **meta)
    body["status"] = {
        "ip": ip,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if phase:
        body["status"]["phase"] = phase
    world.store.put("VirtualMachine", body)
    return body


class Clock:
    """The time the actuator sees; tests move it (``converge`` by each requeue delay)."""

    def __init__(self) -> None:
        self.now = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.UTC)

    def __call__(self) -> datetime.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += datetime.timedelta(seconds=seconds)


class LBWorld(World):
    clock: Clock


def new_world(vms: int = 3, spec: dict | None = None, pending_gets: int = 0) -> LBWorld:
    """``pending_gets``: 0 settles a change on the next read, so that tests of what each
    pass does count passes simply; the fake's own default (2) is Octavia's manner, which
    the tests of waiting on it use."""
    world = LBWorld(cloud=FakeLoadBalancing(pending_gets=pending_gets))
    world.clock = Clock()
    world.add(VIRTUAL_MACHINE_GROUP, GROUP, {"replicas": vms, "template": {}})
    for i in range(vms):
        add_vm(world, f"vm-{i}", f"10.0.0.{10 + i}")
    world.add(LOAD_BALANCER, "web", spec or seed_spec())
    return world


def cloud(world: World) -> FakeLoadBalancing:
    assert isinstance(world.cloud, FakeLoadBalancing)
    return world.cloud


def stored(world: World, kind: str, name: str) -> dict:
    return world.stored(kind, name)


def run(world: LBWorld, engine: Engine | None = None) -> float | None:
    return world.run(LoadBalancerActuator(clock=world.clock), "web", engine)


def converge(world: LBWorld, limit: int = 60) -> int:
    """Run passes until no requeue is asked, the clock moving on by each requeue delay."""
    engine = Engine()
    for passes in range(1, limit + 1):
        delay = run(world, engine)
        if delay is None:
            return passes
        world.clock.advance(delay)
    raise AssertionError(f"not converged after {limit} passes: {status(world)}")


def status(world: World) -> dict:
    return world.obj(LOAD_BALANCER, "web").status


def ready(world: World) -> dict:
    return status(world)["conditions"][0]


def members(world: World, port: int) -> list[str]:
    (entry,) = [p for p in status(world)["ports"] if p["port"] == port]
    return [m["name"] for m in entry["members"]]


def addresses(world: World, port: int) -> list[str]:
    (entry,) = [p for p in status(world)["ports"] if p["port"] == port]
    return [m["address"] for m in entry["members"]]


def test_create_converges_to_the_full_tree() -> None:
    world = new_world()
    assert run(world) == 1.0
    fake = cloud(world).only()
    assert status(world)["id"] == fake.lb.id  # recorded on the very first pass
    assert fake.attrs["name"] == "default-web"
    assert fake.attrs["vip_network_id"] == "net-private"
    assert fake.attrs["availability_zone"] == "dev"
    assert fake.attrs["flavor_id"] is None
    assert fake.lb.tags == marker_tags("uid-web")

    converge(world)
    assert cloud(world).calls.count("create_load_balancer") == 1
    assert cloud(world).busy == 0  # never two changes in one pass
    assert sorted((x.protocol, x.port) for x in fake.listeners.values()) == [
        ("HTTP", 80),
        ("HTTPS", 443),
    ]
    assert sorted(p.protocol for p in fake.pools.values()) == ["HTTP", "HTTPS"]
    assert sorted((m.type, m.url_path) for m in fake.monitors.values()) == [
        ("HTTP", "/health/alive"),
        ("HTTPS", "/health/alive"),
    ]
    for pool_members in fake.members.values():
        assert sorted(m.address for m in pool_members.values()) == [
            "10.0.0.10",
            "10.0.0.11",
            "10.0.0.12",
        ]
        assert all(
            m.tags == marker_tags("uid-web") and m.port in (80, 443) for m in pool_members.values()
        )
    st = status(world)
    assert (st["phase"], ready(world)["status"]) == ("Active", "True")
    assert st["vip"] == fake.lb.vip_address
    assert [p["unappliedMonitors"] for p in st["ports"]] == [
        ["https:80/health/ready"],
        ["https:443/health/ready"],
    ]
    assert all(p["listenerId"] and p["poolId"] and p["healthMonitorId"] for p in st["ports"])
    assert members(world, 80) == ["vm-0", "vm-1", "vm-2"]
    assert world.events.reasons().count("MonitorsNotApplied") == 1


def test_waits_without_changes_while_octavia_is_pending() -> None:
    world = new_world(pending_gets=2)
    run(world)
    calls = list(cloud(world).calls)
    assert run(world) == 1.0
    assert cloud(world).calls == calls
    assert status(world)["provisioningStatus"] == "PENDING_CREATE"
    assert "PENDING_CREATE" in ready(world)["message"]
    converge(world, limit=200)
    assert cloud(world).busy == 0
    assert status(world)["phase"] == "Active"


def test_a_pending_member_change_is_waited_out_without_reading_the_members_again() -> None:
    """While Octavia applies Kumo's member change, passes (each VM turning Ready is one)
    show the members as last read: a read of a 100-member pool costs Octavia 0.5 s."""
    world = new_world(vms=2)
    converge(world)
    cloud(world).pending_gets = 3  # each change keeps the LB pending for 3 looks
    add_vm(world, "vm-2", "10.0.0.12")
    run(world)  # the member update: the LB is PENDING_UPDATE
    reads = cloud(world).member_reads
    for _ in range(3):
        assert run(world) == 1.0
        assert "PENDING_UPDATE" in ready(world)["message"]
    assert cloud(world).member_reads == reads, "pending: no member read"
    converge(world)
    assert members(world, 80) == ["vm-0", "vm-1", "vm-2"]
    assert cloud(world).member_reads > reads, "ACTIVE again: the members are read"


def test_scaling_the_group_down_removes_members() -> None:
    world = new_world(vms=3)
    converge(world)
    cloud(world).calls.clear()
    for name in ("vm-1", "vm-2"):  # the group deletes them: they wait for the drain
        stored(world, "VirtualMachine", name)["metadata"]["deletionTimestamp"] = (
            "2026-11-22T00:00:00Z"
        )
    converge(world)
    assert members(world, 80) == members(world, 443) == ["vm-0"]
    # Per pool: one update drains both (weight 0), one removes both once drained.
    assert cloud(world).calls == ["replace_owned_members"] * 4


def test_a_vm_being_deleted_drains_even_when_its_status_lost_the_address() -> None:
    """A VM's finalizer writes a cut-down status (no ip): that is no sign its server is
    gone — it is still serving until drained."""
    world = new_world(vms=2)
    converge(world)
    vm = stored(world, "VirtualMachine", "vm-1")
    vm["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    vm["status"].pop("ip")
    world.run(LoadBalancerActuator(), "web")
    assert "Draining" in world.events.reasons()
    assert "vm-1" in members(world, 80), "kept at weight 0 while it drains"


def test_a_member_whose_server_is_gone_is_removed_without_draining() -> None:
    """Nothing is left to drain when the VM is gone or its server was replaced (a new
    address): the old member goes in the same update that adds the new one."""
    world = new_world(vms=3)
    converge(world)
    cloud(world).calls.clear()
    world.store.remove("VirtualMachine", "default", "vm-1")  # gone altogether
    stored(world, "VirtualMachine", "vm-2")["status"]["ip"] = "10.0.0.99"  # a new server
    converge(world)
    assert sorted(members(world, 80)) == ["vm-0", "vm-2"]
    assert "10.0.0.99" in addresses(world, 80)
    assert cloud(world).calls == ["replace_owned_members"] * 2, "one update per pool"
    assert "Draining" not in world.events.reasons()


def test_a_pass_reads_its_groups_vms_by_label_not_every_vm_of_the_namespace() -> None:
    """Ten groups in a namespace of 1,000 VMs: each LoadBalancer pass listed every VM
    (wanted members, and a map of every VM's address) — O(namespace) per pass."""
    world = new_world(vms=3)
    for i in range(20):
        other = make_body(VIRTUAL_MACHINE, f"other-{i}", {}, labels={GROUP_LABEL: "other"})
        other["status"] = {"ip": f"10.1.0.{i}", "conditions": [{"type": "Ready", "status": "True"}]}
        world.store.put("VirtualMachine", other)
    converge(world)
    assert sorted(members(world, 80)) == ["vm-0", "vm-1", "vm-2"]
    listing = world.store.list

    def no_vm_scans(kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        assert kind != "VirtualMachine", "listed every VM of the namespace"
        return listing(kind, namespace)

    world.store.list = no_vm_scans  # type: ignore[method-assign]
    world.store.remove("VirtualMachine", "default", "vm-1")  # gone: removed at once
    add_vm(world, "vm-2", "10.0.0.99")  # a new server at a new address
    add_vm(world, "vm-3", "10.0.0.13")  # scaled out
    converge(world)
    assert sorted(members(world, 80)) == ["vm-0", "vm-2", "vm-3"]
    assert "10.0.0.99" in addresses(world, 80) and "10.0.0.12" not in addresses(world, 80)
    assert "Draining" not in world.events.reasons(), "vm-1 and vm-2's old server are gone"


def test_a_repair_in_a_big_pool_changes_two_members_not_the_whole_pool() -> None:
    """At 100 members a batch update would hold the LB for seconds (it grows with the
    pool): a replaced server is one create and one delete, each a short lock."""
    world = new_world(vms=100, spec=seed_spec())
    converge(world, limit=400)
    cloud(world).calls.clear()
    stored(world, "VirtualMachine", "vm-5")["status"]["ip"] = "10.0.9.99"  # a new server
    converge(world)
    assert "10.0.9.99" in addresses(world, 80) and "10.0.0.15" not in addresses(world, 80)
    assert len(members(world, 80)) == 100
    per_pool = ["create_member", "delete_owned_member"]
    assert sorted(cloud(world).calls) == sorted(per_pool * 2), "two ports: two pools"
    assert world.events.reasons().count("MemberRemoved") == 2


def test_a_member_whose_server_the_watch_saw_go_is_removed_while_the_vm_rebuilds() -> None:
    """Out of band, a server is deleted: its VM is not Ready and has no address while a
    new server builds — no proof by itself. The watch no longer holding a live server at
    the member's address is: the member is removed at once, not drained, so the new
    member is the only change left when the new server is ready."""
    world = new_world(vms=3)
    converge(world)
    cloud(world).calls.clear()
    cloud(world).live_addresses = frozenset({"10.0.0.10", "10.0.0.12"})  # vm-1's is gone
    vm = stored(world, "VirtualMachine", "vm-1")
    vm["status"] = {"conditions": [{"type": "Ready", "status": "False"}]}  # rebuilding
    converge(world)
    assert members(world, 80) == ["vm-0", "vm-2"]
    assert "Draining" not in world.events.reasons()
    assert cloud(world).calls == ["replace_owned_members"] * 2, "one removal per pool"
    # With the address live (a VM merely not Ready), the member drains as before.
    world = new_world(vms=3)
    converge(world)
    cloud(world).live_addresses = frozenset({"10.0.0.10", "10.0.0.11", "10.0.0.12"})
    stored(world, "VirtualMachine", "vm-1")["status"]["conditions"][0]["status"] = "False"
    run(world)
    assert "Draining" in world.events.reasons()


def test_deleting_and_unready_vms_are_not_members() -> None:
    world = new_world(vms=1)
    add_vm(world, "vm-going", "10.0.0.50", deletionTimestamp="2026-11-22T00:00:00Z")
    add_vm(world, "vm-booting", "10.0.0.51", ready=False)
    converge(world)
    assert members(world, 80) == ["vm-0"]


def test_a_vm_being_deleted_is_drained() -> None:
    world = new_world(vms=2)
    converge(world)
    vm = stored(world, "VirtualMachine", "vm-1")
    vm["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    converge(world)
    assert "vm-1" not in members(world, 80) + members(world, 443)


def test_foreign_member_is_left_alone() -> None:
    world = new_world(vms=1)
    converge(world)
    pool_id = status(world)["ports"][0]["poolId"]
    foreign = cloud(world).add_member(pool_id, "by-hand", "192.168.1.1", 80)
    converge(world)
    assert foreign in cloud(world).only().members[pool_id]
    assert members(world, 80) == ["by-hand", "vm-0"]


def test_adopts_a_load_balancer_found_by_marker() -> None:
    world = new_world(vms=1)
    orphan = cloud(world).add_lb(marker_tags("uid-web"), name="default-web")
    run(world)
    assert "create_load_balancer" not in cloud(world).calls
    assert status(world)["id"] == orphan.lb.id
    assert "Adopted" in world.events.reasons()
    converge(world)
    assert len(cloud(world).lbs) == 1


def test_status_id_naming_a_foreign_load_balancer_is_never_touched() -> None:
    world = new_world(vms=1)
    theirs = cloud(world).add_lb(["team-x"], name="their-lb")
    stored(world, "LoadBalancer", "web")["status"] = {"id": theirs.lb.id}
    run(world)
    assert ready(world)["reason"] == "NotOwned" and theirs.lb.id in ready(world)["message"]
    assert cloud(world).calls == [], "nothing changed, nothing created"
    stored(world, "LoadBalancer", "web")["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    assert run(world) is None
    assert theirs.lb.id in cloud(world).lbs and "delete_load_balancer" not in cloud(world).calls


def test_region_mismatch_is_terminal_and_names_the_field() -> None:
    world = new_world(spec={**seed_spec(), "region": "osaka1"})
    assert run(world) == 60.0
    assert ready(world)["reason"] == "RegionMismatch"
    assert ready(world)["message"].startswith("spec.region:")
    assert cloud(world).lbs == {}


def test_missing_group_is_terminal_and_names_the_field() -> None:
    spec = seed_spec()
    spec["ports"][1]["realServers"]["virtualMachineGroupRef"] = "nope"
    world = new_world(spec=spec)
    run(world)
    assert ready(world)["reason"] == "GroupNotFound"
    assert ready(world)["message"].startswith("spec.ports[1].realServers.virtualMachineGroupRef:")
    assert cloud(world).lbs == {}


def test_load_balancer_in_error_is_terminal() -> None:
    world = new_world(vms=1)
    converge(world)
    fake = cloud(world).only()
    fake.lb = replace(fake.lb, provisioning_status="ERROR")
    run(world)
    assert (ready(world)["reason"], status(world)["phase"]) == ("LoadBalancerError", "Error")
    assert status(world)["ports"][0]["poolId"]  # what we knew is kept


def test_changed_listener_protocol_replaces_listener_and_pool() -> None:
    world = new_world(vms=1)
    converge(world)
    spec = seed_spec()
    spec["ports"][0].update(protocol="tcp", monitors=[{"protocol": "tcp", "port": 80}])
    spec["ports"][0]["realServers"]["protocol"] = "tcp"
    stored(world, "LoadBalancer", "web")["spec"] = spec
    converge(world)
    fake = cloud(world).only()
    assert sorted((x.protocol, x.port) for x in fake.listeners.values()) == [
        ("HTTPS", 443),
        ("TCP", 80),
    ]
    assert sorted(m.type for m in fake.monitors.values()) == ["HTTPS", "TCP"]
    assert cloud(world).busy == 0
    assert members(world, 80) == ["vm-0"]


def test_changed_monitor_is_replaced_and_removed_port_is_cleaned_up() -> None:
    world = new_world(vms=1)
    converge(world)
    spec = seed_spec()
    spec["ports"] = spec["ports"][:1]
    spec["ports"][0]["monitors"] = [{"protocol": "http", "port": 8080, "endpoint": "/ping"}]
    stored(world, "LoadBalancer", "web")["spec"] = spec
    converge(world)
    fake = cloud(world).only()
    assert [x.port for x in fake.listeners.values()] == [80]
    assert len(fake.pools) == 1
    assert [(m.type, m.url_path) for m in fake.monitors.values()] == [("HTTP", "/ping")]
    (pool_members,) = fake.members.values()
    assert [m.monitor_port for m in pool_members.values()] == [8080]
    assert status(world)["ports"][0]["unappliedMonitors"] == []


def test_description_drift_is_corrected() -> None:
    world = new_world(vms=1)
    converge(world)
    fake = cloud(world).only()
    fake.lb = replace(fake.lb, description="edited in Horizon")
    converge(world)
    assert cloud(world).only().lb.description == "generated operator"


def test_busy_load_balancer_means_wait_not_error() -> None:
    class LyingOctavia(FakeLoadBalancing):
        """Reports ACTIVE while still locked: the 409 on the change must mean "wait"."""

        async def get_load_balancer(self, lb_id: str):  # type: ignore[no-untyped-def]
            lb = self.lbs[lb_id].lb
            return replace(lb, provisioning_status="ACTIVE")

    world = new_world(vms=1)
    world.cloud = LyingOctavia()
    run(world)  # create
    assert run(world) == 1.0
    assert cloud(world).busy == 1
    assert ready(world)["reason"] == "Provisioning"
    assert "busy" in ready(world)["message"]


def test_finalize_deletes_and_is_done_only_when_gone() -> None:
    world = new_world(vms=1)
    converge(world)
    body = stored(world, "LoadBalancer", "web")
    body["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    assert run(world) == 2.0
    assert cloud(world).calls.count("delete_load_balancer") == 1
    assert cloud(world).only().lb.provisioning_status == "PENDING_DELETE"
    assert world.store.get("LoadBalancer", "default", "web") is not None
    assert run(world) is None
    assert cloud(world).lbs == {}
    assert world.store.get("LoadBalancer", "default", "web") is None  # finalizer released


def test_orphan_waits_out_a_busy_octavia_and_releases_before_the_finalizer_goes() -> None:
    """deletionPolicy Orphan while Octavia is busy with the LB (a group's deletion changes
    its pools right then): the 409 is waited for, not taken for done. The finalizer
    stays, the object says what it waits for, and goes once the LB reads back released;
    the LB stays."""
    world = new_world(vms=1, pending_gets=2)  # Octavia's manner: pending for two reads
    converge(world)
    lb = cloud(world).only().lb
    marked = list(lb.tags)
    uid = stored(world, "LoadBalancer", "web")["metadata"]["uid"]
    asyncio.run(cloud(world).update_load_balancer(lb.id, description="a pool change"))
    body = stored(world, "LoadBalancer", "web")
    body["spec"]["deletionPolicy"] = "Orphan"
    body["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"

    assert run(world) == 1.0
    assert cloud(world).busy == 1, "the release was refused (409)"
    assert owner_of(cloud(world).only().lb.tags) == uid, "still marked"
    assert world.store.get("LoadBalancer", "default", "web") is not None, "finalizer kept"
    assert status(world)["phase"] == "Releasing"
    assert status(world)["id"] == lb.id, "status kept while it waits"
    assert f"load balancer {lb.id} is busy" in ready(world)["message"]

    assert run(world) is None
    assert world.store.get("LoadBalancer", "default", "web") is None, "finalizer released"
    kept = cloud(world).only().lb
    assert kept.id == lb.id and kept.provisioning_status != "PENDING_DELETE", "LB kept"
    assert owner_of(kept.tags) is None and kept.tags == released_tags(marked, uid)
    assert "delete_load_balancer" not in cloud(world).calls


def test_the_fake_octavia_stays_pending_for_two_reads_and_refuses_changes_meanwhile() -> None:
    octavia = FakeLoadBalancing()
    fake = octavia.add_lb(marker_tags("uid-web"))
    asyncio.run(octavia.update_load_balancer(fake.lb.id, description="x"))
    seen = [
        asyncio.run(octavia.get_load_balancer(fake.lb.id)),
        asyncio.run(octavia.fetch_load_balancer(fake.lb.id)),
    ]
    assert [lb.provisioning_status for lb in seen if lb] == ["PENDING_UPDATE"] * 2
    with pytest.raises(TransientError) as busy:
        asyncio.run(octavia.set_load_balancer_tags(fake.lb.id, []))
    assert busy.value.reason == "CloudBusy"
    settled = asyncio.run(octavia.get_load_balancer(fake.lb.id))
    assert settled is not None and settled.provisioning_status == "ACTIVE"


def test_a_removed_member_and_a_deleted_load_balancer_come_back() -> None:
    """What a cloud watch's change triggers: the next reconcile repairs it."""
    world = new_world(vms=2)
    converge(world)
    pool_id = status(world)["ports"][1]["poolId"]
    member_id = next(iter(cloud(world).only().members[pool_id]))
    cloud(world).remove_member_out_of_band(pool_id, member_id)
    converge(world)
    assert len(cloud(world).only().members[pool_id]) == 2

    cloud(world).delete_out_of_band(status(world)["id"])
    converge(world)  # Kumo's LB deleted by hand comes back, members and all
    assert status(world)["id"] == cloud(world).only().lb.id
    assert len(members(world, 80)) == 2


def test_finalize_with_nothing_in_the_cloud_is_done() -> None:
    world = new_world(vms=1)
    body = stored(world, "LoadBalancer", "web")
    body["metadata"].update(
        deletionTimestamp="2026-11-22T00:00:00Z", finalizers=[LOAD_BALANCER.finalizer]
    )
    assert run(world) is None
    assert world.store.get("LoadBalancer", "default", "web") is None


def test_dependents_follow_group_references() -> None:
    world = new_world(vms=1)
    world.add(LOAD_BALANCER, "other", {**seed_spec(), "ports": []})
    actuator = LoadBalancerActuator()
    vm = stored(world, "VirtualMachine", "vm-0")
    group = stored(world, "VirtualMachineGroup", GROUP)
    web = [Key("LoadBalancer", "default", "web")]
    assert actuator.dependents("VirtualMachine", vm, world.store) == web
    assert actuator.dependents("VirtualMachineGroup", group, world.store) == web
    unlabelled = make_body(VIRTUAL_MACHINE, "solo", {})
    assert actuator.dependents("VirtualMachine", unlabelled, world.store) == []
    assert actuator.dependents("DNSRecord", vm, world.store) == []
    elsewhere = make_body(VIRTUAL_MACHINE, "x", {}, namespace="b", labels={GROUP_LABEL: GROUP})
    assert actuator.dependents("VirtualMachine", elsewhere, world.store) == []


def test_fields_octavia_cannot_change_are_reported_not_recreated() -> None:
    world = new_world(vms=1)
    converge(world)
    lb_id = status(world)["id"]
    assert status(world)["unappliedChanges"] == []
    stored(world, "LoadBalancer", "web")["spec"]["zone"] = "other-zone"
    converge(world)
    assert status(world)["id"] == lb_id, "the load balancer is not recreated behind the user's back"
    assert status(world)["unappliedChanges"] == ["spec.zone"]
    warnings = [e for e in world.events.events if e[2] == "ImmutableFieldChanged"]
    assert len(warnings) == 1 and "spec.zone" in warnings[0][3]


def test_a_vip_address_asked_for_is_octavias_and_cannot_move() -> None:
    spec = {**seed_spec(), "vipAddress": "10.0.0.254"}
    world = new_world(vms=1, spec=spec)
    converge(world)
    fake = cloud(world).only()
    assert fake.attrs["vip_address"] == "10.0.0.254"
    assert status(world)["vip"] == "10.0.0.254"
    stored(world, "LoadBalancer", "web")["spec"]["vipAddress"] = "10.0.0.253"
    converge(world)
    assert status(world)["unappliedChanges"] == ["spec.vipAddress"]
    assert cloud(world).calls.count("create_load_balancer") == 1


def test_groupobject_false_follows_the_labelled_vms_with_no_group_object() -> None:
    """A KumoCluster's API load balancer: its pool follows the control plane's VMs by
    their label alone; without ``groupObject: false`` the missing group is the user's."""
    spec = seed_spec()
    world = new_world(vms=2, spec=spec)
    world.store.remove("VirtualMachineGroup", "default", GROUP)
    run(world)
    assert ready(world)["reason"] == "GroupNotFound"
    for port in spec["ports"]:
        port["realServers"]["groupObject"] = False
    stored(world, "LoadBalancer", "web")["spec"] = spec
    stored(world, "LoadBalancer", "web")["metadata"]["generation"] = 2
    converge(world)
    assert ready(world)["status"] == "True"
    assert members(world, 80) == ["vm-0", "vm-1"]


# -- batch membership and graceful drain ---------------------------------------------------


def weights(world: LBWorld, port: int = 80) -> dict[str, int]:
    """VM name → weight of its member in the pool of ``port``, read from the fake cloud."""
    (entry,) = [p for p in status(world)["ports"] if p["port"] == port]
    pool = cloud(world).only().members[entry["poolId"]]
    return {m.name: m.weight for m in pool.values()}


def test_a_scale_out_is_one_member_update_per_pool() -> None:
    world = new_world(vms=1)
    converge(world)
    cloud(world).calls.clear()
    for i in range(1, 6):
        add_vm(world, f"vm-{i}", f"10.0.0.{10 + i}")
    converge(world)
    assert cloud(world).calls == ["add_members"] * 2, "one change per pool"
    assert members(world, 80) == members(world, 443) == [f"vm-{i}" for i in range(6)]


def test_a_deleting_vm_drains_for_drain_seconds_before_it_is_removed() -> None:
    spec = seed_spec()
    spec["ports"][0]["realServers"]["drainSeconds"] = 30
    world = new_world(vms=2, spec=spec)
    converge(world)
    start = world.clock.now
    assert start.microsecond == 0
    stored(world, "VirtualMachine", "vm-1")["metadata"]["deletionTimestamp"] = (
        "2026-11-22T12:00:00Z"
    )
    run(world)  # port 80: weight 0
    assert weights(world, 80) == {"vm-0": 1, "vm-1": 0}
    (m80,) = [m for m in status(world)["ports"][0]["members"] if m["name"] == "vm-1"]
    assert m80["drainingSince"] == start.strftime("%Y-%m-%dT%H:%M:%SZ")
    drains = [e[3] for e in world.events.events if e[2] == "Draining"]
    assert drains == ["member vm-1 (10.0.0.11:80) of port 80: weight 0 for 30s, then removed"]
    world.clock.advance(1)
    run(world)  # port 443: weight 0, for the default 10s
    assert weights(world, 443) == {"vm-0": 1, "vm-1": 0}
    world.clock.advance(1)
    delay = run(world)  # nothing to do before the first drain (port 443's) ends
    assert delay == 9.0
    assert ready(world)["status"] == "True" and "draining vm-1" in ready(world)["message"]
    world.clock.advance(delay - 0.5)
    assert run(world) == 0.5 and weights(world, 443)["vm-1"] == 0, "not a moment early"

    world.clock.advance(0.5)
    run(world)
    assert "vm-1" not in weights(world, 443)
    assert world.events.reasons().count("MemberRemoved") == 1
    assert weights(world, 80)["vm-1"] == 0, "port 80 drains for 30s"
    converge(world)
    assert weights(world, 80) == weights(world, 443) == {"vm-0": 1}
    assert "vm-1" not in members(world, 80) + members(world, 443)
    assert world.events.reasons().count("MemberRemoved") == 2
    assert world.clock.now >= start + datetime.timedelta(seconds=30)


def test_the_drain_clock_survives_a_restart() -> None:
    """A new operator process (new actuator, new engine) continues from status."""
    world = new_world(vms=2)
    converge(world)
    stored(world, "VirtualMachine", "vm-1")["metadata"]["deletionTimestamp"] = (
        "2026-11-22T12:00:00Z"
    )
    run(world)
    world.clock.advance(9)
    for _ in range(3):  # restarts: fresh actuator and engine each pass
        world.run(LoadBalancerActuator(clock=world.clock), "web", Engine())
    assert weights(world, 80)["vm-1"] == 0, "not removed before its 10s"
    world.clock.advance(1)
    world.run(LoadBalancerActuator(clock=world.clock), "web", Engine())
    assert "vm-1" not in weights(world, 80)


def test_a_weight_zero_member_without_a_recorded_start_drains_in_full() -> None:
    world = new_world(vms=2)
    converge(world)
    stored(world, "VirtualMachine", "vm-1")["metadata"]["deletionTimestamp"] = (
        "2026-11-22T12:00:00Z"
    )
    run(world)
    world.clock.advance(60)
    for port in stored(world, "LoadBalancer", "web")["status"]["ports"]:  # status lost
        for m in port["members"]:
            m.pop("drainingSince", None)
    run(world)
    assert weights(world, 80)["vm-1"] == 0, "the clock restarted rather than guessing"
    world.clock.advance(10)
    run(world)
    assert "vm-1" not in weights(world, 80)


def test_a_vm_no_longer_deleted_goes_back_to_weight_one() -> None:
    world = new_world(vms=2)
    converge(world)
    vm = stored(world, "VirtualMachine", "vm-1")
    vm["metadata"]["deletionTimestamp"] = "2026-11-22T12:00:00Z"
    run(world)
    assert weights(world, 80)["vm-1"] == 0
    del vm["metadata"]["deletionTimestamp"]  # (a VM turning Ready again, really)
    world.clock.advance(1)
    converge(world)
    assert weights(world, 80) == weights(world, 443) == {"vm-0": 1, "vm-1": 1}
    assert all("drainingSince" not in m for p in status(world)["ports"] for m in p["members"])


# -- spec.import -------------------------------------------------------------------------------


def hand_made_lb(world: LBWorld, vip_network_id: str) -> str:
    fake = cloud(world).add_lb([], name="legacy")
    fake.lb = replace(fake.lb, availability_zone="dev", vip_network_id=vip_network_id)
    return fake.lb.id


def test_import_of_an_lb_on_another_vip_network_is_refused_naming_the_field() -> None:
    world = new_world()
    lb_id = hand_made_lb(world, "net-public")
    stored(world, "LoadBalancer", "web")["spec"]["import"] = {"name": "legacy"}
    run(world)
    assert (ready(world)["reason"], ready(world)["message"][:13]) == (
        "ImportMismatch",
        "spec.vipType:",
    )
    assert cloud(world).lbs[lb_id].lb.tags == [], "not marked"
    assert len(cloud(world).lbs) == 1, "not replaced, nothing created"


def test_an_imported_lb_is_marked_and_its_ports_are_built() -> None:
    world = new_world()
    lb_id = hand_made_lb(world, "net-private")
    stored(world, "LoadBalancer", "web")["spec"]["import"] = {"id": lb_id}
    converge(world)
    assert set(marker_tags("uid-web")) <= set(cloud(world).lbs[lb_id].lb.tags)
    assert status(world)["id"] == lb_id and ready(world)["status"] == "True"
    assert len(cloud(world).lbs) == 1
    assert "Imported" in world.events.reasons()


def test_only_member_changes_of_a_vm_wake_the_load_balancer() -> None:
    """A VM building, or one the pools already dropped, wakes no LoadBalancer: in a big
    group every member's status writes and deletion each made it pass over all members."""
    world = new_world(vms=3)
    converge(world)
    actuator = LoadBalancerActuator()
    web = [Key("LoadBalancer", "default", "web")]

    def wakes(vm: dict) -> bool:
        found = actuator.dependents("VirtualMachine", vm, world.store)
        assert found in ([], web)
        return found == web

    serving = copy.deepcopy(stored(world, "VirtualMachine", "vm-0"))
    assert not wakes(serving), "listed in every port at its address: nothing to do"
    building = add_vm(world, "vm-new", "10.0.0.99", ready=False)
    assert not wakes(building)
    ready_now = copy.deepcopy(building)
    ready_now["status"]["conditions"][0]["status"] = "True"
    assert wakes(ready_now)
    deleting = copy.deepcopy(serving)
    deleting["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    assert wakes(deleting), "listed and leaving: its drain starts"
    moved = copy.deepcopy(serving)
    moved["status"]["ip"] = "10.0.0.77"
    assert wakes(moved), "a new server at a new address"
    gone = copy.deepcopy(deleting)
    gone["metadata"]["name"] = "vm-dropped-long-ago"
    assert not wakes(gone)
    draining = stored(world, "LoadBalancer", "web")
    draining["status"]["ports"][0]["members"][0]["weight"] = 0
    assert wakes(serving), "wanted again while draining"


def test_a_group_status_change_wakes_only_a_load_balancer_that_waits_for_it() -> None:
    """readyReplicas moves with every member: a Ready LoadBalancer learns of members
    from their own events, so the group's status writes do not make it pass again."""
    world = new_world(vms=2)
    converge(world)
    actuator = LoadBalancerActuator()
    web = [Key("LoadBalancer", "default", "web")]
    group = copy.deepcopy(stored(world, "VirtualMachineGroup", GROUP))
    group["status"] = {"readyReplicas": 2}
    assert actuator.dependents("VirtualMachineGroup", group, world.store) == []
    going = copy.deepcopy(group)
    going["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    assert actuator.dependents("VirtualMachineGroup", going, world.store) == web
    stored(world, "LoadBalancer", "web")["status"]["conditions"][0]["status"] = "False"
    assert actuator.dependents("VirtualMachineGroup", group, world.store) == web


def test_a_pass_builds_only_the_changed_vms_members_and_a_fresh_actuator_agrees() -> None:
    """The LB derives each VM's wanted member again only from a changed body (per port),
    so a pass after one VM's change reads that VM only; a fresh actuator (a restart,
    nothing cached) wants the same members; a port's changed backend port is not
    answered from the cache."""
    from kumo.api.loadbalancer import LoadBalancerSpec

    world = new_world(vms=30)
    actuator = LoadBalancerActuator(clock=world.clock)
    engine = Engine()

    def settle() -> None:
        for _ in range(60):
            delay = world.run(actuator, "web", engine)
            if delay is None:
                return
            world.clock.advance(delay)
        raise AssertionError(f"not converged: {status(world)}")

    def derived() -> int:
        return actuator.wanted.derived()

    settle()
    assert len(members(world, 80)) == 30 and len(members(world, 443)) == 30
    before = derived()
    add_vm(world, "vm-5", "10.0.0.15", ready=False)  # a watch event replaces its body
    settle()
    assert derived() - before == 2, "vm-5 again, once per port; no other VM"
    assert "vm-5" not in members(world, 80) and len(members(world, 443)) == 29
    obj = world.obj(LOAD_BALANCER, "web")
    spec = LoadBalancerSpec.model_validate(obj.spec)
    warm, _ = actuator.wanted.of(world.store, obj, spec)
    cold, _ = LoadBalancerActuator(clock=world.clock).wanted.of(world.store, obj, spec)
    assert warm == cold and len(warm[0]) == 29
    changed = copy.deepcopy(obj.spec)
    changed["ports"][0]["realServers"]["port"] = 8080
    moved, _ = actuator.wanted.of(world.store, obj, LoadBalancerSpec.model_validate(changed))
    assert {w.port for w in moved[0]} == {8080} and {w.port for w in moved[1]} == {443}


def member_writes(world: LBWorld) -> int:
    return sum(c in MEMBER_OPS for c in cloud(world).calls)


def test_a_pool_being_filled_takes_its_new_members_in_one_batch_per_interval() -> None:
    """While more of the group's VMs are building, VMs turning Ready within one interval
    of the pool's last member change go in together, and the LoadBalancer says so;
    the last VM of the fill goes in at once, without waiting for the interval."""
    world = new_world(vms=1)
    converge(world)
    actuator = LoadBalancerActuator(clock=world.clock)
    engine = Engine()
    for i in range(1, 5):
        add_vm(world, f"vm-{i}", f"10.0.0.{10 + i}", ready=False, phase="Building")
    writes = member_writes(world)
    add_vm(world, "vm-1", "10.0.0.11", phase="Running")  # no batch recorded: at once
    assert world.run(actuator, "web", engine) == 1.0
    world.clock.advance(1.0)
    world.run(actuator, "web", engine)
    assert member_writes(world) == writes + 2  # one batch per pool
    world.clock.advance(1.0)
    assert world.run(actuator, "web", engine) is None
    assert members(world, 80) == members(world, 443) == ["vm-0", "vm-1"]

    add_vm(world, "vm-2", "10.0.0.12", phase="Running")
    held = world.run(actuator, "web", engine)
    world.clock.advance(1.0)
    add_vm(world, "vm-3", "10.0.0.13", phase="Running")
    held = world.run(actuator, "web", engine)
    assert held is not None and 0 < held < lb_members.FILL_BATCH_SECONDS
    assert member_writes(world) == writes + 2, "held: nothing written"
    assert ready(world)["status"] == "False"
    message = ready(world)["message"]
    due = lb_members.ceil_second(world.clock.now + datetime.timedelta(seconds=held))
    assert message.startswith(
        f"new members wait for their pool's next batch at {due:%Y-%m-%dT%H:%M:%SZ}"
    )
    world.clock.advance(1.0)
    assert world.run(actuator, "web", engine) == held - 1.0
    assert ready(world)["message"] == message, "the same status until the batch goes"
    world.clock.advance(held - 1.0)
    world.run(actuator, "web", engine)
    world.clock.advance(1.0)
    world.run(actuator, "web", engine)
    assert member_writes(world) == writes + 4, "vm-2 and vm-3 in one batch per pool"
    world.clock.advance(1.0)
    assert world.run(actuator, "web", engine) is None
    assert members(world, 80) == members(world, 443) == [f"vm-{i}" for i in range(4)]

    start = world.clock.now
    add_vm(world, "vm-4", "10.0.0.14", phase="Running")  # the last: nothing more coming
    for _ in range(5):
        delay = world.run(actuator, "web", engine)
        if delay is None:
            break
        world.clock.advance(delay)
    assert members(world, 80) == members(world, 443) == [f"vm-{i}" for i in range(5)]
    assert (world.clock.now - start).total_seconds() < lb_members.FILL_BATCH_SECONDS
    assert ready(world)["status"] == "True"


def test_a_vm_stuck_in_error_does_not_hold_a_fill() -> None:
    """Only VMs on their way count: one in Error would hold the pool for ever."""
    world = new_world(vms=1)
    converge(world)
    actuator = LoadBalancerActuator(clock=world.clock)
    engine = Engine()
    world.run(actuator, "web", engine)
    add_vm(world, "vm-1", "10.0.0.11", ready=False, phase="Error")
    add_vm(world, "vm-2", "10.0.0.12", phase="Running")
    writes = member_writes(world)
    world.run(actuator, "web", engine)
    assert member_writes(world) == writes + 1, "vm-2 added at once"
