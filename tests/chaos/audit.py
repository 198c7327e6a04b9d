"""The chaos suite's verdict, as pure functions over what the cloud and the cluster hold.

Why pure: the judgement — which cloud resource is a leak, which a duplicate — is the
part of the suite that must be right, and it can be tested without a lab. The test
modules read the cloud (``tests/chaos/stack.py``) into :class:`Marked` records and the
cluster into sets of live UIDs; everything here only compares them.

Definitions:

* a **marked** resource carries Kumo's ownership marker ``kumo-owner=<uid>``: as a Nova or
  Octavia tag, in a server group's name, as a word of a Designate recordset's description;
* a **leak** is a marked resource whose owner UID is no live Kumo object's UID in any
  namespace (an object being deleted is still live: its finalizer has not run out).
  Resources that were already orphaned before a test started (another run's debris) are
  its *baseline*: reported, never blamed on the test;
* a **duplicate** is a second resource of the same kind for the same owner (two servers
  for one VirtualMachine, two load balancers for one LoadBalancer, …);
* a **mismatch** is a VirtualMachine whose servers are not exactly ``[status.id]``
  (none, or another one than recorded).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kumo.cloud.model import OWNER_PREFIX, owner_of

MARKER_WORD = re.compile(rf"(?:^|\s){re.escape(OWNER_PREFIX)}(\S+)")


@dataclass(frozen=True, order=True)
class Marked:
    """One cloud resource carrying Kumo's marker."""

    kind: str  # "server", "load_balancer", "server_group", "recordset"
    id: str
    owner: str
    name: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.id)


def owner_in_tags(tags: Iterable[str] | None) -> str | None:
    """The owner UID from Nova/Octavia tags (``kumo-owner=<uid>``), if any."""
    return owner_of(list(tags or []))


def owner_in_text(text: str | None) -> str | None:
    """The owner UID from a name or description holding the marker as a word."""
    match = MARKER_WORD.search(text or "")
    return match.group(1) if match else None


def orphaned(resources: Iterable[Marked], live_uids: Iterable[str]) -> list[Marked]:
    """Marked resources whose owner is not a live object, sorted."""
    live = set(live_uids)
    return sorted(r for r in resources if r.owner not in live)


def baseline(resources: Iterable[Marked], live_uids: Iterable[str]) -> frozenset[tuple[str, str]]:
    """Keys of what is orphaned before a test begins: not the test's to answer for."""
    return frozenset(r.key for r in orphaned(resources, live_uids))


def find_leaks(
    resources: Iterable[Marked],
    live_uids: Iterable[str],
    before: frozenset[tuple[str, str]] = frozenset(),
) -> list[Marked]:
    """Orphaned resources that were not already orphaned at ``before``.

    Read the cloud *before* listing the live UIDs: an object created in between then
    counts as live, and a resource cannot exist before its owner.
    """
    return [r for r in orphaned(resources, live_uids) if r.key not in before]


def find_duplicates(
    resources: Iterable[Marked], owners: Iterable[str] | None = None
) -> dict[tuple[str, str], list[str]]:
    """(kind, owner) → sorted IDs, for every owner holding more than one of a kind.

    ``owners`` limits the judgement to some objects (a test's own); None judges all.
    """
    wanted = set(owners) if owners is not None else None
    held: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in resources:
        if wanted is None or r.owner in wanted:
            held[(r.kind, r.owner)].append(r.id)
    return {k: sorted(ids) for k, ids in sorted(held.items()) if len(ids) > 1}


def server_mismatches(
    recorded: Mapping[str, str | None], resources: Iterable[Marked]
) -> dict[str, list[str]]:
    """VM uid → the IDs of its servers, for every VM whose servers are not exactly
    ``[status.id]`` (none, several, or another one than recorded)."""
    servers: dict[str, list[str]] = defaultdict(list)
    for r in resources:
        if r.kind == "server" and r.owner in recorded:
            servers[r.owner].append(r.id)
    return {
        uid: sorted(servers.get(uid, []))
        for uid, status_id in sorted(recorded.items())
        if sorted(servers.get(uid, [])) != ([status_id] if status_id else [])
    }


def count_duplicates(duplicates: Mapping[tuple[str, str], list[str]]) -> int:
    """Surplus resources: every copy beyond the first of a kind for one owner."""
    return sum(len(ids) - 1 for ids in duplicates.values())


def summary_line(
    *,
    test: str,
    seed: int,
    kills: int,
    faults: Mapping[str, int],
    leaks: int | str,
    duplicates: int | str,
    **extra: object,
) -> str:
    """The one line every chaos test reports, e.g.
    ``CHAOS test=kill kills=5 faults={'5xx': 31, ...} leaks=0 duplicates=0 seed=1234``
    (``leaks=? duplicates=?`` when the stack never settled, so nothing could be judged)."""
    tail = "".join(f" {k}={v}" for k, v in extra.items())
    return (
        f"CHAOS test={test} kills={kills} faults={dict(faults)} "
        f"leaks={leaks} duplicates={duplicates} seed={seed}{tail}"
    )
