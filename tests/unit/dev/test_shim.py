"""dev/shim/shim.py's loop against an in-process stand-in of Nova, Neutron and Octavia,
with node.sh replaced by a recorder (a "booted" node's first process is this test's
own, so it is alive as the real one would be): who gets a node, who loses it, what a
restarted shim adopts, which disks it deletes, what the VIPs forward to."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import shim
from shim import Fixed, Nodes, Server, Shim

CP = "6f1c2a3e-0000-4000-8000-000000000001"
WORKER = "6f1c2a3e-0000-4000-8000-000000000002"
PLAIN = "6f1c2a3e-0000-4000-8000-000000000003"
USER_DATA = (
    "## template: jinja\n#cloud-config\nruncmd:\n  - 'echo {{ ds.meta_data.local_hostname }}'\n"
)
VIP = ("10.0.0.100", 6443)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def server(sid: str, name: str, status: str = "ACTIVE", user_data: str = USER_DATA) -> Server:
    return Server(sid, name, name, status, shim=True, user_data=b64(user_data))


class Cloud:
    """Nova, Neutron and Octavia as the shim reads them."""

    region = "tokyo1"

    def __init__(self) -> None:
        self.listed = {CP: server(CP, "cp-0"), WORKER: server(WORKER, "md-0")}
        self.listed[PLAIN] = Server(PLAIN, "plain", "plain", "ACTIVE", shim=False)
        self.ports = {
            CP: Fixed("10.0.0.5", 24, "subnet-1"),
            WORKER: Fixed("10.0.0.6", 24, "subnet-1"),
        }
        self.balancers: dict[str, dict[tuple[str, int], list[tuple[str, int]]]] = {}
        self.failing = False

    def servers(self) -> dict[str, Server]:
        if self.failing:
            raise ConnectionError("nova-api answered 503")
        return dict(self.listed)

    def fixed(self, sid: str) -> Fixed | None:
        return self.ports.get(sid)

    def vips(self, subnets: set[str]) -> dict[tuple[str, int], list[tuple[str, int]]]:
        return {v: m for s, lbs in self.balancers.items() if s in subnets for v, m in lbs.items()}


class NodeSh:
    """Records node.sh's calls; ``start`` records this process as the node's first."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, args: list[str]) -> None:
        self.calls.append(args)
        if args[0] == "start":
            stat = Path(f"/proc/{os.getpid()}/stat").read_text()
            Path(args[1], "init.pid").write_text(f"{os.getpid()} {shim.start_time(stat)}")
        elif args[0] == "stop":
            Path(args[1], "init.pid").unlink(missing_ok=True)

    def of(self, verb: str) -> list[list[str]]:
        return [c for c in self.calls if c[0] == verb]


class Proxy:
    def __init__(self) -> None:
        self.served: dict[Any, Any] = {}

    def update(self, wanted: dict[Any, Any]) -> dict[Any, str]:
        self.served = dict(wanted)
        return {}

    def members(self) -> dict[Any, Any]:
        return dict(self.served)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def world(tmp_path: Path) -> SimpleNamespace:
    cloud, node_sh, clock = Cloud(), NodeSh(), Clock()
    nodes = Nodes(tmp_path / "shim" / "nodes", node_sh)
    return SimpleNamespace(
        cloud=cloud,
        node_sh=node_sh,
        clock=clock,
        nodes=nodes,
        shim=Shim(cloud, nodes, Proxy(), clock),
        status=lambda: json.loads((tmp_path / "shim" / "status.json").read_text()),
    )


def test_active_servers_with_the_metadata_boot_from_their_user_data(world: Any) -> None:
    world.shim.tick()
    starts = world.node_sh.of("start")
    disk = world.nodes.root / CP
    assert starts == [
        ["start", str(disk), "cp-0", "10.0.0.5/24"],
        ["start", str(world.nodes.root / WORKER), "md-0", "10.0.0.6/24"],
    ]
    assert "echo cp-0" in (disk / "cloud-init" / "runcmd.sh").read_text()
    assert json.loads((disk / "node.json").read_text())["subnet_id"] == "subnet-1"
    status = world.status()
    assert set(status["nodes"]) == {CP, WORKER}  # the server without the metadata: none
    assert status["nodes"][CP]["state"] == "running" and not status["nodes"][CP]["adopted"]
    world.shim.tick()
    assert len(world.node_sh.of("start")) == 2  # running nodes are left alone


def test_a_server_being_built_or_without_a_port_gets_its_node_later(world: Any) -> None:
    world.cloud.listed[CP] = server(CP, "cp-0", status="BUILD")
    del world.cloud.ports[WORKER]
    world.shim.tick()
    assert world.node_sh.of("start") == []
    world.cloud.listed[CP] = server(CP, "cp-0")
    world.cloud.ports[WORKER] = Fixed("10.0.0.6", 24, "subnet-1")
    world.shim.tick()
    assert [c[2] for c in world.node_sh.of("start")] == ["cp-0", "md-0"]


