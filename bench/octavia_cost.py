"""What one member change costs the lab's Octavia, by pool size (issue 24, item 4).

Kumo's pool fill (``kinds/loadbalancer/members.py``: a batch at most every
``FILL_BATCH_SECONDS``, single calls below ``SINGLES_PER_BATCH``) rests on what a change
costs Octavia's worker, API and database. This bench measures it directly: one load
balancer, listener, pool and monitor in the bench project, filled to each size with one
batch, then at that size

* a batch update (``PUT .../members?additive_only=true``) adding 1 member,
* the same adding ``--changes`` members,
* ``--changes`` single creates (``POST .../members``), one after the other,

each timed until the load balancer is ``ACTIVE`` again, with the CPU seconds of
octavia-api, octavia-worker and MariaDB read from ``/proc`` around it. The ratio that
decides between a batch and single calls is printed: how many single creates cost what
one batch does.

    python -m bench octavia-cost [--sizes 20,50,100] [--changes 5]
"""

from __future__ import annotations

import argparse
import functools
import ipaddress
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bench import lab, sampler

PREFIX = "kbench-octavia-cost"
#: The lab's processes whose CPU a member change costs (pid file names' prefixes).
SERVICES = ("octavia-api", "octavia-worker", "mariadb")
#: Kumo's own member tags: Octavia loads tags with every member.
TAGS = ["kumo", "kumo-owner=00000000-0000-0000-0000-000000000000"]


@dataclass
class Cost:
    round: int  # the pool size this round filled to
    size: int  # members in the pool when the change began
    what: str
    members: int
    wall_s: float
    cpu_s: dict[str, float]

    @property
    def total_cpu_s(self) -> float:
        return sum(self.cpu_s.values())


def service_cpu() -> dict[str, float]:
    """Cumulative CPU seconds of each of ``SERVICES`` (a process and its children)."""
    ours = {n: [pid] for n, pid in sampler.pidfiles().items() if n.startswith(SERVICES)}
    return sampler.processes_cpu(ours)


def singles_per_batch(batch: Cost, singles: Cost) -> float:
    """How many single creates cost the CPU one batch does, at the same pool size."""
    per_single = singles.total_cpu_s / singles.members if singles.members else 0.0
    return batch.total_cpu_s / per_single if per_single else float("inf")


class Pool:
    """The bench's load balancer chain, and member addresses never used twice."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.api = conn.load_balancer
        self.subnet = conn.network.find_subnet(lab.SUBNET, ignore_missing=False)
        self._addresses: Iterator[ipaddress.IPv4Address] = ipaddress.IPv4Network(
            "10.250.0.0/16"
        ).hosts()
        self.size = 0
        self.lb_id = ""
        self.pool_id = ""

    def create(self) -> None:
        api = self.api
        lb = api.create_load_balancer(name=f"{PREFIX}-lb", vip_subnet_id=self.subnet.id)
        self.lb_id = lb.id
        self.wait()
        listener = api.create_listener(
            name=f"{PREFIX}-80", protocol="HTTP", protocol_port=80, load_balancer_id=lb.id
        )
        self.wait()
        pool = api.create_pool(
            name=f"{PREFIX}-80",
            lb_algorithm="ROUND_ROBIN",
            protocol="HTTP",
            listener_id=listener.id,
        )
        self.pool_id = pool.id
        self.wait()
        api.create_health_monitor(
            pool_id=pool.id, type="HTTP", delay=5, timeout=5, max_retries=3, url_path="/health"
        )
        self.wait()

    def delete(self) -> None:
        if self.lb_id:
            self.api.delete_load_balancer(self.lb_id, cascade=True, ignore_missing=True)

    def wait(self) -> None:
        def active() -> bool:
            status = self.api.get_load_balancer(self.lb_id).provisioning_status
            if status == "ERROR":
                raise RuntimeError(f"load balancer {self.lb_id} went ERROR")
            return bool(status == "ACTIVE")

        lab.wait_for("load balancer ACTIVE", active, 600, interval=0.5)

    def member(self) -> dict[str, Any]:
        self.size += 1
        return {
            "name": f"{PREFIX}-{self.size}",
            "address": str(next(self._addresses)),
            "protocol_port": 8080,
            "subnet_id": self.subnet.id,
            "tags": TAGS,
        }

    def batch(self, n: int) -> None:
        members = [self.member() for _ in range(n)]
        path = f"/lbaas/pools/{self.pool_id}/members?additive_only=true"
        self.api.put(path, json={"members": members}).raise_for_status()

    def singles(self, n: int) -> None:
        for _ in range(n):
            self.api.create_member(self.pool_id, **self.member())
            self.wait()


def measure(pool: Pool, round_: int, what: str, members: int, change: Callable[[], None]) -> Cost:
    size = pool.size
    before = service_cpu()
    start = time.monotonic()
    change()
    pool.wait()
    wall = time.monotonic() - start
    after = service_cpu()
    cpu = {k: after[k] - before.get(k, 0.0) for k in after}
    return Cost(round_, size, what, members, wall, cpu)


def run_sizes(conn: Any, sizes: list[int], changes: int) -> list[Cost]:
    pool = Pool(conn)
    costs: list[Cost] = []
    try:
        pool.create()
        for size in sizes:
            if size > pool.size:
                grow = size - pool.size
                costs.append(measure(pool, size, "fill", grow, functools.partial(pool.batch, grow)))
            costs.append(measure(pool, size, "batch", 1, lambda: pool.batch(1)))
            costs.append(measure(pool, size, "batch", changes, lambda: pool.batch(changes)))
            costs.append(measure(pool, size, "singles", changes, lambda: pool.singles(changes)))
            lab.say(f"pool of {size}: measured")
    finally:
        pool.delete()
    return costs


def table(costs: list[Cost]) -> str:
    names = sorted({k for c in costs for k in c.cpu_s})
    rows = [["pool", "change", "members", "wall s", *[f"{n} CPU-s" for n in names], "all CPU-s"]]
    for c in costs:
        rows.append(
            [
                str(c.size),
                c.what,
                str(c.members),
                f"{c.wall_s:.2f}",
                *[f"{c.cpu_s.get(n, 0.0):.2f}" for n in names],
                f"{c.total_cpu_s:.2f}",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [" | ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    for size in sorted({c.round for c in costs}):
        one = [c for c in costs if c.round == size and c.what == "batch" and c.members == 1]
        singles = [c for c in costs if c.round == size and c.what == "singles"]
        if one and singles:
            ratio = singles_per_batch(one[0], singles[0])
            lines.append(f"pool of {size}: one batch costs the CPU of {ratio:.1f} single creates")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="20,50,100", help="pool sizes, comma-separated")
    parser.add_argument("--changes", type=int, default=5, help="members per change measured")
    parser.add_argument("--no-lock", action="store_true", help="the caller holds the lab lock")


def run(args: argparse.Namespace) -> None:
    from bench.stack import lab_lock

    sizes = sorted(int(s) for s in args.sizes.split(","))
    with lab_lock(args.no_lock):
        lab.say(f"Octavia's cost of a member change at pool sizes {sizes}")
        costs = run_sizes(lab.connect(), sizes, args.changes)
    print(table(costs))
