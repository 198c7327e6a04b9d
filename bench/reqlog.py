"""API requests counted from the OpenStack services' own request logs (`.kumo-dev/logs/`).

Why logs and not Kumo's metrics: the benchmark compares Kumo with a direct openstacksdk
script and with Heat, and must count what each *service* saw — including what Nova asks
Neutron and Glance on a contender's behalf. Every service of the lab writes one line per
request, in one of two shapes:

* oslo/eventlet (nova-api, neutron-server, designate-api, glance, heat-api, cinder-api): ``2026-11-23 00:04:26.393 14925 INFO nova.osapi_compute.wsgi.server
  [None req-… USER PROJECT - - default default] 127.0.0.1 "GET /v2.1/servers/detail
  HTTP/1.1" status: 200 len: 5702 time: 0.245`` (glance and heat put ``- - [date]``
  before the quoted request line and leave out ``status:``/``len:``);
* uwsgi (octavia-api, keystone): ``[pid: …] 127.0.0.1 () {…} [Mon Nov 23 00:04:26 2026]
  GET /v2.0/lbaas/pools => generated 2014 bytes in 53 msecs (HTTP/1.1 200) …`` — no
  project.

A window is a pair of byte offsets per file (taken before and after a phase), so nothing
depends on clocks or on log timestamps. Requests to ``/`` (version documents: health
checks of the lab scripts, client version discovery) are not counted. Where the line
names the project, only the benchmark project's requests count; octavia, keystone and
placement are counted in the window whatever the project (the benchmark holds the lab
lock and pauses `make up`'s operator, so the window has no other client). heat-api logs
the user's *name* and no project, so it is counted in the window too. Placement is not
counted: besides Nova's scheduling calls for the contender's servers, its log is
dominated by the computes' periodic audits of every instance on their host, whatever the
project.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

_OSLO = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \d+ \w+ \S+ \[(?P<ctx>[^\]]*)\] \S+ "
    r'(?:- - \[[^\]]*\] )?"(?P<method>[A-Z]+) (?P<path>\S+)(?: HTTP/[\d.]+)?" '
    r"(?:status: )?(?P<status>\d{3})\s+(?:len: )?(?P<len>\d+)?"
)
_UWSGI = re.compile(
    r"^\[pid: \d+\|app: [-\d]+\|req: [^\]]*\] \S+ \([^)]*\) \{[^}]*\} \[[^\]]+\] "
    r"(?P<method>[A-Z]+) (?P<path>\S+) => generated (?P<len>\d+) bytes in \d+ msecs "
    r"\(HTTP/[\d.]+ (?P<status>\d{3})\)"
)


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    status: int
    length: int
    project: str | None  # None when the log line does not say


def parse_line(line: str) -> Request | None:
    """One request from one log line of either shape; None for any other line."""
    m = _OSLO.match(line)
    if m:
        project = _project(m["ctx"])
        length = int(m["len"]) if m["len"] else 0
        return Request(m["method"], m["path"], int(m["status"]), length, project)
    m = _UWSGI.match(line)
    if m:
        return Request(m["method"], m["path"], int(m["status"]), int(m["len"]), None)
    return None


def _project(ctx: str) -> str | None:
    """The project of an oslo request context: ``None req-A [req-B] USER PROJECT …``."""
    tokens = [t for t in ctx.split() if t != "None" and not t.startswith("req-")]
    if len(tokens) >= 2 and tokens[1] != "-":
        return tokens[1]
    return None


@dataclass(frozen=True)
class Service:
    """One service's request log. ``by_project``: its lines name the project."""

    name: str
    log: str
    by_project: bool
    shape: str = "oslo"  # "oslo" | "uwsgi": which of the two line shapes to count


SERVICES: tuple[Service, ...] = (
    Service("nova", "nova-api.log", True),
    Service("neutron", "neutron-server.log", True),
    Service("octavia", "octavia-api.log", False, "uwsgi"),
    Service("glance", "glance.log", True),
    Service("keystone", "keystone.log", False, "uwsgi"),
    Service("designate", "designate-api.log", True),
    Service("heat", "heat-api.log", False),  # logs the user *name*, no project
    Service("cinder", "cinder-api.log", True),
)


def counted(req: Request, service: Service, project: str | None) -> bool:
    if req.path == "/" or req.path.startswith("/?"):
        return False
    if service.by_project and project is not None:
        return req.project == project
    return True


