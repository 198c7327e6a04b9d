"""The request-log parsing of the real-stack benchmark (bench/reqlog.py), on lines copied
from the lab's own logs."""

from __future__ import annotations

from pathlib import Path

from bench import report
from bench.reqlog import (
    SERVICES,
    LogWindow,
    Service,
    Tally,
    parse_line,
    path_shape,
    server_reads,
    tally_lines,
)

PROJECT = "73e0690ae08a4da6b711c7bf101b8bbf"
NOVA = (
    "2026-11-23 00:04:26.393 14925 INFO nova.osapi_compute.wsgi.server [None "
    "req-8e3f4abf-bf47-4f30-9f09-7724308e56b7 b7ad2e127f844aa6b48b3adcfd59eff3 "
    f'{PROJECT} - - default default] 127.0.0.1 "GET /v2.1/servers/detail?tags=kumo '
    'HTTP/1.1" status: 200 len: 5702 time: 0.2451262\x1b[00m'
)
NOVA_ROOT = (
    "2026-11-23 00:04:31.391 14925 INFO nova.osapi_compute.wsgi.server [-] 127.0.0.1 "
    '"GET / HTTP/1.1" status: 200 len: 476 time: 0.0007670\x1b[00m'
)
NEUTRON = (
    "2026-11-23 00:04:26.358 14964 INFO neutron.wsgi [req-8e3f4abf-bf47 req-763b9bf3-2a9d "
    "b7ad2e127f844aa6b48b3adcfd59eff3 OTHERPROJECT - - default default] 127.0.0.1 "
    '"GET /v2.0/ports?device_id=075c44cc-919d-4a56-823a-6a9509ddcc78 HTTP/1.1" status: 200  '
    "len: 2417 time: 0.0310514\x1b[00m"
)
GLANCE = (
    "2026-11-23 00:14:10.647 14909 INFO eventlet.wsgi.server [None req-3cc6e01d "
    f"b7ad2e127f844aa6b48b3adcfd59eff3 {PROJECT} - - default default] 127.0.0.1 - - "
    '[23/Nov/2026 00:14:10] "GET /v2/images/b2374ea3-6a3a-4308-8d25-46f5e12bfef6 HTTP/1.1" '
    "200 1124 0.052604\x1b[00m"
)
HEAT = (
    "2026-11-23 00:19:33.778 849 INFO eventlet.wsgi.server [None req-d3f52e0c kumo-bench - - "
    '- - -] 127.0.0.1 - - [23/Nov/2026 00:19:33] "POST /v1/b43f15e863eb4dc4978a081b5d9a473b'
    '/stacks HTTP/1.1" 201 557 2.429109\x1b[00m'
)
OCTAVIA = (
    "[pid: 14836|app: 0|req: 11/23] 127.0.0.1 () {30 vars in 661 bytes} [Mon Nov 23 "
    "00:04:26 2026] GET /v2.0/lbaas/loadbalancers?tags=kumo => generated 1039 bytes in 53 "
    "msecs (HTTP/1.1 200) 4 headers in 158 bytes (1 switches on core 2)"
)


def test_oslo_line_with_project_and_length() -> None:
    req = parse_line(NOVA)
    assert req is not None
    assert (req.method, req.path, req.status, req.length) == (
        "GET",
        "/v2.1/servers/detail?tags=kumo",
        200,
        5702,
    )
    assert req.project == PROJECT


def test_two_request_ids_before_the_user() -> None:
    req = parse_line(NEUTRON)
    assert req is not None and req.project == "OTHERPROJECT" and req.length == 2417


def test_eventlet_shape_of_glance_and_heat() -> None:
    glance = parse_line(GLANCE)
    assert glance is not None and glance.status == 200 and glance.length == 1124
    assert glance.project == PROJECT
    heat = parse_line(HEAT)
    assert heat is not None and heat.method == "POST" and heat.status == 201
    assert heat.project is None  # heat-api logs the user's name and "-" for the project


def test_uwsgi_line() -> None:
    req = parse_line(OCTAVIA)
    assert req is not None
    assert (req.method, req.path, req.status, req.length, req.project) == (
        "GET",
        "/v2.0/lbaas/loadbalancers?tags=kumo",
        200,
        1039,
        None,
    )


def test_other_lines_are_ignored() -> None:
    assert parse_line("2026-11-23 00:19:18.318 957 INFO heat.engine.worker [-] Starting") is None
    assert parse_line("") is None


def test_path_shape_folds_ids_and_query_values() -> None:
    assert path_shape("/v2.1/servers/0c5e1a52-1111-2222-3333-444455556666") == "/v2.1/servers/{id}"
    assert path_shape("/v1/b43f15e863eb4dc4978a081b5d9a473b/stacks") == "/v1/{id}/stacks"
    assert (
        path_shape("/v2.0/ports?device_id=a&device_id=b&fields=id")
        == "/v2.0/ports?device_id&fields"
    )


