"""What an aggregate derives from each of its members' bodies, kept between its passes.

A group, a LoadBalancer or a DNSRecord reads every member on every pass: parsing each
body again (conditions, labels, addresses) made each pass cost O(S) Python work per
member, and members change one at a time, so a fleet cost O(S²). The object cache
replaces a body by a new dict on every change (a watch event, an own write), never in
place, so a body that is the very object seen last pass is unchanged and what was
derived from it holds.

Only a cache: a value is a pure function of its body, recomputed on a miss. Nothing is
decided from memory that a body does not say — after a restart the first pass derives
everything from the bodies, as it always did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from kumo.engine.objects import Body

T = TypeVar("T")


#: A cache entry: the body, its metadata, spec and status (held, not their ``id``: a
#: replaced one's could be reused), and what was derived from it.
_Entry = tuple[Body, Any, Any, Any, T]


def _fresh(hit: tuple[Body, Any, Any, Any, Any] | None, body: Body) -> bool:
    """Is ``hit`` derived from ``body`` as it is? The very object, with the same
    metadata, spec and status objects: code (a test) that replaces a cached body's
    status or spec in place is seen as a change. Nothing in the runtime edits a cached
    body; nested in-place edits are not looked for."""
    return (
        hit is not None
        and hit[0] is body
        and hit[1] is body.get("metadata")
        and hit[2] is body.get("spec")
        and hit[3] is body.get("status")
    )


def _entry(body: Body, value: T) -> _Entry[T]:
    return (body, body.get("metadata"), body.get("spec"), body.get("status"), value)


class Derived(Generic[T]):
    """``derive(body)`` per member body, recomputed only for a body not seen last pass.

    Per ``scope`` (the aggregate's UID): each call keeps exactly the bodies it was given,
    so members that left are forgotten and the cache holds one entry per current member.
    The entry holds the body itself, so its ``id`` cannot be reused by another while it
    is cached (:func:`_fresh`)."""

    def __init__(self, derive: Callable[[Body], T]) -> None:
        self._derive = derive
        self._seen: dict[str, dict[int, _Entry[T]]] = {}
        #: Bodies derived afresh (misses), for tests and curiosity.
        self.derived = 0

    def of(self, scope: str, bodies: Iterable[Body]) -> list[T]:
        last = self._seen.get(scope, {})
        kept: dict[int, _Entry[T]] = {}
        values = []
        for body in bodies:
            hit = last.get(id(body))
            if not _fresh(hit, body):
                hit = _entry(body, self._derive(body))
                self.derived += 1
            assert hit is not None
            kept[id(body)] = hit
            values.append(hit[4])
        self._seen[scope] = kept
        return values

    def forget(self, scope: str) -> None:
        self._seen.pop(scope, None)


class PerBody(Generic[T]):
    """``derive(body)`` for the latest body asked about of each aggregate (by UID), for
    at most ``size`` aggregates (least recently asked goes first): an index of one
    aggregate's status (a LoadBalancer's members by VM name) that every member's event
    or pass reads, built once per status, not once per read. The value is shared:
    callers must not change it.

    One entry per aggregate, not per body: callers ask about the cache's current body,
    and an LB's status is replaced on every membership change, so a cache of recent
    bodies held dozens of superseded statuses of the same few LoadBalancers (64 at
    most, each listing every member: ≈ 6 KiB per VM at 300 members, in memory)."""

    def __init__(self, derive: Callable[[Body], T], size: int = 256) -> None:
        self._derive = derive
        self._size = size
        self._seen: dict[Any, _Entry[T]] = {}
        #: Bodies derived afresh (misses), for tests and curiosity.
        self.derived = 0

    def __call__(self, body: Body) -> T:
        key = _identity(body)
        hit = self._seen.pop(key, None)
        if not _fresh(hit, body):
            hit = _entry(body, self._derive(body))
            self.derived += 1
        assert hit is not None
        self._seen[key] = hit  # last: the most recently asked
        if len(self._seen) > self._size:
            del self._seen[next(iter(self._seen))]
        return hit[4]


def _identity(body: Body) -> Any:
    """The aggregate a body is a version of: its UID, else its namespace and name (a
    body not from the API server), else the body itself."""
    meta = body.get("metadata") or {}
    uid = meta.get("uid")
    if uid:
        return uid
    if meta.get("name"):
        return (meta.get("namespace"), meta["name"])
    return id(body)
