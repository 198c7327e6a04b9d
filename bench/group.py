"""Kumo's CPU per VM as one group grows: is each event's work flat in the group size?

One VirtualMachineGroup of S members, a LoadBalancer whose pool follows it and a
DNSRecord whose A record lists its members, run through Kumo's real controller (its
queue, cache, dependents and engine) against the unit tests' in-process fakes of Kubernetes,
Nova, Octavia and Designate. Phases: create (0 → S), scale in (S → S/2), scale out
(S/2 → S), delete everything (the bench's fleet delete: every kind at once).

Time is virtual: the work queue's clock jumps to the next due key when nothing else is
due, so a 1 s Octavia wait costs no wall time and the figures are CPU, not waiting. Kumo's
CPU is ``time.process_time`` inside the controller (reconciles, watch events, cloud
changes), the fakes' own work included; the bench's simulation of Nova's progress and
its watch is left out. In-memory figures: the real lab's fleet run is in
docs/performance.md.

    python -m bench group --sizes 20,100,300 [--profile .kumo-dev/bench/cpu-event]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import copy
import datetime
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.memory import BENCH_CLUSTER
from kumo.api.kinds import DNS_RECORD, LOAD_BALANCER, VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP
from kumo.cloud import model
from kumo.engine.objects import Actuator, Body, Key
from kumo.engine.queue import WorkQueue
from kumo.kinds import registry
from kumo.kinds.loadbalancer.actuator import LoadBalancerActuator
from kumo.runtime.controller import Controller
from tests.unit.fakes import FakeKube, FakeServers, make_body
from tests.unit.fakes.dns import ZONE, FakeDns
from tests.unit.fakes.loadbalancing import FakeLoadBalancing

NS = "default"
TEMPLATE = {"image": "centos79", "flavor": "n3-1vcpu-2gb"}
#: Nova finishes one build or delete every this many (virtual) seconds.
NOVA_STEP = 0.5
NOVA_BUSY = ("BUILD", "DELETING")
EPOCH = datetime.datetime(2026, 11, 25, tzinfo=datetime.UTC)


class VirtualClock:
    """The work queue's clock: moved by the bench, never by waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def utc(self) -> datetime.datetime:
        return EPOCH + datetime.timedelta(seconds=self.now)


class IndexedNova(FakeServers):
    """FakeServers with unique addresses and an owner index, as the adapter's watch cache
    answers ``list_owned_servers`` (the fake's scan of every server is not Kumo's CPU)."""

    def __init__(self) -> None:
        super().__init__()
        self._made = 0
        self._by_owner: dict[str, list[str]] = collections.defaultdict(list)

    def _create(self, attrs: dict[str, Any], description: str | None) -> model.Server:
        server = super()._create(attrs, description)
        self._made += 1
        n = self._made
        self.servers[server.id]["ip"] = f"10.{n >> 16}.{(n >> 8) & 255}.{n & 255}"
        owner = model.owner_of(list(attrs["tags"]))
        if owner:
            self._by_owner[owner].append(server.id)
        return self._server(self.servers[server.id])

    async def list_owned_servers(self, uid: str, *, going: bool = False) -> list[model.Server]:
        found = (self.servers.get(sid) for sid in self._by_owner.get(uid, ()))
        return [
            self._server(s) for s in found if s is not None and (going or s["status"] != "DELETING")
        ]


class FleetCloud:
    """Nova, Octavia and Designate behind one object, as ``Context.cloud`` is."""

    region: str | None = "tokyo1"

    def __init__(self) -> None:
        self.nova = IndexedNova()
        # A change settles on the next read, as the fake did when the runs recorded in
        # docs/performance.md were made (its default now stays pending for two reads).
        self.octavia = FakeLoadBalancing(pending_gets=0)
        self.designate = FakeDns()

    def __getattr__(self, name: str) -> Any:
        for service in (self.nova, self.octavia, self.designate):
            if hasattr(type(service), name):
                return getattr(service, name)
        raise AttributeError(name)

    def list_live_server_addresses(self) -> frozenset[str]:
        return frozenset(s["ip"] for s in self.nova.live().values() if s["status"] == "ACTIVE")


class OneCloud:
    def __init__(self, cloud: FleetCloud) -> None:
        self.cloud = cloud

    async def for_namespace(self, namespace: str) -> Any:
        return self.cloud


