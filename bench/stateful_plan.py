"""The stateful benchmark's pure parts (bench/stateful.py runs them on the lab): the
members as the listings show them, the direct script's plan (which member to attach,
which volume to delete, who is done, who failed) and the figures per member (Cinder
requests, volume creates, when each step was reached)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from bench import report

#: A volume create as reqlog.path_shape writes it.
VOLUME_CREATE_SHAPE = "POST /v3/{id}/volumes"


@dataclass(frozen=True)
class Member:
    """One ordinal as the listings show it (None: not listed yet)."""

    server_id: str | None = None
    server_status: str | None = None
    volume_id: str | None = None
    volume_status: str | None = None
    attached_to: tuple[str, ...] = ()

    @property
    def done(self) -> bool:
        """Its server ACTIVE, its volume in-use on that server."""
        return (
            self.server_status == "ACTIVE"
            and self.volume_status == "in-use"
            and self.server_id is not None
            and self.server_id in self.attached_to
        )


def members_from(
    n: int,
    servers: Mapping[str, tuple[str | None, str | None]],
    volumes: Mapping[str, tuple[str, str, tuple[str, ...]]],
    server_name: Callable[[int], str],
    volume_name_of: Callable[[int], str],
) -> list[Member]:
    """Ordinals 0..n-1 from listings: ``servers`` name → (id, status), ``volumes`` name →
    (id, status, servers attached to)."""
    out = []
    for i in range(n):
        sid, sstatus = servers.get(server_name(i), (None, None))
        vid, vstatus, attached = volumes.get(volume_name_of(i), (None, None, ()))
        out.append(Member(sid, sstatus, vid, vstatus, tuple(attached)))
    return out


def to_attach(members: Sequence[Member], asked: Collection[int]) -> list[int]:
    """The script's next attaches: ordinals whose server is ACTIVE and whose volume is
    available and attached to nothing, not asked for yet."""
    return [
        i
        for i, m in enumerate(members)
        if i not in asked
        and m.server_status == "ACTIVE"
        and m.volume_status == "available"
        and not m.attached_to
        and m.server_id is not None
        and m.volume_id is not None
    ]


def to_delete(volumes: Mapping[str, str], asked: Collection[str]) -> list[str]:
    """The script's next volume deletes: ``volumes`` ID → status; the available ones (their
    server's deletion detached them) not asked for yet."""
    return sorted(v for v, status in volumes.items() if status == "available" and v not in asked)


def failed(members: Sequence[Member]) -> list[str]:
    """Members Nova or Cinder gave up on (the run stops on them)."""
    out = []
    for i, m in enumerate(members):
        if m.server_status == "ERROR":
            out.append(f"{i}: server {m.server_id} ERROR")
        if m.volume_status and m.volume_status.startswith("error"):
            out.append(f"{i}: volume {m.volume_id} {m.volume_status}")
    return out


def volume_creates(shapes: Mapping[str, Mapping[str, int]]) -> int:
    """Cinder volume creates in a window's request shapes (service → shape → count)."""
    return sum(n for shape, n in shapes.get("cinder", {}).items() if shape == VOLUME_CREATE_SHAPE)


def too_many_creates(rows: Sequence[report.Row]) -> list[str]:
    """Runs that made more than one volume per member (the goal: at most one)."""
    return [
        f"N={r.n} {r.contender}: {r.volume_creates} volume creates for {r.n} members"
        for r in rows
        if r.volume_creates is not None and r.volume_creates > r.n
    ]


def per_member_lines(rows: Sequence[report.Row]) -> list[str]:
    """Per run: Cinder requests and volume creates, in all and per member."""
    lines, seen = [], dict[tuple[str, int], int]()
    for r in rows:
        k = seen[(r.contender, r.n)] = seen.get((r.contender, r.n), 0) + 1
        if r.error:
            continue
        cinder = r.requests.get("cinder", 0)
        creates = "—" if r.volume_creates is None else str(r.volume_creates)
        per = "" if r.volume_creates is None else f" = {r.volume_creates / r.n:.2f}/member"
        lines.append(
            f"N={r.n} {r.contender} run {k}: Cinder {cinder} requests = {cinder / r.n:.2f}/member; "
            f"volume creates {creates}{per}"
        )
    return lines


#: The steps of a member, in order, as the stage lines name them.
STAGES = ("volume POST", "server POST", "attach POST", "done seen")


def stage_lines(row: report.Row) -> list[str]:
    """p50/p95/max of the seconds since the converge started at which the members
    reached each step (empty when not measured)."""
    out = []
    for stage in STAGES:
        values = row.stages.get(stage) or []
        if values:
            p50, p95 = report.percentile(values, 50), report.percentile(values, 95)
            out.append(
                f"N={row.n} {row.contender}: {stage} at {p50:.1f}/{p95:.1f}/{max(values):.1f} s "
                f"p50/p95/max ({len(values)})"
            )
    return out
