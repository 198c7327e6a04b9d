"""The three contenders of the real-stack benchmark, each doing the same work in the
`kumo-bench` project: a group of N servers in a soft-anti-affinity server group, and an
Octavia LB with one HTTP listener (80) whose pool (backends on 8080, one HTTP monitor)
holds every server.

* ``Direct``: what a careful script author writes with openstacksdk — 16 threads of
  server creates, ACTIVE found by *listing* (not per-server polls), the LB chain built
  meanwhile, then ONE batch member update.
* ``Heat``: one stack (bench/heat/group.yaml: a ResourceGroup of server + PoolMember).
* ``KumoRun``: a `kumo run` process of this checkout with a VirtualMachineGroup and a
  LoadBalancer in their own namespace. The fleet run splits its N VMs over several
  groups, each with its own LoadBalancer and a DNSRecord of that LB (``topology``).

Each exposes ``converge()`` and ``delete()``; the harness (bench/stack.py) times them and
counts the requests the services logged meanwhile.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import lab
from bench.lab import FLAVOR, IMAGE, NETWORK, PREFIX, SUBNET, ZONE, say, wait_for
from kumo.kinds.labels import GROUP_LABEL
from kumo.kinds.registry import deletion_order, members

HEAT_DIR = Path(__file__).resolve().parent / "heat"
THREADS = 16


def budget(n: int) -> float:
    """Seconds to allow for creating or deleting N servers on two busy cores."""
    return 900 + 15 * n


def _lb_active(conn: Any, lb_id: str) -> bool:
    lb = conn.load_balancer.get_load_balancer(lb_id)
    if lb.provisioning_status == "ERROR":
        raise RuntimeError(f"load balancer {lb_id} went ERROR")
    return bool(lb.provisioning_status == "ACTIVE")


@dataclass(frozen=True)
class ListedServer:
    id: str
    name: str
    status: str
    addresses: dict[str, Any]


def list_servers(conn: Any, name: str) -> list[ListedServer]:
    """``GET /servers/detail?name=…`` read as Nova's JSON, every page. The script polls
    its servers every 2 s; openstacksdk's ``Server`` resources for 300 servers a poll
    cost the harness 126 CPU-s of the lab's two cores in one converge (2026-11-27),
    which slowed the very contender it timed. A script author would list the same."""
    found: list[ListedServer] = []
    url: str | None = "/servers/detail"
    params: dict[str, Any] | None = {"name": name}
    while url:
        response = conn.compute.get(url, params=params)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url}: {response.status_code} {response.text[:200]}")
        body = response.json()
        found += [
            ListedServer(s["id"], s.get("name") or "", s["status"], s.get("addresses") or {})
            for s in body.get("servers", [])
        ]
        nexts = [
            link["href"] for link in body.get("servers_links", []) if link.get("rel") == "next"
        ]
        url, params = (nexts[0], None) if nexts else (None, None)
    return found


class Direct:
    """The direct script; with ``groups`` > 1 (the fleet), the N servers are split over G
    groups as Kumo's are (``split``), each with its own server group and LB chain, and
    each pool gets its members in one batch once its group is ACTIVE."""

    name = "direct"

    def __init__(self, n: int, groups: int = 1) -> None:
        self.n = n
        self.conn = lab.connect()
        self.prefix = f"{PREFIX}-direct"
        self.sizes = split(n, groups)
        self.timeline: list[tuple[float, int]] = []

    def _group_prefix(self, g: int) -> str:
        """The stack benchmark's single group keeps its names (`kbench-direct-0001`)."""
        return self.prefix if len(self.sizes) == 1 else f"{self.prefix}-g{g}"

    def _servers(self) -> list[ListedServer]:
        """The script's live servers (``DELETED`` ones are gone, as in lab.leftovers)."""
        return [s for s in list_servers(self.conn, f"^{self.prefix}-") if s.status != "DELETED"]

    def converge(self) -> None:
        c = self.conn
        t0 = time.monotonic()
        image = c.image.find_image(IMAGE, ignore_missing=False)
        flavor = c.compute.find_flavor(FLAVOR, ignore_missing=False)
        net = c.network.find_network(NETWORK, ignore_missing=False)
        subnet = c.network.find_subnet(SUBNET, ignore_missing=False)
        server_groups = [
            c.compute.create_server_group(
                name=f"{self._group_prefix(g)}-group", policy="soft-anti-affinity"
            )
            for g in range(len(self.sizes))
        ]

        def create(gi: tuple[int, int]) -> None:
            g, i = gi
            c.compute.create_server(
                name=f"{self._group_prefix(g)}-{i:04d}",
                image_id=image.id,
                flavor_id=flavor.id,
                networks=[{"uuid": net.id}],
                scheduler_hints={"group": server_groups[g].id},
            )

        def lb_chain(g: int) -> tuple[str, str]:
            name = self._group_prefix(g)
            lb = c.load_balancer.create_load_balancer(name=f"{name}-lb", vip_subnet_id=subnet.id)
            wait_for("LB ACTIVE", lambda: _lb_active(c, lb.id), 600)
            listener = c.load_balancer.create_listener(
                name=f"{name}-80",
                protocol="HTTP",
                protocol_port=80,
                load_balancer_id=lb.id,
            )
            wait_for("LB ACTIVE", lambda: _lb_active(c, lb.id), 600)
            pool = c.load_balancer.create_pool(
                name=f"{name}-80",
                lb_algorithm="ROUND_ROBIN",
                protocol="HTTP",
                listener_id=listener.id,
            )
            wait_for("LB ACTIVE", lambda: _lb_active(c, lb.id), 600)
            c.load_balancer.create_health_monitor(
                pool_id=pool.id,
                type="HTTP",
                delay=5,
                timeout=5,
                max_retries=3,
                url_path="/health",
            )
            wait_for("LB ACTIVE", lambda: _lb_active(c, lb.id), 600)
            return lb.id, pool.id

        work = [(g, i) for g, size in enumerate(self.sizes) for i in range(size)]
        with ThreadPoolExecutor(THREADS + len(self.sizes)) as pool_ex:
            lb_futures = [pool_ex.submit(lb_chain, g) for g in range(len(self.sizes))]
            with ThreadPoolExecutor(THREADS) as create_ex:
                list(create_ex.map(create, work))

            def all_active() -> list[Any] | None:
                servers = self._servers()
                errors = [s.name for s in servers if s.status == "ERROR"]
                if errors:
                    raise RuntimeError(f"servers went ERROR: {errors[:5]}")
                active = [s for s in servers if s.status == "ACTIVE" and s.addresses]
                self.timeline.append((time.monotonic() - t0, len(active)))
                return active if len(active) == self.n else None

            servers = wait_for("servers ACTIVE", all_active, budget(self.n), interval=2)
            chains = [f.result() for f in lb_futures]
        for g, (_, pool_id) in enumerate(chains):
            mine = f"{self._group_prefix(g)}-"
            members = [
                {
                    "name": s.name,
                    "address": s.addresses[NETWORK][0]["addr"],
                    "protocol_port": 8080,
                    "subnet_id": subnet.id,
                }
                for s in servers
                if s.name.startswith(mine) and s.name[len(mine) :].isdigit()
            ]
            c.load_balancer.put(f"/lbaas/pools/{pool_id}/members", json={"members": members})
        for lb_id, _ in chains:
            wait_for(
                "LB ACTIVE after the member update",
                lambda lb=lb_id: _lb_active(c, lb),  # type: ignore[misc]
                600,
            )

    def _lbs(self) -> list[Any]:
        return [
            lb
            for lb in self.conn.load_balancer.load_balancers()
            if lb.name.startswith(f"{self.prefix}-") and lb.name.endswith("-lb")
        ]

    def delete(self) -> None:
        c = self.conn
        for lb in self._lbs():
            c.load_balancer.delete_load_balancer(lb, cascade=True)
        servers = self._servers()
        with ThreadPoolExecutor(THREADS) as ex:
            list(ex.map(lambda s: c.compute.delete_server(s.id, ignore_missing=True), servers))
        wait_for("servers deleted", lambda: not self._servers(), budget(self.n), interval=2)
        for group in c.compute.server_groups():
            if group.name.startswith(f"{self.prefix}-") and group.name.endswith("-group"):
                c.compute.delete_server_group(group)
        wait_for("LB deleted", lambda: not self._lbs(), 600)


