"""Idle Neutron requests per minute with N of Kumo's security groups (issue 22).

Kumo's cloud watch lists security groups once per interval and re-reads rules only for a
group whose ``revision_number`` moved, so its idle cost must be constant in the number of
groups, with no per-group GET. This bench makes N tagged (Kumo-owned) groups in a lab
project, runs the watch's Neutron refresh for a minute of intervals, and counts

* what the adapter's counter says it asked for (``watch.stats.lists``), and
* what the services saw, from their own request logs (bench/reqlog.py), restricted to
  the project — the number that matters;

then the same with more groups. ``tests/integration/test_security_groups.py`` calls
:func:`measure` with unpaced intervals and asserts the same invariants.

    python -m bench idle-neutron --groups 10,100 [--intervals 6] [--interval 10]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import lab
from bench.reqlog import LogWindow, Tally

PREFIX = "kumo-idle-bench"


@dataclass
class IdleResult:
    groups: int
    intervals: int
    interval_s: float
    adapter: dict[str, int]  # watch.stats.lists deltas (what Kumo asked for)
    services: dict[str, int] = field(default_factory=dict)  # from the request logs
    calls: dict[str, int] = field(default_factory=dict)  # neutron "METHOD /path" -> n
    listing_ms: float = 0.0

    @property
    def per_minute(self) -> dict[str, float]:
        """Requests per minute at the interval (the watch's default is 10 s)."""
        scale = 60.0 / (self.intervals * self.interval_s)
        return {s: n * scale for s, n in self.services.items()}

    @property
    def object_gets(self) -> int:
        """Neutron GETs of one object (a path with an ID): must be 0."""
        return sum(n for k, n in self.calls.items() if k.startswith("GET ") and "{id}" in k)


def neutron(conn: Any, method: str, path: str, **kw: Any) -> Any:
    return getattr(conn.network, method)(path, **kw)


def grow_to(conn: Any, made: list[str], n: int) -> None:
    """N Kumo-tagged security groups (each with Neutron's two default rules)."""
    while len(made) < n:
        body = {"security_group": {"name": f"{PREFIX}-{len(made)}"}}
        group = neutron(conn, "post", "/security-groups", json=body).json()
        gid = group["security_group"]["id"]
        made.append(gid)
        tags = {"tags": ["kumo", f"kumo-owner=idle-bench-{len(made)}"]}
        neutron(conn, "put", f"/security-groups/{gid}/tags", json=tags)


def cleanup(conn: Any, made: list[str]) -> None:
    for gid in made:
        neutron(conn, "delete", f"/security-groups/{gid}")
    made.clear()


def _quiet(logdir: Path) -> LogWindow:
    """A window opened once the logs stopped growing for 1 s (the start-up listing's
    last lines written), so it holds only the idle intervals."""
    last: list[LogWindow] = [LogWindow(logdir)]

    def settled() -> LogWindow | None:
        time.sleep(1.0)  # the quiet period this waits for, not a synchronisation
        now = LogWindow(logdir)
        still = now.offsets == last[0].offsets
        last[0] = now
        return now if still else None

    return lab.wait_for("the request logs to settle", settled, timeout=30, interval=0)


async def _idle(
    cloud: Any,
    intervals: int,
    interval_s: float,
    logdir: Path,
    service: tuple[str, ...] = ("networking.security-groups", "neutron"),
) -> tuple[LogWindow, dict[str, int], float]:
    """The start-up listing (outside the window), then ``intervals`` idle refreshes of
    the watch's ``service``: the first of those names the watch has (a Kumo before the
    service packages named its watchers after the OpenStack projects: ``--against``)."""
    watch = cloud.watch
    await watch.sync()
    name = next(s for s in service if s in watch._services)
    # one refresh outside the window too: the start-up listing's stragglers (seen in an
    # unpaced run at 100 groups) land before it opens
    await watch._refresh(watch._services[name], full=False)
    window = _quiet(logdir)
    before = dict(watch.stats.lists)
    took = 0.0
    for i in range(intervals):
        started = time.monotonic()
        await watch._refresh(watch._services[name], full=False)
        spent = time.monotonic() - started
        took += spent
        if interval_s and i < intervals - 1:
            await asyncio.sleep(max(0.0, interval_s - spent))  # pacing, not synchronisation
    after = watch.stats.lists
    delta = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    return window, delta, took / intervals


def _neutron_calls(tally: Tally) -> dict[str, int]:
    return dict(tally.calls.get("neutron", {}))


def measure(
    conn: Any,
    sizes: tuple[int, ...] = (10, 100),
    intervals: int = 6,
    interval_s: float = 10.0,
    logdir: Path | None = None,
    paced: bool = True,
) -> list[IdleResult]:
    """One :class:`IdleResult` per size, growing the same groups; deletes them after.

    With ``paced`` the intervals take real time (``interval_s`` apart); without, they run
    back to back and the per-minute figures still assume ``interval_s``."""
    from kumo.cloud.adapter import OpenStackCloud

    logdir = logdir or lab.LOGS
    project = conn.current_project_id
    made: list[str] = []
    results = []
    try:
        for n in sizes:
            grow_to(conn, made, n)
            cloud = OpenStackCloud(conn)
            pace = interval_s if paced else 0.0
            window, adapter, took = asyncio.run(_idle(cloud, intervals, pace, logdir))
            expected = sum(adapter.values())

            def seen(w: LogWindow = window, want: int = expected) -> Tally | None:
                tally = w.since(project)
                return tally if tally.requests.get("neutron", 0) >= want else None

            # the request log is written when the response is sent: wait until it shows
            # at least what the adapter counted (then a little more for any stragglers)
            lab.wait_for("the Neutron request log", seen, timeout=15, interval=0.2)
            time.sleep(1.0)  # any request the adapter did not count would land now
            tally = window.since(project)
            results.append(
                IdleResult(
                    groups=n,
                    intervals=intervals,
                    interval_s=interval_s,
                    adapter=adapter,
                    services=dict(tally.requests),
                    calls=_neutron_calls(tally),
                    listing_ms=took * 1000,
                )
            )
    finally:
        cleanup(conn, made)
    return results


def table(results: list[IdleResult]) -> str:
    services = sorted({s for r in results for s in r.services} | {"neutron"})
    head = ["groups", *[f"{s} req/min" for s in services], "GETs per object", "ms/listing"]
    rows = [head]
    for r in results:
        pm = r.per_minute
        per_object = r.object_gets / r.groups if r.groups else 0.0
        rows.append(
            [
                str(r.groups),
                *[f"{pm.get(s, 0.0):.1f}" for s in services],
                f"{per_object:.2f}",
                f"{r.listing_ms:.0f}",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = [" | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    if len(results) >= 2:
        a, b = results[0], results[-1]
        na, nb = a.per_minute.get("neutron", 0.0), b.per_minute.get("neutron", 0.0)
        ratio = nb / na if na else float("nan")
        lines.append(f"neutron req/min ratio {b.groups}/{a.groups}: {ratio:.2f} (1.00 = constant)")
    for r in results:
        calls = ", ".join(f"{k} x{n}" for k, n in sorted(r.calls.items()))
        lines.append(f"{r.groups} groups, neutron calls in {r.intervals} intervals: {calls}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--groups", default="10,100", help="sizes, comma-separated")
    parser.add_argument("--intervals", type=int, default=6, help="refreshes per size")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between them")
    parser.add_argument("--cloud", default="kumo-demo", help="clouds.yaml entry (project)")
    parser.add_argument("--no-lock", action="store_true", help="the caller holds the lab lock")


def run(args: argparse.Namespace) -> None:
    from bench.stack import lab_lock, single_operator

    sizes = tuple(int(s) for s in args.groups.split(","))
    with lab_lock(args.no_lock), single_operator(lab.Kube()):
        conn = lab.connect(args.cloud)
        lab.say(f"idle Neutron: {sizes} groups, {args.intervals} x {args.interval:.0f} s each")
        results = measure(conn, sizes, args.intervals, args.interval)
    print(table(results))
    bad = [r.groups for r in results if r.object_gets]
    if bad:
        raise SystemExit(f"per-object GETs with {bad} groups")
    if len({r.services.get("neutron", 0) for r in results}) > 1:
        raise SystemExit("idle Neutron requests are not constant in the number of groups")
