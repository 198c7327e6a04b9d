"""The boot shim (issue 42, deliverable 3): real kubeadm nodes for the lab's fake Nova.

The lab's Nova runs the fake driver: a server goes ACTIVE and nothing boots. Every 2 s
this daemon lists Nova's servers as admin (every project). A server that is ACTIVE and
whose metadata has ``kumo.dev:boot-shim: "true"`` gets a node: its user data, as Nova
holds it, is checked against the cloud-init subset CAPI's kubeadm bootstrap writes
(cloudinit.py; anything else is refused by name and the server gets no node), and
dev/shim/node.sh boots it in namespaces of its own with the server's Neutron fixed
address on the bridge ``kumo-shim0``. A server that is no longer ACTIVE stops its node;
a server Nova no longer lists loses its node's disk too. The load balancers with a
listener on 6443 in the nodes' subnets get their VIP on the bridge, forwarded to the
pool members Octavia holds (proxy.py).

What it keeps: one directory per node under ``.kumo-dev/shim/nodes/<server id>``
(node.sh's disk and the PID and start time of the node's first process), and
``.kumo-dev/shim/status.json`` (every node, refusal and VIP, for the tests and for
people). Nodes outlive the shim: a restarted shim adopts every node whose recorded
process still runs (same PID, same start time). It deletes a disk only under that
directory, only for a server absent from a complete listing of Nova.

    python dev/shim/shim.py [--interval 2] [--cloud kumo-admin]   (dev/shim/up.sh)
"""

from __future__ import annotations

