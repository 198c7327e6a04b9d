"""Pure helpers of the real-stack benchmark: percentiles, one contender's result row, and
the side-by-side table with ratios against the direct script."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

#: Services shown as their own request columns (the rest are summed into "other").
SHOWN = ("nova", "neutron", "octavia", "keystone", "heat")


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of ``values``; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass
class Row:
    """One contender at one N. None = not measured / not applicable (shown as "—")."""

    contender: str
    n: int
    groups: int = 1  # VirtualMachineGroups the N VMs are split over, each with its own LB
    dns_records: int = 0  # DNSRecords (one per LB in the fleet)
    converge_s: float | None = None
    delete_s: float | None = None
    requests: dict[str, int] = field(default_factory=dict)  # converge + delete, per service
    idle_per_min: dict[str, float] | None = None
    idle_nova_bytes_per_min: float | None = None
    full_listing_bytes: int | None = None
    repair_noticed_s: list[float] = field(default_factory=list)
    repair_vm_s: list[float] = field(default_factory=list)
    repair_member_s: list[float] = field(default_factory=list)
    peak_rss_mib: float | None = None
    cpu_s: float | None = None  # Kumo's CPU seconds from its start to before the delete
    #: Kumo's CPU seconds during the converge alone and during the delete alone (per VM
    #: created / deleted: divide by n; issue 24 compares them across group sizes)
    cpu_converge_s: float | None = None
    cpu_delete_s: float | None = None
    restart_full_pass_s: float | None = None
    error: str | None = None
    #: (seconds since the converge started, VMs Ready/ACTIVE), at each of the harness's polls
    ready_timeline: list[tuple[float, int]] = field(default_factory=list)
    #: Kumo's critical path, per VM (s): objects created → Nova answered its POST /servers;
    #: Nova's launched_at (ACTIVE) → the harness first saw the VM Ready (1-s polls);
    #: launched_at → its member created in Octavia's pool (created_at; both cloud-side
    #: stamps in whole seconds, no poll lag)
    create_to_post_s: list[float] = field(default_factory=list)
    active_to_ready_s: list[float] = field(default_factory=list)
    active_to_member_s: list[float] = field(default_factory=list)
    #: ``GET /servers/{id}`` nova-api logged during Kumo's converge (issue 24: ≤ 1 % of N)
    converge_server_reads: int | None = None
    #: The stateful benchmark: Cinder volume creates (POST /volumes) in converge + delete,
    #: and per stage (volume POST, server POST, attach POST, done seen) the seconds since
    #: the converge started at which each member reached it
    volume_creates: int | None = None
    stages: dict[str, list[float]] = field(default_factory=dict)

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())


def _f(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}f}"


def _pair(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{percentile(values, 50):.1f}/{percentile(values, 95):.1f}"


def header(shown: Sequence[str] = SHOWN) -> tuple[str, ...]:
    """The table's columns, with a request column for each service in ``shown``."""
    return (
        "N",
        "contender",
        "converge s",
        "delete s",
        *(f"{s} req" for s in shown),
        "other req",
        "total req",
        "idle req/min",
        "idle nova B/min",
        "repair noticed p50/p95 s",
        "repair VM p50/p95 s",
        "repair member p50/p95 s",
        "peak RSS MiB",
        "CPU s",
    )


HEADER = header()


def cells(row: Row, shown: Sequence[str] = SHOWN) -> list[str]:
    width = len(header(shown))
    if row.error:
        return [str(row.n), row.contender, f"FAILED: {row.error}"] + [""] * (width - 3)
    other = row.total_requests - sum(row.requests.get(s, 0) for s in shown)
    idle = "—" if row.idle_per_min is None else _f(sum(row.idle_per_min.values()))
    return [
        str(row.n),
        row.contender,
        _f(row.converge_s),
        _f(row.delete_s),
        *(str(row.requests.get(s, 0)) if row.requests else "—" for s in shown),
        str(other) if row.requests else "—",
        str(row.total_requests) if row.requests else "—",
        idle,
        _f(row.idle_nova_bytes_per_min, 0),
        _pair(row.repair_noticed_s),
        _pair(row.repair_vm_s),
        _pair(row.repair_member_s),
        _f(row.peak_rss_mib, 0),
        _f(row.cpu_s),
    ]