class Heat:
    name = "heat"

    def __init__(self, n: int) -> None:
        self.n = n
        self.conn = lab.connect()
        self.stack_name = f"{PREFIX}-heat"
        self.stack_id: str | None = None

    def _status(self) -> str:
        assert self.stack_id is not None
        return str(self.conn.orchestration.get_stack(self.stack_id).status)  # e.g. CREATE_COMPLETE

    def converge(self) -> None:
        self.conn.create_stack(
            self.stack_name,
            template_file=str(HEAT_DIR / "group.yaml"),
            rollback=False,
            wait=False,
            timeout=3600,
            count=self.n,
            image=IMAGE,
            flavor=FLAVOR,
            network=NETWORK,
            subnet=SUBNET,
        )
        self.stack_id = self.conn.orchestration.find_stack(self.stack_name, ignore_missing=False).id

        def done() -> bool:
            status = self._status()
            if status.endswith("FAILED"):
                stack = self.conn.orchestration.get_stack(self.stack_id)
                raise RuntimeError(f"stack {status}: {stack.status_reason}")
            return status == "CREATE_COMPLETE"

        wait_for("stack CREATE_COMPLETE", done, budget(self.n), interval=2)

    def delete(self) -> None:
        if self.stack_id is None:
            return
        for attempt in range(2):  # a delete after trouble may need a second go (LAB.md)
            self.conn.orchestration.delete_stack(self.stack_id)

            def gone() -> bool:
                stack = self.conn.orchestration.find_stack(self.stack_id, ignore_missing=True)
                return stack is None or stack.status in ("DELETE_COMPLETE", "DELETE_FAILED")

            wait_for("stack deleted", gone, budget(self.n), interval=2)
            if not any(lab.leftovers(self.conn).values()):
                return
            say(f"heat: resources left after stack delete (attempt {attempt + 1})")
        raise RuntimeError("heat: stack deleted but cloud resources are left")


