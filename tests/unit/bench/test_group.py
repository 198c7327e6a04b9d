"""The in-memory group bench runs Kumo's controller through every phase and counts it."""

from __future__ import annotations

import time

from bench import group
from kumo.engine import queue


def test_the_group_bench_converges_every_phase_and_counts_passes() -> None:
    phases = group.measure(6)
    assert [p.name for p in phases] == ["create", "scale in", "scale out", "delete"]
    for p in phases:
        assert p.cpu > 0
        assert p.reconciles["VirtualMachine"] >= p.vms, p.name
    assert phases[0].reconciles["LoadBalancer"] > 0
    assert queue.time is time, "the work queue has the real clock back"
    assert "| 6 | create | 6 |" in group.table({6: phases})
