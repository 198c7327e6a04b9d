"""The stateful-group benchmark: a VirtualMachineGroup with ``identity: Ordinal`` and one
volume template, against a direct openstacksdk script doing the same work, on the lab.

    python -m bench stateful --n 50 --repeat 3        (make bench-stateful)

Both contenders build, in the `kumo-bench` project, N members: for member i a Cinder
volume of ``--size`` GiB and a server (`m1.tiny`, `centos79`, `kumo-bench-net`, in a
soft-anti-affinity server group) with that volume attached. Done when every server is
ACTIVE and every volume is ``in-use`` on its member's server — Cinder's answer, from the
harness's own volume listing, for both. Deleted when no server, volume or server group
of the run is left.

The sitting is the stack benchmark's (bench/stack.py: the lab lock, the paused operator,
``--repeat``'s alternation, requests counted from the services' logs, the JSON file, the
plots). This module adds the two contenders and the command; their pure parts (the script's
plan, the per-member figures: Cinder requests and volume creates per member — at most
one create, or the run fails) are in bench/stateful_plan.py.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from bench import lab, report, stack
from bench.contenders import THREADS, KumoRun, ListedServer, budget, list_servers
from bench.lab import FLAVOR, IMAGE, NETWORK, PREFIX, say, wait_for
from bench.reqlog import LogWindow, request_times, server_create_times
from bench.stateful_plan import (
    Member,
    failed,
    members_from,
    per_member_lines,
    stage_lines,
    to_attach,
    to_delete,
    too_many_creates,
    volume_creates,
)
from kumo.kinds.volume.plan import volume_name

#: The request columns of the table and the plot (the rest is "other").
SERVICES = ("nova", "cinder", "neutron", "glance", "keystone")
#: The one volume template's name (member i's Volume object: `<group>-data-<i>`).
TEMPLATE = "data"
#: The harness's polls of both contenders (a server and a volume listing each).
POLL_SECONDS = 2.0

_VOLUME_POST = re.compile(r"^/v3/[0-9a-f]{32}/volumes/?$")
_ATTACH_POST = re.compile(
    r"^/v2(?:\.1)?(?:/[0-9a-f]{32})?/servers/[0-9a-f-]{36}/os-volume_attachments$"
)


# --- the contenders -------------------------------------------------------------------------


class DirectStateful:
    """What a careful script author writes: 16 threads, each member's volume create then
    its server create (in the server group); every 2 s one server and one volume listing,
    and an attach for each member whose server is ACTIVE and volume available. Delete:
    16 threads of server deletes, each volume deleted once available (detached by its
    server's deletion), then the server group."""

    name = "direct"

    def __init__(self, n: int, size: int) -> None:
        self.n = n
        self.size = size
        self.conn = lab.connect()
        self.prefix = f"{PREFIX}-direct"
        self.timeline: list[tuple[float, int]] = []
        self.first_done: dict[str, float] = {}

    def server_name(self, i: int) -> str:
        return f"{self.prefix}-{i:04d}"

    def volume_name(self, i: int) -> str:
        return f"{self.prefix}-{TEMPLATE}-{i:04d}"

    def _servers(self) -> list[ListedServer]:
        return list_servers(self.conn, f"^{self.prefix}-")

    def _volumes(self) -> list[Any]:
        return [
            v
            for v in self.conn.block_storage.volumes(details=True)
            if (v.name or "").startswith(f"{self.prefix}-")
        ]

    def members(self) -> list[Member]:
        servers = {s.name: (s.id, s.status) for s in self._servers()}
        return members_from(
            self.n, servers, _volume_map(self._volumes()), self.server_name, self.volume_name
        )

    def converge(self) -> None:
        c = self.conn
        t0 = time.monotonic()
        image = c.image.find_image(IMAGE, ignore_missing=False)
        flavor = c.compute.find_flavor(FLAVOR, ignore_missing=False)
        net = c.network.find_network(NETWORK, ignore_missing=False)
        group = c.compute.create_server_group(
            name=f"{self.prefix}-group", policy="soft-anti-affinity"
        )

        def build(i: int) -> None:
            c.block_storage.create_volume(name=self.volume_name(i), size=self.size)
            c.compute.create_server(
                name=self.server_name(i),
                image_id=image.id,
                flavor_id=flavor.id,
                networks=[{"uuid": net.id}],
                scheduler_hints={"group": group.id},
            )

        asked: set[int] = set()
        with ThreadPoolExecutor(THREADS) as ex:
            work: list[Future[Any]] = [ex.submit(build, i) for i in range(self.n)]

            def step() -> bool:
                for f in work:
                    if f.done() and f.exception() is not None:
                        raise f.exception()  # type: ignore[misc]
                members = self.members()
                bad = failed(members)
                if bad:
                    raise RuntimeError(f"members failed: {bad[:5]}")
                for i in to_attach(members, asked):
                    asked.add(i)
                    m = members[i]
                    work.append(
                        ex.submit(
                            c.compute.create_volume_attachment, m.server_id, volume=m.volume_id
                        )
                    )
                now = time.monotonic() - t0
                for i, m in enumerate(members):
                    if m.done:
                        self.first_done.setdefault(self.server_name(i), now)
                done = sum(m.done for m in members)
                self.timeline.append((now, done))
                return done == self.n

            wait_for("servers ACTIVE, volumes in-use", step, budget(self.n), interval=POLL_SECONDS)

    def delete(self) -> None:
        c = self.conn
        asked: set[str] = set()
        with ThreadPoolExecutor(THREADS) as ex:
            list(
                ex.map(
                    lambda s: c.compute.delete_server(s.id, ignore_missing=True), self._servers()
                )
            )

            def gone() -> bool:
                servers, volumes = self._servers(), self._volumes()
                for vid in to_delete({v.id: v.status for v in volumes}, asked):
                    asked.add(vid)
                    ex.submit(c.block_storage.delete_volume, vid, ignore_missing=True)
                return not servers and not volumes

            wait_for("servers and volumes deleted", gone, budget(self.n), interval=POLL_SECONDS)
        for group in c.compute.server_groups():
            if group.name == f"{self.prefix}-group":
                c.compute.delete_server_group(group)


def _volume_map(volumes: Sequence[Any]) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    return {
        v.name: (
            v.id,
            v.status,
            tuple(a.get("server_id") for a in v.attachments or [] if a.get("server_id")),
        )
        for v in volumes
    }


def group_body(name: str, n: int, size: int) -> dict[str, Any]:
    """The stateful group: N ordinal members with one volume each, deleted with it."""
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachineGroup",
        "metadata": {"name": name},
        "spec": {
            "replicas": n,
            "identity": "Ordinal",
            "haPolicy": "soft",
            "strategy": {"maxSurge": 0, "maxUnavailable": 1},
            "template": {"image": IMAGE, "flavor": FLAVOR, "networks": [NETWORK]},
            "volumeTemplates": [{"name": TEMPLATE, "size": size}],
            "volumeRetention": {"whenScaledDown": "Delete", "whenDeleted": "Delete"},
        },
    }


