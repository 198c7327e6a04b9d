"""Idle Cinder requests per minute with N of Kumo's volumes (issue 38: every page read).

Kumo's cloud watch lists Kumo's volumes (metadata ``kumo: managed``) once per interval.
Cinder answers at most ``osapi_max_limit`` (1,000) volumes per page, so the watch reads
every page (cloud/pages.py), asking Cinder's count so that a listing which fills its
page exactly costs no second call. This bench makes N volumes carrying Kumo's marker
directly with openstacksdk (named ``kbench-idle-…``: the bench sweep finds them after a
crash), runs the watch's Cinder refresh for a minute of intervals, and counts what
cinder-api's own request log saw from the project (bench/reqlog.py); with ``--against
SRC`` the same refreshes run again in a process importing Kumo from SRC (another
checkout's ``src``, e.g. before a change), so both are counted on the same volumes.

    python -m bench idle-cinder --volumes 10,1000 [--against /path/to/other/src]
        [--intervals 6] [--interval 10] [--cloud kumo-bench] [--no-lock]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench import lab
from bench.idle import IdleResult, _idle
from bench.reqlog import LogWindow, Tally

PREFIX = f"{lab.PREFIX}-idle"
MARKER = {"kumo": "managed"}
MV = "3.0"


def _cinder(conn: Any, method: str, path: str, **kw: Any) -> Any:
    response = getattr(conn.block_storage, method)(path, microversion=MV, **kw)
    if response.status_code >= 400:
        raise RuntimeError(f"{method.upper()} {path}: {response.status_code} {response.text}")
    return response.json() if response.content else None


def ours(conn: Any) -> dict[str, str]:
    """ID → status of every bench volume in the project (the SDK reads every page)."""
    return {
        v.id: v.status
        for v in conn.block_storage.volumes(details=True)
        if (v.name or "").startswith(PREFIX)
    }


def grow_to(conn: Any, n: int, threads: int = 8) -> None:
    """N bench volumes carrying Kumo's marker, all ``available``."""
    have = len(ours(conn))

    def make(i: int) -> None:
        metadata = {**MARKER, "kumo-owner": f"idle-bench-{i}"}
        body = {"volume": {"name": f"{PREFIX}-{i}", "size": 1, "metadata": metadata}}
        _cinder(conn, "post", "/volumes", json=body)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(make, range(have, n)))

    def settled() -> bool:
        found = ours(conn)
        busy = [s for s in found.values() if s != "available"]
        if any(s.startswith("error") for s in busy):
            raise RuntimeError(f"bench volumes in error: {busy[:5]}")
        return len(found) >= n and not busy

    lab.wait_for(f"{n} bench volumes available", settled, timeout=900, interval=5)


def sweep(conn: Any, threads: int = 8) -> None:
    """Delete every bench volume (again, each one Cinder has not begun deleting: one
    still being created refuses it) until Cinder lists none."""

    def delete(volume_id: str) -> None:
        conn.block_storage.delete(f"/volumes/{volume_id}", microversion=MV)

    def gone() -> bool:
        found = ours(conn)
        todo = [v for v, status in found.items() if status not in ("deleting", "creating")]
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(delete, todo))
        return not found

    lab.wait_for("the bench volumes deleted", gone, timeout=900, interval=5)


def measure(cloud_name: str, n: int, intervals: int, interval_s: float) -> IdleResult:
    """The watch's idle Cinder refreshes in this process (whichever Kumo it imports)."""
    from kumo.cloud.adapter import OpenStackCloud

    conn = lab.connect(cloud_name)
    project = conn.current_project_id
    window, adapter, took = asyncio.run(
        _idle(
            OpenStackCloud(conn),
            intervals,
            interval_s,
            lab.LOGS,
            service=("blockstorage", "cinder"),
        )
    )
    listings = sum(adapter.values())

    def seen(w: LogWindow = window) -> Tally | None:
        tally = w.since(project)
        return tally if tally.requests.get("cinder", 0) >= listings else None

    # the request log is written when the answer is sent: wait until it shows at least
    # one request per listing (then a little more for the pages after the first)
    lab.wait_for("the Cinder request log", seen, timeout=30, interval=0.2)
    time.sleep(1.0)  # any later page of the last listing lands now, not synchronisation
    tally = window.since(project)
    return IdleResult(
        groups=n,
        intervals=intervals,
        interval_s=interval_s,
        adapter=adapter,
        services=dict(tally.requests),
        calls=dict(tally.calls.get("cinder", {})),
        listing_ms=took * 1000,
    )


