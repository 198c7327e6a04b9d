"""--repeat's median and spread, the /proc sampler's pure parts, and the PNG plots."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from bench.report import Row, median, pair_ratios, repeat_summary, spread
from bench.sampler import pidfiles, processes_cpu, rates, service_of, service_pids


def test_median_odd_even_empty() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert math.isnan(median([]))


def test_spread_shows_median_min_max() -> None:
    assert spread([1.2, 0.9, 1.5]) == "1.20 (0.90-1.50)"
    assert spread([]) == "—"


def _pairs() -> list[Row]:
    # alternately, as --repeat runs them: kumo, direct, kumo, direct, kumo, direct
    return [
        Row("kumo", 3, converge_s=30.0, delete_s=10.0),
        Row("direct", 3, converge_s=20.0, delete_s=10.0),
        Row("kumo", 3, converge_s=22.0, delete_s=9.0),
        Row("direct", 3, converge_s=20.0, delete_s=10.0),
        Row("kumo", 3, error="RuntimeError: boom"),
        Row("direct", 3, converge_s=20.0, delete_s=10.0),
    ]


def test_pair_ratios_pairs_kth_with_kth_and_skips_failures() -> None:
    ratios = pair_ratios(_pairs(), "converge_s")
    assert ratios == {"kumo/direct N=3": [1.5, 1.1]}
    assert pair_ratios(_pairs(), "delete_s") == {"kumo/direct N=3": [1.0, 0.9]}


def test_repeat_summary_has_medians_and_ratio_spread() -> None:
    text = repeat_summary(_pairs())
    kumo = next(line for line in text.splitlines() if "| kumo " in line)
    assert "26.00 (22.00-30.00)" in kumo  # converge median of 30 and 22
    assert kumo.split("|")[3].strip() == "2"  # the failed run is not counted
    ratio = next(line for line in text.splitlines() if "kumo/direct" in line)
    assert "1.30 (1.10-1.50)" in ratio
    assert "0.95 (0.90-1.00)" in ratio


def test_rates_are_cores_between_samples_and_clamp_restarts() -> None:
    assert rates([0.0, 1.0, 3.0], [0.0, 0.5, 2.5]) == [0.5, 1.0]
    assert rates([0.0, 1.0], [5.0, 1.0]) == [0.0]  # the process restarted
    assert rates([0.0], [1.0]) == []


def test_service_pids_group_by_first_word(tmp_path: Path) -> None:
    (tmp_path / "nova-api.pid").write_text("101\n")
    (tmp_path / "nova-compute-1.pid").write_text("102")
    (tmp_path / "kumo-operator.pid").write_text("103")
    (tmp_path / "octavia-api.pid").write_text("garbage")
    assert service_of("kube-apiserver.pid") == "kube"
    assert service_pids(tmp_path) == {"nova": [101, 102]}
    assert service_pids(tmp_path / "missing") == {}
    assert pidfiles(tmp_path) == {"kumo-operator": 103, "nova-api": 101, "nova-compute-1": 102}


def test_a_process_groups_cpu_counts_its_descendants() -> None:
    """This process has used CPU; a pid no process can have (above the kernel's limit
    of 2**22) counts nothing."""
    cpu = processes_cpu({"me": [os.getpid()], "gone": [2**22 + 1]})
    assert cpu["me"] > 0.0
    assert cpu["gone"] == 0.0


def test_plots_are_written_small(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from bench import plots

    rows = [
        Row("kumo", 3, requests={"nova": 12, "neutron": 30, "placement": 2}),
        Row("direct", 3, requests={"nova": 10, "neutron": 25}),
    ]
    rows[0].ready_timeline = [(0.0, 0), (10.0, 2), (12.0, 3)]
    rows[1].ready_timeline = [(0.0, 0), (9.0, 3)]
    samples = {
        "t": [0.0, 1.0, 2.0, 3.0],
        "kumo_cpu_s": [0.0, 0.2, 0.5, 0.6],
        "kumo_rss_mib": [80.0, 82.0, 85.0, 85.0],
        "services_cpu_s": {"nova": [0.0, 1.0, 2.5, 3.0], "neutron": [0.0, 0.5, 0.6, 0.7]},
        "phases": [("kumo N=3", 0.5)],
    }
    written = [
        plots.ready_over_time(rows, tmp_path / "ready.png"),
        plots.requests_per_service(rows, tmp_path / "requests.png"),
        plots.cpu_over_time(samples, tmp_path / "cpu.png"),
    ]
    for path in written:
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(data) < 200_000  # small: dpi 80


def test_table_pairs_the_kth_run_with_the_kth_direct_run() -> None:
    from bench.report import table

    rows = [
        Row("kumo", 3, converge_s=30.0, delete_s=10.0),
        Row("direct", 3, converge_s=20.0, delete_s=10.0),
        Row("kumo", 3, converge_s=22.0, delete_s=9.0),
        Row("direct", 3, converge_s=10.0, delete_s=10.0),
    ]
    ratios = [line for line in table(rows).splitlines() if "/direct" in line]
    assert len(ratios) == 2  # no direct/direct line
    assert "1.50x" in ratios[0]
    assert "2.20x" in ratios[1]
