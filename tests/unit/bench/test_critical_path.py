"""Kumo's critical path: POST /servers times from nova-api's log, OpenStack timestamps,
per-VM deltas and their p50/p95 lines."""

from __future__ import annotations

import datetime as dt

from bench.report import Row, critical_path, deltas, utc_seconds
from bench.reqlog import SERVICES, server_create_times

NOVA = SERVICES[0]
NEUTRON = SERVICES[1]
PROJECT = "2664d9911afb48da841411c0f39ec8fa"


def _line(ts: str, method: str, path: str, project: str = PROJECT, took: str = "2.1") -> str:
    return (
        f"{ts} 27417 INFO nova.osapi_compute.wsgi.server [None req-ac92be90 "
        f"47f41a2c595d4e37a4a309f953d1a076 {project} - - default default] 127.0.0.1 "
        f'"{method} {path} HTTP/1.1" status: 202 len: 860 time: {took}\x1b[00m'
    )


def _local(ts: str) -> float:
    return dt.datetime.strptime(ts, "%Y-%m-%d %H:%M:%S.%f").timestamp()


def test_server_create_times_only_post_servers_of_the_project_at_arrival() -> None:
    lines = [
        (NOVA, _line("2026-11-25 00:24:50.912", "POST", "/v2.1/servers")),
        (NOVA, _line("2026-11-25 00:24:51.000", "GET", "/v2.1/servers/detail?tags=kumo")),
        (NOVA, _line("2026-11-25 00:24:52.000", "POST", "/v2.1/servers/abc/action")),
        (NOVA, _line("2026-11-25 00:24:53.000", "POST", "/v2.1/servers", project="f" * 32)),
        (NEUTRON, _line("2026-11-25 00:24:54.000", "POST", "/v2.1/servers")),
        (NOVA, _line("2026-11-25 00:24:55.500", "POST", "/v2.1/servers", took="0.5")),
        (NOVA, "2026-11-25 00:24:56.000 27417 INFO nova.something unrelated"),
    ]
    got = server_create_times(lines, PROJECT)
    want = [_local("2026-11-25 00:24:50.912") - 2.1, _local("2026-11-25 00:24:55.500") - 0.5]
    assert [round(g, 3) for g in got] == [round(w, 3) for w in want]


def test_utc_seconds_reads_openstack_stamps_as_utc() -> None:
    epoch = dt.datetime(2026, 11, 25, 1, 23, 5, tzinfo=dt.UTC).timestamp()
    assert utc_seconds("2026-11-25T01:23:05.000000") == epoch
    assert utc_seconds("2026-11-25T01:23:05Z") == epoch
    assert utc_seconds("2026-11-25T01:23:05+00:00") == epoch
    assert utc_seconds(None) is None
    assert utc_seconds("soon") is None


def test_deltas_only_for_keys_in_both() -> None:
    assert deltas({"a": 1.0, "b": 2.0, "c": 5.0}, {"a": 3.5, "c": 6.0, "d": 9.0}) == [2.5, 1.0]


def test_critical_path_lines_give_p50_p95() -> None:
    row = Row("kumo", 4, create_to_post_s=[0.4, 0.5, 0.6, 3.0], active_to_ready_s=[1.0])
    lines = critical_path(row)
    assert lines[0] == "N=4 kumo: objects created → POST /servers: 0.5/3.0 s p50/p95 (4 VMs)"
    assert lines[1].startswith("N=4 kumo: ACTIVE (launched_at) → Ready seen: 1.0/1.0")
    assert len(lines) == 2  # the member latency was not measured