class WatchedKube(FakeKube):
    """FakeKube whose every write reaches the controller as a watch event would."""

    def __init__(self, ctl: Controller, clock: VirtualClock) -> None:
        super().__init__(ctl.store)
        self.ctl = ctl
        self.clock = clock
        #: CPU seconds this fake API server spent copying the bodies it stores and
        #: returns (copy.deepcopy, in Python): counted in Kumo's CPU as before, and also
        #: shown apart. A real client pays for a body in C (JSON decoding), a fraction of
        #: this for a status listing hundreds of members.
        self.copy_cpu = 0.0

    def _copy(self, body: Body) -> Body:
        started = time.process_time()
        try:
            return copy.deepcopy(body)
        finally:
            self.copy_cpu += time.process_time() - started

    def _current(self, info: Any, namespace: str, name: str) -> Body:
        body = self.store.get(info.kind, namespace, name)
        if body is None:
            return super()._current(info, namespace, name)  # raises ObjectGone
        return self._copy(body)

    def _save(self, kind: str, body: Body) -> Body:
        body["metadata"]["resourceVersion"] = str(next(self._rv))
        meta = body["metadata"]
        gone = meta.get("deletionTimestamp") and not meta.get("finalizers")
        event = (
            "DELETED"
            if gone
            else ("ADDED" if self.store.get(kind, NS, meta["name"]) is None else "MODIFIED")
        )
        self.ctl.observe(kind, event, body)  # observe copies it
        return self._copy(body)

    async def delete(self, info: Any, namespace: str, name: str) -> None:
        body = self.store.get(info.kind, namespace, name)
        if body is None or body["metadata"].get("deletionTimestamp"):
            return
        body = copy.deepcopy(body)
        body["metadata"]["deletionTimestamp"] = _iso(datetime.datetime.now(datetime.UTC))
        self._save(info.kind, body)

    async def post_event(self, *args: Any) -> None:
        return None