import argparse
import base64
import binascii
import contextlib
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import cloudinit
from proxy import Address, Proxy

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STATE = Path(os.environ.get("KUMO_STATE", ROOT / ".kumo-dev"))
NODES = STATE / "shim" / "nodes"
STATUS = STATE / "shim" / "status.json"
NODE_SH = HERE / "node.sh"
CGROUPS = Path("/sys/fs/cgroup")
#: The metadata that asks for a node (what a KumoMachine sets on its server).
METADATA_KEY = "kumo.dev:boot-shim"
API_PORT = 6443
#: Seconds between two starts of one server's node (a node that keeps dying).
RESTART_AFTER = 30.0
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def say(message: str) -> None:
    print(f"[shim {time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- what the cloud says, and what the shim finds ------------------------------------------


@dataclass(frozen=True)
class Server:
    id: str
    name: str
    hostname: str
    status: str
    shim: bool
    user_data: str = ""  # base64, as Nova holds it
    project_id: str = ""
    availability_zone: str = ""


@dataclass(frozen=True)
class Fixed:
    """A server's Neutron fixed address, the prefix of its subnet, and the subnet."""

    address: str
    prefix: int
    subnet_id: str


@dataclass(frozen=True)
class Node:
    """A node disk as found: its server, and whether its first process still runs."""

    server_id: str
    alive: bool
    pid: int | None = None
    subnet_id: str = ""


@dataclass(frozen=True)
class Plan:
    """What one pass does: boot these servers' nodes, stop these (disk kept), and stop
    and forget these (their servers are gone from Nova)."""

    start: tuple[str, ...] = ()
    stop: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()


def server_of(body: Mapping[str, Any]) -> Server:
    """One server of Nova's detailed listing (microversion 2.3: the admin-only
    ``OS-EXT-SRV-ATTR:*`` fields, the user data among them)."""
    metadata = body.get("metadata") or {}
    return Server(
        id=body["id"],
        name=body.get("name") or "",
        hostname=body.get("OS-EXT-SRV-ATTR:hostname") or body.get("name") or "",
        status=body.get("status") or "",
        shim=str(metadata.get(METADATA_KEY, "")).lower() == "true",
        user_data=body.get("OS-EXT-SRV-ATTR:user_data") or "",
        project_id=body.get("tenant_id") or "",
        availability_zone=body.get("OS-EXT-AZ:availability_zone") or "",
    )


def plan(
    servers: Mapping[str, Server],
    nodes: Mapping[str, Node],
    refused: Collection[str],
    started: Mapping[str, float],
    now: float,
) -> Plan:
    """A node runs while its server is listed ACTIVE with the shim's metadata and its
    user data was not refused; its disk goes once Nova no longer lists the server (a
    listing that failed never gets here)."""
    start, stop, delete = [], [], []
    for sid, server in sorted(servers.items()):
        if server.status == "DELETED":
            continue  # its node goes with its disk, below
        wanted = server.shim and server.status == "ACTIVE" and sid not in refused
        running = sid in nodes and nodes[sid].alive
        if wanted and not running and now - started.get(sid, -RESTART_AFTER) >= RESTART_AFTER:
            start.append(sid)
        elif running and not wanted:
            stop.append(sid)
    for sid in sorted(nodes):
        if sid not in servers or servers[sid].status == "DELETED":
            delete.append(sid)
    return Plan(tuple(start), tuple(stop), tuple(delete))


def serving(members: Sequence[Mapping[str, Any]]) -> list[Address]:
    """The members a VIP forwards to: up, weight above 0, not in error."""
    return [
        (m["address"], int(m["protocol_port"]))
        for m in members
        if m.get("admin_state_up", True)
        and int(m.get("weight", 1)) > 0
        and m.get("operating_status") != "ERROR"
        and m.get("provisioning_status") != "DELETED"
    ]


def start_time(stat: str) -> int:
    """A process's start time (clock ticks after boot) from ``/proc/<pid>/stat``: with
    the PID it tells the process from a later one given the same PID."""
    return int(stat.rsplit(")", 1)[1].split()[19])


def alive(pid: int, started: int) -> bool:
    try:
        return start_time(Path(f"/proc/{pid}/stat").read_text()) == started
    except (OSError, ValueError, IndexError):
        return False


def cost(server_id: str, cgroups: Path = CGROUPS) -> dict[str, float]:
    """What a node has used so far, from its cgroup: CPU seconds and anonymous RSS (MiB)."""
    out: dict[str, float] = {}
    with contextlib.suppress(OSError, ValueError):
        usage = (cgroups / "cpuacct" / "kumo-shim" / server_id / "cpuacct.usage").read_text()
        out["cpu_s"] = round(int(usage) / 1e9, 1)
    with contextlib.suppress(OSError, ValueError):
        stat = (cgroups / "memory" / "kumo-shim" / server_id / "memory.stat").read_text()
        fields = dict(line.split() for line in stat.splitlines() if line.count(" ") == 1)
        out["rss_mib"] = round(int(fields["total_rss"]) / 2**20, 1)
    return out


# --- OpenStack, as admin --------------------------------------------------------------------


class Cloud:
    """The reads the shim makes, through an openstacksdk connection as admin."""

    def __init__(self, conn: Any, region: str = "") -> None:
        self.conn = conn
        self.region = region
        self._subnets: dict[str, str] = {}

    def servers(self) -> dict[str, Server]:
        """Every server of every project, every page; raises when any page fails."""
        out: dict[str, Server] = {}
        url: str | None = "/servers/detail"
        params: dict[str, str] | None = {"all_tenants": "True"}
        while url:
            response = self.conn.compute.get(url, params=params, microversion="2.3")
            if response.status_code != 200:
                raise RuntimeError(f"GET {url}: {response.status_code} {response.text[:200]}")
            body = response.json()
            for item in body.get("servers", []):
                out[item["id"]] = server_of(item)
            nexts = [ln["href"] for ln in body.get("servers_links", []) if ln.get("rel") == "next"]
            url, params = (nexts[0], None) if nexts else (None, None)
        return out

    def fixed(self, server_id: str) -> Fixed | None:
        """The server's first IPv4 fixed address (None while Neutron has no port)."""
        ports = self._get(self.conn.network, "/ports", {"device_id": server_id})["ports"]
        for port in sorted(ports, key=lambda p: p["id"]):
            for ip in port.get("fixed_ips") or []:
                if ipaddress.ip_address(ip["ip_address"]).version == 4:
                    cidr = self._subnet(ip["subnet_id"])
                    prefix = ipaddress.ip_network(cidr).prefixlen
                    return Fixed(ip["ip_address"], prefix, ip["subnet_id"])
        return None

    def _subnet(self, subnet_id: str) -> str:
        if subnet_id not in self._subnets:
            body = self._get(self.conn.network, f"/subnets/{subnet_id}")
            self._subnets[subnet_id] = body["subnet"]["cidr"]
        return self._subnets[subnet_id]

    def vips(self, subnets: Collection[str]) -> dict[Address, list[Address]]:
        """VIP:6443 → the members to forward to, for the load balancers in ``subnets``."""
        lb = self.conn.load_balancer
        balancers = {
            b["id"]: b
            for b in self._get(lb, "/lbaas/loadbalancers")["loadbalancers"]
            if b.get("vip_subnet_id") in subnets and b.get("provisioning_status") != "DELETED"
        }
        out: dict[Address, list[Address]] = {}
        for listener in self._get(lb, "/lbaas/listeners")["listeners"]:
            owners = [x["id"] for x in listener.get("loadbalancers") or []]
            if listener.get("protocol_port") != API_PORT or not owners:
                continue
            balancer = balancers.get(owners[0])
            pool = listener.get("default_pool_id")
            if balancer is None or not pool:
                continue
            members = self._get(lb, f"/lbaas/pools/{pool}/members")["members"]
            out[(balancer["vip_address"], API_PORT)] = serving(members)
        return out

    @staticmethod
    def _get(service: Any, path: str, params: dict[str, str] | None = None) -> Any:
        response = service.get(path, params=params)
        if response.status_code != 200:
            raise RuntimeError(f"GET {path}: {response.status_code} {response.text[:200]}")
        return response.json()


# --- the nodes on this host -----------------------------------------------------------------

Run = Callable[[list[str]], None]


def run_node_sh(args: list[str]) -> None:
    subprocess.run(["bash", str(NODE_SH), *args], check=True, stdin=subprocess.DEVNULL)


def disk_of(root: Path, server_id: str) -> Path:
    """A node's disk: ``root/<server id>``, never anything else."""
    if not UUID.fullmatch(server_id):
        raise ValueError(f"not a server ID: {server_id!r}")
    path = root / server_id
    if path.resolve().parent != root.resolve():
        raise ValueError(f"{path} is not a directory of {root}")
    return path


class Nodes:
    """The node disks under ``root``; node.sh (``run``) does what needs root's tools."""

    def __init__(self, root: Path = NODES, run: Run = run_node_sh) -> None:
        self.root = root
        self.run = run

    def found(self) -> dict[str, Node]:
        out = {}
        for path in sorted(self.root.glob("*")) if self.root.is_dir() else []:
            if not UUID.fullmatch(path.name):
                continue
            pid, started = _recorded(path / "init.pid")
            meta = _json(path / "node.json")
            running = pid is not None and alive(pid, started)
            out[path.name] = Node(path.name, running, pid, str(meta.get("subnet_id", "")))
        return out

    def start(self, server: Server, fixed: Fixed, scripts: Mapping[str, str]) -> None:
        """Write the node's cloud-init scripts and description, then boot it."""
        disk = disk_of(self.root, server.id)
        (disk / "cloud-init").mkdir(parents=True, exist_ok=True)
        for name, text in scripts.items():
            (disk / "cloud-init" / name).write_text(text)
        meta = {"server_id": server.id, "hostname": server.hostname, **asdict(fixed)}
        (disk / "node.json").write_text(json.dumps(meta, indent=1))
        self.run(["start", str(disk), server.hostname, f"{fixed.address}/{fixed.prefix}"])

    def stop(self, server_id: str) -> None:
        self.run(["stop", str(disk_of(self.root, server_id))])

    def delete(self, server_id: str) -> None:
        """Stop the node, then remove its disk, unless something is still mounted in it."""
        disk = disk_of(self.root, server_id)
        self.stop(server_id)
        real = disk.resolve()
        mounts = Path("/proc/mounts").read_text().splitlines()
        inside = [m for m in mounts if f" {real}/" in m or f" {real} " in m]
        if inside:
            raise RuntimeError(f"{disk} still has mounts ({len(inside)}): not deleted")
        shutil.rmtree(disk)

    def vip(self, action: str, address: str) -> None:
        self.run(["vip", action, address])


def _recorded(path: Path) -> tuple[int | None, int]:
    with contextlib.suppress(OSError, ValueError):
        pid, started = path.read_text().split()
        return int(pid), int(started)
    return None, 0


def _json(path: Path) -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError):
        return dict(json.loads(path.read_text()))
    return {}