class StatefulKumo(KumoRun):
    """Kumo's run of the stateful group (`kbench`, members `kbench-<i>`, Volume objects
    `kbench-data-<i>`, Cinder volumes `<namespace>-kbench-data-<i>`). Converged: every
    member Ready and Cinder has its volume in-use on the member's server (the script's
    test). Deleting the group deletes the members and, ``whenDeleted: Delete``, the
    volumes."""

    def __init__(
        self, n: int, kube: lab.Kube, hconn: lab.CountingConnection, drift: float, size: int
    ) -> None:
        super().__init__(n, kube, hconn, drift)
        self.size = size
        self.group = self.groups[0].name

    def server_name(self, i: int) -> str:
        return f"{self.group}-{i}"

    def volume_name(self, i: int) -> str:
        return volume_name(self.namespace, f"{self.group}-{TEMPLATE}-{i}")

    def members(self) -> tuple[int, list[Member]]:
        vms = self.kube.items("virtualmachines", self.namespace)
        servers = {
            v["metadata"]["name"]: (
                (v.get("status") or {}).get("id"),
                "ACTIVE" if lab.is_ready(v) else None,
            )
            for v in vms
        }
        volumes = [
            v
            for v in self.hconn.conn.block_storage.volumes(details=True)
            if (v.name or "").startswith(f"{self.namespace}-")
        ]
        found = members_from(
            self.n, servers, _volume_map(volumes), self.server_name, self.volume_name
        )
        return len(vms) + len(volumes), found

    def converged(self) -> bool:
        self._alive()
        listed, members = self.members()
        if self._converge_t0 is not None:
            now = time.monotonic() - self._converge_t0
            for i, m in enumerate(members):
                if m.done:
                    self.first_ready.setdefault(self.server_name(i), now)
            self.timeline.append((now, sum(m.done for m in members)))
        return listed == 2 * self.n and all(m.done for m in members)

    def converge(self) -> None:
        self._converge_t0 = time.monotonic()
        self.kube.create(
            "virtualmachinegroups", self.namespace, group_body(self.group, self.n, self.size)
        )
        wait_for("Kumo converged", self.converged, budget(self.n), interval=POLL_SECONDS)
        self._converge_t0 = None


