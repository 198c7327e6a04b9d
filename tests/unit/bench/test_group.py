"""The in-memory group bench runs Kumo's controller through every phase and counts it."""

from __future__ import annotations

from bench import group
from kumo.engine.objects import Key


def test_the_group_bench_converges_every_phase_and_counts_passes() -> None:
    phases = group.measure(6)
    assert [p.name for p in phases] == ["create", "scale in", "scale out", "delete"]
    for p in phases:
        assert p.cpu > 0
        assert p.reconciles["VirtualMachine"] >= p.vms, p.name
    assert phases[0].reconciles["LoadBalancer"] > 0
    assert "| 6 | create | 6 |" in group.table({6: phases})


def test_the_group_benchs_work_queue_runs_on_its_virtual_clock() -> None:
    """Due times are the bench's virtual seconds (a 1 s wait costs no wall time), given
    to the queue, not patched into the module for everyone."""
    bench = group.Bench(2)
    bench.clock.now = 1_000.0
    bench.ctl.queue.add(Key("VirtualMachine", "default", "vm"), after=5.0)
    assert bench.ctl.queue.next_due() == 1_005.0