def _iso(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class Bench:
    """One controller, one group: run phases, count CPU and reconciles."""

    def __init__(self, size: int, nova_step: float = NOVA_STEP) -> None:
        self.size = size
        self.nova_step = nova_step
        self.clock = VirtualClock()
        self.cloud = FleetCloud()
        actuators: list[Actuator] = []
        for record in registry.RECORDS:
            if record.info is LOAD_BALANCER:
                actuators.append(LoadBalancerActuator(clock=self.clock.utc))
            else:
                actuators.append(record.actuator())
        self.ctl = Controller(actuators, None, OneCloud(self.cloud))
        self.ctl.queue = WorkQueue(clock=self.clock.monotonic)
        self.ctl.kube = WatchedKube(self.ctl, self.clock)
        self.ctl.events.emit = lambda *args: None  # type: ignore[method-assign]
        self.cpu: float = 0.0
        self.reconciles: collections.Counter[str] = collections.Counter()
        self.cpu_by_kind: collections.defaultdict[str, float] = collections.defaultdict(float)

    # -- the controller, timed -----------------------------------------------------------

    async def _process(self, key: Key) -> None:
        started = time.process_time()
        try:
            await self.ctl.process(key)
        finally:
            self.ctl.queue.done(key)
            spent = time.process_time() - started
            self.cpu += spent
            self.cpu_by_kind[key.kind] += spent
            self.reconciles[key.kind] += 1

    def _timed(self, call: Callable[[], Any]) -> Any:
        started = time.process_time()
        try:
            return call()
        finally:
            self.cpu += time.process_time() - started

    # -- the world moving ----------------------------------------------------------------

    def _settle_one(self) -> bool:
        """Nova finishes one thing it was asked (the oldest build or delete) and its
        watch tells Kumo the owner. False when Nova has nothing to do."""
        nova = self.cloud.nova
        sid = next((k for k, s in nova.servers.items() if s["status"] in NOVA_BUSY), None)
        if sid is None:
            return False
        server = nova.servers[sid]
        if server["status"] == "DELETING":
            del nova.servers[sid]
            nova.deleted[sid] = nova.now
        else:
            server.update(status="ACTIVE", task_state=None, host="host-a")
            nova._touch(server)
        owner = model.owner_of(server["tags"])
        if owner:
            self._timed(lambda: self.ctl.cloud_changed({owner}, set()))
        return True

    async def run_until(self, done: Callable[[], bool], limit: float = 36000.0) -> None:
        """Work every due key; Nova finishes one server every ``NOVA_STEP`` seconds (so
        members change one at a time, as on a real cloud); when nothing is due, jump the
        clock to the next due key or Nova step. Stop once ``done()`` holds and nothing
        is due now."""
        deadline = self.clock.now + limit
        queue = self.ctl.queue
        while True:
            now = self.clock.now
            due = queue.next_due()
            if due is not None and due <= now:
                key = await queue.get()
                await self._process(key)  # type: ignore[arg-type]
                continue
            if now >= self._next_settle and self._settle_one():
                self._next_settle = now + self.nova_step
                continue
            if done():
                return
            busy = any(s["status"] in NOVA_BUSY for s in self.cloud.nova.servers.values())
            times = [t for t in (due, self._next_settle if busy else None) if t is not None]
            if not times or min(times) > deadline:
                raise RuntimeError(f"S={self.size}: not converged; {self.summary()}")
            self.clock.now = max(now, min(times))

    _next_settle = 0.0

    # -- the scenario ---------------------------------------------------------------------

    def apply(self, info: Any, name: str, spec: Body) -> None:
        body = make_body(info, name, spec, namespace=NS)
        self._timed(lambda: self.ctl.observe(info.kind, "ADDED", body))

    def scale(self, replicas: int) -> None:
        body = copy.deepcopy(self.ctl.store.get(VIRTUAL_MACHINE_GROUP.kind, NS, "web"))
        assert body is not None
        body["spec"]["replicas"] = replicas
        body["metadata"]["generation"] += 1
        self._timed(lambda: self.ctl.observe(VIRTUAL_MACHINE_GROUP.kind, "MODIFIED", body))

    async def delete_all(self) -> None:
        kube = self.ctl.kube
        for info in registry.deletion_order():
            if info in registry.members():
                continue
            for body in self.ctl.store.list(info.kind, NS):
                started = time.process_time()
                await kube.delete(info, NS, body["metadata"]["name"])
                self.cpu += time.process_time() - started

    def converged(self, members: int) -> Callable[[], bool]:
        store = self.ctl.store

        def check() -> bool:
            group = store.get(VIRTUAL_MACHINE_GROUP.kind, NS, "web") or {}
            lb = store.get(LOAD_BALANCER.kind, NS, "web") or {}
            dns = store.get(DNS_RECORD.kind, NS, "web") or {}
            gs, ls, ds = (b.get("status") or {} for b in (group, lb, dns))
            pool = [m for p in ls.get("ports") or [] for m in p.get("members") or []]
            return (
                gs.get("readyReplicas") == members
                and gs.get("replicas") == members
                and len(pool) == members
                and all(m.get("weight", 1) == 1 for m in pool)
                and len(ds.get("records") or []) == members
                and len(self.cloud.nova.servers) == members
            )

        return check

    def gone(self) -> bool:
        kinds = (info.kind for info in registry.deletion_order())
        return not any(self.ctl.store.list(k) for k in kinds) and not self.cloud.nova.servers

    def summary(self) -> str:
        return f"t={self.clock.now:.0f}s reconciles={dict(self.reconciles)}"

    async def phases(self) -> list[Phase]:
        s = self.size
        half = s // 2
        results = []
        self.apply(
            LOAD_BALANCER,
            "web",
            {
                "vipType": "private",
                "ports": [
                    {
                        "port": 80,
                        "protocol": "http",
                        "realServers": {
                            "protocol": "http",
                            "port": 80,
                            "virtualMachineGroupRef": "web",
                            "drainSeconds": 0,
                        },
                    }
                ],
            },
        )
        self.apply(
            DNS_RECORD,
            "web",
            {"zone": ZONE, "name": "web", "type": "A", "virtualMachineGroupRef": "web"},
        )
        for name, vms, start, target in (
            ("create", s, None, s),
            ("scale in", s - half, half, half),
            ("scale out", s - half, s, s),
            ("delete", s, -1, 0),
        ):
            cpu, counts = self.cpu, collections.Counter(self.reconciles)
            copies = self.ctl.kube.copy_cpu
            by_kind = dict(self.cpu_by_kind)
            if start is None:
                self.apply(VIRTUAL_MACHINE_GROUP, "web", {"replicas": s, "template": TEMPLATE})
            elif start >= 0:
                self.scale(start)
            else:
                await self.delete_all()
            await self.run_until(self.converged(target) if target else self.gone)
            phase = Phase(name, vms, self.cpu - cpu, self.reconciles - counts)
            phase.copy_cpu = self.ctl.kube.copy_cpu - copies
            phase.cpu_by_kind = collections.defaultdict(
                float, {k: v - by_kind.get(k, 0.0) for k, v in self.cpu_by_kind.items()}
            )
            results.append(phase)
        return results


class Phase:
    def __init__(
        self, name: str, vms: int, cpu: float, reconciles: collections.Counter[str]
    ) -> None:
        self.name, self.vms, self.cpu, self.reconciles = name, vms, cpu, reconciles
        self.cpu_by_kind: collections.defaultdict[str, float] = collections.defaultdict(float)
        #: Of ``cpu``, what the fake API server spent copying bodies.
        self.copy_cpu = 0.0

    def per_vm_ms(self) -> float:
        return 1000 * self.cpu / self.vms

    def copy_per_vm_ms(self) -> float:
        return 1000 * self.copy_cpu / self.vms


#: The kinds of the scenario, as the table names them (their first short name).
SHOWN = (VIRTUAL_MACHINE, VIRTUAL_MACHINE_GROUP, LOAD_BALANCER, DNS_RECORD)


def table(rows: dict[int, list[Phase]]) -> str:
    lines = [
        "| S | phase | VMs | Kumo CPU s | CPU ms/VM | reconciles per VM ("
        + " / ".join(i.short_names[0] for i in SHOWN)
        + ") | CPU ms/VM in their passes ("
        + " / ".join(i.short_names[0] for i in SHOWN)
        + ") | of which the fake API server's copies, ms/VM |",
        "|---:|---|---:|---:|---:|---|---|---:|",
    ]
    for size, phases in rows.items():
        for p in phases:
            counts = " / ".join(f"{p.reconciles.get(i.kind, 0) / p.vms:.2f}" for i in SHOWN)
            cpus = " / ".join(f"{1000 * p.cpu_by_kind.get(i.kind, 0) / p.vms:.2f}" for i in SHOWN)
            lines.append(
                f"| {size} | {p.name} | {p.vms} | {p.cpu:.2f} | {p.per_vm_ms():.2f} | {counts} "
                f"| {cpus} | {p.copy_per_vm_ms():.2f} |"
            )
    lines.append("")
    lines.append("largest/smallest CPU per VM over the sizes: " + _spread(rows, Phase.per_vm_ms))
    lines.append(
        "the same without the fake API server's copies: "
        + _spread(rows, lambda p: p.per_vm_ms() - p.copy_per_vm_ms())
    )
    return "\n".join(lines)


def _spread(rows: dict[int, list[Phase]], per_vm: Callable[[Phase], float]) -> str:
    spread = []
    for name in ("create", "delete", "scale in", "scale out"):
        per = [per_vm(p) for phases in rows.values() for p in phases if p.name == name]
        if per:
            spread.append(f"{name} {max(per) / min(per):.2f}x")
    return ", ".join(spread)


def measure(size: int, nova_step: float = NOVA_STEP) -> list[Phase]:
    return asyncio.run(Bench(size, nova_step).phases())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="20,100,300", help="group sizes, comma-separated")
    parser.add_argument(
        "--nova-step",
        type=float,
        default=NOVA_STEP,
        help="seconds (virtual) between two servers Nova finishes (default %(default)s)",
    )
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="also record a py-spy flame graph of each size into DIR (SVG)",
    )


def run(args: argparse.Namespace) -> None:
    model.set_cluster(BENCH_CLUSTER)  # what `kumo run` derives: the markers name it
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
        for size in sizes:
            out = os.path.join(args.profile, f"group-{size}.svg")
            command = [sys.executable, "-m", "bench", "group", "--sizes", str(size)]
            command += ["--nova-step", str(args.nova_step)]
            spy = os.path.join(os.path.dirname(sys.executable), "py-spy")
            subprocess.run(
                [spy, "record", "--rate", "250", "--output", out, "--", *command], check=True
            )
            print(f"flame graph: {out}")
        return
    rows = {size: measure(size, args.nova_step) for size in sizes}
    print(
        "In-memory (fakes, virtual time, Nova finishes a server every "
        f"{args.nova_step} s): Kumo CPU per VM by group size"
    )
    print(table(rows))
