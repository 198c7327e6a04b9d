"""Percentiles, rows and the side-by-side table of the real-stack benchmark."""

from __future__ import annotations

import math

from bench.report import (
    FLEET_HEADER,
    HEADER,
    Row,
    cpu_per_vm,
    critical_path,
    fleet_table,
    format_table,
    percentile,
    table,
)
from bench.reqlog import Tally
from bench.stack import add, minus


def test_percentile_nearest_rank() -> None:
    values = [float(v) for v in range(1, 11)]  # 1..10
    assert percentile(values, 50) == 5.0
    assert percentile(values, 95) == 10.0
    assert percentile(values, 0) == 1.0
    assert percentile([3.0], 95) == 3.0
    assert percentile(list(reversed(values)), 50) == 5.0
    assert math.isnan(percentile([], 50))


def _rows() -> list[Row]:
    kumo = Row(
        "kumo",
        20,
        converge_s=60.0,
        delete_s=20.0,
        requests={"nova": 40, "neutron": 10, "octavia": 30, "keystone": 5, "glance": 2},
        idle_per_min={"nova": 6.0, "octavia": 6.0},
        idle_nova_bytes_per_min=1200.0,
        full_listing_bytes=60000,
        repair_noticed_s=[0.5 + v / 10 for v in range(10)],
        repair_vm_s=[float(v) for v in range(1, 11)],
        repair_member_s=[float(v) + 1 for v in range(1, 11)],
        peak_rss_mib=150.4,
        cpu_s=12.34,
    )
    direct = Row("direct", 20, converge_s=50.0, delete_s=10.0, requests={"nova": 40, "octavia": 20})
    heat = Row("heat", 20, error="RuntimeError: stack CREATE_FAILED")
    return [kumo, direct, heat]


def test_table_has_a_row_per_contender_and_ratios_to_the_direct_script() -> None:
    lines = table(_rows()).splitlines()
    assert len(lines) == 2 + 3 + 1  # header, separator, 3 rows, 1 ratio (heat failed)
    assert all(line.startswith("| ") and line.endswith(" |") for line in lines if line[1] != "-")
    kumo = [c.strip() for c in lines[2].strip("|").split("|")]
    assert kumo[:4] == ["20", "kumo", "60.0", "20.0"]
    assert dict(zip(HEADER, kumo, strict=True))["idle req/min"] == "12.0"
    assert dict(zip(HEADER, kumo, strict=True))["repair VM p50/p95 s"] == "5.0/10.0"
    assert dict(zip(HEADER, kumo, strict=True))["repair noticed p50/p95 s"] == "0.9/1.4"
    assert dict(zip(HEADER, kumo, strict=True))["total req"] == "87"
    assert dict(zip(HEADER, kumo, strict=True))["other req"] == "2"
    direct = [c.strip() for c in lines[3].strip("|").split("|")]
    assert dict(zip(HEADER, direct, strict=True))["idle req/min"] == "—"
    assert "FAILED: RuntimeError" in lines[4]
    ratio = [c.strip() for c in lines[5].strip("|").split("|")]
    assert ratio[:4] == ["20", "kumo/direct", "1.20x", "2.00x"]
    assert dict(zip(HEADER, ratio, strict=True))["octavia req"] == "1.50x"
    assert dict(zip(HEADER, ratio, strict=True))["neutron req"] == "—"  # direct made none


def test_columns_line_up() -> None:
    lines = table(_rows()).splitlines()
    assert len({len(line) for line in lines if "FAILED" not in line}) == 1


def test_format_table_aligns_numbers_right() -> None:
    out = format_table(["N", "who", "s"], [["1", "a", "2.0"], ["10", "bb", "12.5"]], [])
    assert out.splitlines() == [
        "| N  | who |    s |",
        "|----|-----|-----:|",
        "| 1  | a   |  2.0 |",
        "| 10 | bb  | 12.5 |",
    ]


def test_fleet_table_shows_the_share_of_one_full_listing() -> None:
    row = _rows()[0]
    row.n = 1000
    row.restart_full_pass_s = 42.0
    row.groups, row.dns_records = 10, 10
    out = fleet_table([row])
    assert "2.0%" in out and "42.0" in out
    cells = [c.strip() for c in out.splitlines()[2].strip("|").split("|")]
    shown = dict(zip(FLEET_HEADER, cells, strict=True))
    assert (shown["groups"], shown["DNS records"], shown["N"]) == ("10", "10", "1000")


def test_minus_takes_out_the_harness_requests() -> None:
    tally = Tally(requests={"nova": 10, "octavia": 4})
    assert minus(tally, {"nova": 3}, {"nova": 5, "octavia": 4}) == {"nova": 8}
    assert add({"nova": 1}, {"nova": 2, "heat": 3}) == {"heat": 3, "nova": 3}


def test_cpu_per_vm_divides_each_phase_by_n_and_names_the_group_size() -> None:
    row = Row("kumo", 300, groups=3, cpu_converge_s=6.0, cpu_delete_s=1.5)
    line = cpu_per_vm(row)
    assert line == (
        "N=300 kumo: CPU 20.0 ms per VM created, 5.0 ms per VM deleted (group size 100)"
    )
    assert line in critical_path(row)
    assert cpu_per_vm(Row("direct", 300)) is None