def ratio_cells(row: Row, base: Row, shown: Sequence[str] = SHOWN) -> list[str] | None:
    """``row / base`` for converge, delete and request counts (None if either failed)."""
    if row.error or base.error:
        return None

    def r(a: float | None, b: float | None) -> str:
        if a is None or b is None or b == 0:
            return "—"
        return f"{a / b:.2f}x"

    out = [str(row.n), f"{row.contender}/{base.contender}", r(row.converge_s, base.converge_s)]
    out.append(r(row.delete_s, base.delete_s))
    for s in shown:
        out.append(r(row.requests.get(s, 0), base.requests.get(s, 0)) if row.requests else "—")
    other = row.total_requests - sum(row.requests.get(s, 0) for s in shown)
    base_other = base.total_requests - sum(base.requests.get(s, 0) for s in shown)
    out.append(r(other, base_other))
    out.append(r(row.total_requests, base.total_requests))
    return out + [""] * (len(header(shown)) - len(out))


def table(rows: Sequence[Row], base: str = "direct", shown: Sequence[str] = SHOWN) -> str:
    """All rows, then for each N the ratios of every other contender to ``base``; a
    request column per service in ``shown`` (the rest summed as "other")."""
    body = [cells(r, shown) for r in rows]
    ratios = []
    for row in rows:
        if row.contender == base:
            continue
        # with --repeat, the k-th run of a contender at N beside the k-th base run at N
        same = [r for r in rows if (r.contender, r.n) == (row.contender, row.n)]
        k = next(i for i, r in enumerate(same) if r is row)  # rows compare equal by value
        refs = [b for b in rows if b.contender == base and b.n == row.n]
        ref = refs[k] if k < len(refs) else None
        if ref is None:
            continue
        line = ratio_cells(row, ref, shown)
        if line is not None:
            ratios.append(line)
    return format_table(list(header(shown)), body, ratios)


def format_table(header: list[str], body: list[list[str]], footer: list[list[str]]) -> str:
    """A Markdown table (aligned, so it also reads as plain text); ``footer`` rows after
    the body (ratios)."""
    every = [header, *body, *footer]
    widths = [max(len(r[i]) for r in every if i < len(r)) for i in range(len(header))]

    def line(r: list[str]) -> str:
        padded = [
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=False))
        ]
        return "| " + " | ".join(padded) + " |"

    sep = (
        "|"
        + "|".join(("-" * (w + 1) + ":" if i >= 2 else "-" * (w + 2)) for i, w in enumerate(widths))
        + "|"
    )
    return "\n".join([line(header), sep, *(line(r) for r in body), *(line(r) for r in footer)])


FLEET_HEADER = [
    "N",
    "contender",
    "groups",
    "DNS records",
    "converge s",
    "delete s",
    "idle nova req/min",
    "idle neutron req/min",
    "idle octavia req/min",
    "idle total req/min",
    "idle nova B/min",
    "% of full listing",
    "repair noticed p50/p95 s",
    "repair VM p50/p95 s",
    "repair member p50/p95 s",
    "first full pass after restart s",
    "peak RSS MiB",
    "CPU s",
]


def fleet_cells(row: Row) -> list[str]:
    if row.error:
        return [str(row.n), row.contender, f"FAILED: {row.error}"] + [""] * (len(FLEET_HEADER) - 3)
    idle = row.idle_per_min or {}
    share = (
        f"{row.idle_nova_bytes_per_min / row.full_listing_bytes:.1%}"
        if row.full_listing_bytes and row.idle_nova_bytes_per_min is not None
        else "—"
    )
    return [
        str(row.n),
        row.contender,
        str(row.groups),
        str(row.dns_records),
        _f(row.converge_s),
        _f(row.delete_s),
        *(
            _f(idle.get(s, 0.0)) if row.idle_per_min is not None else "—"
            for s in ("nova", "neutron", "octavia")
        ),
        _f(sum(idle.values())) if row.idle_per_min is not None else "—",
        _f(row.idle_nova_bytes_per_min, 0),
        share,
        _pair(row.repair_noticed_s),
        _pair(row.repair_vm_s),
        _pair(row.repair_member_s),
        _f(row.restart_full_pass_s),
        _f(row.peak_rss_mib, 0),
        _f(row.cpu_s),
    ]


def fleet_table(rows: Sequence[Row]) -> str:
    return format_table(FLEET_HEADER, [fleet_cells(r) for r in rows], [])