def test_user_data_outside_the_subset_gets_no_node_and_the_status_says_why(world: Any) -> None:
    world.cloud.listed[WORKER] = server(WORKER, "md-0", user_data="#cloud-config\nusers: []\n")
    world.shim.tick()
    world.shim.tick()
    assert [c[2] for c in world.node_sh.of("start")] == ["cp-0"]
    assert "not supported by the boot shim: users" in world.status()["refused"][WORKER]


def test_a_server_no_longer_active_stops_its_node_and_keeps_its_disk(world: Any) -> None:
    world.shim.tick()
    world.cloud.listed[WORKER] = server(WORKER, "md-0", status="SHUTOFF")
    world.shim.tick()
    assert world.node_sh.of("stop") == [["stop", str(world.nodes.root / WORKER)]]
    assert (world.nodes.root / WORKER / "node.json").exists()
    assert world.status()["nodes"][WORKER]["state"] == "stopped"


def test_a_server_gone_from_nova_loses_its_node_and_its_disk(world: Any) -> None:
    world.shim.tick()
    del world.cloud.listed[WORKER]
    world.shim.tick()
    assert world.node_sh.of("stop") == [["stop", str(world.nodes.root / WORKER)]]
    assert not (world.nodes.root / WORKER).exists()
    assert (world.nodes.root / CP).exists()


def test_a_listing_that_fails_decides_nothing(world: Any) -> None:
    world.shim.tick()
    world.cloud.failing = True
    calls = len(world.node_sh.calls)
    world.shim.tick()
    assert len(world.node_sh.calls) == calls
    assert (world.nodes.root / WORKER).exists() and (world.nodes.root / CP).exists()
    assert world.status()["errors"] == ["listing Nova's servers failed: nova-api answered 503"]


def test_a_restarted_shim_adopts_the_nodes_whose_first_process_still_runs(world: Any) -> None:
    world.shim.tick()
    again = Shim(world.cloud, world.nodes, Proxy(), world.clock)
    again.tick()
    assert len(world.node_sh.of("start")) == 2
    assert all(n["adopted"] for n in world.status()["nodes"].values())


def test_a_recorded_pid_now_of_another_process_is_not_taken_for_the_node(world: Any) -> None:
    world.shim.tick()
    pid, started = (world.nodes.root / CP / "init.pid").read_text().split()
    (world.nodes.root / CP / "init.pid").write_text(f"{pid} {int(started) + 1}")
    again = Shim(world.cloud, world.nodes, Proxy(), world.clock)
    again.tick()
    assert [c[2] for c in world.node_sh.of("start")] == ["cp-0", "md-0", "cp-0"]


def test_a_node_that_keeps_dying_is_booted_again_at_most_every_30_s(world: Any) -> None:
    world.shim.tick()
    (world.nodes.root / CP / "init.pid").unlink()  # its first process died
    world.clock.now += shim.RESTART_AFTER - 1
    world.shim.tick()
    assert len(world.node_sh.of("start")) == 2
    world.clock.now += 1
    world.shim.tick()
    assert len(world.node_sh.of("start")) == 3


def test_a_vip_in_the_nodes_subnet_is_put_on_the_bridge_and_forwards_to_its_members(
    world: Any,
) -> None:
    world.cloud.balancers["subnet-1"] = {VIP: [("10.0.0.5", 6443)]}
    world.cloud.balancers["subnet-other"] = {("10.9.0.100", 6443): [("10.9.0.5", 6443)]}
    world.shim.tick()
    assert world.node_sh.of("vip") == [["vip", "add", "10.0.0.100"]]
    assert world.shim.proxy.served == {VIP: [("10.0.0.5", 6443)]}
    assert world.status()["vips"] == {"10.0.0.100:6443": ["10.0.0.5:6443"]}
    world.cloud.balancers.clear()  # the load balancer is deleted
    world.shim.tick()
    assert world.shim.proxy.served == {}
    assert world.node_sh.of("vip")[-1] == ["vip", "del", "10.0.0.100"]


def test_members_down_with_weight_0_or_in_error_get_no_traffic() -> None:
    def member(address: str, **extra: Any) -> dict[str, Any]:
        return {"address": address, "protocol_port": 6443, **extra}

    members = [
        member("10.0.0.5"),
        member("10.0.0.6", admin_state_up=False),
        member("10.0.0.7", weight=0),
        member("10.0.0.8", operating_status="ERROR"),
        member("10.0.0.9", weight=1, operating_status="NO_MONITOR"),
    ]
    assert shim.serving(members) == [("10.0.0.5", 6443), ("10.0.0.9", 6443)]


