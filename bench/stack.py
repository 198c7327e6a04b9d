"""The real-stack benchmark: Kumo vs. a direct openstacksdk script vs. Heat on the lab.

`python -m bench stack --n 20,100` runs, for each N, the three contenders one after the
other in the `kumo-bench` project and prints one table (docs/performance.md says what
each column means and how it is measured). `python -m bench fleet --n 1000 --groups 10`
measures Kumo alone on a big fleet once converged: N VMs over 10 groups, each with its
own LoadBalancer and DNSRecord. Both hold the lab lock (/tmp/kumo-lab.lock) for
the whole run, pause the operator `make up` runs (one Kumo leads the cluster at a time)
and start it again at the end, and delete every cloud resource they created, also on
failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import lab, report
from bench.contenders import Direct, Heat, KumoRun, split
from bench.lab import say, wait_for
from bench.reqlog import LogWindow, Tally, server_create_times, server_reads
from bench.sampler import Sampler

LOCK = Path("/tmp/kumo-lab.lock")
RESULTS = lab.STATE / "bench"


def add_arguments(parser: argparse.ArgumentParser, fleet: bool) -> None:
    parser.add_argument(
        "--n",
        default="1000" if fleet else "20,100",
        help="VMs in all, comma-separated" if fleet else "group sizes, comma-separated",
    )
    if fleet:  # the stack benchmark keeps one group + one LB, as direct and Heat build
        parser.add_argument(
            "--groups", type=int, default=10, help="VirtualMachineGroups the N VMs are split over"
        )
        parser.add_argument(
            "--dns",
            action=argparse.BooleanOptionalAction,
            default=True,
            help=f"a DNSRecord per LoadBalancer, in the lab's zone {lab.ZONE}",
        )
    parser.add_argument(
        "--contenders",
        default="kumo" if fleet else "kumo,direct,heat",
        help="subset/order, comma-separated"
        + (" (kumo, direct: the same G groups by a direct script)" if fleet else ""),
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="K",
        help="run the contenders K times alternately (kumo, direct, kumo, direct, …) and "
        "print the median and the spread (min-max) of converge, delete and their ratios",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="record Kumo with py-spy: a flame graph (SVG) of the converge and of the "
        "delete in .kumo-dev/bench/",
    )
    parser.add_argument(
        "--plots",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="write PNG plots into .kumo-dev/bench/ (matplotlib, the bench extra)",
    )
    parser.add_argument("--repairs", type=int, default=10, help="out-of-band deletes timed")
    parser.add_argument("--idle-seconds", type=float, default=60.0, help="idle window length")
    parser.add_argument("--settle-seconds", type=float, default=10.0, help="pause before idle")
    parser.add_argument(
        "--drift-seconds", type=float, default=10.0, help="kumo run --drift-seconds"
    )
    parser.add_argument("--no-lock", action="store_true", help="the caller holds the lab lock")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=ARGS",
        help="another Kumo contender: `kumo run` with ARGS added (e.g. "
        "'kumo16=--workers 16 --cloud-concurrency 16'); list NAME in --contenders",
    )


@contextlib.contextmanager
def lab_lock(skip: bool) -> Iterator[None]:
    if skip:
        yield
        return
    with open(LOCK, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for the lab lock {LOCK} (someone else is loading the lab)")
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def single_operator(kube: lab.Kube) -> Iterator[None]:
    """Pause `make up`'s operator (dev/operator.sh) for the run; start it again after."""
    was_running = lab.dev_operator("status")
    if was_running:
        say("stopping make up's operator (dev/operator.sh stop) for the run")
        lab.dev_operator("stop")
    try:
        yield
    finally:
        if was_running:
            say("starting make up's operator again (dev/operator.sh start)")
            lab.dev_operator("start")


def ensure_heat() -> None:
    """Heat answers, else `lab.sh up-extra heat` installs and starts it (about 20-60 s)."""
    script = lab.ROOT / "dev" / "openstack" / "lab.sh"
    try:
        conn = lab.connect()
        list(conn.orchestration.stacks())
        return
    except Exception:
        say("Heat is not running: lab.sh up-extra heat")
    subprocess.run(["bash", str(script), "up-extra", "heat"], check=True)


