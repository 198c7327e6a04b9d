"""Drift detection: Kumo's one list call per cloud vs. a GET per object per interval.

Both run side by side in the same process against the same in-memory cloud with a
fixed per-call latency, so the printed ratio is stable on a noisy machine. The fleet
size and latency are arguments: `python -m bench memory --vms 1000 --latency-ms 20`.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import time

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.engine.objects import Obj
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from tests.unit.fakes import FakeNova, make_body


class SlowNova(FakeNova):
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

    async def list_managed_servers(self):  # type: ignore[no-untyped-def]
        await self._pay()
        return await super().list_managed_servers()

    async def get_server(self, server_id: str):  # type: ignore[no-untyped-def]
        await self._pay()
        return await super().get_server(server_id)


async def fleet(cloud: SlowNova, size: int) -> list[Obj]:
    objs = []
    for i in range(size):
        server = await FakeNova.create_server(
            cloud,
            name=f"vm{i}",
            image_id="img",
            flavor_id="flv",
            network_ids=[],
            user_data=None,
            description=None,
            metadata={},
            tags=["kumo", f"kumo-owner=uid{i}"],
            availability_zone=None,
            key_name=None,
            security_groups=[],
            server_group_id=None,
        )
        cloud.servers[server.id]["status"] = "ACTIVE"
        body = make_body(
            VIRTUAL_MACHINE, f"vm{i}", {"image": "centos79", "flavor": "f"}, uid=f"uid{i}"
        )
        body["status"] = {"id": server.id, "phase": "Running"}
        objs.append(Obj(VIRTUAL_MACHINE, copy.deepcopy(body)))
    victim = objs[size // 2]
    cloud.servers.pop(victim.status["id"])  # one server deleted out of band
    return objs


async def per_object_gets(cloud: SlowNova, objs: list[Obj]) -> list[str]:
    """Baseline: what a timer-per-object operator does every interval."""
    results = await asyncio.gather(*(cloud.get_server(o.status["id"]) for o in objs))
    return [o.name for o, server in zip(objs, results, strict=True) if server is None]


async def main(vms: int, latency: float, concurrency: int) -> None:
    cloud = SlowNova(latency, concurrency)
    objs = await fleet(cloud, vms)
    actuator = VirtualMachineActuator()

    cloud.api_calls = 0
    started = time.perf_counter()
    baseline = await per_object_gets(cloud, objs)
    baseline_s, baseline_calls = time.perf_counter() - started, cloud.api_calls

    cloud.api_calls = 0
    started = time.perf_counter()
    found = await actuator.drift(cloud, objs)
    kumo_s, kumo_calls = time.perf_counter() - started, cloud.api_calls

    assert [k.name for k in found] == baseline, "both must find the same drift"
    print(f"drift detection over {vms} VMs, {latency * 1000:.0f} ms/call, {concurrency} in flight")
    print(f"  baseline (GET per object): {baseline_s:8.3f} s  {baseline_calls:5d} API calls")
    print(f"  kumo (list per cloud):     {kumo_s:8.3f} s  {kumo_calls:5d} API calls")
    print(
        f"  ratio baseline/kumo:       {baseline_s / kumo_s:8.1f}x time  {baseline_calls / kumo_calls:5.0f}x calls"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vms", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=8)


def run(args: argparse.Namespace) -> None:
    asyncio.run(main(args.vms, args.latency_ms / 1000, args.concurrency))