class StatefulHarness(stack.Harness):
    """The stack benchmark's harness; after each converge it reads when each member's
    volume, server and attach requests reached the services (their logs)."""

    def measure_steps(
        self, contender: Any, row: report.Row, window: LogWindow, t0_wall: float
    ) -> None:
        lines = list(window.lines())

        def since(times: list[float]) -> list[float]:
            return sorted(t - t0_wall for t in times)

        p = self.project
        done = contender.first_ready if isinstance(contender, KumoRun) else contender.first_done
        row.stages = {
            "volume POST": since(request_times(lines, p, "cinder", "POST", _VOLUME_POST)),
            "server POST": since(server_create_times(lines, p)),
            "attach POST": since(request_times(lines, p, "nova", "POST", _ATTACH_POST)),
            "done seen": sorted(done.values()),
        }


# --- the command ----------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", default="50", help="members, comma-separated sizes")
    parser.add_argument("--size", type=int, default=1, help="GiB of each member's volume")
    parser.add_argument("--contenders", default="kumo,direct", help="subset/order")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="K", help="alternate the contenders K times"
    )
    parser.add_argument("--profile", action="store_true", help="py-spy flame graphs of Kumo")
    parser.add_argument("--plots", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--idle-seconds", type=float, default=20.0, help="Kumo's idle window")
    parser.add_argument("--settle-seconds", type=float, default=10.0, help="pause before idle")
    parser.add_argument(
        "--drift-seconds", type=float, default=10.0, help="kumo run --drift-seconds"
    )
    parser.add_argument("--no-lock", action="store_true", help="the caller holds the lab lock")
    parser.set_defaults(repairs=0)  # the stack's repairs time LB members: none here


def run(args: argparse.Namespace) -> None:
    sizes = [int(x) for x in str(args.n).split(",") if x.strip()]
    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    commit = stack.kumo_commit()

    def run_one(h: stack.Harness, name: str, n: int) -> report.Row:
        if name == "kumo":
            kumo = StatefulKumo(n, h.kube, h.hconn, args.drift_seconds, args.size)
            row = h.run_kumo(n, kumo=kumo)
        elif name == "direct":
            row = h.run_simple(DirectStateful(n, args.size), n)
        else:
            raise SystemExit(f"unknown contender {name} (kumo, direct)")
        phases = ("converge", "idle", "delete")
        row.volume_creates = sum(
            volume_creates(h.calls.get(f"{name}-{n}-{p}", {}).get("logged", {})) for p in phases
        )
        say(f"{name}: {row.volume_creates} volume creates for {n} members")
        return row

    h, rows, sampler = stack.sitting(
        args, lambda: StatefulHarness(args, stamp), sizes, contenders, run_one, shown=SERVICES
    )
    out = stack.save("stateful", stamp, commit, args, rows, h, sampler)
    print()
    print(f"Kumo commit {commit}; {time.strftime('%Y-%m-%d %H:%M')}; details: {out}")
    print(report.table(rows, shown=SERVICES))
    for r in rows:
        for line in stage_lines(r):
            print(line)
        if (reads := report.server_reads(r)) is not None:
            print(reads[0])  # issue 24's figure, shown; the stack benchmark judges it
    for line in per_member_lines(rows):
        print(line)
    if args.repeat > 1:
        print(report.repeat_summary(rows))
    if args.plots:
        ready = "members ACTIVE with their volume in-use"
        plots = stack.write_plots(
            rows, sampler.as_dict(), f"stateful-{stamp}", False, SERVICES, ready
        )
        for path in plots:
            print(f"plot: {path}")
    over = too_many_creates(rows)
    if over:
        raise SystemExit("more than one volume create per member: " + "; ".join(over))
    print("volume creates: at most one per member in every run")
