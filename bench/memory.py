"""Drift detection: Kumo's cloud watch (one changes-since listing per project) vs. a GET
per object per interval.

Both run side by side in the same process against the same in-memory Nova with a fixed
per-call latency, so the printed ratio is stable on a noisy machine. One server of the
fleet is deleted out of band; each side must find it, and only it. The fleet size and
latency are arguments: `python -m bench memory --vms 1000 --latency-ms 20`.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from kumo.cloud import model
from kumo.cloud.services import WATCHERS
from kumo.cloud.services.compute.watch import ServerWatcher
from kumo.cloud.watch import CloudWatch
from kumo.engine.errors import TransientError
from tests.unit.fakes import FakeServers

#: The in-memory benchmarks' cluster ID (kumo.ports.markers): no cluster to derive it from.
BENCH_CLUSTER = "bench"


class SlowNova(FakeServers):
    """Every API call costs ``latency`` seconds, at most ``concurrency`` at a time."""

    def __init__(self, latency: float, concurrency: int) -> None:
        super().__init__()
        self.latency = latency
        self.slots = asyncio.Semaphore(concurrency)
        self.api_calls = 0

    async def _pay(self) -> None:
        self.api_calls += 1
        async with self.slots:
            await asyncio.sleep(self.latency)

    async def list_servers_since(self, since: str | None) -> tuple[list[model.Server], str | None]:
        await self._pay()
        return await super().list_servers_since(since)

    async def get_server(self, server_id: str) -> model.Server | None:
        await self._pay()
        return await super().get_server(server_id)


class NovaOnly:
    """The project's services for the watch: Nova, and every other service answering
    503 (its watcher fails and backs off; no call of it is counted)."""

    def __init__(self, nova: SlowNova) -> None:
        self.nova = nova

    def __getattr__(self, name: str) -> Any:
        if hasattr(self.nova, name):
            return getattr(self.nova, name)

        async def missing(*args: Any, **kwargs: Any) -> Any:
            raise TransientError("ServiceUnavailable", f"{name}: only Nova here")

        return missing


def fleet(cloud: SlowNova, size: int) -> tuple[dict[str, str], str]:
    """``size`` ACTIVE servers, each with its own owner's marker (owner UID → server ID),
    and the owner whose server someone then deletes by hand."""
    owners = {
        f"uid{i}": cloud.add_server(f"vm{i}", tags=model.marker_tags(f"uid{i}")).id
        for i in range(size)
    }
    cloud.settle()
    return owners, f"uid{size // 2}"


async def per_object_gets(cloud: SlowNova, owners: dict[str, str]) -> list[str]:
    """Baseline: what a timer-per-object operator does every interval."""
    found = await asyncio.gather(*(cloud.get_server(sid) for sid in owners.values()))
    return sorted(uid for uid, server in zip(owners, found, strict=True) if server is None)


async def one_watch_pass(watch: CloudWatch) -> list[str]:
    """One incremental pass of the watch's Nova service (what it does each interval),
    and the owners it reports changed."""
    reported: list[str] = []

    def notify(owners: set[str], duplicated: set[str], woken: set[str]) -> None:
        reported.extend(owners)

    watch._notify = notify  # the loop's callback (kumo.cloud.watch.CloudWatch.run)
    await watch._refresh(watch._services[ServerWatcher.service], False)
    return sorted(reported)


async def main(vms: int, latency: float, concurrency: int) -> None:
    cloud = SlowNova(latency, concurrency)
    owners, victim = fleet(cloud, vms)
    watch = CloudWatch(NovaOnly(cloud), watchers=WATCHERS)  # type: ignore[arg-type]
    await watch.sync()  # the first full listing, once after start
    cloud.tick(5)
    await FakeServers.delete_server(cloud, owners[victim])  # out of band
    cloud.settle()
    cloud.tick(5)

    cloud.api_calls = 0
    started = time.perf_counter()
    baseline = await per_object_gets(cloud, owners)
    baseline_s, baseline_calls = time.perf_counter() - started, cloud.api_calls

    cloud.api_calls = 0
    started = time.perf_counter()
    found = await one_watch_pass(watch)
    kumo_s, kumo_calls = time.perf_counter() - started, cloud.api_calls
    watch.close()

    assert baseline == found == [victim], f"both must find {victim}: {baseline}, {found}"
    print(f"drift detection over {vms} VMs, {latency * 1000:.0f} ms/call, {concurrency} in flight")
    print(f"  baseline (GET per object): {baseline_s:8.3f} s  {baseline_calls:5d} API calls")
    print(f"  kumo (watch, changes-since): {kumo_s:6.3f} s  {kumo_calls:5d} API calls")
    print(
        f"  ratio baseline/kumo:       {baseline_s / kumo_s:8.1f}x time  "
        f"{baseline_calls / kumo_calls:5.0f}x calls"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vms", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=8)


def run(args: argparse.Namespace) -> None:
    model.set_cluster(BENCH_CLUSTER)  # what `kumo run` derives: the markers name it
    asyncio.run(main(args.vms, args.latency_ms / 1000, args.concurrency))