@dataclass
class Tally:
    """Requests and response bytes per service (and per method + path shape)."""

    requests: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    calls: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, service: str, req: Request) -> None:
        self.requests[service] = self.requests.get(service, 0) + 1
        self.bytes[service] = self.bytes.get(service, 0) + req.length
        shapes = self.calls.setdefault(service, {})
        key = f"{req.method} {path_shape(req.path)}"
        shapes[key] = shapes.get(key, 0) + 1

    @property
    def total(self) -> int:
        return sum(self.requests.values())

    def merged(self, other: Tally) -> Tally:
        out = Tally()
        for t in (self, other):
            for s, n in t.requests.items():
                out.requests[s] = out.requests.get(s, 0) + n
            for s, n in t.bytes.items():
                out.bytes[s] = out.bytes.get(s, 0) + n
            for s, shapes in t.calls.items():
                dest = out.calls.setdefault(s, {})
                for k, n in shapes.items():
                    dest[k] = dest.get(k, 0) + n
        return out


_SERVER_BY_ID = re.compile(r"^GET /v2(?:\.1)?(?:/\{id\})?/servers/\{id\}$")


def server_reads(tally: Tally) -> int:
    """How many ``GET /servers/{id}`` (one server read by ID) nova-api logged."""
    shapes = tally.calls.get("nova", {})
    return sum(n for shape, n in shapes.items() if _SERVER_BY_ID.match(shape))


_ID = re.compile(r"/(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


def path_shape(path: str) -> str:
    """``/v2.1/servers/<id>`` from ``/v2.1/servers/0c…?x=1``: IDs and query values folded,
    so per-object GETs show up as one line with a count."""
    base, _, query = path.partition("?")
    base = _ID.sub("/{id}", base)
    if query:
        keys = sorted({kv.partition("=")[0] for kv in query.split("&")})
        base += "?" + "&".join(keys)
    return base


def tally_lines(
    lines: Iterable[tuple[Service, str]], project: str | None, tally: Tally | None = None
) -> Tally:
    tally = tally or Tally()
    for service, line in lines:
        req = parse_line(line)
        if req is None:
            continue
        if service.shape == "uwsgi" and not line.startswith("[pid:"):
            continue
        if service.shape == "oslo" and line.startswith("[pid:"):
            continue
        if counted(req, service, project):
            tally.add(service.name, req)
    return tally


class LogWindow:
    """Byte offsets of every service log at one moment; ``since()`` reads what came after."""

    def __init__(self, logdir: Path, services: tuple[Service, ...] = SERVICES) -> None:
        self.logdir = logdir
        self.services = services
        self.offsets = {s.name: _size(logdir / s.log) for s in services}

    def lines(self, until: LogWindow | None = None) -> Iterator[tuple[Service, str]]:
        for s in self.services:
            path = self.logdir / s.log
            start = self.offsets[s.name]
            end = until.offsets[s.name] if until else None
            if not path.exists():
                continue
            with open(path, "rb") as f:
                size = f.seek(0, 2)
                if size < start:  # truncated or replaced: read it all
                    start = 0
                f.seek(start)
                data = f.read() if end is None else f.read(max(0, end - start))
            for raw in data.decode("utf-8", errors="replace").splitlines():
                yield s, raw

    def since(self, project: str | None, until: LogWindow | None = None) -> Tally:
        return tally_lines(self.lines(until), project)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


_OSLO_TIME = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) ")
_ELAPSED = re.compile(r" time: (?P<s>\d+(?:\.\d+)?)")
_SERVERS = re.compile(r"^/v2(?:\.1)?(?:/[0-9a-f]{32})?/servers/?$")


def server_create_times(lines: Iterable[tuple[Service, str]], project: str | None) -> list[float]:
    """The wall-clock times (seconds since the epoch, the log's local time) at which
    nova-api received each ``POST /servers`` of ``project``, in log order."""
    return request_times(lines, project, "nova", "POST", _SERVERS)


def request_times(
    lines: Iterable[tuple[Service, str]],
    project: str | None,
    service: str,
    method: str,
    path: re.Pattern[str],
) -> list[float]:
    """The wall-clock times (seconds since the epoch, the log's local time) at which
    ``service`` received each ``method`` request of ``project`` whose path (without the
    query) matches ``path``, in log order: the line's time is when it answered, less the
    ``time:`` it took (oslo lines only)."""
    import datetime as _dt

    out = []
    for svc, line in lines:
        if svc.name != service:
            continue
        req = parse_line(line)
        if req is None or req.method != method or not path.match(req.path.split("?")[0]):
            continue
        if project is not None and req.project != project:
            continue
        m = _OSLO_TIME.match(line)
        if m:
            stamp = _dt.datetime.strptime(m["ts"], "%Y-%m-%d %H:%M:%S.%f")
            took = _ELAPSED.search(line)
            # naive = local time, as the lab's logs write it
            out.append(stamp.timestamp() - (float(took["s"]) if took else 0.0))
    return out
