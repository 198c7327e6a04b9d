"""The chaos suite's verdict, as pure functions over what the cloud and the cluster hold.

Why pure: the judgement — which cloud resource is a leak, which a duplicate — is the
part of the suite that must be right, and it can be tested without a lab. The test
modules read the cloud (``tests/chaos/stack.py``) into :class:`Marked` records and the
cluster into sets of live UIDs; everything here only compares them.

Definitions:

* a **marked** resource carries Kumo's ownership marker ``kumo-owner=<uid>``: as a Nova or
  Octavia tag, in a server group's name, as a word of a Designate recordset's description
  (``kumo-owner=<uid>@<cluster>``: the audit reads the UID, whatever the cluster — the
  lab it judges runs one);
* a **leak** is a marked resource whose owner UID is no live Kumo object's UID in any
  namespace (an object being deleted is still live: its finalizer has not run out).
  Resources that were already orphaned before a test started (another run's debris) are
  its *baseline*: reported, never blamed on the test;
* a **duplicate** is a second resource of the same kind for the same owner (two servers
  for one VirtualMachine, two load balancers for one LoadBalancer, …);
* a **mismatch** is a VirtualMachine whose servers are not exactly ``[status.id]``
  (none, or another one than recorded).

A stateful group's volumes (:class:`CinderVolume`, :func:`volume_problems`) add:

* a **lost** volume: an ordinal whose Volume object no longer records the Cinder volume it
  first had (another ID, none, or that volume gone from Cinder): its data is gone;
* a **duplicate** volume: more than one Cinder volume of one name or one marker;
* a **shared** volume: one attached to two servers at once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kumo.cloud.model import Marker, described_marker, marker_of, metadata_marker, text_marker


@dataclass(frozen=True, order=True)
class Marked:
    """One cloud resource carrying Kumo's marker."""

    kind: str  # the orphan sweep's: "server", "loadbalancer", "server_group", "recordset", …
    id: str
    owner: str
    name: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.id)


def owner_in_tags(tags: Iterable[str] | None) -> str | None:
    """The owner UID from Nova/Octavia tags (``kumo-owner=<uid>``), if any."""
    return _uid(marker_of(list(tags or [])))


def owner_in_text(text: str | None) -> str | None:
    """The owner UID from a name or description holding the marker as a word."""
    return _uid(text_marker(text))


def _uid(marker: Marker | None) -> str | None:
    return marker.uid if marker is not None else None


def owner_in_described(resource: Any) -> str | None:
    """The owner UID of a Neutron resource marked by its tags, else by its description's
    marker word (what the create call writes before the tags come): Kumo's own rule,
    :func:`kumo.ports.model.described_marker`."""
    return _uid(described_marker(resource))


def owner_in_metadata(metadata: dict[str, str] | None) -> str | None:
    """The owner UID from Cinder or Manila metadata (``kumo-owner``), if any."""
    return _uid(metadata_marker(metadata))


@dataclass(frozen=True)
class NotSettled:
    """Why a stack is not settled yet: false, so a wait goes on, and shown in the wait's
    timeout message, so a stack that never settles says which part did not."""

    reason: str

    def __bool__(self) -> bool:
        return False


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


@dataclass(frozen=True)
class CinderVolume:
    """One Cinder volume as the audit needs it."""

    id: str
    name: str
    owner: str | None  # its marker (metadata ``kumo-owner``), if any
    servers: tuple[str, ...] = ()  # the servers it is attached to


def lost_volumes(first: Mapping[str, str], now: Mapping[str, str | None]) -> dict[str, str]:
    """Volume object name → what became of the Cinder volume it first recorded, for every
    name in ``first`` (name → the first ID) whose ID is not the same in ``now``."""
    return {
        name: f"{volume_id} -> {now.get(name) or 'none'}"
        for name, volume_id in sorted(first.items())
        if now.get(name) != volume_id
    }


def duplicate_volumes(
    volumes: Iterable[CinderVolume], names: Iterable[str], owners: Iterable[str] = ()
) -> dict[str, list[str]]:
    """Each of ``names`` (Cinder volume names) and ``owners`` (marker UIDs) held by more
    than one volume → their sorted IDs."""
    wanted_names, wanted_owners = set(names), set(owners)
    held: dict[str, list[str]] = defaultdict(list)
    for v in volumes:
        if v.name in wanted_names:
            held[f"name {v.name}"].append(v.id)
        if v.owner and v.owner in wanted_owners:
            held[f"marker {v.owner}"].append(v.id)
    return {k: sorted(ids) for k, ids in sorted(held.items()) if len(ids) > 1}


def shared_volumes(volumes: Iterable[CinderVolume]) -> dict[str, list[str]]:
    """Volume ID → its servers, for every volume attached to more than one server."""
    return {v.id: sorted(v.servers) for v in volumes if len(set(v.servers)) > 1}


def volume_problems(
    volumes: Iterable[CinderVolume],
    first: Mapping[str, str],
    now: Mapping[str, str | None],
    cinder_names: Mapping[str, str],
) -> list[str]:
    """Every lost, duplicate or shared volume of a stateful group, in words.

    ``first``: Volume object name → the Cinder ID it had when first seen; ``now``: the
    same names → the ID recorded now; ``cinder_names``: Volume object name → the name its
    Cinder volume has. Owners judged: the markers of the volumes in ``now``."""
    volumes = list(volumes)
    present = {v.id for v in volumes}
    gone = {n: i for n, i in now.items() if i and i not in present}
    problems = [f"lost volume {name}: {what}" for name, what in lost_volumes(first, now).items()]
    problems += [f"lost volume {name}: {i} is not in Cinder" for name, i in sorted(gone.items())]
    owners = {v.owner for v in volumes if v.id in set(now.values()) and v.owner}
    problems += [
        f"duplicate volumes for {key}: {ids}"
        for key, ids in duplicate_volumes(volumes, cinder_names.values(), owners).items()
    ]
    problems += [
        f"volume {vid} attached to {len(servers)} servers: {servers}"
        for vid, servers in shared_volumes(volumes).items()
    ]
    return problems


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