def test_a_disk_is_only_ever_a_server_id_directly_under_the_nodes_directory(
    tmp_path: Path,
) -> None:
    root = tmp_path / "nodes"
    assert shim.disk_of(root, CP) == root / CP
    for bad in ("../x", "..", CP + "/..", "nodes", CP.upper()):
        with pytest.raises(ValueError):
            shim.disk_of(root, bad)
    (root / "not-a-server").mkdir(parents=True)
    assert Nodes(root, NodeSh()).found() == {}


def test_novas_admin_fields_make_the_server() -> None:
    body = {
        "id": CP,
        "name": "Cp 0",
        "status": "ACTIVE",
        "metadata": {"kumo.dev:boot-shim": "true"},
        "OS-EXT-SRV-ATTR:hostname": "cp-0",
        "OS-EXT-SRV-ATTR:user_data": b64(USER_DATA),
        "tenant_id": "p1",
        "OS-EXT-AZ:availability_zone": "nova",
    }
    found = shim.server_of(body)
    assert (found.hostname, found.shim, found.project_id, found.availability_zone) == (
        "cp-0",
        True,
        "p1",
        "nova",
    )
    assert not shim.server_of({"id": PLAIN, "metadata": {"kumo.dev:boot-shim": "no"}}).shim


def test_a_nodes_cost_is_read_from_its_cgroup(tmp_path: Path) -> None:
    (tmp_path / "cpuacct/kumo-shim" / CP).mkdir(parents=True)
    (tmp_path / "cpuacct/kumo-shim" / CP / "cpuacct.usage").write_text("17600000000\n")
    (tmp_path / "memory/kumo-shim" / CP).mkdir(parents=True)
    stat = "rss 1\ntotal_cache 5\ntotal_rss 325058560\n"
    (tmp_path / "memory/kumo-shim" / CP / "memory.stat").write_text(stat)
    assert shim.cost(CP, tmp_path) == {"cpu_s": 17.6, "rss_mib": 310.0}
    assert shim.cost(WORKER, tmp_path) == {}


class Response:
    def __init__(self, body: dict[str, Any], status_code: int = 200) -> None:
        self.body, self.status_code, self.text = body, status_code, json.dumps(body)

    def json(self) -> dict[str, Any]:
        return self.body


class Service:
    """An openstacksdk proxy's ``get`` over canned answers by path."""

    def __init__(self, answers: dict[str, dict[str, Any]]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, Any, Any]] = []

    def get(self, path: str, params: Any = None, microversion: Any = None) -> Response:
        self.asked.append((path, params, microversion))
        return Response(self.answers[path]) if path in self.answers else Response({}, 404)


def test_the_admin_reads_page_through_nova_and_find_the_address_and_the_vips() -> None:
    nova = Service(
        {
            "/servers/detail": {
                "servers": [{"id": CP, "name": "cp-0", "status": "ACTIVE"}],
                "servers_links": [{"rel": "next", "href": "http://nova/servers/detail?marker=1"}],
            },
            "http://nova/servers/detail?marker=1": {
                "servers": [{"id": WORKER, "name": "md-0", "status": "BUILD"}]
            },
        }
    )
    neutron = Service(
        {
            "/ports": {
                "ports": [
                    {
                        "id": "p1",
                        "fixed_ips": [
                            {"ip_address": "fd00::5", "subnet_id": "v6"},
                            {"ip_address": "10.0.0.5", "subnet_id": "subnet-1"},
                        ],
                    }
                ]
            },
            "/subnets/subnet-1": {"subnet": {"cidr": "10.0.0.0/20"}},
        }
    )
    lbs = {"id": "lb1", "vip_address": "10.0.0.100", "vip_subnet_id": "subnet-1"}
    octavia = Service(
        {
            "/lbaas/loadbalancers": {
                "loadbalancers": [lbs, {**lbs, "id": "lb2", "vip_subnet_id": "x"}]
            },
            "/lbaas/listeners": {
                "listeners": [
                    {
                        "protocol_port": 6443,
                        "loadbalancers": [{"id": "lb1"}],
                        "default_pool_id": "pool1",
                    },
                    {
                        "protocol_port": 80,
                        "loadbalancers": [{"id": "lb1"}],
                        "default_pool_id": "pool2",
                    },
                    {
                        "protocol_port": 6443,
                        "loadbalancers": [{"id": "lb2"}],
                        "default_pool_id": "pool3",
                    },
                ]
            },
            "/lbaas/pools/pool1/members": {
                "members": [{"address": "10.0.0.5", "protocol_port": 6443, "weight": 1}]
            },
        }
    )
    conn = SimpleNamespace(compute=nova, network=neutron, load_balancer=octavia)
    cloud = shim.Cloud(conn)
    assert list(cloud.servers()) == [CP, WORKER]
    assert nova.asked[0] == ("/servers/detail", {"all_tenants": "True"}, "2.3")
    assert cloud.fixed(CP) == Fixed("10.0.0.5", 20, "subnet-1")
    assert cloud.vips({"subnet-1"}) == {VIP: [("10.0.0.5", 6443)]}