#: Kumo's kinds in delete order, from the registry: referrers before what they point at (a
#: LoadBalancer waits for the DNSRecords that point at it) and groups before their VMs.
KINDS = tuple(info.plural for info in deletion_order())
#: Kinds deleted by their creator (a group's VMs, after the LB drops them), not by the bench.
MEMBERS = frozenset(info.plural for info in members())


def split(n: int, groups: int) -> list[int]:
    """N VMs over G groups as evenly as possible, larger groups first (25 over 10:
    3,3,3,3,3,2,2,2,2,2); the sizes sum to N and no group is empty."""
    if not 1 <= groups <= n:
        raise ValueError(f"cannot split {n} VMs over {groups} groups (1 ≤ groups ≤ N)")
    size, rest = divmod(n, groups)
    return [size + 1 if i < rest else size for i in range(groups)]


@dataclass(frozen=True)
class Group:
    """One VirtualMachineGroup and the objects that follow it: its own LoadBalancer
    (one Octavia pool of 1,000 members locks the LB for minutes at each batch update on
    the lab) and, in the fleet, a DNSRecord of that LB's VIP."""

    name: str
    replicas: int

    @property
    def lb(self) -> str:
        return f"{self.name}-lb"

    @property
    def dns(self) -> str:
        return f"{self.name}-dns"


def topology(n: int, groups: int) -> list[Group]:
    """One group keeps the names the stack benchmark has always used (`kbench`,
    `kbench-lb`); several are `kbench-0` … (zero-padded: name order = group order). All
    start with PREFIX, for the sweep."""
    sizes = split(n, groups)
    if groups == 1:
        return [Group(PREFIX, n)]
    width = len(str(groups - 1))
    return [Group(f"{PREFIX}-{i:0{width}d}", size) for i, size in enumerate(sizes)]