def measure_against(
    src: str, cloud_name: str, n: int, intervals: int, interval_s: float
) -> IdleResult:
    """:func:`measure` in a process that imports Kumo from ``src``."""
    code = (
        "import dataclasses, json; from bench import idle_cinder as m; "
        f"print(json.dumps(dataclasses.asdict(m.measure({cloud_name!r}, {n}, {intervals}, "
        f"{interval_s}))))"
    )
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{lab.ROOT}"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=lab.ROOT, capture_output=True, text=True
    )
    if out.returncode:
        raise RuntimeError(f"measuring with {src} failed:\n{out.stderr[-2000:]}")
    return IdleResult(**json.loads(out.stdout.strip().splitlines()[-1]))


def volume_reads(result: IdleResult) -> int:
    """Cinder GETs of one volume (``/volumes/{id}`` after the project): must be 0."""
    return sum(n for k, n in result.calls.items() if k.startswith("GET /v3/{id}/volumes/{id}"))


def table(rows: list[tuple[str, IdleResult]]) -> str:
    head = ["kumo", "volumes", "cinder req/min", "listings", "volume GETs", "ms/listing"]
    lines = [head]
    for label, r in rows:
        lines.append(
            [
                label,
                str(r.groups),
                f"{r.per_minute.get('cinder', 0.0):.1f}",
                str(sum(r.adapter.values())),
                str(volume_reads(r)),
                f"{r.listing_ms:.0f}",
            ]
        )
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    text = [" | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in lines]
    text.insert(1, "-+-".join("-" * w for w in widths))
    for label, r in rows:
        calls = ", ".join(f"{k} x{n}" for k, n in sorted(r.calls.items()))
        text.append(
            f"{label}, {r.groups} volumes, cinder calls in {r.intervals} intervals: {calls}"
        )
    return "\n".join(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--volumes", default="10,1000", help="sizes, comma-separated")
    parser.add_argument("--against", default="", help="another Kumo's src to measure too")
    parser.add_argument("--intervals", type=int, default=6, help="refreshes per size")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between them")
    parser.add_argument("--cloud", default=lab.CLOUD, help="clouds.yaml entry (project)")
    parser.add_argument("--no-lock", action="store_true", help="the caller holds the lab lock")


def run(args: argparse.Namespace) -> None:
    from bench.stack import lab_lock

    sizes = tuple(int(s) for s in args.volumes.split(","))
    rows: list[tuple[str, IdleResult]] = []
    with lab_lock(args.no_lock):
        conn = lab.connect(args.cloud)
        try:
            for n in sizes:
                lab.say(f"idle Cinder: growing to {n} marked volumes")
                grow_to(conn, n)
                lab.say(f"{n} volumes: {args.intervals} x {args.interval:.0f} s, this Kumo")
                rows.append(("this", measure(args.cloud, n, args.intervals, args.interval)))
                if args.against:
                    lab.say(f"{n} volumes: the same with Kumo from {args.against}")
                    other = measure_against(
                        args.against, args.cloud, n, args.intervals, args.interval
                    )
                    rows.append(("against", other))
        finally:
            lab.say("deleting the bench volumes")
            sweep(conn)
    print(table(rows))
    print(json.dumps([{"kumo": k, **dataclasses.asdict(r)} for k, r in rows]))
    bad = [r.groups for _, r in rows if volume_reads(r)]
    if bad:
        raise SystemExit(f"per-volume GETs with {bad} volumes")