def test_tally_filters_by_project_where_the_log_has_it() -> None:
    nova, neutron, octavia = (
        next(s for s in SERVICES if s.name == n) for n in ("nova", "neutron", "octavia")
    )
    heat = next(s for s in SERVICES if s.name == "heat")
    tally = tally_lines(
        [(nova, NOVA), (nova, NOVA_ROOT), (neutron, NEUTRON), (octavia, OCTAVIA), (heat, HEAT)],
        PROJECT,
    )
    # nova: the root document is not a request of anyone's; neutron: another project;
    # octavia and heat: no project in the log, counted in the window.
    assert tally.requests == {"nova": 1, "octavia": 1, "heat": 1}
    assert tally.bytes["nova"] == 5702
    assert tally.calls["nova"] == {"GET /v2.1/servers/detail?tags": 1}
    assert tally.total == 3


def test_a_service_counts_only_its_own_line_shape() -> None:
    oslo_only = Service("placement", "placement.log", False, "oslo")
    assert tally_lines([(oslo_only, OCTAVIA)], None).total == 0
    uwsgi_only = Service("keystone", "keystone.log", False, "uwsgi")
    assert tally_lines([(uwsgi_only, NOVA)], None).total == 0


def test_window_reads_only_what_was_appended(tmp_path: Path) -> None:
    log = tmp_path / "nova-api.log"
    log.write_text(NOVA + "\n")
    services = (Service("nova", "nova-api.log", True),)
    start = LogWindow(tmp_path, services)
    with log.open("a") as f:
        f.write(NOVA + "\n" + NOVA_ROOT + "\n")
    middle = LogWindow(tmp_path, services)
    with log.open("a") as f:
        f.write(NOVA + "\n")
    assert start.since(PROJECT, until=middle).requests == {"nova": 1}
    assert start.since(PROJECT).requests == {"nova": 2}
    assert middle.since(PROJECT).requests == {"nova": 1}


def test_window_survives_missing_and_truncated_logs(tmp_path: Path) -> None:
    services = (Service("nova", "nova-api.log", True), Service("heat", "heat-api.log", False))
    log = tmp_path / "nova-api.log"
    log.write_text((NOVA + "\n") * 3)
    start = LogWindow(tmp_path, services)
    log.write_text(NOVA + "\n")  # replaced by a shorter file: read from its start
    assert start.since(PROJECT).requests == {"nova": 1}


def test_merged_tallies_add_up() -> None:
    nova = next(s for s in SERVICES if s.name == "nova")
    a = tally_lines([(nova, NOVA)], PROJECT)
    b = tally_lines([(nova, NOVA), (nova, NOVA)], PROJECT)
    merged = a.merged(b)
    assert merged.requests == {"nova": 3} and merged.bytes == {"nova": 3 * 5702}
    assert merged.calls["nova"]["GET /v2.1/servers/detail?tags"] == 3


CINDER = (
    "2026-11-25 01:18:47.261 24403 INFO eventlet.wsgi.server [None req-6e194896-d5cf-4a07-8b4e-"
    f"4cced363d785 5e0be2329b384efaac0c76233a1b4123 {PROJECT} - - default default] 127.0.0.1 "
    f'"GET /v3/{PROJECT}/volumes/detail?updated_at=gte:2026-11-25T01:18:00 HTTP/1.1" '
    "status: 200  len: 369 time: 0.2537031\x1b[00m"
)


def test_cinder_api_lines_name_the_project() -> None:
    req = parse_line(CINDER)
    assert req is not None
    assert (req.method, req.status, req.length, req.project) == ("GET", 200, 369, PROJECT)
    assert req.path.startswith(f"/v3/{PROJECT}/volumes/detail")
    cinder = next(s for s in SERVICES if s.name == "cinder")
    assert (cinder.log, cinder.by_project) == ("cinder-api.log", True)


def test_server_reads_count_gets_by_id_only() -> None:
    """The bench's per-server read count (issue 24): GET /servers/{id}, with or without
    the project in the path; not listings, not actions, not other services."""
    tally = Tally()
    tally.calls["nova"] = {
        "GET /v2.1/servers/{id}": 3,
        "GET /v2.1/{id}/servers/{id}": 2,
        "GET /v2.1/servers/detail?changes-since": 40,
        "GET /v2.1/servers/{id}/os-interface": 1,
        "POST /v2.1/servers": 20,
    }
    tally.calls["octavia"] = {"GET /v2/lbaas/loadbalancers/{id}": 7}
    assert server_reads(tally) == 5


def test_the_server_reads_goal_is_one_percent_of_n() -> None:
    row = report.Row("kumo", 300, converge_server_reads=3)
    assert report.server_reads(row) == (
        "N=300 kumo: GET /servers/{id} during converge = 3 (goal ≤ 1% of N = 3: met)",
        True,
    )
    row.converge_server_reads = 4
    line = report.server_reads(row)
    assert line is not None and not line[1] and "NOT MET" in line[0]
    assert report.server_reads(report.Row("direct", 300)) is None, "Kumo's rows only"