def repair_slot(index: int, groups: int) -> tuple[int, int]:
    """(group, position of the VM in that group's name order) of the index-th repair
    target: round-robin over the groups, so the harness's repairs (index 0, 7, 14 …)
    touch every group; with one group, the index-th VM."""
    return index % groups, index // groups


def vmg_body(group: Group) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachineGroup",
        "metadata": {"name": group.name},
        "spec": {
            "replicas": group.replicas,
            "haPolicy": "soft",
            "template": {"image": IMAGE, "flavor": FLAVOR, "networks": [NETWORK]},
        },
    }


def lb_body(group: Group) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "LoadBalancer",
        "metadata": {"name": group.lb},
        "spec": {
            "vipType": "private",
            "ports": [
                {
                    "port": 80,
                    "protocol": "http",
                    "realServers": {
                        "protocol": "http",
                        "port": 8080,
                        "virtualMachineGroupRef": group.name,
                    },
                    "monitors": [{"protocol": "http", "port": 8080, "endpoint": "/health"}],
                }
            ],
        },
    }


def dns_body(group: Group, record: str) -> dict[str, Any]:
    """An A record of the group's LB VIP; ``record`` (relative to ZONE) starts with
    PREFIX, so the sweep finds a recordset a killed run left."""
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "DNSRecord",
        "metadata": {"name": group.dns},
        "spec": {"zone": ZONE, "name": record, "type": "A", "loadBalancerRef": group.lb},
    }