def minus(tally: Tally, before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The window's requests per service, less the harness's own requests in it."""
    out = {}
    for service, n in tally.requests.items():
        n -= after.get(service, 0) - before.get(service, 0)
        if n > 0:
            out[service] = n
    return out


def add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: a.get(k, 0) + b.get(k, 0) for k in sorted(set(a) | set(b))}


class Harness:
    def __init__(self, args: argparse.Namespace, stamp: str = "") -> None:
        self.args = args
        self.stamp = stamp
        self.kumo: KumoRun | None = None  # the running Kumo, for the sampler
        self.profiles: list[Path] = []
        self.run_no = 0  # the repeat being run (--repeat), for the profiles' names
        self.kube = lab.Kube()
        self.hconn = lab.CountingConnection()
        self.project = self.hconn.conn.current_project_id
        self.calls: dict[str, Any] = {}  # per contender: request shapes, for the JSON file
        self.server_reads = 0  # GET /servers/{id} in the latest window

    def window(self) -> tuple[LogWindow, dict[str, int]]:
        return LogWindow(lab.LOGS), self.hconn.snapshot()

    def requests(self, start: tuple[LogWindow, dict[str, int]], key: str) -> dict[str, int]:
        tally = start[0].since(self.project)
        now = self.hconn.snapshot()
        harness = {k: v - start[1].get(k, 0) for k, v in now.items() if v > start[1].get(k, 0)}
        self.calls[key] = {"logged": tally.calls, "of_which_harness": harness}
        self.server_reads = server_reads(tally)  # the harness reads no server by ID
        return minus(tally, start[1], now)

    # --- direct script and Heat: converge, then delete ---
    def run_simple(self, contender: Any, n: int) -> report.Row:
        """A contender with ``converge()`` and ``delete()`` (Direct, Heat, …), timed."""
        row = report.Row(contender.name, n)
        w = self.window()
        t0, t0_wall = time.monotonic(), time.time()
        try:
            contender.converge()
            row.converge_s = time.monotonic() - t0
            self.measure(contender, row, w[0], t0_wall)
            created = self.requests(w, f"{contender.name}-{n}-converge")
        finally:
            row.ready_timeline = list(getattr(contender, "timeline", []))
            w = self.window()
            t0 = time.monotonic()
            contender.delete()
            row.delete_s = time.monotonic() - t0
            deleted = self.requests(w, f"{contender.name}-{n}-delete")
        row.requests = add(created, deleted)
        return row

    # --- Kumo ---
    def run_kumo(
        self,
        n: int,
        fleet: bool = False,
        name: str = "kumo",
        extra: list[str] | None = None,
        kumo: KumoRun | None = None,
    ) -> report.Row:
        """A Kumo run: ``kumo`` if given (another workload, e.g. the stateful group's),
        else the stack's or the fleet's."""
        groups, dns = (self.args.groups, self.args.dns) if fleet else (1, False)
        row = report.Row(name, n, groups=groups, dns_records=groups if dns else 0)
        if kumo is None:
            kumo = KumoRun(n, self.kube, self.hconn, self.args.drift_seconds, groups, dns, extra)
        self.kumo = kumo
        try:
            kumo.setup()
            kumo.start()
            w = self.window()
            t0, t0_wall = time.monotonic(), time.time()
            cpu0 = kumo.usage()[1]
            with self.profile(kumo, f"{name}-{n}-converge"):
                kumo.converge()
            row.converge_s = time.monotonic() - t0
            row.cpu_converge_s = kumo.usage()[1] - cpu0
            row.ready_timeline = list(kumo.timeline)
            self.measure(kumo, row, w[0], t0_wall)
            created = self.requests(w, f"{name}-{n}-converge")
            row.converge_server_reads = self.server_reads
            say(
                f"kumo: converged in {row.converge_s:.1f}s; settling {self.args.settle_seconds:.0f}s"
            )
            time.sleep(self.args.settle_seconds)
            self.idle(kumo, row)
            self.repairs(kumo, row)
            if fleet:
                kumo = self.restart(kumo, row)
            rss, cpu0 = kumo.usage()
            # After a restart (fleet), row already holds the first process's figures.
            row.peak_rss_mib = max(row.peak_rss_mib or 0.0, rss)
            row.cpu_s = (row.cpu_s or 0.0) + cpu0
            w = self.window()
            t0 = time.monotonic()
            with self.profile(kumo, f"{name}-{n}-delete"):
                kumo.delete()
            row.delete_s = time.monotonic() - t0
            row.cpu_delete_s = kumo.usage()[1] - cpu0
            row.requests = add(created, self.requests(w, f"{name}-{n}-delete"))
            return row
        finally:
            kumo.teardown()
            self.kumo = None

    def measure(self, contender: Any, row: report.Row, window: LogWindow, t0_wall: float) -> None:
        """After a converge, before its requests are counted: Kumo's critical path
        (another harness measures its own workload's steps). A measurement aid: it never
        fails the run."""
        try:
            self.measure_steps(contender, row, window, t0_wall)
        except Exception as error:
            say(f"{row.contender}: critical path not measured: {type(error).__name__}: {error}")

    def measure_steps(
        self, contender: Any, row: report.Row, window: LogWindow, t0_wall: float
    ) -> None:
        if isinstance(contender, KumoRun):
            self.critical_path(contender, row, window, t0_wall)

    @contextlib.contextmanager
    def profile(self, kumo: KumoRun, phase: str) -> Iterator[None]:
        """With --profile: `py-spy record` of Kumo's process for the phase, an SVG flame
        graph in .kumo-dev/bench/ (py-spy needs ptrace: root, or CAP_SYS_PTRACE)."""
        if not self.args.profile:
            yield
            return
        out = RESULTS / f"profile-{self.stamp}-{phase}-{self.run_no}.svg"
        spy = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "--pid",
                str(kumo.pid),
                "--output",
                str(out),
                "--format",
                "flamegraph",
                "--rate",
                "50",
                "--nonblocking",  # do not pause Kumo to sample it: the timing stays honest
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            yield
        finally:
            spy.send_signal(signal.SIGINT)  # py-spy writes the SVG on SIGINT
            try:
                _, err = spy.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                spy.kill()
                _, err = spy.communicate()
            if out.exists():
                self.profiles.append(out)
                say(f"py-spy: {out}")
            else:
                say(f"py-spy wrote no profile: {err.decode(errors='replace')[-300:]}")

    def critical_path(
        self, kumo: KumoRun, row: report.Row, window: LogWindow, t0_wall: float
    ) -> None:
        """Per VM: objects created → Nova's POST /servers (nova-api's log), Nova's
        launched_at → first seen Ready, launched_at → its member's created_at in Octavia. One
        server listing and one member listing per LB (the harness's, not counted)."""
        posts = server_create_times(window.lines(), self.project)
        row.create_to_post_s = [t - t0_wall for t in posts]
        ready_wall = {vm: t0_wall + t for vm, t in kumo.first_ready.items()}
        vms = self.kube.items("virtualmachines", kumo.namespace)
        server_of = {_name(v): (v.get("status") or {}).get("id") for v in vms}
        launched = {
            s.id: report.utc_seconds(getattr(s, "launched_at", None))
            for s in self.hconn.conn.compute.servers(details=True)
        }
        active = {
            vm: t for vm, sid in server_of.items() if (t := launched.get(sid or "")) is not None
        }
        row.active_to_ready_s = report.deltas(active, ready_wall)
        vm_of_addr = {
            a.get("ip"): _name(v)
            for v in vms
            for a in (v.get("status") or {}).get("addresses") or []
        }
        member_at: dict[str, float] = {}
        for lb in self.kube.items("loadbalancers", kumo.namespace):
            ports = (lb.get("status") or {}).get("ports") or []
            pool = ports[0].get("poolId") if ports else None
            for m in self.hconn.conn.load_balancer.members(pool) if pool else []:
                created = report.utc_seconds(getattr(m, "created_at", None))
                if m.address in vm_of_addr and created is not None:
                    member_at[vm_of_addr[m.address]] = created
        row.active_to_member_s = report.deltas(active, member_at)
        for line in report.critical_path(row):
            say(line)

    def idle(self, kumo: KumoRun, row: report.Row) -> None:
        seconds = self.args.idle_seconds
        say(f"kumo: idle window {seconds:.0f}s")
        w = self.window()
        time.sleep(seconds)
        tally = w[0].since(self.project)
        self.calls[f"{row.contender}-{row.n}-idle"] = {
            "logged": tally.calls,
            "of_which_harness": {},
        }
        per_min = 60.0 / seconds
        row.idle_per_min = {
            s: c * per_min for s, c in minus(tally, w[1], self.hconn.snapshot()).items()
        }
        row.idle_nova_bytes_per_min = tally.bytes.get("nova", 0) * per_min
        response = self.hconn.conn.compute.get("/servers/detail")
        row.full_listing_bytes = len(response.content)

    def repairs(self, kumo: KumoRun, row: report.Row) -> None:
        for i in range(self.args.repairs):
            t_noticed, t_vm, t_member = kumo.repair(i * 7)
            row.repair_noticed_s.append(t_noticed)
            row.repair_vm_s.append(t_vm)
            row.repair_member_s.append(t_member)
            say(
                f"kumo: repair {i + 1}/{self.args.repairs}: noticed {t_noticed:.1f}s, "
                f"VM {t_vm:.1f}s, member {t_member:.1f}s"
            )

    def restart(self, kumo: KumoRun, row: report.Row) -> KumoRun:
        """Stop Kumo, start a new process; time until it has reconciled every object once
        (kumo_reconciles_total ≥ objects)."""
        row.peak_rss_mib, row.cpu_s = kumo.usage()
        say("kumo: restart")
        kumo.stop()
        objects = kumo.objects  # the VMs, the groups, their LBs and DNSRecords
        t0 = time.monotonic()
        kumo.start()

        def full_pass() -> bool:
            # kumo_queue_depth counts keys scheduled for later too (every object has its
            # resync queued once reconciled), so it never reaches 0: count reconciles.
            return lab.metrics(kumo.port).get("kumo_reconciles_total", 0) >= objects

        wait_for("first full pass after restart", full_pass, 3600, interval=0.5)
        row.restart_full_pass_s = time.monotonic() - t0
        say(f"kumo: first full pass {row.restart_full_pass_s:.1f}s after the restart")
        return kumo


def _name(body: dict[str, Any]) -> str:
    return str(body["metadata"]["name"])


def run(args: argparse.Namespace, fleet: bool) -> None:
    sizes = [int(x) for x in str(args.n).split(",") if x.strip()]
    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    if fleet and "heat" in contenders:
        raise SystemExit("--contenders: the fleet has kumo and direct (no Heat template)")
    variants = {
        name: shlex.split(extra) for name, _, extra in (v.partition("=") for v in args.variant)
    }
    for n in sizes if fleet else []:  # a bad --groups fails here, before the lab is touched
        try:
            split(n, args.groups)
        except ValueError as error:
            raise SystemExit(f"--groups: {error}") from None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    kind = "fleet" if fleet else "stack"
    commit = kumo_commit()

    def run_one(h: Harness, name: str, n: int) -> report.Row:
        if name == "kumo":
            return h.run_kumo(n, fleet=fleet)
        if name in variants:
            return h.run_kumo(n, fleet, name, variants[name])
        if name == "direct":
            row = h.run_simple(Direct(n, args.groups if fleet else 1), n)
            row.groups = args.groups if fleet else 1
            return row
        if name == "heat":
            return h.run_simple(Heat(n), n)
        raise SystemExit(f"unknown contender {name}")

    prepare = ensure_heat if "heat" in contenders else None
    h, rows, sampler = sitting(
        args, lambda: Harness(args, stamp), sizes, contenders, run_one, prepare
    )
    out = save(kind, stamp, commit, args, rows, h, sampler)
    print()
    print(f"Kumo commit {commit}; {time.strftime('%Y-%m-%d %H:%M')}; details: {out}")
    print(report.fleet_table(rows) if fleet else report.table(rows))
    if fleet and len({r.contender for r in rows}) > 1:
        print(report.table(rows))  # converge, delete and requests per service side by side
    missed = []
    for r in rows:
        for line in report.critical_path(r):
            print(line)
        if (reads := report.server_reads(r)) is not None:
            print(reads[0])
            if not reads[1]:
                missed.append(reads[0])
    if args.repeat > 1:
        print(report.repeat_summary(rows))
    if args.plots:
        for path in write_plots(rows, sampler.as_dict(), f"{kind}-{stamp}", fleet):
            print(f"plot: {path}")
    for r in rows:
        if (
            r.contender.startswith("kumo")
            and r.full_listing_bytes
            and r.idle_nova_bytes_per_min is not None
        ):
            share = r.idle_nova_bytes_per_min / r.full_listing_bytes
            print(
                f"N={r.n}: Kumo idle Nova bytes/min = {share:.1%} of one full server listing "
                f"({r.full_listing_bytes} B); idle req/min by service: "
                + ", ".join(f"{s} {v:.1f}" for s, v in sorted((r.idle_per_min or {}).items()))
            )
    if missed:
        raise SystemExit("per-server reads over the goal:\n" + "\n".join(missed))


def kumo_commit() -> str:
    return subprocess.run(
        ["git", "-C", str(lab.ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()


def sitting(
    args: argparse.Namespace,
    make_harness: Callable[[], Harness],
    sizes: list[int],
    contenders: list[str],
    run_one: Callable[[Harness, str, int], report.Row],
    prepare: Callable[[], None] | None = None,
    shown: tuple[str, ...] = report.SHOWN,
) -> tuple[Harness, list[report.Row], Sampler]:
    """One sitting on the lab: under its lock, with make up's operator paused and the
    sampler running, for each N the contenders ``args.repeat`` times alternately
    (``run_one`` runs one); a failed run becomes a row with its error. Leftovers are
    swept before, after a failure and at the end."""
    rows: list[report.Row] = []
    RESULTS.mkdir(parents=True, exist_ok=True)
    with lab_lock(args.no_lock):
        if prepare is not None:
            prepare()
        h = make_harness()
        lab.sweep(h.hconn.conn)  # a previous run's leftovers
        sampler = Sampler(lambda: h.kumo.pid if h.kumo and h.kumo.proc else None)
        # Always: octavia-api and keystone log no project, so another operator's polls
        # would be counted as the contender's.
        with single_operator(h.kube), sampler:
            try:
                for n in sizes:
                    for k, name in ((k, c) for k in range(args.repeat) for c in contenders):
                        run_no = f" (run {k + 1}/{args.repeat})" if args.repeat > 1 else ""
                        say(f"=== N={n}: {name}{run_no}")
                        sampler.phase(f"{name} N={n}{run_no}")
                        h.run_no = k + 1
                        try:
                            row = run_one(h, name, n)
                        except (Exception, KeyboardInterrupt) as error:
                            row = report.Row(name, n, error=f"{type(error).__name__}: {error}")
                            say(f"{name} N={n} failed: {row.error}")
                            lab.sweep(h.hconn.conn)
                            if isinstance(error, KeyboardInterrupt):
                                raise
                        rows.append(row)
                        say(report.table([row], shown=shown).splitlines()[-1])
            finally:
                lab.sweep(h.hconn.conn)
    return h, rows, sampler


def save(
    kind: str,
    stamp: str,
    commit: str,
    args: argparse.Namespace,
    rows: list[report.Row],
    h: Harness,
    sampler: Sampler,
) -> Path:
    """Every number of the sitting in .kumo-dev/bench/<kind>-<stamp>.json."""
    out = RESULTS / f"{kind}-{stamp}.json"
    out.write_text(
        json.dumps(
            {
                "commit": commit,
                "args": vars(args),
                "rows": [asdict(r) for r in rows],
                "request_shapes": h.calls,
                "samples": sampler.as_dict(),
                "profiles": [str(p) for p in h.profiles],
            },
            indent=1,
        )
    )
    return out


def write_plots(
    rows: list[report.Row],
    samples: dict[str, Any],
    stem: str,
    fleet: bool,
    shown: tuple[str, ...] = report.SHOWN,
    ready: str | None = None,
) -> list[Path]:
    """The run's PNGs in .kumo-dev/bench/ (a missing matplotlib skips them, saying so)."""
    try:
        from bench import plots
    except ImportError as error:  # pragma: no cover - the bench extra is not installed
        say(f"no plots ({error}): pip install -e '.[bench]'")
        return []
    out = [
        plots.ready_over_time(rows, RESULTS / f"{stem}-ready.png", *([ready] if ready else [])),
        plots.requests_per_service(rows, RESULTS / f"{stem}-requests.png", shown),
    ]
    if fleet or samples.get("t"):
        out.append(plots.cpu_over_time(samples, RESULTS / f"{stem}-cpu.png"))
    return out
