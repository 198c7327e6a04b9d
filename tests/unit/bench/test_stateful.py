"""The stateful benchmark's pure parts: the direct script's plan (attach, delete, done,
failures), the volume-create count from request shapes, and the per-member lines."""

from __future__ import annotations

import re

from bench.report import Row, table
from bench.reqlog import Service, request_times
from bench.stateful import SERVICES
from bench.stateful_plan import (
    Member,
    failed,
    members_from,
    per_member_lines,
    stage_lines,
    to_attach,
    to_delete,
    too_many_creates,
    volume_creates,
)


def _members() -> list[Member]:
    servers = {"s-0": ("a", "ACTIVE"), "s-1": ("b", "BUILD"), "s-2": ("c", "ACTIVE")}
    volumes = {
        "v-0": ("va", "available", ()),
        "v-1": ("vb", "available", ()),
        "v-2": ("vc", "in-use", ("c",)),
    }
    return members_from(4, servers, volumes, lambda i: f"s-{i}", lambda i: f"v-{i}")


def test_members_from_joins_by_ordinal_and_leaves_unlisted_empty() -> None:
    members = _members()
    assert members[0] == Member("a", "ACTIVE", "va", "available", ())
    assert members[3] == Member()
    assert [m.done for m in members] == [False, False, True, False]


def test_attach_once_server_active_and_volume_available_and_not_asked() -> None:
    members = _members()
    assert to_attach(members, asked=set()) == [0]  # 1 builds, 2 is attached, 3 unlisted
    assert to_attach(members, asked={0}) == []


def test_attached_elsewhere_or_attaching_is_not_attached_again() -> None:
    busy = Member("a", "ACTIVE", "va", "attaching", ())
    elsewhere = Member("a", "ACTIVE", "va", "available", ("z",))
    assert to_attach([busy, elsewhere], asked=set()) == []


def test_done_needs_in_use_on_its_own_server() -> None:
    assert not Member("a", "ACTIVE", "va", "in-use", ("z",)).done
    assert not Member("a", "BUILD", "va", "in-use", ("a",)).done
    assert Member("a", "ACTIVE", "va", "in-use", ("a",)).done


def test_delete_volumes_once_available_and_once_only() -> None:
    volumes = {"v1": "available", "v2": "in-use", "v3": "detaching", "v4": "available"}
    assert to_delete(volumes, asked=set()) == ["v1", "v4"]
    assert to_delete(volumes, asked={"v1"}) == ["v4"]


def test_failed_names_error_servers_and_volumes() -> None:
    members = [Member("a", "ERROR", "va", "available"), Member("b", "ACTIVE", "vb", "error")]
    assert failed(members) == ["0: server a ERROR", "1: volume vb error"]
    assert failed(_members()) == []


def test_volume_creates_counts_only_volume_posts() -> None:
    shapes = {
        "cinder": {
            "POST /v3/{id}/volumes": 50,
            "GET /v3/{id}/volumes/detail?metadata": 9,
            "POST /v3/{id}/volumes/{id}/action": 2,
        },
        "nova": {"POST /v2.1/servers": 50},
    }
    assert volume_creates(shapes) == 50
    assert volume_creates({}) == 0


def test_more_creates_than_members_is_reported() -> None:
    rows = [
        Row("kumo", 50, volume_creates=50),
        Row("kumo", 50, volume_creates=51),
        Row("direct", 50),  # not counted: not judged
    ]
    assert too_many_creates(rows) == ["N=50 kumo: 51 volume creates for 50 members"]


def test_per_member_lines_number_the_runs() -> None:
    rows = [
        Row("kumo", 50, requests={"cinder": 300}, volume_creates=50),
        Row("direct", 50, requests={"cinder": 150}, volume_creates=50),
        Row("kumo", 50, error="boom"),
        Row("kumo", 50, requests={"cinder": 310}, volume_creates=50),
    ]
    lines = per_member_lines(rows)
    assert lines[0] == (
        "N=50 kumo run 1: Cinder 300 requests = 6.00/member; volume creates 50 = 1.00/member"
    )
    assert lines[2].startswith("N=50 kumo run 3: Cinder 310 requests = 6.20/member")


def test_stage_lines_in_step_order() -> None:
    row = Row("kumo", 2, stages={"done seen": [30.0, 40.0], "volume POST": [1.0, 2.0]})
    lines = stage_lines(row)
    assert lines[0] == "N=2 kumo: volume POST at 1.0/2.0/2.0 s p50/p95/max (2)"
    assert lines[1].startswith("N=2 kumo: done seen at 30.0/40.0/40.0")


def test_table_shows_cinder_column() -> None:
    rows = [
        Row("kumo", 2, converge_s=12.0, requests={"cinder": 10, "nova": 4, "octavia": 1}),
        Row("direct", 2, converge_s=10.0, requests={"cinder": 5, "nova": 4}),
    ]
    text = table(rows, shown=SERVICES)
    head = text.splitlines()[0]
    assert "cinder req" in head and "octavia req" not in head
    ratio = text.splitlines()[-1]
    assert "kumo/direct" in ratio and "1.20x" in ratio and "2.00x" in ratio


def test_request_times_match_path_and_project() -> None:
    cinder = Service("cinder", "cinder-api.log", True)
    nova = Service("nova", "nova-api.log", True)
    p = "6bd68e2f35584e65830c8b5ca9c983ca"
    line = (
        "2026-11-25 08:34:07.156 32566 INFO eventlet.wsgi.server [None req-c93f u {p} - - "
        'default default] 127.0.0.1 "POST /v3/{p}/volumes{q} HTTP/1.1" status: 202  len: 9 '
        "time: 0.5"
    )
    lines = [
        (cinder, line.format(p=p, q="")),
        (cinder, line.format(p=p, q="/x/action")),
        (nova, line.format(p=p, q="")),
        (cinder, line.format(p="0" * 32, q="").replace(f"u {'0' * 32}", "u other")),
    ]
    times = request_times(lines, p, "cinder", "POST", re.compile(r"^/v3/[0-9a-f]{32}/volumes$"))
    assert len(times) == 1
