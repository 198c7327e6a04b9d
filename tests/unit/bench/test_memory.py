"""`make bench-memory` runs: both sides find the server deleted out of band, and only
it, and the watch pays one listing where the baseline pays a GET per VM."""

from __future__ import annotations

import asyncio

import pytest

from bench import memory


def test_the_drift_benchmark_finds_the_deleted_server_with_one_listing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    asyncio.run(memory.main(vms=30, latency=0.001, concurrency=8))
    out = capsys.readouterr().out
    assert "baseline (GET per object):" in out
    assert "30 API calls" in out
    kumo = next(line for line in out.splitlines() if "kumo (watch" in line)
    assert kumo.split()[-3] == "1", kumo
