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
    cpu_s: float | None = None
    restart_full_pass_s: float | None = None
    error: str | None = None

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


HEADER = (
    "N",
    "contender",
    "converge s",
    "delete s",
    *(f"{s} req" for s in SHOWN),
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


def cells(row: Row) -> list[str]:
    if row.error:
        return [str(row.n), row.contender, f"FAILED: {row.error}"] + [""] * (len(HEADER) - 3)
    other = row.total_requests - sum(row.requests.get(s, 0) for s in SHOWN)
    idle = "—" if row.idle_per_min is None else _f(sum(row.idle_per_min.values()))
    return [
        str(row.n),
        row.contender,
        _f(row.converge_s),
        _f(row.delete_s),
        *(str(row.requests.get(s, 0)) if row.requests else "—" for s in SHOWN),
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


def ratio_cells(row: Row, base: Row) -> list[str] | None:
    """``row / base`` for converge, delete and request counts (None if either failed)."""
    if row.error or base.error:
        return None

    def r(a: float | None, b: float | None) -> str:
        if a is None or b is None or b == 0:
            return "—"
        return f"{a / b:.2f}x"

    out = [str(row.n), f"{row.contender}/{base.contender}", r(row.converge_s, base.converge_s)]
    out.append(r(row.delete_s, base.delete_s))
    for s in SHOWN:
        out.append(r(row.requests.get(s, 0), base.requests.get(s, 0)) if row.requests else "—")
    other = row.total_requests - sum(row.requests.get(s, 0) for s in SHOWN)
    base_other = base.total_requests - sum(base.requests.get(s, 0) for s in SHOWN)
    out.append(r(other, base_other))
    out.append(r(row.total_requests, base.total_requests))
    return out + [""] * (len(HEADER) - len(out))


def table(rows: Sequence[Row], base: str = "direct") -> str:
    """All rows, then for each N the ratios of every other contender to ``base``."""
    body = [cells(r) for r in rows]
    ratios = []
    for row in rows:
        ref = next((b for b in rows if b.contender == base and b.n == row.n), None)
        if ref is None or row is ref:
            continue
        line = ratio_cells(row, ref)
        if line is not None:
            ratios.append(line)
    return format_table(list(HEADER), body, ratios)


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