def median(values: Sequence[float]) -> float:
    """The median (the mean of the middle two for an even count); NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def spread(values: Sequence[float]) -> str:
    """``median (min-max)`` of ``values``, 2 decimals; "—" when empty."""
    if not values:
        return "—"
    return f"{median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def pair_ratios(rows: Sequence[Row], attr: str, base: str = "direct") -> dict[str, list[float]]:
    """Per contender other than ``base``: the ratios ``row/base`` of ``attr`` over the
    repeats, pairing the k-th row of a contender at an N with the k-th ``base`` row at
    that N. Failed or unmeasured pairs are left out."""
    out: dict[str, list[float]] = {}
    for contender in dict.fromkeys(r.contender for r in rows if r.contender != base):
        for n in dict.fromkeys(r.n for r in rows):
            mine = [r for r in rows if r.contender == contender and r.n == n]
            theirs = [r for r in rows if r.contender == base and r.n == n]
            for a, b in zip(mine, theirs, strict=False):
                x, y = getattr(a, attr), getattr(b, attr)
                if a.error or b.error or x is None or not y:
                    continue
                out.setdefault(f"{contender}/{base} N={n}", []).append(x / y)
    return out


def repeat_summary(rows: Sequence[Row], base: str = "direct") -> str:
    """The median and the spread (min-max) of each contender's converge and delete
    seconds, and of its paired ratios to ``base``, over the repeated runs."""
    lines = [["N", "contender", "runs", "converge s", "delete s"]]
    for key in dict.fromkeys((r.n, r.contender) for r in rows):
        ok = [r for r in rows if (r.n, r.contender) == key and not r.error]
        conv = [r.converge_s for r in ok if r.converge_s is not None]
        dele = [r.delete_s for r in ok if r.delete_s is not None]
        lines.append([str(key[0]), key[1], str(len(ok)), spread(conv), spread(dele)])
    conv_r, del_r = pair_ratios(rows, "converge_s", base), pair_ratios(rows, "delete_s", base)
    for name in dict.fromkeys([*conv_r, *del_r]):
        n = name.rsplit("N=", 1)[1]
        label = name.rsplit(" ", 1)[0]
        runs = str(max(len(conv_r.get(name, [])), len(del_r.get(name, []))))
        lines.append([n, label, runs, spread(conv_r.get(name, [])), spread(del_r.get(name, []))])
    return "Median (min-max) over the repeats:\n" + format_table(lines[0], lines[1:], [])


def latency_line(name: str, values: Sequence[float]) -> str:
    """``name: p50/p95 s (count)``."""
    return f"{name}: {_pair(list(values))} s p50/p95 ({len(values)} VMs)"


def deltas(start: dict[str, float], end: dict[str, float]) -> list[float]:
    """``end[k] - start[k]`` for every key in both, in key order."""
    return [end[k] - start[k] for k in sorted(start) if k in end]


def utc_seconds(stamp: str | None) -> float | None:
    """An OpenStack timestamp (``2026-11-25T01:23:05.000000``, ``…Z`` or ``+00:00``;
    UTC when it names no zone) as seconds since the epoch; None for None or junk."""
    import datetime as _dt

    if not stamp:
        return None
    try:
        parsed = _dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=_dt.UTC)
    return parsed.timestamp()


def critical_path(row: Row) -> list[str]:
    """The p50/p95 lines of Kumo's critical path (empty when not measured)."""
    parts = [
        ("objects created → POST /servers", row.create_to_post_s),
        ("ACTIVE (launched_at) → Ready seen", row.active_to_ready_s),
        ("ACTIVE (launched_at) → member in the pool", row.active_to_member_s),
    ]
    lines = [f"N={row.n} {row.contender}: " + latency_line(n, v) for n, v in parts if v]
    if (cpu := cpu_per_vm(row)) is not None:
        lines.append(cpu)
    return lines


def cpu_per_vm(row: Row) -> str | None:
    """Kumo's CPU per VM created and per VM deleted (ms), when measured."""
    if row.cpu_converge_s is None or not row.n:
        return None
    created = f"{1000 * row.cpu_converge_s / row.n:.1f} ms per VM created"
    deleted = (
        f", {1000 * row.cpu_delete_s / row.n:.1f} ms per VM deleted"
        if row.cpu_delete_s is not None
        else ""
    )
    return (
        f"N={row.n} {row.contender}: CPU {created}{deleted} "
        f"(group size {row.n // max(row.groups, 1)})"
    )


#: The most ``GET /servers/{id}`` a converge of N VMs may cost, as a share of N.
SERVER_READS_SHARE = 0.01


def server_reads(row: Row) -> tuple[str, bool] | None:
    """The line on per-server reads during the converge, and whether the goal is met."""
    if row.converge_server_reads is None:
        return None
    limit = SERVER_READS_SHARE * row.n
    met = row.converge_server_reads <= limit
    return (
        f"N={row.n} {row.contender}: GET /servers/{{id}} during converge = "
        f"{row.converge_server_reads} (goal ≤ {SERVER_READS_SHARE:.0%} of N = {limit:g}: "
        + ("met" if met else "NOT MET")
        + ")",
        met,
    )