class KumoRun:
    """A `kumo run` process of this checkout (PYTHONPATH=src), leader of the lab's
    cluster, watching only its own namespace, against the kumo-bench cloud. N VMs in
    ``groups`` VirtualMachineGroups, each followed by its own LoadBalancer and, with
    ``dns``, a DNSRecord of that LB in the lab's zone of kumo-bench."""

    name = "kumo"

    def __init__(
        self,
        n: int,
        kube: lab.Kube,
        hconn: lab.CountingConnection,
        drift: float,
        groups: int = 1,
        dns: bool = False,
        extra: list[str] | None = None,
    ):
        self.n = n
        self.extra = list(extra or [])
        """More `kumo run` arguments (a variant: ``--variant``)."""
        self.groups = topology(n, groups)
        self.dns = dns
        self.kube = kube
        self.hconn = hconn
        self.drift = drift
        self.namespace = f"{PREFIX}-{uuid.uuid4().hex[:6]}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.started_at = 0.0
        # Repair timing resolution; coarser on big fleets, where each check lists every
        # VM (Kubernetes) and every member (Octavia).
        self.poll = 0.25 if n <= 100 else 1.0
        self.timeline: list[tuple[float, int]] = []
        """(seconds since converge() started, VMs Ready) at each poll while converging."""
        self._converge_t0: float | None = None
        self._vms: lab.Watched | None = None
        """The VMs while converging, kept by a watch (polled: a LIST per poll)."""
        self.first_ready: dict[str, float] = {}
        """VM name → seconds since converge() started when a poll first saw it Ready."""

    @property
    def objects(self) -> int:
        """Kumo's objects in the namespace: the VMs, and per group the group, its LB and
        its DNSRecord."""
        return self.n + len(self.groups) * (3 if self.dns else 2)

    # --- the process ---
    def start(self) -> None:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        log_path = lab.LOGS / f"bench-kumo-{self.namespace}.log"
        env = {
            **os.environ,
            # The lab's own kubeconfig, as `make up`'s operator has: the bench must run
            # on a machine where only `make up` ran (the suite's ServiceAccount
            # kubeconfig exists only once the integration tests made it).
            "KUBECONFIG": str(lab.STATE / "kubeconfig"),
            "PYTHONPATH": str(lab.ROOT / "src"),
        }
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    str(lab.ROOT / ".venv" / "bin" / "kumo"),
                    "run",
                    "--clouds-yaml",
                    str(lab.CLOUDS_YAML),
                    "--cloud",
                    lab.CLOUD,
                    "--namespace",
                    self.namespace,
                    "--drift-seconds",
                    str(self.drift),
                    "--metrics-port",
                    str(self.port),
                    *self.extra,
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.started_at = time.monotonic()
        say(f"kumo: pid {self.proc.pid}, namespace {self.namespace}, log {log_path}")
        wait_for(
            "our kumo to lead (/readyz role=leader)",
            lambda: self._alive() and lab.readyz(self.port).get("role") == "leader",
            120,
            interval=0.5,
        )

    def _alive(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            raise RuntimeError("kumo run exited (see its log in .kumo-dev/logs/)")
        return True

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def usage(self) -> tuple[float, float]:
        """(peak RSS MiB = VmHWM, CPU seconds) of the running process."""
        return lab.proc_status_kib(self.pid, "VmHWM") / 1024, lab.proc_cpu_seconds(self.pid)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    # --- the work ---
    def setup(self) -> None:
        if self.dns and self.hconn.conn.dns.find_zone(ZONE) is None:
            raise RuntimeError(
                f"no zone {ZONE} in kumo-bench: the lab makes it (designate_cloud in "
                "dev/openstack/services/designate.sh); or run without DNS records (--no-dns)"
            )
        self.kube.create_namespace(self.namespace)

    def _lb(self, group: Group) -> dict[str, Any] | None:
        return self.kube.get(  # type: ignore[no-any-return]
            f"/apis/kumo.dev/v1alpha1/namespaces/{self.namespace}/loadbalancers/{group.lb}"
        )

    def octavia_members(self, lb: dict[str, Any] | None) -> list[str]:
        """Addresses in the Octavia pool of ``lb`` (a LoadBalancer object)."""
        ports = ((lb or {}).get("status") or {}).get("ports") or []
        pool = ports[0].get("poolId") if ports else None
        if not pool:
            return []
        return [m.address for m in self.hconn.conn.load_balancer.members(pool)]

    def converged(self) -> bool:
        """Every VM Ready; every LB Ready with its group's member count in status and in
        Octavia's pool; every DNSRecord Ready. Kubernetes first, Octavia last (one
        member list per LB)."""
        self._alive()
        vms = (
            self._vms.items()
            if self._vms is not None
            else self.kube.items("virtualmachines", self.namespace)
        )
        ready = sum(1 for v in vms if lab.is_ready(v))
        if self._converge_t0 is not None:
            now = time.monotonic() - self._converge_t0
            self.timeline.append((now, ready))
            for v in vms:
                if lab.is_ready(v):
                    self.first_ready.setdefault(_name(v), now)
        if len(vms) != self.n or ready != len(vms):
            return False
        lbs = {_name(lb): lb for lb in self.kube.items("loadbalancers", self.namespace)}
        for group in self.groups:
            lb = lbs.get(group.lb)
            if lb is None or not lab.is_ready(lb):
                return False
            ports = (lb.get("status") or {}).get("ports") or []
            if not ports or len(ports[0].get("members") or []) != group.replicas:
                return False
        if self.dns:
            records = self.kube.items("dnsrecords", self.namespace)
            if len(records) != len(self.groups) or not all(lab.is_ready(r) for r in records):
                return False
        return all(  # Octavia agrees
            len(self.octavia_members(lbs[g.lb])) == g.replicas for g in self.groups
        )

    def converge(self) -> None:
        self._converge_t0 = time.monotonic()
        self._vms = self.kube.watch("virtualmachines", self.namespace)
        for group in self.groups:
            self.kube.create("virtualmachinegroups", self.namespace, vmg_body(group))
            self.kube.create("loadbalancers", self.namespace, lb_body(group))
            if self.dns:
                record = dns_body(group, f"{self.namespace}-{group.name}")
                self.kube.create("dnsrecords", self.namespace, record)
        try:
            wait_for(
                "Kumo converged",
                self.converged,
                budget(self.n),
                interval=1 if self.n <= 100 else 3,
            )
        finally:
            self._vms.close()
            self._vms = None
        self._converge_t0 = None  # repairs' polls are not the converge's

    def repair(self, index: int) -> tuple[float, float, float]:
        """Delete one server out of band (round-robin over the groups); seconds until
        Kumo noticed (the VM no longer Ready on the old server, or a new one recorded),
        until its VM is Ready on a new server, and until its group's LB pool holds the
        new server's address (and not the old one)."""
        g, position = repair_slot(index, len(self.groups))
        group = self.groups[g]
        vms = sorted(
            (
                v
                for v in self.kube.items("virtualmachines", self.namespace)
                if (v["metadata"].get("labels") or {}).get(GROUP_LABEL) == group.name
            ),
            key=_name,
        )
        vm = vms[position % len(vms)]
        name, old_id = vm["metadata"]["name"], vm["status"]["id"]
        old_addrs = {a.get("ip") for a in vm["status"].get("addresses") or []}
        self.hconn.conn.compute.delete_server(old_id)
        t0 = time.monotonic()
        noticed: list[float] = []

        def vm_back() -> dict[str, Any] | None:
            self._alive()
            body = self.kube.get(
                f"/apis/kumo.dev/v1alpha1/namespaces/{self.namespace}/virtualmachines/{name}"
            )
            status = (body or {}).get("status") or {}
            moved = bool(status.get("id")) and status["id"] != old_id
            if not noticed and (moved or not lab.is_ready(body)):
                noticed.append(time.monotonic() - t0)
            if moved and lab.is_ready(body):
                return body  # type: ignore[no-any-return]
            return None

        body = wait_for(f"VM {name} repaired", vm_back, 600, interval=self.poll)
        t_vm = time.monotonic() - t0
        new_addrs = {a.get("ip") for a in body["status"].get("addresses") or []}

        def member_back() -> bool:
            members = set(self.octavia_members(self._lb(group)))
            return bool(new_addrs & members) and not (old_addrs - new_addrs) & members

        wait_for(f"pool member of {name} in {group.lb}", member_back, 600, interval=self.poll)
        t_member = time.monotonic() - t0
        wait_for("all VMs Ready again", self.converged, 600, interval=2 * self.poll)
        return noticed[0], t_vm, t_member

    def delete(self, standalone: bool = False, timeout: float | None = None) -> None:
        """Delete Kumo's objects and wait until they and their cloud resources are gone
        (``timeout``: ``budget(n)`` unless given). A group's VMs go with their group;
        ``standalone`` deletes VMs of no group too (they have no creator to do it)."""
        for plural in KINDS:
            if standalone or plural not in MEMBERS:
                self.kube.delete_all(plural, self.namespace)

        def gone() -> bool:
            self._alive()
            if any(self.kube.items(p, self.namespace) for p in KINDS):
                return False
            return not any(lab.leftovers(self.hconn.conn).values())

        wait_for(
            "Kumo's objects and cloud resources deleted",
            gone,
            budget(self.n) if timeout is None else timeout,
            interval=2,
        )

    def teardown(self, standalone: bool = False, timeout: float | None = None) -> None:
        """Objects first (with finalizers released when no Kumo runs), then the namespace;
        ``standalone`` and ``timeout`` as for ``delete``."""
        if self.namespace not in self.kube.namespaces():
            return
        running = self.proc is not None and self.proc.poll() is None
        if running:
            try:
                self.delete(standalone, timeout)
            except Exception as error:
                say(f"kumo: delete during teardown failed: {error}")
        self.stop()
        for plural in KINDS:
            for obj in self.kube.items(plural, self.namespace):
                self.kube.patch(
                    plural,
                    self.namespace,
                    obj["metadata"]["name"],
                    {"metadata": {"finalizers": None}},
                )
            self.kube.delete_all(plural, self.namespace)
        self.kube.delete_namespace(self.namespace)


def _name(body: dict[str, Any]) -> str:
    return str(body["metadata"]["name"])