# --- the daemon -----------------------------------------------------------------------------


@dataclass
class Shim:
    """One pass every interval (``tick``): read Nova, decide, act, serve the VIPs."""

    cloud: Any
    nodes: Nodes
    proxy: Any
    clock: Callable[[], float] = time.monotonic
    refused: dict[str, str] = field(default_factory=dict)
    started: dict[str, float] = field(default_factory=dict)
    adopted: set[str] = field(default_factory=set)
    addresses: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    first: bool = True

    def tick(self) -> None:
        self.errors = []
        try:
            servers = self.cloud.servers()
        except Exception as error:  # nothing is decided on a listing that failed
            self._error(f"listing Nova's servers failed: {error}")
            self._write({})
            return
        for gone in [sid for sid in {*self.refused, *self.started} if sid not in servers]:
            self.refused.pop(gone, None)
            self.started.pop(gone, None)
        found = self.nodes.found()
        if self.first:
            self.adopted = {sid for sid, node in found.items() if node.alive}
            for sid in sorted(self.adopted):
                say(f"adopted the running node of server {sid} (pid {found[sid].pid})")
            self.first = False
        todo = plan(servers, found, self.refused, self.started, self.clock())
        for sid in todo.delete:
            self._do(f"deleting the node of server {sid} (gone from Nova)", self.nodes.delete, sid)
            self.adopted.discard(sid)
        for sid in todo.stop:
            self._do(
                f"stopping the node of server {sid} ({servers[sid].status})", self.nodes.stop, sid
            )
        for sid in todo.start:
            self._start(servers[sid])
        self._serve(self.nodes.found())
        self._write(servers)

    def _start(self, server: Server) -> None:
        try:
            user_data = base64.b64decode(server.user_data, validate=True)
            values = cloudinit.variables(
                server.id,
                server.hostname,
                server.name,
                server.availability_zone,
                server.project_id,
                getattr(self.cloud, "region", ""),
            )
            config = cloudinit.parse(user_data, values)
        except (cloudinit.Refused, binascii.Error) as error:
            self.refused[server.id] = str(error)
            say(f"server {server.id} ({server.name}): user data refused: {error}")
            return
        fixed = self._read(f"the fixed address of {server.id}", self.cloud.fixed, server.id)
        if fixed is None:
            return  # no port yet: the next pass tries again
        self.started[server.id] = self.clock()
        self._do(
            f"booting server {server.id} ({server.name}) at {fixed.address}/{fixed.prefix}",
            self.nodes.start,
            server,
            fixed,
            cloudinit.scripts(config),
        )

    def _serve(self, found: Mapping[str, Node]) -> None:
        subnets = {n.subnet_id for n in found.values() if n.alive and n.subnet_id}
        wanted = self._read("the load balancers", self.cloud.vips, subnets) if subnets else {}
        if wanted is None:
            return  # keep serving what was served
        addresses = {vip[0] for vip in wanted}
        for address in sorted(addresses - self.addresses):
            if self._do(f"VIP {address} on the bridge", self.nodes.vip, "add", address):
                self.addresses.add(address)
        for vip, error in self.proxy.update(
            {v: m for v, m in wanted.items() if v[0] in self.addresses}
        ).items():
            self._error(f"cannot serve {vip[0]}:{vip[1]}: {error}")
        for address in sorted(self.addresses - addresses):
            if self._do(f"VIP {address} off the bridge", self.nodes.vip, "del", address):
                self.addresses.discard(address)

    def close(self) -> None:
        """Stop serving the VIPs and take them off the bridge; the nodes keep running."""
        self.proxy.update({})
        for address in sorted(self.addresses):
            self._do(f"VIP {address} off the bridge", self.nodes.vip, "del", address)
        self.addresses.clear()

    def _do(self, what: str, action: Callable[..., None], *args: Any) -> bool:
        say(what)
        try:
            action(*args)
        except Exception as error:
            self._error(f"{what}: {error}")
            return False
        return True

    def _read(self, what: str, read: Callable[..., Any], *args: Any) -> Any:
        try:
            return read(*args)
        except Exception as error:
            self._error(f"reading {what} failed: {error}")
            return None

    def _error(self, message: str) -> None:
        self.errors.append(message)
        say(message)

    def status(self, servers: Mapping[str, Server]) -> dict[str, Any]:
        nodes = {}
        for sid, node in self.nodes.found().items():
            meta = _json(self.nodes.root / sid / "node.json")
            nodes[sid] = {
                "name": servers[sid].name if sid in servers else "",
                "hostname": meta.get("hostname", ""),
                "address": meta.get("address", ""),
                "state": "running" if node.alive else "stopped",
                "pid": node.pid if node.alive else None,
                "adopted": sid in self.adopted,
                **(cost(sid) if node.alive else {}),
            }
        return {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "nodes": nodes,
            "refused": dict(self.refused),
            "vips": {
                f"{v[0]}:{v[1]}": [f"{a}:{p}" for a, p in m]
                for v, m in self.proxy.members().items()
            },
            "errors": list(self.errors),
        }

    def _write(self, servers: Mapping[str, Server]) -> None:
        path = self.nodes.root.parent / "status.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_suffix(".tmp").write_text(json.dumps(self.status(servers), indent=1))
        path.with_suffix(".tmp").replace(path)


def connect(cloud: str) -> Any:
    import openstack  # the lab venv's; imported here so the tests need none

    os.environ.setdefault("OS_CLIENT_CONFIG_FILE", str(STATE / "clouds.yaml"))
    return openstack.connect(cloud=cloud)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between passes")
    parser.add_argument("--cloud", default="kumo-admin", help="clouds.yaml entry (admin)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    run_node_sh(["prepare"])  # the bridge; kubeadm and the images, built once and cached
    conn = connect(args.cloud)
    shim = Shim(Cloud(conn, conn.config.get_region_name() or ""), Nodes(), Proxy())
    say(f"polling Nova every {args.interval:g} s; nodes in {NODES}")
    try:
        while not stop.is_set():
            shim.tick()
            stop.wait(args.interval)
    finally:
        shim.close()
        shim.proxy.close()
        say("stopped (the nodes keep running; a shim started again adopts them)")


if __name__ == "__main__":
    sys.exit(main())
